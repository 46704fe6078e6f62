"""A command's output as a person sees it at a given width: run in a pseudo-terminal of that size, each line
as it was left on the screen (a status line redrawn with a carriage return counts once, as its last state)."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from typing import List, Optional, Tuple

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def screen(argv: List[str], cwd, env: dict, columns: int = 80, timeout: float = 600,
           stdin: Optional[int] = subprocess.DEVNULL) -> Tuple[int, List[str], str]:
    """(exit code, the lines left on the screen, the raw output with escapes removed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, env={**env, "COLUMNS": str(columns), "TERM": "xterm"},
                            stdout=slave, stderr=slave, stdin=stdin)
    os.close(slave)
    raw, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the command exited and the terminal closed
                    break
                if not chunk:
                    break
                raw += chunk
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        os.close(master)
    text = ESCAPES.sub("", raw.decode(errors="replace"))
    shown = []
    for line in text.split("\n"):
        states = [part for part in line.split("\r") if part.strip()]
        if states:
            shown.append(states[-1].rstrip())
    return code, shown, text
