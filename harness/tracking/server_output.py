"""What `python -m harness server` passes on of `mlflow server`'s stderr: everything, less the notices MLflow
echoes on every start and the tracebacks of a known MLflow race the harness does not use.

The race (MLflow 3.17/3.18, a server without the `auth` extra): the runs-search handler tries to import
`mlflow.server.auth` on every search (the import fails: no Flask-WTF); while that import is under way, a
request of MLflow's Assistant panel (the UI opens it by itself on a loopback address, and MLflow has no
setting that turns it off) reads the half-imported module and fails with `AttributeError: partially
initialized module 'mlflow.server.auth' has no attribute 'is_auth_enabled'`, logged by uvicorn as a
~200-line "Exception in ASGI application" traceback. Only that panel's request fails (the UI shows the
panel's own error and goes on); the block is dropped whole. Any other traceback is passed on whole, at
once when the server falls quiet. `-v` passes everything on."""
from __future__ import annotations

import os
import re
import select
import sys
from typing import Callable, List, Optional

# what `mlflow server` echoes on every start whatever its options (click.echo, no logger to set)
NOTICES = ("[MLflow] Security middleware enabled with default settings",)
BLOCK_START = "Exception in ASGI application"
KNOWN_RACE = "partially initialized module 'mlflow.server.auth'"
IDLE_S = 0.5  # a traceback block still open this long is complete: passed on
# lines that continue a traceback: indented or framed lines, the chaining sentences, exception lines
_CONTINUES = re.compile(r"^(\s|\||\+|$|Traceback |The above exception|During handling of the above|"
                        r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Warning|Interrupt|Exit|Group|Timeout)"
                        r"(?:: |\s*$))")


class OutputFilter:
    """Line by line: `feed` each line (with its newline), `flush` when the stream is idle or ends."""

    def __init__(self, write: Callable[[str], None]):
        self._write = write
        self._block: Optional[List[str]] = None

    def feed(self, line: str) -> None:
        if self._block is not None:
            if BLOCK_START not in line and _CONTINUES.match(line):
                self._block.append(line)
                return
            self.flush()
        if BLOCK_START in line:
            self._block = [line]
        elif not line.startswith(NOTICES):
            self._write(line)

    def flush(self) -> None:
        block, self._block = self._block, None
        if block and not any(KNOWN_RACE in line for line in block):
            self._write("".join(block))


def relay(fd: int, write: Callable[[str], None]) -> None:
    """Pass the server's stderr (file descriptor `fd`) on through an `OutputFilter` until it closes."""
    out = OutputFilter(write)
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], IDLE_S)
        if not ready:
            out.flush()
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            out.feed(line.decode("utf-8", "replace") + "\n")
    if pending:
        out.feed(pending.decode("utf-8", "replace"))
    out.flush()


def to_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()
