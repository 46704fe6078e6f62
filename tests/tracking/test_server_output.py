"""`harness server`'s relay of `mlflow server`'s stderr (harness/tracking/server_output.py), over a real pipe
from a real child process: the traceback of MLflow's Assistant-panel race is dropped whole, everything else
passes on whole. The child puts `mlflow.server.auth` in the state the race leaves it in (a module whose
import is under way: what the runs-search handler's failing import leaves for a moment), calls MLflow's own
`auth_plugin_active()` (what every Assistant request calls), and logs the error through uvicorn's logger as
MLflow's log config formats it, between an ordinary warning and an unrelated traceback."""
from __future__ import annotations

import io
import subprocess
import sys
import textwrap

from harness.tracking import server_output

CHILD = textwrap.dedent("""
    import importlib.machinery, logging, logging.config, sys, types
    from pathlib import Path
    import yaml, mlflow.server
    from mlflow.server.assistant.identity import auth_plugin_active

    config = yaml.safe_load((Path(mlflow.server.__file__).parent / "uvicorn_log_config.yaml").read_text())
    logging.config.dictConfig(config)
    log = logging.getLogger("uvicorn.error")
    log.warning("an ordinary warning, before")
    half = types.ModuleType("mlflow.server.auth")  # its import under way: the race's state
    half.__spec__ = importlib.machinery.ModuleSpec("mlflow.server.auth", None)
    half.__spec__._initializing = True
    sys.modules["mlflow.server.auth"] = half
    try:
        auth_plugin_active()
    except AttributeError as err:
        try:
            raise RuntimeError("the route failed") from err
        except RuntimeError:
            log.exception("Exception in ASGI application\\n")
    del sys.modules["mlflow.server.auth"]
    try:
        {}["missing"]
    except KeyError:
        log.exception("Exception in ASGI application\\n")
    log.warning("an ordinary warning, after")
""")


def test_relay_drops_the_assistant_race_traceback_and_passes_on_the_rest():
    child = subprocess.Popen([sys.executable, "-c", CHILD], stderr=subprocess.PIPE)
    out = io.StringIO()
    server_output.relay(child.stderr.fileno(), out.write)
    assert child.wait(60) == 0
    text = out.getvalue()
    assert "an ordinary warning, before" in text and "an ordinary warning, after" in text, text
    assert "partially initialized" not in text and "auth_plugin_active" not in text, text
    assert text.count("Traceback (most recent call last)") == 1 and "KeyError: 'missing'" in text, text
    assert text.index("before") < text.index("KeyError") < text.index("after")


def test_filter_passes_an_unfinished_traceback_on_when_the_stream_falls_quiet():
    shown = []
    lines = server_output.OutputFilter(shown.append)
    for line in ("2026/12/08 00:00:00 ERROR:    Exception in ASGI application\n", "\n",
                 "Traceback (most recent call last):\n", '  File "x.py", line 1, in <module>\n',
                 "ValueError: boom\n"):
        lines.feed(line)
    assert shown == []  # held until the block ends ...
    lines.flush()  # ... or the server falls quiet (the relay's idle time)
    assert len(shown) == 1 and shown[0].endswith("ValueError: boom\n")
    lines.feed("[MLflow] Security middleware enabled with default settings\n")
    assert len(shown) == 1  # the start-up notice stays off
