"""Tracking test helpers: a real `python -m harness server` on a free port, writer processes that log
through harness's tracker without training anything, and read-back helpers for the MLflow store."""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional

WRITER = Path(__file__).with_name("writer.py")
QUIET_ENV = {"MLFLOW_DISABLE_TELEMETRY": "true", "PYTHONUNBUFFERED": "1"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """`python -m harness server` in a folder; start() waits for its ready line, stop() sends SIGTERM."""

    def __init__(self, root: Path, port: int, backend_store_uri: Optional[str] = None):
        self.root, self.port, self.url = root, port, f"http://127.0.0.1:{port}"
        self.backend = ["--backend-store-uri", backend_store_uri] if backend_store_uri else []
        self.proc: Optional[subprocess.Popen] = None
        self.log = root / f"server-{port}.log"
        self.group: Optional[int] = None
        self.crashed = False  # until the next start()

    def start(self, timeout: float = 180) -> "Server":
        env = {**os.environ, **QUIET_ENV, "HARNESS_OUTPUT_ROOT": str(self.root)}
        offset = self.log.stat().st_size if self.log.is_file() else 0  # a restart appends to the same log
        handle = open(self.log, "a")
        self.proc = subprocess.Popen([sys.executable, "-m", "harness", "server", "--port", str(self.port), *self.backend],
                                     cwd=self.root, env=env, stdout=handle, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.findall(r"ready at \S+ .*process group (\d+)", self.log.read_text()[offset:])
            if found:
                self.group, self.crashed = int(found[-1]), False
                return self
            assert self.proc.poll() is None, f"server exited early:\n{self.log.read_text()[-3000:]}"
            time.sleep(0.3)
        raise AssertionError(f"server not ready in {timeout} s:\n{self.log.read_text()[-3000:]}")

    def crash(self) -> None:
        """SIGKILL the MLflow server processes, as a crash would (the harness wrapper then exits)."""
        os.killpg(self.group, signal.SIGKILL)
        self.proc.wait(30)
        self.crashed = True

    def stop(self) -> int:
        """SIGTERM `harness server` (exit code 0 expected) and check no MLflow process outlives it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(60)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                os.killpg(self.group, 0)
            except ProcessLookupError:
                return code
            time.sleep(0.2)
        raise AssertionError(f"MLflow server processes (group {self.group}) outlived `harness server`")


class Postgres:
    """A throwaway PostgreSQL server (Debian's binaries): initdb in a fresh folder, started on a free loopback
    port with trust authentication for the user `harness`, one database `mlflow`; stop() removes it all.
    As root, the server runs as the `postgres` system user (PostgreSQL refuses to run as root)."""

    def __init__(self, bin_dir: Path):
        self.bin_dir, self.port = bin_dir, free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="harness-pg-"))
        self.data, self.log = self.folder / "data", self.folder / "server.log"
        self.uri = f"postgresql://harness@127.0.0.1:{self.port}/mlflow"
        self._as_user: List[str] = []
        if os.geteuid() == 0:
            self._as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.folder, "postgres")

    @staticmethod
    def binaries() -> Optional[Path]:
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        return found[-1].parent if found else None

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run([*self._as_user, str(self.bin_dir / tool), *args], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, f"{tool} failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"

    def start(self) -> "Postgres":
        self._run("initdb", "-D", str(self.data), "-U", "harness", "--auth=trust", "--encoding=UTF8", "-N")
        options = f"-p {self.port} -h 127.0.0.1 -k {self.folder} -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "harness", "mlflow")
        return self

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").is_file():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def writer_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    return {**os.environ, **QUIET_ENV, **(extra or {})}


def start_writer(uri: str, run_dir: Path, *args: str, env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, str(WRITER), "--uri", uri, "--run-dir", str(run_dir), *args],
                            env=writer_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 600) -> tuple:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def printed_run_id(out: str) -> Optional[str]:
    found = re.search(r"run_id=(\w+)", out)
    return None if not found or found.group(1) == "None" else found.group(1)


def harness_tool(*args: str, root: Path, env: Optional[Dict[str, str]] = None, timeout: float = 300):
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=root, capture_output=True, text=True,
                          env={**writer_env(env), "HARNESS_OUTPUT_ROOT": str(root)}, timeout=timeout)


def runs_of(uri: str, experiment: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r} in {uri}"
    return client.search_runs([found.experiment_id], max_results=1000)


def points_of(uri: str, run_id: str, keys: List[str]) -> Counter:
    """(key, step) -> how many points the store holds (1 everywhere when nothing is lost or duplicated)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    return Counter((key, m.step) for key in keys for m in client.get_metric_history(run_id, key))


def assert_exactly_once(uri: str, run_id: str, steps: int, metrics: int) -> None:
    keys = [f"m/{k}" for k in range(metrics)]
    counts = points_of(uri, run_id, keys)
    missing = [(k, s) for k in keys for s in range(1, steps + 1) if counts[(k, s)] == 0]
    duplicated = {p: n for p, n in counts.items() if n > 1}
    assert not missing, f"run {run_id}: {len(missing)} points missing, e.g. {missing[:5]}"
    assert not duplicated, f"run {run_id}: points duplicated, e.g. {list(duplicated.items())[:5]}"
    assert sum(counts.values()) == steps * metrics


def wait_until(condition, what: str, timeout: float = 120) -> None:
    """Poll `condition` every 0.2 s; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
