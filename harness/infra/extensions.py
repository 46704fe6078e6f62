"""Extensions installed outside the repository: the modules that installed distributions name in the
`harness.extensions` entry-point group (the way pytest and Hydra find their plugins), imported once per process
when the `harness` package is (harness/__init__.py). Their `register_objective` / `register_launcher` calls
have then run before any registry is read, in the command's process, its worker processes and Slurm jobs alike.

A distribution declares one in its pyproject.toml:

    [project.entry-points."harness.extensions"]
    my_objectives = "my_package.register"

An entry point whose module fails to import (an exception, `sys.exit`, a BaseException of its own, a module-level
argument parser that exits) costs only what it would have registered: the error is kept as one line naming the
entry point (`broken_extensions`), said where a name it may have registered is selected and is unknown
(`broken_note`) and where the registries are listed; every other command runs as without it. What the module
printed while it was imported is kept out of the command's output and quoted in that line. Ctrl-C still stops.
"""
from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from importlib.metadata import entry_points
from typing import List

GROUP = "harness.extensions"
_BROKEN: List[str] = []  # one line per entry point that could not be loaded, in load order


def load_extensions() -> None:
    """Import each entry point's module; one that fails is recorded (`broken_extensions`), never ends the process."""
    for point in entry_points(group=GROUP):
        out, err = io.StringIO(), io.StringIO()
        real = {id(out): sys.stdout, id(err): sys.stderr}
        try:
            with redirect_stdout(out), redirect_stderr(err):
                point.load()
        except KeyboardInterrupt:  # the user's Ctrl-C during the import: the command stops, as anywhere else
            raise
        except BaseException as error:  # noqa: BLE001 (whatever the module raises or exits with: the line names it)
            _BROKEN.append(_describe(point, error, err.getvalue() + out.getvalue()))
            continue
        finally:
            _repoint_log_handlers(real)
        sys.stdout.write(out.getvalue())  # a module that imported fine keeps what it printed
        sys.stderr.write(err.getvalue())


def _repoint_log_handlers(real: dict) -> None:
    """A log handler made during the import (logging.StreamHandler() takes sys.stderr as it is then) writes to
    the real stream, not to the buffer that stood in for it."""
    import logging

    loggers = [logging.getLogger(), *(logger for logger in list(logging.Logger.manager.loggerDict.values())
                                      if isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            stream = getattr(handler, "stream", None)
            if id(stream) in real and isinstance(handler, logging.StreamHandler):
                handler.setStream(real[id(stream)])


def broken_extensions() -> List[str]:
    """One line per installed extension that could not be loaded (empty when every one loaded)."""
    return list(_BROKEN)


def warn_broken() -> None:
    """One warning line on stderr per extension that could not be loaded (where the registries are listed)."""
    for line in _BROKEN:
        sys.stderr.write(f"harness: warning: {line}\n")


def broken_note() -> str:
    """What to append to a refusal of an unknown objective or launcher name: the extensions that could not be
    loaded, any of which may have registered it ('' when none is broken)."""
    if not _BROKEN:
        return ""
    return "; an extension that may register it cannot be loaded: " + "; ".join(_BROKEN)


def _describe(point, error: BaseException, printed: str) -> str:
    source = f" of {point.dist.name}" if getattr(point, "dist", None) is not None else ""
    said = [line.strip() for line in printed.splitlines() if line.strip()]
    if isinstance(error, SystemExit):
        reason = f"it called sys.exit({error.code!r}) while being imported"
    else:
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        reason = f"{type(error).__name__}: {first}" if first else type(error).__name__
    if said:
        reason += f" (its last output: {said[-1][:200]!r})"
    return f"entry point {point.name} = {point.value!r}{source} (group {GROUP}) cannot be loaded: {reason}"
