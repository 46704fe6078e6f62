"""Library chatter stays off the terminal: a run shows one line, its progress bar and its summary.

MLflow logs INFO lines of its own (`Creating initial MLflow database tables...`, schema migrations) through
a handler it installs at import; its level comes from MLFLOW_LOGGING_LEVEL. The harness makes that WARNING
unless the user asked for more: `-v` on the command line (Hydra's `hydra.verbose=harness`, which sets the
`harness` logger to DEBUG in every process that runs a job), HARNESS_LOG_LEVEL=INFO / DEBUG (or set
MLFLOW_LOGGING_LEVEL themselves).

Every other library (matplotlib and its fontTools, urllib3, PIL, …) logs through the root logger, which
conf/config.yaml's `hydra_logging` and `job_logging` keep at WARNING (Hydra's defaults put it at INFO: a report's
PDF figures then printed hundreds of fontTools font-subsetting lines); the harness's own loggers are at INFO."""
from __future__ import annotations

import logging
import os
import sys

LEVEL_ENV = "HARNESS_LOG_LEVEL"
VERBOSE_LEVELS = ("DEBUG", "INFO")
MLFLOW_LEVEL_ENV = "MLFLOW_LOGGING_LEVEL"


def verbose() -> bool:
    return _asked_level() is not None


def _asked_level():
    """The level the user asked for: HARNESS_LOG_LEVEL's, or INFO for `-v` (the harness logger at DEBUG); None."""
    level = os.environ.get(LEVEL_ENV, "").strip().upper()
    if level in VERBOSE_LEVELS:
        return level
    return "INFO" if logging.getLogger("harness").level == logging.DEBUG else None


def quiet_libraries() -> None:
    """Make MLflow's own logging WARNING (and not print run URLs) unless the user asked for more; cheap and
    idempotent, called before any MLflow client is made."""
    level = _asked_level()
    if level:  # asked for on this command line: wins over an MLFLOW_LOGGING_LEVEL inherited from a parent
        os.environ[MLFLOW_LEVEL_ENV] = level
        logging.getLogger().setLevel(level)  # the libraries' loggers too (conf/config.yaml keeps them at WARNING)
        if "mlflow" in sys.modules:
            logging.getLogger("mlflow").setLevel(level)
        return
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # the harness prints its own line
    if MLFLOW_LEVEL_ENV in os.environ:
        return  # the user's choice
    os.environ[MLFLOW_LEVEL_ENV] = "WARNING"  # read by MLflow when it is imported (also in subprocesses)
    if "mlflow" in sys.modules:  # imported already: its loggers were configured at INFO
        for name in ("mlflow", "alembic"):
            logger = logging.getLogger(name)
            if logger.level < logging.WARNING:
                logger.setLevel(logging.WARNING)
