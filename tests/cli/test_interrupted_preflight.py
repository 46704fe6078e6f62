"""Ctrl-C while a run or sweep is still being checked (issue 39 item 10): no folder was made and no run opened,
so the one line says so instead of "recorded as KILLED". The checks are held where they ask the tracking
server (a socket of the test that accepts and never answers), so the signal lands there whatever the load."""
from __future__ import annotations

import signal
import socket
import subprocess

import pytest


@pytest.mark.parametrize("command", [("debug=quick",), ("multirun", "seed=0,1", "debug=quick")])
def test_ctrl_c_during_the_checks_says_nothing_was_recorded(run_harness, command):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        argv = run_harness.argv(*command, "launcher=submitit_local",
                                f"tracking.uri=http://127.0.0.1:{server.getsockname()[1]}")
        proc = subprocess.Popen(argv, cwd=run_harness.root, env=run_harness.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            server.settimeout(300)
            connection, _ = server.accept()  # the preflight asks the store for its experiment
            with connection:
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130, err[-2000:]
    said = [line for line in err.splitlines() if line.startswith("harness: stopped")]
    assert said == ["harness: stopped: interrupted (Ctrl-C); before any run started: nothing was recorded"], err
    assert "KILLED" not in out + err
    assert not (run_harness.root / "outputs").exists() and not (run_harness.root / "multirun").exists()
