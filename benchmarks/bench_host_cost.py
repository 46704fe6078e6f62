"""The ensemble trainer's host cost (issue 51 item 5): CPU seconds per RL step at M = 512 members of a model so
small that its arithmetic is negligible, i.e. the ceiling on member-steps per second any GPU could reach with
this code (the host prepares every step's launches, draws and metrics; a GPU cannot run ahead of it).

    python benchmarks/bench_host_cost.py [--members 1,16,64,256,512] [--steps 3] [--json PATH]

Shape: hidden 16, 1 layer, 2 heads (1 key/value head), MLP 16, the default task (sorting) and its answer
length, 2 prompts x 2 samples per member (4 rows: per-row arithmetic stays negligible at 512 members on a
CPU; a step's host work does not depend on rows per member), 2 mini-batches, top-K 20 (the default), one torch
thread, `tracking=none`. For each M: one composed config copied with seeds 0..M-1, an `EnsembleTrainer`, one
warm-up step, then `--steps` steps, each timed in process CPU seconds (user + system, `resource.getrusage`,
what the host spends, arithmetic included) and wall seconds. Figures: the median CPU s/step and the ceiling
M / (CPU s/step) member-steps/s. The JSON is written after each M. Target at M = 512: <= 0.1 CPU s/step
(a ceiling >= 5,000 member-steps/s)."""
from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gpu_ensemble import specs  # noqa: E402

TINY = ["model.hidden_size=16", "model.num_layers=1", "model.num_heads=2", "model.num_kv_heads=1",
        "model.intermediate_size=16", "trainer.warmstart.steps=1", "trainer.prompts_per_step=2",
        "trainer.group_size=2", "trainer.mini_batches=2", "trainer.eval_every=1000"]
TARGET_M, TARGET_S = 512, 0.1


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(size: int, steps: int, root: Path, overrides=()) -> dict:
    from harness.tracking.local_tracker import Tracker
    from harness.trainers.ensemble.trainer import EnsembleTrainer

    folders = [root / f"m{size}-{k}" for k in range(size)]
    trainer = EnsembleTrainer([(spec, folder, Tracker(folder))
                               for spec, folder in zip(specs(size, "cpu", root, [*TINY, *overrides]), folders)], threads=1)
    trainer.rl_step()  # warm-up: the step's constants made, allocator warm
    cpu, wall = [], []
    for _ in range(steps):
        clock, used = time.perf_counter(), cpu_seconds()
        trainer.rl_step()
        cpu.append(cpu_seconds() - used)
        wall.append(time.perf_counter() - clock)
    del trainer
    gc.collect()
    step = statistics.median(cpu)
    return {"members": size, "cpu_s_per_step": step, "cpu_s": cpu, "wall_s": wall,
            "ceiling_member_steps_per_s": size / step}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", default="1,16,64,256,512", help="ensemble sizes, comma-separated")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per M")
    parser.add_argument("--json", type=Path, help="where to write the figures (after each M)")
    parser.add_argument("overrides", nargs="*", help="more config overrides (e.g. precision=fp32)")
    args = parser.parse_args(argv)
    import torch

    report = {"torch": torch.__version__, "shape": [*TINY, *args.overrides], "target": f"<= {TARGET_S} CPU s/step at M = {TARGET_M}",
              "sizes": []}
    with tempfile.TemporaryDirectory(prefix="bench-host-cost-") as tmp:
        for size in (int(m) for m in args.members.split(",")):
            figure = measure(size, args.steps, Path(tmp), args.overrides)
            report["sizes"].append(figure)
            print(f"M={size:>4}: {figure['cpu_s_per_step']:.3f} CPU s/step, ceiling "
                  f"{figure['ceiling_member_steps_per_s']:,.0f} member-steps/s (wall {min(figure['wall_s']):.3f} s)",
                  flush=True)
            if args.json:
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
