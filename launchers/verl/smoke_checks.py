"""The checks of gpu_smoke.sh after its one verl step, each of which can fail; prints one line per check and
exits 1 if any failed.

  python launchers/verl/smoke_checks.py WORK MAX_MODEL_LEN      (the harness environment, repository root)

WORK is the smoke test's work folder: the harness output under WORK/out (its run folder, the MLflow SQLite
store), the tiny model under WORK/model. What is checked, and why it matters on the first GPU run:
  run          the MLflow run FINISHED with train/loss at step 1 and checkpoints/last.json naming step 1
  loss         verl's resolved config names loss_mode harness_dppo, and the harness loss's own objective/*
               metrics reached MLflow (verl prefixes them with actor/; metrics.py strips it)
  mu           objective/abs_pi_minus_nu is small and nonzero: in bypass mode the loss's anchor is vLLM's μ,
               which differs from the trainer's π_θ by numerics only (exactly 0 means μ never reached it)
  entropy      train/entropy is logged (bypass mode: from the update's forward, actor.calculate_entropy)
  eval         eval/accuracy is logged
  vllm length  vLLM ran with max_model_len = prompt + response (the length the memory preflight holds KV for)
  peak memory  the actor's peak allocated memory (perf/actor/max_memory_allocated_gb) is at least the
               preflight's model states for this model (16 bytes per parameter on one GPU: fp32 weights,
               gradients, Adam moments), which are a lower bound
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Callable, Dict, List, Tuple

from mlflow import MlflowClient

from harness.trainers.verl.memory import Model, Setup, training_gb

MU_SMALL = 0.1  # mean |π_θ - μ| in probability at the first mini-batch: numerics only
GIB = 1024 ** 3


def safetensors_params(model_dir: Path) -> int:
    """Parameters of a checkpoint, from its safetensors headers (8-byte length, then a JSON of shapes)."""
    total = 0
    for path in sorted(model_dir.glob("*.safetensors")):
        with path.open("rb") as fh:
            header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
        total += sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
    return total


def preflight_states_gb(model_dir: Path) -> Tuple[float, int]:
    config = json.loads((model_dir / "config.json").read_text())
    params = safetensors_params(model_dir)
    model = Model("smoke", params / 1e9, config["num_hidden_layers"], config["num_key_value_heads"],
                  config["head_dim"], config["num_attention_heads"])
    setup = Setup(gpu_gb=1.0, gpus_per_node=1, gpus=1, utilization=0.3, rollout_tp=1, rollout_bytes=2, sequence=1,
                  megatron=False, offload=False)
    return training_gb(model, setup), params


class Checks:
    def __init__(self):
        self.lines: List[str] = []
        self.failed = 0

    def check(self, name: str, what: Callable[[], str]) -> None:
        try:
            detail, ok = what(), True
        except (AssertionError, KeyError, StopIteration, OSError, ValueError) as err:
            detail, ok = f"{type(err).__name__}: {err}".splitlines()[0], False
        self.failed += not ok
        self.lines.append(f"  {'PASS' if ok else 'FAIL'}  {name:<12} {detail}")


def run_checks(work: Path, max_model_len: int) -> Checks:
    out, checks = work / "out", Checks()
    launch = next(out.rglob("verl/launch.log"), None)
    run_dir = launch.parent.parent if launch else None
    log = launch.read_text(errors="replace") if launch else ""
    db = next(out.rglob("*.db"), None)
    client = MlflowClient(tracking_uri=f"sqlite:///{db}") if db else None
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])] if client else []
    metrics: Dict[str, float] = runs[0].data.metrics if runs else {}

    def run() -> str:
        assert launch is not None, f"no verl/launch.log under {out}"
        assert len(runs) == 1, f"{len(runs)} MLflow runs in {db}"
        assert runs[0].info.status == "FINISHED", f"MLflow run status {runs[0].info.status}"
        steps = [m.step for m in client.get_metric_history(runs[0].info.run_id, "train/loss")]
        assert steps == [1], f"train/loss at steps {steps}, expected [1]"
        last = json.loads((run_dir / "checkpoints" / "last.json").read_text())
        assert last["step"] == 1, f"checkpoints/last.json {last}"
        return f"run {runs[0].info.run_id} FINISHED, train/loss={metrics['train/loss']:.4g} at step 1, checkpoint 1"

    def loss() -> str:
        assert re.search(r"loss_mode['\"]?\s*[:=]\s*['\"]?harness_dppo\b", log), \
            "verl's config in launch.log has no loss_mode harness_dppo"
        own = sorted(k for k in metrics if k.startswith("objective/"))
        assert "objective/masked_frac" in own, f"no objective/* metric in MLflow; has {sorted(metrics)[:30]}"
        return (f"harness_dppo in verl's config; {len(own)} objective/* metrics, "
                f"masked_frac={metrics['objective/masked_frac']:.3g}")

    def mu() -> str:
        value = metrics["objective/abs_pi_minus_nu"]
        assert 0 < value < MU_SMALL, f"objective/abs_pi_minus_nu={value:.3g}, expected in (0, {MU_SMALL})"
        return f"objective/abs_pi_minus_nu={value:.3g} in (0, {MU_SMALL})"

    def vllm_length() -> str:
        found = {int(v) for v in re.findall(r"max_(?:seq|model)_len['\"]?\s*[:=]\s*(\d+)", log)}
        assert found == {max_model_len}, \
            f"launch.log names max_model_len {sorted(found) or 'nowhere'}, expected {max_model_len}"
        return f"max_model_len {max_model_len} = prompt + response"

    def peak_memory() -> str:
        peak = metrics["perf/actor/max_memory_allocated_gb"] * GIB / 1e9
        states, params = preflight_states_gb(work / "model")
        assert peak >= states, f"peak {peak:.3f} GB < the preflight's {states:.3f} GB of states: the model overcounts"
        return f"actor peak {peak:.2f} GB allocated, preflight states {states:.4f} GB ({params:,} parameters x 16 B)"

    checks.check("run", run)
    checks.check("loss", loss)
    checks.check("mu", mu)
    checks.check("entropy", lambda: f"train/entropy={metrics['train/entropy']:.4g}")
    checks.check("eval", lambda: f"eval/accuracy={metrics['eval/accuracy']:.3g}")
    checks.check("vllm length", vllm_length)
    checks.check("peak memory", peak_memory)
    return checks


def main(argv: List[str]) -> int:
    checks = run_checks(Path(argv[0]), int(argv[1]))
    print("\n".join(checks.lines), flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
