"""`python -m harness.infra.group_leader CMD ...`: run CMD inside this process's group and take the whole group
down (CMD's own children too) when this process is told to stop, by its parent or by the kernel.

`harness server` starts `mlflow server` through it, in a new session, with PR_SET_PDEATHSIG: the kernel
sends SIGTERM here when `harness server` dies, even by SIGKILL, and this stops every process of the group
(`mlflow server` alone would leave its uvicorn workers holding the port). Imports nothing from harness."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import List


def main(argv: List[str]) -> int:
    child = subprocess.Popen(argv)

    def stop_group(signum, _frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's SIGTERM reaches this process too
        os.killpg(os.getpgrp(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop_group)
    signal.signal(signal.SIGINT, stop_group)
    signal.signal(signal.SIGHUP, stop_group)
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
