"""Is a tracking store usable? Asked by the tools that read or serve a store (report, status, repair, sync,
server) before MLflow is: a SQLite file that is not a database or is corrupt, a folder where the database
should be, a server where nothing answers within a few seconds. Each is one line naming the store and what
is wrong (`StoreFault`), instead of MLflow's tracebacks or its minutes of retries. The quick probe reads the schema
and the tables MLflow reads whenever it opens a store (its schema revision, the experiments). A SQLite file corrupt
only in pages the probe does not read is found when a query reaches them (`corruption_in`, at each tool's
boundary), and said the same way."""
from __future__ import annotations

import socket
import sqlite3
from pathlib import Path
from typing import Optional
from urllib.parse import urlparse

from harness.infra.secrets import scrub

PROBE_SECONDS = 5.0
SQLITE_HEADER = b"SQLite format 3\x00"


class StoreFault(ValueError):
    """A store that cannot be used; the message is one line naming it."""


def sqlite_path(uri: str):
    """The database file of a `sqlite:///path` URI (None for other stores and in-memory SQLite)."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///"):].split("?", 1)[0]
    return Path(path).expanduser() if path and path != ":memory:" else None


def check_store(uri: str) -> None:
    """StoreFault (one line) when the store at `uri` is known to be unusable; a store that does not exist yet is
    left to its creator."""
    path = sqlite_path(uri)
    if path is not None:
        _check_sqlite(path, uri)
        return
    parsed = urlparse(uri)
    if parsed.scheme in ("http", "https"):
        _check_reachable(parsed, uri)


def _check_sqlite(path: Path, uri: str) -> None:
    if path.is_dir():
        raise StoreFault(f"tracking store {uri}: {path} is a folder, not a SQLite database")
    if not path.exists():
        return
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as err:
        raise StoreFault(f"tracking store {uri}: cannot read {path} ({err.strerror or err})") from None
    if header and header != SQLITE_HEADER:
        raise StoreFault(f"tracking store {uri}: {path} is not a SQLite database (corrupt, or another kind of file); "
                         "move it aside and restore a backup, or give another store")
    if not header:
        return  # an empty file: SQLite and MLflow take it as a new database
    try:
        _probe(f"{path.resolve().as_uri()}?mode=ro")
    except sqlite3.DatabaseError as err:
        if not getattr(err, "sqlite_errorname", "").startswith("SQLITE_READONLY"):
            raise corrupt(uri, path, err) from None
        # A writer killed mid-transaction left a hot journal, which only a writable connection may roll back
        # (SQLite's own recovery, as MLflow's first connection would do it).
        try:
            _probe(path.resolve().as_uri())
        except sqlite3.DatabaseError as err:
            raise corrupt(uri, path, err) from None


def corrupt(uri: str, path: Path, reason) -> StoreFault:
    """The one line for a corrupt SQLite store: what is wrong and what to do."""
    return StoreFault(f"tracking store {scrub(uri)}: {path} is corrupt ({reason}); move it aside and restore a "
                      f"backup, or use another store (--tracking-uri or MLFLOW_TRACKING_URI); sqlite3 {path} .recover "
                      "may save part of it")


def corruption_in(err: BaseException, uri: Optional[str]) -> Optional[StoreFault]:
    """The StoreFault of a SQLite store at `uri` when `err`, or an error it was raised from (SQLAlchemy and MLflow
    wrap SQLite's), says the database is corrupt; else None."""
    path = sqlite_path(uri) if uri else None
    seen: Optional[BaseException] = err
    while path is not None and seen is not None:
        if isinstance(seen, sqlite3.DatabaseError) and _is_corruption(seen):
            return corrupt(uri, path, seen)
        seen = seen.__cause__ or seen.__context__
    return None


def _is_corruption(err: sqlite3.DatabaseError) -> bool:
    name = getattr(err, "sqlite_errorname", "") or ""
    return name.startswith("SQLITE_CORRUPT") or name == "SQLITE_NOTADB" or "malformed" in str(err)


# What MLflow reads whenever it opens a store, before any command's own query: its schema revision (its schema check)
# and the experiments (the default one's lookup). Small tables: read whole, in milliseconds.
OPENING_TABLES = ("alembic_version", "experiments")


def _probe(uri: str) -> None:
    connection = sqlite3.connect(uri, uri=True, timeout=PROBE_SECONDS)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()  # "malformed", "not a database"
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table in OPENING_TABLES:
            if table in tables:
                connection.execute(f"SELECT * FROM {table}").fetchall()
    finally:
        connection.close()


def _check_reachable(parsed, uri: str) -> None:
    host = parsed.hostname or "localhost"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
    except OSError as err:
        reason = "no answer" if isinstance(err, socket.timeout) else (err.strerror or str(err))
        raise StoreFault(f"tracking store {scrub(uri)} is unreachable: {reason} at {host}:{port} "
                         f"(waited up to {PROBE_SECONDS:g} s); is the server running?") from None
