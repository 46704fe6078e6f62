"""`harness server` starts only what the harness uses and says only its own lines: no MLflow job queue (its
runner and huey consumers), no INFO chatter, deprecation warning or start-up notices; it answers requests.
`-v` (HARNESS_LOG_LEVEL=INFO) lets MLflow's own lines through again."""
from __future__ import annotations

import argparse
import json
import os
import time
import urllib.request
from pathlib import Path

import pytest

from cpu_time import group_cpu_seconds, process_cpu_seconds
from tracking_helpers import Server, free_port

from harness.tracking.server import server_command, server_env

# CPU seconds `harness server` and its MLflow processes have used when it is ready: a bound on the work it
# does to start, which a busy shared machine does not stretch the way it stretches wall time.
READY_BOUND_CPU_S = 60
NOISE = ("INFO", "Warning", "Registry store URI", "Security middleware", "Uvicorn running", "Started ")


def group_commands(group: int) -> list:
    """The command lines of the processes in a process group."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError, IndexError):  # the process ended meanwhile
            continue
    return found


@pytest.mark.slow  # end to end: `harness server` started for real and timed to its first answer
def test_the_server_answers_quietly_without_the_job_queue(tmp_path):
    started = time.monotonic()
    server = Server(tmp_path, free_port()).start()
    seconds = time.monotonic() - started
    cpu_seconds = process_cpu_seconds(server.proc.pid) + group_cpu_seconds(server.group)
    try:
        with urllib.request.urlopen(f"{server.url}/api/2.0/mlflow/experiments/search?max_results=5", timeout=30) as reply:
            assert [e["name"] for e in json.load(reply)["experiments"]] == ["Default"]
        commands = group_commands(server.group)
        assert not [c for c in commands if "huey" in c or "jobs._job_runner" in c], commands
        assert len(commands) <= 6, commands  # leader, mlflow server, uvicorn and its 2 workers (+ a spawn helper)
    finally:
        assert server.stop() == 0
    printed = server.log.read_text().strip().splitlines()
    assert printed[0].startswith("harness server: ready at") and len(printed) == 4, printed  # + runs, stop, stopping
    assert not [line for line in printed if any(word in line for word in NOISE)], printed
    assert cpu_seconds < READY_BOUND_CPU_S, f"the server used {cpu_seconds:.0f} CPU seconds to start"
    print(f"\nharness server ready after {seconds:.1f} s, {cpu_seconds:.1f} CPU seconds")


def test_verbose_lets_mlflow_speak(monkeypatch, tmp_path):
    args = argparse.Namespace(backend_store_uri="sqlite:///x.db", host="127.0.0.1", port=5000, workers=2,
                              access_log=False)
    monkeypatch.delenv("HARNESS_LOG_LEVEL", raising=False)
    monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    quiet = server_command(args, tmp_path)
    assert quiet[-2:] == ["--uvicorn-opts", "--no-access-log --log-level warning"]
    assert quiet[quiet.index("--registry-store-uri") + 1] == "sqlite:///x.db"
    assert server_env()["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] == "false"
    assert "starlette" in server_env()["PYTHONWARNINGS"]
    monkeypatch.setenv("HARNESS_LOG_LEVEL", "INFO")
    assert server_command(args, tmp_path)[-2:] == ["--uvicorn-opts", "--no-access-log"]
    assert "PYTHONWARNINGS" not in server_env() and os.environ["HARNESS_LOG_LEVEL"] == "INFO"
