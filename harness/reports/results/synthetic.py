"""A synthetic sweep in a real MLflow store: for report tests, the collector benchmark and demos.

Runs are created through `MlflowClient` (params, tags, status, artifacts exactly as harness writes them);
metric histories go through `log_batch` (MLflow's public API: the harness never writes MLflow's tables).
Curves are deterministic given the run's objective, params and seed.
"""
from __future__ import annotations

import math
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from harness.algorithms import validate_params

Series = Tuple[Sequence[int], Sequence[float]]
STEP_METRICS = (
    "train/reward", "train/accuracy", "train/entropy", "train/mismatch", "train/grad_norm", "train/loss",
    "train/response_length", "objective/masked_frac", "objective/masked_frac_pos", "objective/masked_frac_neg",
    "objective/lowprob_masked_frac", "objective/masked_nu_mean", "objective/masked_entropy",
    "objective/weight_min", "objective/weight_mean", "objective/weight_max", "objective/ratio_mean",
    "objective/ratio_max", "objective/abs_pi_minus_nu", "objective/is_weight_mean",
)
MAX_FLOAT = 1.7976931348623157e308
PRECISION_NOISE = {"fp32": 1.0, "bf16": 3.0, "fp16": 2.0, "fp8_rollout": 6.0, "fp8_e2e": 8.0}


@dataclass
class FakeRun:
    """One synthetic run. metrics: explicit histories {key: (steps, values)} replacing generated ones."""

    objective: str = "dppo"
    algo: Dict[str, object] = field(default_factory=dict)  # algo.* params besides the defaults
    seed: int = 0
    precision: str = "fp32"
    status: str = "FINISHED"
    metrics: Optional[Dict[str, Series]] = None
    error: Optional[str] = None  # logged as the error.txt artifact
    token_stats: Optional[Dict[int, Dict[str, np.ndarray]]] = None  # step -> arrays nu, masked, entropy
    collapse_at: Optional[int] = None  # generated curves: accuracy falls to ~0.05 from this step
    stop_at: Optional[int] = None  # generated curves end here (a RUNNING or FAILED run)
    params: Dict[str, object] = field(default_factory=dict)  # other params, e.g. {"precision.mismatch_scale": 8}


def generated_metrics(run: FakeRun, params: Dict[str, str], steps: int, eval_every: int) -> Dict[str, Series]:
    """Plausible histories: rising accuracy (level set by objective/threshold), decaying entropy, ..."""
    rng = np.random.default_rng(zlib.crc32(repr((run.objective, sorted(params.items()))).encode()))
    last = min(steps, run.stop_at if run.stop_at is not None else steps)
    t = np.arange(1, last + 1)
    threshold = float(params.get("algo.delta", params.get("algo.eps", params.get("algo.eps_high", 0.2))))
    level = 0.45 + 0.25 / (1.0 + abs(math.log(max(threshold, 1e-6) / 0.15))) + 0.05 * rng.standard_normal()
    learn = level * (1.0 - np.exp(-t / max(steps / 4.0, 1.0)))
    if run.collapse_at is not None:
        learn = np.where(t >= run.collapse_at, 0.05, learn)
    train_acc = np.clip(learn + 0.06 * rng.standard_normal(len(t)), 0, 1)
    noise = PRECISION_NOISE.get(run.precision, 1.0)
    mismatch = 0.002 * noise * (1.0 + t / steps * noise) * np.exp(0.1 * rng.standard_normal(len(t)))
    masked = np.clip(0.05 + 0.02 * rng.standard_normal(len(t)), 0, 1)
    out: Dict[str, Series] = {
        "train/reward": (t, train_acc), "train/accuracy": (t, train_acc),
        "train/entropy": (t, 1.2 * np.exp(-t / steps) + 0.02 * rng.standard_normal(len(t))),
        "train/mismatch": (t, mismatch), "train/grad_norm": (t, np.exp(0.3 * rng.standard_normal(len(t)))),
        "train/loss": (t, 0.1 * rng.standard_normal(len(t))), "train/response_length": (t, 4 + 0 * t),
        "objective/masked_frac": (t, masked), "objective/masked_frac_pos": (t, masked * 1.1),
        "objective/masked_frac_neg": (t, masked * 0.9), "objective/lowprob_masked_frac": (t, masked * 2),
        "objective/masked_nu_mean": (t, 0.3 + 0 * t), "objective/masked_entropy": (t, 0.8 + 0 * t),
        "objective/weight_min": (t, 0 * t), "objective/weight_mean": (t, 1 - masked),
        "objective/weight_max": (t, 1 + 0 * t), "objective/ratio_mean": (t, 1 + 0.01 * t / steps),
        "objective/ratio_max": (t, 1.5 + 0 * t), "objective/abs_pi_minus_nu": (t, mismatch * 2),
        "objective/is_weight_mean": (t, 1 + 0 * t),
    }
    eval_steps = np.array([0] + [s for s in t if s % eval_every == 0 or s == steps])
    acc = np.interp(eval_steps, np.r_[0, t], np.r_[0.0, learn]) + 0.03 * rng.standard_normal(len(eval_steps))
    acc = np.clip(acc, 0, 1)
    out["eval/accuracy"] = (eval_steps, acc)
    out["eval/best_accuracy"] = (eval_steps, np.maximum.accumulate(acc))
    return out


def run_params(run: FakeRun, steps: int, eval_every: int) -> Dict[str, str]:
    algo = validate_params(run.objective, run.algo)
    params = {f"algo.{k}": "null" if v is None else str(v) for k, v in algo.items()}
    params.update({"algo.name": run.objective, "precision.name": run.precision, "seed": str(run.seed),
                   "trainer.steps": str(steps), "trainer.eval_every": str(eval_every),
                   "trainer.name": "synthetic", "dataset.name": "arithmetic"})
    params.update({k: str(v) for k, v in run.params.items()})
    return params


def write_sweep(tracking_uri: str, runs: List[FakeRun], sweep_id: str = "2026-01-01/00-00-00-000000",
                experiment: str = "harness", steps: int = 20, eval_every: int = 5,
                parent: bool = False) -> Dict[str, object]:
    """Write `runs` (tagged with `sweep_id`) into the store; returns {"run_ids": [...], "parent_id": ...}.

    The experiment is created if missing, with artifacts beside a sqlite store (`mlartifacts/`).
    parent=True also creates a parent run (tag harness.role=parent) the runs point to.
    """
    from mlflow.entities import Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        location = None
        if tracking_uri.startswith("sqlite:"):
            location = (Path(tracking_uri.split("sqlite:///", 1)[1]).parent / "mlartifacts").as_uri()
        exp_id = client.create_experiment(experiment, artifact_location=location)
    else:
        exp_id = found.experiment_id
    parent_id = None
    if parent:
        parent_id = client.create_run(exp_id, run_name=f"sweep {sweep_id}", tags={
            "harness.role": "parent", "harness.sweep_id": sweep_id}).info.run_id
    run_ids, histories = [], {}
    for i, run in enumerate(runs):
        params = run_params(run, steps, eval_every)
        tags = {"harness.sweep_id": sweep_id, "algo": run.objective, "precision": run.precision,
                "harness.config_hash": f"{zlib.crc32(repr(sorted(params.items())).encode()):08x}"}
        if parent_id:
            tags["mlflow.parentRunId"] = parent_id
        name = f"algo={run.objective}," + ",".join(f"{k}={v}" for k, v in run.algo.items()) + f",seed={run.seed}"
        run_id = client.create_run(exp_id, run_name=name, tags=tags).info.run_id
        items = [Param(k, v) for k, v in sorted(params.items())]
        for j in range(0, len(items), 100):
            client.log_batch(run_id, params=items[j:j + 100])
        client.log_batch(run_id, tags=[RunTag("harness.job_num", str(i))])
        histories[run_id] = (run.metrics if run.metrics is not None
                             else generated_metrics(run, params, steps, eval_every))
        _log_artifacts(client, run_id, run)
        run_ids.append(run_id)
    for run_id, metrics in histories.items():
        _log_metrics(client, run_id, metrics)
    for run_id, run in zip(run_ids, runs):
        if run.status != "RUNNING":
            client.set_terminated(run_id, status=run.status)
    if parent_id:
        client.set_terminated(parent_id, status="FINISHED")
    return {"run_ids": run_ids, "parent_id": parent_id, "experiment_id": exp_id}


def _log_artifacts(client, run_id: str, run: FakeRun) -> None:
    if run.error:
        client.log_text(run_id, run.error, "error.txt")
    if run.token_stats:
        with tempfile.TemporaryDirectory() as tmp:
            for step, arrays in run.token_stats.items():
                np.savez(Path(tmp) / f"step_{step:06d}.npz", **arrays)
            client.log_artifacts(run_id, tmp, "token_stats")


def _log_metrics(client, run_id: str, metrics: Dict[str, Series]) -> None:
    from mlflow.entities import Metric

    batch = [Metric(key, float(v), 1_700_000_000_000 + int(s), int(s))
             for key, (steps, values) in metrics.items() for s, v in zip(steps, values)]
    for j in range(0, len(batch), 1000):
        client.log_batch(run_id, metrics=batch[j:j + 1000])
