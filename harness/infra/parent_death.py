"""Children that die with their parent: the kernel sends them SIGTERM when the parent dies, even by SIGKILL
(Linux's prctl PR_SET_PDEATHSIG; elsewhere a no-op and only a clean stop stops them). A leaf module."""
from __future__ import annotations

import os
import signal

PR_SET_PDEATHSIG = 1  # prctl(2)


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Called in the child: `sig` arrives when the parent dies (also if it died before this call)."""
    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died between fork and prctl: nobody will send it
        os.kill(os.getpid(), sig)
