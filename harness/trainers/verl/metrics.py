"""Bridge verl's metrics into the harness run: follow verl's file logger and rename its keys.

verl 0.9.1's `file` logger (utils/tracking.py FileLogger) appends one JSON line per step,
{"step": N, "data": {key: value}}, to $VERL_FILE_LOGGER_PATH. The harness forwards every line to its own
tracker (the same MLflow run and metrics.jsonl as any harness run), under its namespaces:

  critic/score/mean -> train/accuracy        critic/rewards/mean -> train/reward
  response_length/mean -> train/response_length
  actor/entropy -> train/entropy (the old-log-prob forward, anchor=recompute), else actor/entropy_loss ->
    train/entropy (the update's forward with actor.calculate_entropy, which overrides.py sets for
    anchor=rollout, where verl skips the old-log-prob forward)
  actor/pg_loss -> train/loss     actor/grad_norm -> train/grad_norm
  training/rollout_probs_diff_mean -> train/mismatch (decoupled mode only: |π' - μ|)
  val-core|val-aux/<set>/acc/mean@k -> eval/<set>/accuracy, best@k/mean -> eval/<set>/pass@k;
    eval/accuracy = the mean over eval sets (what sweeps and reports read)
  actor/objective/* -> objective/*: the harness loss's own metrics, which verl's trainer prefixes with
    `actor/` like every metric of the actor update (trainer/ppo/v1/trainer_base.py, rename_dict)
  actor/perf/* -> perf/actor/* (the actor update's peak GPU memory, GiB: verl's engine logs perf/max_memory_*
    and the trainer's actor/ prefix lands in front);  perf/* unchanged
  timing_s/<x> -> perf/time_s/<x>;  anything else -> verl/<key>
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

RENAMES = {
    "critic/score/mean": "train/accuracy",
    "critic/rewards/mean": "train/reward",
    "response_length/mean": "train/response_length",
    "actor/entropy": "train/entropy",
    "actor/pg_loss": "train/loss",
    "actor/grad_norm": "train/grad_norm",
    "training/rollout_probs_diff_mean": "train/mismatch",
}
ACTOR = "actor/"  # verl's prefix for the metrics of the actor update, the policy loss's included
FALLBACKS = {"actor/entropy_loss": "train/entropy"}  # used when the record lacks the RENAMES source
_EVAL = re.compile(r"val-(?:core|aux)/(?P<set>[^/]+)/acc/(?P<stat>mean|best)@(?P<k>\d+)(?:/mean)?")
_BAD = re.compile(r"[^\w./\- :]")


def _clean(key: str) -> str:
    return _BAD.sub("_", key.replace("@", "_at_"))


def translate(data: Dict[str, object]) -> Dict[str, float]:
    """Harness metrics from one verl log record (non-numeric values are dropped)."""
    out: Dict[str, float] = {}
    accuracy: Dict[str, Tuple[int, float]] = {}
    for key, raw in data.items():
        try:
            value = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        m = _EVAL.fullmatch(key)
        if m:
            k = int(m.group("k"))
            if m.group("stat") == "best":
                out[f"eval/{_clean(m.group('set'))}/pass_at_{k}"] = value
            elif k >= accuracy.get(m.group("set"), (0, 0.0))[0]:
                accuracy[m.group("set")] = (k, value)
        elif key in RENAMES:
            out[RENAMES[key]] = value
        elif key in FALLBACKS:
            out.setdefault(FALLBACKS[key], value)
        elif key.startswith(ACTOR + "objective/"):
            out[_clean(key[len(ACTOR):])] = value
        elif key.startswith(ACTOR + "perf/"):
            out["perf/actor/" + _clean(key[len(ACTOR + "perf/"):])] = value
        elif key.startswith(("objective/", "perf/")):
            out[_clean(key)] = value
        elif key.startswith("timing_s/"):
            out["perf/time_s/" + _clean(key[len("timing_s/"):])] = value
        else:
            out["verl/" + _clean(key)] = value
    for name, (_, value) in accuracy.items():
        out[f"eval/{_clean(name)}/accuracy"] = value
    if accuracy:
        out["eval/accuracy"] = sum(v for _, v in accuracy.values()) / len(accuracy)
    return out


def last_logged_step(path: Path) -> int:
    """The largest step of a metrics.jsonl (the run folder's or verl's), -1 when it has none."""
    last = -1
    if Path(path).is_file():
        with Path(path).open("rb") as fh:
            for line in fh:
                try:
                    last = max(last, int(json.loads(line)["step"]))
                except (ValueError, KeyError, TypeError):
                    continue
    return last


class MetricsFollower:
    """Reads the complete lines verl has appended since the last call (the file may not exist yet, and is
    truncated when verl restarts: then it is read from the start again)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.offset = 0
        self.partial = b""

    def poll(self) -> Iterator[Tuple[int, Dict[str, object]]]:
        if not self.path.is_file():
            return
        size = self.path.stat().st_size
        if size < self.offset:
            self.offset, self.partial = 0, b""
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            chunk = fh.read()
        self.offset += len(chunk)
        lines: List[bytes] = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "step" in record and isinstance(record.get("data"), dict):
                yield int(record["step"]), record["data"]
