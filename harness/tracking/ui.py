"""The MLflow UI view of a harness experiment: a training experiment whose runs table shows the columns
that tell runs apart, and runs with short readable names.

- MLflow 3.17/3.18's UI starts in its GenAI mode (a traces overview, no runs) unless the link says
  `workflowType=machine_learning` (else it keeps the mode last chosen in that browser), and within that
  mode opens an experiment by its kind (experiment tag `mlflow.experimentKind`). Harness experiments are
  marked `custom_model_development` and the links the harness prints ask for the machine-learning mode, so
  they open on the runs table. A run's link names its experiment (`#/experiments/<id>/runs/<run>`): the
  UI redirects the short `#/runs/<run>` there and drops the query, mode included.
- The UI keeps table columns in browser state; a "shared view" (experiment tag
  `mlflow.sharedViewState.<key>`, opened with `?viewStateShareKey=<key>`) carries them in the store instead,
  so one link shows every sweep's runs with their objective, threshold, precision, seed and headline metrics,
  and a Run Name column wide enough for the whole name:

    http://127.0.0.1:5000/#/experiments/<id>/runs?viewStateShareKey=harness&workflowType=machine_learning

- A run is named `dppo δ=0.1 s0 @ 04:31:07` (objective, its threshold, precision when not the default bf16, seed, and
  the time of its folder), a sweep's job `dppo δ=0.1 s0 @ 04:35:12 #3` (the sweep folder's time and the
  job's subfolder), so reruns of one config stay apart in the runs table and in `status`; the overrides that
  made it are its description (tag `mlflow.note.content`) and tag `harness.overrides`.

Sweep jobs are nested under their parent run (click a parent's [+] to list them)."""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Dict, Optional

from omegaconf import DictConfig

from harness.infra.secrets import scrub

log = logging.getLogger("harness")

VIEW_KEY = "harness"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
KIND_TAG = "mlflow.experimentKind"
TRAINING_KIND = "custom_model_development"  # the UI's "machine learning" kind (vs genai_development)
TRAINING_MODE = "workflowType=machine_learning"  # the UI's mode, read from the link (default: genai)
PARAM_COLUMNS = ("algo.name", "algo.delta", "algo.relax_alpha", "algo.eps", "precision.name", "seed")
METRIC_COLUMNS = ("eval/final_accuracy", "eval/accuracy", "train/reward")  # eval/best_accuracy: one click away
# An objective's threshold parameters, as the papers write them.
SYMBOLS = (("delta", "δ"), ("relax_alpha", "α"), ("eps", "ε"), ("trunc_c", "c"))
DEFAULT_PRECISION = "bf16"  # conf/config.yaml's default precision: not repeated in every run name
CLOCK = re.compile(r"(?:^|[_T])(\d{2})-(\d{2})-(\d{2})(?:-\d+)?$")  # Hydra's H-M-S[-µs], a sweep's date_H-M-S


RUN_NAME_COLUMN = "attributes.`Run Name`"  # the UI's id of its Run Name column
RUN_NAME_WIDTH = 340  # px: `dppo δ=0.15 fp8_rollout s12 @ 04:35:12 #17` whole (the UI's 190 cuts the time and job)


def default_view() -> str:
    columns = [f"params.`{p}`" for p in PARAM_COLUMNS] + [f"metrics.`{m}`" for m in METRIC_COLUMNS]
    # the UI applies a stored width only to the columns its stored order names (Run Name is pinned first anyway)
    return json.dumps({"selectedColumns": columns, "columnOrder": [RUN_NAME_COLUMN],
                       "columnWidths": {RUN_NAME_COLUMN: RUN_NAME_WIDTH}})


def set_default_view(client, experiment_id: str) -> None:
    """Mark the experiment a training experiment and store the harness view on it (cheap; overwrites an
    older version)."""
    client.set_experiment_tag(experiment_id, KIND_TAG, TRAINING_KIND)
    client.set_experiment_tag(experiment_id, VIEW_TAG, default_view())


def runs_url(tracking_uri: str, experiment_id: str) -> Optional[str]:
    """The UI link of the experiment's runs table, for a tracking server (None for a local store)."""
    if not tracking_uri.startswith(("http://", "https://")):
        return None
    # a link is printed: never with the URI's password
    return f"{scrub(tracking_uri).rstrip('/')}/#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_KEY}&{TRAINING_MODE}"


def run_page(run_id: str, experiment_id: Optional[str]) -> str:
    """The UI page of a run (the part after the server's address), in the machine-learning mode."""
    route = f"#/experiments/{experiment_id}/runs/{run_id}" if experiment_id else f"#/runs/{run_id}"
    return f"{route}?{TRAINING_MODE}"


def experiment_of_run(tracking_uri: str, run_id: str) -> Optional[str]:
    """The experiment id of a run (for its link), None when the store cannot say."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    try:
        return MlflowClient(tracking_uri=tracking_uri).get_run(run_id).info.experiment_id
    except (MlflowException, OSError) as err:  # the link falls back to `#/runs/<id>`
        log.debug("no experiment id for run %s: %s", run_id, err)
        return None


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def folder_label(run_dir: Path, sweep_dir: Optional[str] = None) -> str:
    """`04:31:07` for a run in Hydra's `<date>/<H-M-S-µs>` folder, `04:35:12 #3` for a sweep's job in subfolder
    `3`; a folder named otherwise shows its name."""
    def clock(folder: Path) -> str:
        found = CLOCK.search(folder.name)
        return ":".join(found.groups()) if found else folder.name

    run_dir = Path(run_dir)
    if not sweep_dir:
        return clock(run_dir)
    try:
        job = run_dir.relative_to(sweep_dir).as_posix()
    except ValueError:
        job = run_dir.name
    return f"{clock(Path(sweep_dir))} #{job}"


def display_name(cfg: DictConfig, folder: str = "", overrides: str = "") -> str:
    """`dppo δ=0.1 s0 @ 04:31:07`: the objective, its threshold (a relaxation α only when on), the precision
    when not the default (bf16), the seed, a debug preset among the run's `overrides` (`debug=quick` adds
    `quick`: a pipeline check, not a result) and `folder` (`folder_label`) when given."""
    algo = cfg.algo
    parts = [str(algo.name)]
    for key, symbol in SYMBOLS:
        value = algo.get(key)
        if value is None or (key == "relax_alpha" and not value):
            continue
        parts.append(f"{symbol}={_number(value)}")
    precision = str(cfg.precision.name)
    if precision != DEFAULT_PRECISION:
        parts.append(precision)
    parts.append(f"s{cfg.seed}")
    parts += [o.split("=", 1)[1] for o in overrides.split(",") if o.split("=", 1)[0].lstrip("+~") == "debug" and "=" in o]
    if folder:
        parts += ["@", folder]
    return " ".join(parts)


def description_tags(overrides: str) -> Dict[str, str]:
    """The overrides that made a run (already free of secrets), as its description in the UI and a tag."""
    shown = " ".join(overrides.split(",")) if overrides else "(defaults)"
    return {"harness.overrides": overrides, "mlflow.note.content": f"python -m harness {shown}"}
