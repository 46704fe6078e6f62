"""A sweep's verdicts on its MLflow parent run, where the MLflow UI shows them: per verdict the tag
`harness.verdict.<report>.<subject>` = its word (sensitive, undecided, reproduced, …) and
`harness.verdict.<report>.<subject>.line` = its short line; the numbers behind it as metrics named
`<report>/<subject>/<measure>` (e.g. `sensitivity/dppo/final_accuracy_delta_0.1`, the reports' final
accuracy: the mean over seeds of each run's mean of its last evaluations); and every verdict line in the run's
description (`mlflow.note.content`), which the run's page shows first."""
from __future__ import annotations

import logging
import re
import time
from typing import List, Sequence

from harness.reports.rendering.verdicts import Verdict

log = logging.getLogger("harness")
NOTE_TAG = "mlflow.note.content"  # MLflow's run description
TAG_PREFIX = "harness.verdict"
BATCH_TAGS = 100  # MLflow's limit of tags per log_batch
LINE_LIMIT = 4000  # a tag value's length MLflow accepts everywhere
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\- /:]+")
_ASCII = {"δ": "delta", "ε": "epsilon", "α": "alpha", "β": "beta", "τ": "tau"}


def safe_name(text: str) -> str:
    """A name MLflow accepts as a tag key or metric name (letters, digits, `_ . - / :` and spaces)."""
    for letter, word in _ASCII.items():
        text = text.replace(letter, word)
    return _UNSAFE.sub("_", text).strip() or "_"


def tags_of(verdicts: Sequence[Verdict]) -> dict:
    tags = {}
    for v in verdicts:
        key = f"{TAG_PREFIX}.{safe_name(v.report)}.{safe_name(v.subject)}"
        tags[key] = v.word
        tags[f"{key}.line"] = v.short[:LINE_LIMIT]
    if verdicts:
        tags[NOTE_TAG] = "\n".join(["**Verdicts of this sweep's reports** (reports/index.html):", ""] +
                                   [f"- {v.report}: {v.short}" for v in verdicts])[:LINE_LIMIT]
    return tags


def metrics_of(verdicts: Sequence[Verdict]) -> dict:
    return {f"{safe_name(v.report)}/{safe_name(v.subject)}/{safe_name(name)}": value
            for v in verdicts for name, value in v.measures.items()}


def log_verdicts(tracking_uri: str, run_id: str, verdicts: Sequence[Verdict]) -> bool:
    """Tag the parent run `run_id` with `verdicts` and log their numbers; False (and a warning) on failure."""
    if not verdicts:
        return True
    from mlflow.entities import Metric, RunTag  # mlflow loads only when a sweep's reports are logged
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    now = int(time.time() * 1000)
    tags: List[RunTag] = [RunTag(k, v) for k, v in tags_of(verdicts).items()]
    metrics = [Metric(k, float(v), now, 0) for k, v in metrics_of(verdicts).items()]
    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        for start in range(0, max(len(tags), 1), BATCH_TAGS):
            client.log_batch(run_id, metrics=metrics if start == 0 else [], tags=tags[start:start + BATCH_TAGS])
        return True
    except (MlflowException, OSError) as err:
        log.warning("could not record the verdicts on parent run %s: %s", run_id, err)
        return False
