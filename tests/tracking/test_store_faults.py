"""Faults of the store end in one line naming the store and what is wrong, in bounded time (issue #25): a
corrupt `mlruns.db`, a port where nothing listens, a server given a store that is not a database or an
artifacts path that is a file; and a run spooling to a read-only store says so once, with no MLflow
tracebacks on the terminal."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from harness.tracking.store_check import StoreFault, check_store


def harness(*args: str, cwd, env=None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "HARNESS_OUTPUT_ROOT": str(cwd), **(env or {})})


def one_line(proc, *words: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    line, = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stdout + proc.stderr
    for word in words:
        assert word in line, line
    return line


@pytest.fixture
def real_store(tmp_path):
    """A real MLflow SQLite store with one experiment."""
    from mlflow.tracking import MlflowClient

    path = tmp_path / "mlruns.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").create_experiment("e")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow  # the harness's command line in subprocesses (fast loop: README)
def test_a_corrupt_store_is_one_line_for_every_command(tmp_path, real_store):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(os.urandom(8192))
    with open(real_store, "r+b") as handle:  # a real store whose pages were overwritten past its header
        handle.seek(100)
        handle.write(b"\0" * 4000)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    for store, what in ((garbage, "is not a SQLite database"), (real_store, "is corrupt")):
        uri = f"sqlite:///{store}"
        for command in (("status", "--tracking-uri", uri), ("repair", "--tracking-uri", uri),
                        ("report", str(run), "--tracking-uri", uri),
                        ("server", "--backend-store-uri", uri, "--port", str(free_port()))):
            one_line(harness(*command, cwd=tmp_path), str(store), what)


def test_a_port_where_nothing_listens_is_one_line_in_seconds(tmp_path):
    uri = f"http://127.0.0.1:{free_port()}"
    run = tmp_path / "run"
    (run / "spool").mkdir(parents=True)
    (run / "config.yaml").write_text("seed: 0\n")
    for command in (("report", str(run), "--tracking-uri", uri), ("status", "--tracking-uri", uri),
                    ("sync", str(run), "--tracking-uri", uri)):
        started = time.monotonic()
        one_line(harness(*command, cwd=tmp_path), uri, "unreachable")
        assert time.monotonic() - started < 60, "bounded: seconds, not MLflow's minutes of retries"


def test_check_store_names_what_is_wrong(tmp_path):
    (tmp_path / "folder.db").mkdir()
    with pytest.raises(StoreFault, match="is a folder, not a SQLite database"):
        check_store(f"sqlite:///{tmp_path / 'folder.db'}")
    check_store(f"sqlite:///{tmp_path / 'not_yet.db'}")  # a store not created yet is its creator's to make


WRITER_KILLED_MID_TRANSACTION = """
import os, signal, sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("PRAGMA cache_size=10")  # spill pages into the database file before the commit
connection.execute("BEGIN")
for i in range(2000):
    connection.execute("INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, 'r')", (f"k{i}", "x" * 400))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_store_whose_writer_was_killed_mid_transaction_is_usable(tmp_path, real_store):
    """A worker SIGKILLed while writing leaves a hot journal; it is SQLite's to roll back, not corruption."""
    subprocess.run([sys.executable, "-c", WRITER_KILLED_MID_TRANSACTION, str(real_store)], check=False)
    assert (tmp_path / "mlruns.db-journal").stat().st_size > 0
    check_store(f"sqlite:///{real_store}")
    repaired = harness("repair", "--tracking-uri", f"sqlite:///{real_store}", "--experiment", "e", cwd=tmp_path)
    assert repaired.returncode == 0, repaired.stderr[-2000:]
    import sqlite3

    with sqlite3.connect(real_store) as connection:
        assert connection.execute("SELECT count(*) FROM tags").fetchone() == (0,)  # rolled back, whole


def test_server_refuses_an_artifacts_path_that_is_a_file(tmp_path):
    (tmp_path / "artifacts").write_text("a file")
    proc = harness("server", "--backend-store-uri", f"sqlite:///{tmp_path / 'new.db'}", "--artifacts-destination",
                   str(tmp_path / "artifacts"), "--port", str(free_port()), cwd=tmp_path)
    one_line(proc, "--artifacts-destination", "is a file")
    assert not (tmp_path / "new.db").exists()


@pytest.fixture
def read_only_store(tmp_path, real_store):
    """The real store on a tmpfs remounted read-only (root only)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (mount / "mlruns.db").write_bytes(real_store.read_bytes())
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        yield mount / "mlruns.db"
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_spooling_to_a_read_only_store_is_one_line_not_tracebacks(run_harness, read_only_store):
    proc = run_harness("debug=quick", "trainer.steps=2", f"tracking.uri=sqlite:///{read_only_store}",
                       "experiment_name=e")
    assert proc.returncode == 0, proc.stderr[-3000:]
    terminal = proc.stdout + proc.stderr
    assert "Traceback" not in terminal and "SQLAlchemy" not in terminal, terminal[-3000:]
    said = [line for line in terminal.splitlines() if "attempt to write a readonly database" in line]
    assert len(said) == 1, terminal[-3000:]
    assert "FINISHED" in proc.stdout and "python -m harness sync" in terminal


@pytest.mark.slow  # the harness's command line in subprocesses (fast loop: README)
def test_a_store_corrupt_in_its_middle_pages_is_one_line_saying_what_to_do(tmp_path):
    """The quick probe reads the schema's pages only; garbage over the metric tables' pages is found when report
    or status reaches them, and said in the same one line, with what to do."""
    import sqlite3

    from harness.reports.results.synthetic import FakeRun, write_sweep

    store = tmp_path / "mlruns.db"
    sweep = "2026-04-04/00-00-00-000000"
    write_sweep(f"sqlite:///{store}", [FakeRun(objective="dppo", algo={"delta": d}, seed=s) for d in (0.1, 0.2)
                                       for s in (0, 1)], sweep_id=sweep)
    with sqlite3.connect(store) as connection:
        page_size, = connection.execute("PRAGMA page_size").fetchone()
        roots = [page for (page,) in connection.execute(
            "SELECT rootpage FROM sqlite_master WHERE tbl_name IN ('metrics', 'latest_metrics') AND rootpage > 1")]
    connection.close()
    with open(store, "r+b") as handle:
        for page in roots:
            handle.seek((page - 1) * page_size)
            handle.write(b"\xa5" * page_size)
    check_store(f"sqlite:///{store}")  # what the probe reads is whole
    uri = f"sqlite:///{store}"
    for command in (("report", sweep, "--tracking-uri", uri, "--out", str(tmp_path / "reports")),
                    ("status", "--tracking-uri", uri)):
        one_line(harness(*command, cwd=tmp_path), f"{store} is corrupt (database disk image is malformed)",
                 "restore a backup", f"sqlite3 {store} .recover")
    assert not (tmp_path / "reports" / "index.html").exists()
