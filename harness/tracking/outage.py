"""When the tracking store is unreachable: fail fast, tell the user once, keep training.

MLflow's HTTP client retries for minutes by default (7 retries, 120 s timeout); a run that waits that
long on every call stalls training. The harness shortens both before creating any client, unless the
user set them, and records to the run's spool instead (`harness.tracking.spool`)."""
from __future__ import annotations

import logging
import os
import re
import threading
from typing import Tuple, Type

from harness.tracking.quiet import quiet_libraries, verbose

log = logging.getLogger("harness")

CLIENT_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}
QUIETED_LOGGERS = {
    "urllib3.connectionpool": logging.ERROR,
    "mlflow.utils.async_logging.async_logging_queue": logging.CRITICAL,
    "mlflow.store.db.utils": logging.CRITICAL,  # a read-only or full SQLite store: a traceback per failed write
}
SHOWN_WHEN_VERBOSE = ("mlflow.store.db.utils",)  # its INFO lines (store creation, migrations) are what -v is for
# MLflow error codes that mean "this record is wrong", not "the store is away": retrying cannot help, so
# the record is skipped with a warning. Anything else (refused connection, timeout, 5xx, bad credentials)
# is an outage: the record is spooled and uploaded later.
REJECTED_CODES = ("INVALID_PARAMETER_VALUE", "BAD_REQUEST", "RESOURCE_DOES_NOT_EXIST", "INVALID_STATE",
                  "RESOURCE_ALREADY_EXISTS")

_warned: set = set()
_warned_lock = threading.Lock()


def apply_client_defaults() -> None:
    """Short MLflow HTTP retries and timeout, so an outage costs seconds, not minutes (user's env wins).

    urllib3's own "Retrying ..." warnings and the errors of MLflow's asynchronous logging queue (the tracker
    waits on its calls and spools what failed) are silenced too, unless the user set those loggers' levels:
    the harness says once what an outage means for the run, rather than lines per failed call."""
    quiet_libraries()
    for name, value in CLIENT_DEFAULTS.items():
        os.environ.setdefault(name, value)
    for name, level in QUIETED_LOGGERS.items():
        if name in SHOWN_WHEN_VERBOSE and verbose():  # -v / HARNESS_LOG_LEVEL=INFO asked for the store's lines
            continue
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(level)


def store_errors() -> Tuple[Type[BaseException], ...]:
    """What a store that is away, full, read-only or refusing raises through MLflow's client: MLflow's own
    errors, SQLAlchemy's (a database store) and OSError (requests' connection errors, a full disk). Imported
    when an error is matched (`except store_errors()`), so importing this module does not load mlflow."""
    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import SQLAlchemyError

    return MlflowException, SQLAlchemyError, OSError


def is_rejected(err: BaseException) -> bool:
    """True when the store answered and refused the request (a bad value), False for an outage."""
    from mlflow.exceptions import MlflowException

    return isinstance(err, MlflowException) and err.error_code in REJECTED_CODES


def describe(err: BaseException) -> str:
    """A short reason: `Connection refused`, `Read timed out`, or the error's first line."""
    text = str(err).strip()
    reason = re.search(r"\[Errno -?\d+\] ([^\"')]+)|(Read timed out|Connection aborted|Connection reset)", text)
    if reason:
        return (reason.group(1) or reason.group(2)).strip()
    database = re.search(r"\((?:sqlite3|psycopg2?|pymysql)\.[\w.]+\) ([^\n\[]+)", text)  # under SQLAlchemy's wrapping
    if database:
        return database.group(1).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(err).__name__}: {first}"[:200]


def warn_once(key: str, message: str) -> None:
    """Log `message` as a warning the first time `key` is seen in this process."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning(message)
