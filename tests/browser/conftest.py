"""Browser tests need headless Chromium (`bash .ci/install_chromium.sh`). Without it they are skipped, unless
HARNESS_BROWSER_TESTS=1 says they must run (CI), in which case they fail."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tracking")]  # chromium.py, and tracking_helpers (the server)

from chromium import find_chromium  # noqa: E402


@pytest.fixture(scope="session")
def chromium() -> str:
    required = os.environ.get("HARNESS_BROWSER_TESTS", "") not in ("", "0")
    binary = find_chromium()
    problem = None
    if binary is None:
        problem = "headless Chromium is not installed (bash .ci/install_chromium.sh)"
    else:
        try:
            subprocess.run([binary, "--version"], capture_output=True, timeout=60, check=True)
        except (OSError, subprocess.SubprocessError) as err:
            problem = f"{binary} does not run: {err}"
    if problem and required:
        pytest.fail(f"HARNESS_BROWSER_TESTS=1 but {problem}")
    if problem:
        pytest.skip(f"{problem}; set HARNESS_BROWSER_TESTS=1 to make this a failure")
    return binary
