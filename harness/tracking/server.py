"""`python -m harness server`: an MLflow tracking server for many writers (sweeps, Slurm arrays).

    python -m harness server [--port 5000] [--backend-store-uri sqlite:///... | postgresql://...]
                             [--artifacts-destination DIR] [--host 127.0.0.1] [--workers 2]

The database is created (or migrated) here, once, under a file lock, BEFORE the server starts, so neither
the server's workers nor the runs race on its creation. Then `mlflow server` starts in its own process
group, and this waits until it answers, prints its URL, and stops it cleanly on Ctrl-C / SIGTERM; killed
outright, this takes the group down with it (`harness.infra.group_leader`).

What the harness never uses stays off (MLflow's job queue: a runner and ~7 huey consumer processes, for
GenAI jobs), and MLflow's start-up chatter stays off the terminal (its INFO lines, uvicorn's process lines,
a Starlette deprecation warning, the registry-store and security-middleware notices, and the tracebacks of
a known race in MLflow's Assistant panel: `server_output.py`) unless asked for with `-v` /
HARNESS_LOG_LEVEL=INFO. On a busy 2-core machine it answers after ~32 s instead of ~48 s.
Point runs at it with `tracking=server` (http://127.0.0.1:5000) or `tracking.uri=http://HOST:PORT`."""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import List, Optional

from harness.infra.parent_death import die_with_parent
from harness.tracking import server_output
from harness.tracking.params import scrub
from harness.tracking.quiet import quiet_libraries, verbose
from harness.tracking.store import default_root, default_uri, folder_lock
from harness.tracking.store_check import StoreFault, check_store

BACKEND_SCHEMES = ("sqlite", "postgresql")
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 15.0
NO_JOB_QUEUE = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
# Starlette's notice about a module MLflow imports, shown once per worker (a UserWarning, so shown by default)
QUIET_WARNINGS = "ignore:starlette.middleware.wsgi is deprecated:UserWarning"


class BadArgument(Exception):
    """An argument the server cannot start with; the message is one line naming it (exit code 2)."""


class StartFailed(Exception):
    """The server did not come up (exit code 1)."""


def _check_backend(uri: str) -> None:
    scheme = uri.split(":", 1)[0].split("+")[0]
    if "://" not in uri or scheme not in BACKEND_SCHEMES:
        raise BadArgument(f"--backend-store-uri={scrub(uri)!r} is not allowed: use sqlite:///PATH or "
                          "postgresql://USER@HOST:PORT/DB")


def _check_port_free(host: str, port: int) -> None:
    if not 0 < port < 65536:
        raise BadArgument(f"--port={port} is not allowed: a port number 1-65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will: TIME_WAIT is no conflict
        try:
            sock.bind((host, port))
        except OSError as err:
            raise BadArgument(f"--port={port} is not allowed: {host}:{port} is in use ({err.strerror}); "
                              f"pick a free port, e.g. --port {port + 1}") from None


def prepare_database(uri: str, artifact_root: str) -> None:
    """Create the MLflow schema of an empty database, or migrate an old one, before anyone else uses it."""
    from mlflow.exceptions import MlflowException
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    lock_folder = Path(uri[len("sqlite:///"):]).parent if uri.startswith("sqlite:///") else default_root()
    if uri.startswith("sqlite:///"):
        lock_folder.mkdir(parents=True, exist_ok=True)
    with folder_lock(lock_folder):
        try:
            SqlAlchemyStore(uri, artifact_root)  # creates the tables of an empty database and the default experiment
        except MlflowException as err:
            if "out-of-date database schema" not in str(err):
                raise
            print(f"harness server: migrating {scrub(uri)} to the current MLflow schema", flush=True)
            subprocess.run([sys.executable, "-m", "mlflow", "db", "upgrade", uri], check=True, capture_output=True)
            SqlAlchemyStore(uri, artifact_root)


def _wait_ready(url: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise StartFailed(f"mlflow server exited with code {process.returncode} before answering "
                              "(its messages are above)")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise StartFailed(f"mlflow server did not answer at {url}/health within {timeout:.0f} s")


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when this process dies, even by SIGKILL; the child
    (`harness.infra.group_leader`) then stops its whole group, so no `mlflow server` outlives `harness server`
    holding the port."""
    die_with_parent(signal.SIGTERM)


def _stop(process: subprocess.Popen) -> None:
    """Terminate the server's whole process group (the workers too); kill it if it lingers."""
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            continue


def _parse(argv: List[str]) -> argparse.Namespace:
    root = default_root()
    parser = argparse.ArgumentParser(prog="python -m harness server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=5000, help="port to listen on (default 5000)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--backend-store-uri", default=default_uri(root),
                        help="sqlite:///PATH or postgresql://... (default: <HARNESS_OUTPUT_ROOT or .>/mlruns.db)")
    parser.add_argument("--artifacts-destination", default=str(root / "mlartifacts"),
                        help="folder for artifacts (default: <HARNESS_OUTPUT_ROOT or .>/mlartifacts)")
    parser.add_argument("--workers", type=int, default=2, help="server worker processes (default 2)")
    parser.add_argument("--access-log", action="store_true", help="log every request (off: thousands a sweep)")
    parser.add_argument("--ready-timeout", type=float, default=READY_TIMEOUT_S, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def server_command(args: argparse.Namespace, artifacts: Path) -> List[str]:
    """`mlflow server` under `harness.infra.group_leader`, with the registry in the tracking store (as MLflow's
    default, said explicitly: no notice) and uvicorn at WARNING unless -v."""
    uvicorn = ([] if args.access_log else ["--no-access-log"]) + ([] if verbose() else ["--log-level", "warning"])
    command = [sys.executable, "-m", "harness.infra.group_leader", sys.executable, "-m", "mlflow", "server",
               "--backend-store-uri", args.backend_store_uri, "--registry-store-uri", args.backend_store_uri,
               "--artifacts-destination", str(artifacts), "--host", args.host, "--port", str(args.port),
               "--workers", str(args.workers)]
    return command + (["--uvicorn-opts", " ".join(uvicorn)] if uvicorn else [])


def server_env() -> dict:
    """The server's environment: no job queue; MLflow's logging at WARNING and one known warning ignored,
    unless -v (quiet_libraries has set MLFLOW_LOGGING_LEVEL in this process already)."""
    env = {**os.environ, **NO_JOB_QUEUE}
    if not verbose():
        env["PYTHONWARNINGS"] = ",".join(filter(None, (env.get("PYTHONWARNINGS"), QUIET_WARNINGS)))
    return env


def main(argv: List[str]) -> int:
    args = _parse(argv)
    quiet_libraries()  # before mlflow is imported (the store below, the server's processes)
    process: Optional[subprocess.Popen] = None
    relay: Optional[threading.Thread] = None

    def request_stop(_signum, _frame):
        raise KeyboardInterrupt  # SIGTERM stops the server as Ctrl-C does

    try:
        _check_backend(args.backend_store_uri)
        if args.workers < 1:
            raise BadArgument(f"--workers={args.workers} is not allowed: an integer >= 1")
        _check_port_free(args.host, args.port)
        try:
            check_store(args.backend_store_uri)
        except StoreFault as err:
            raise BadArgument(str(err)) from None
        artifacts = Path(args.artifacts_destination).expanduser().resolve()
        if artifacts.exists() and not artifacts.is_dir():
            raise BadArgument(f"--artifacts-destination={artifacts} is not allowed: it is a file; give a folder")
        artifacts.mkdir(parents=True, exist_ok=True)
        prepare_database(args.backend_store_uri, artifacts.as_uri())
        signal.signal(signal.SIGTERM, request_stop)
        process = subprocess.Popen(server_command(args, artifacts), env=server_env(), start_new_session=True,
                                   stderr=None if verbose() else subprocess.PIPE,
                                   preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        if process.stderr is not None:
            relay = threading.Thread(target=server_output.relay, name="server-stderr", daemon=True,
                                     args=(process.stderr.fileno(), server_output.to_stderr))
            relay.start()
        url = f"http://{args.host}:{args.port}"
        _wait_ready(url, process, args.ready_timeout)
        print(f"harness server: ready at {url} (backend {scrub(args.backend_store_uri)}, artifacts {artifacts}, "
              f"process group {process.pid})\n"
              f"  runs: python -m harness tracking=server   (or tracking.uri={url})\n"
              f"  stop: Ctrl-C", flush=True)
        code = process.wait()
        print(f"harness server: mlflow server exited with code {code}", file=sys.stderr)
        return code or 1
    except BadArgument as err:
        print(f"harness server: error: {err}", file=sys.stderr)
        return 2
    except StartFailed as err:
        if relay is not None:
            relay.join(5)  # the server's last words first
        print(f"harness server: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("harness server: stopping", flush=True)
        return 0
    finally:
        if process is not None:
            _stop(process)
