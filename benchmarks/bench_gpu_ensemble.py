"""The ensemble trainer on one GPU (issue 36 item 7): member-steps per second and peak device memory per member
for ensembles of M = 1, 64, 256, 512, 1,024, against one CPU thread training a run alone.

    python benchmarks/bench_gpu_ensemble.py --wheels wheels/ --out gpu.json     # on the GPU machine, < 5 min
    python benchmarks/bench_gpu_ensemble.py --mode cpu --out cpu.json          # small, on a CPU (a test runs it)

Made for a machine with one GPU, Python 3.12 and torch but no network: `--wheels DIR` (filled beforehand by
`benchmarks/gpu_wheels.py` on a machine with network) installs what the trainer needs besides torch, and the
harness from this repository, into a temporary folder with `pip install --no-index --find-links DIR --target`;
without it the harness must be importable already. Runs use `tracking=none` (no MLflow) and the default shape
(`--mode cpu`: `debug=quick`).

For each M: one composed config, copied with seeds 0..M-1 (composing 512 runs through Hydra takes minutes),
an `EnsembleTrainer` on `trainer.device=cuda` (`--mode cpu`: cpu), one warm-up step, then `--steps` timed
steps (`torch.cuda.synchronize` before each clock read). Peak memory per member: (`max_memory_allocated`
over the ensemble's life - what was allocated before it) / M. The CPU figure: M = 1 on `trainer.device=cpu`
with one torch thread. An M whose estimated time (from the previous M's rate) would pass `--budget-s` is
skipped with that reason; an M that fails is kept with its error and ends the sizes. The JSON (`--out`) is
written after each M (a crash at a large M keeps the smaller ones); the temporary site is removed at the end.
On an aarch64 machine (GH200) the wheel folder must hold aarch64 wheels (`gpu_wheels.py --arch aarch64`):
else a one-line refusal before anything is installed."""
from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIZES = {"gpu": (1, 64, 256, 512, 1024), "cpu": (1, 4)}
STEPS = {"gpu": 3, "cpu": 2}
SHAPE = {"gpu": [], "cpu": ["debug=quick"]}  # cpu: a pipeline check, in seconds
TARGET_RATE, TARGET_RATIO, TARGET_M = 2000.0, 100.0, 512  # on one H200 (issue 36 "Done when")


def install(wheels: Path) -> Path:
    """The trainer's dependencies (besides torch) and the harness, from `wheels` alone, into a new folder put
    first on sys.path (the caller removes it). Refused, in one line, when the folder holds no wheel of this
    machine's architecture for a binary distribution (e.g. x86_64 wheels on an aarch64 GH200)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gpu_wheels import NEEDED, missing_for

    missing = missing_for(wheels, platform.machine())
    if missing:
        raise SystemExit(f"--wheels {wheels}: no {platform.machine()} wheel of {', '.join(missing)}; make them with "
                         f"`python benchmarks/gpu_wheels.py {wheels} --arch {platform.machine()}`")
    site = Path(tempfile.mkdtemp(prefix="bench-gpu-site-"))
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(wheels),
           "--target", str(site)]
    try:
        subprocess.run([*pip, *(name for name in NEEDED if name not in ("setuptools", "wheel"))], check=True)
        subprocess.run([*pip, "--no-deps", str(REPO)], check=True)  # builds with the folder's setuptools and wheel
    except BaseException:
        shutil.rmtree(site, ignore_errors=True)
        raise
    sys.path.insert(0, str(site))
    return site


def specs(size: int, device: str, root: Path, shape) -> list:
    from omegaconf import open_dict

    from harness.launchers.compose import compose, validated

    base = validated(compose([f"output_root={root}", f"cache_dir={root / 'cache'}", "tracking=none",
                              "trainer.progress=false", f"trainer.device={device}", *shape]))
    made = []
    for seed in range(size):
        spec = copy.deepcopy(base)
        with open_dict(spec):
            spec.seed = seed
        made.append(spec)
    return made


def measure(size: int, device: str, steps: int, root: Path, shape, threads=None) -> dict:
    """Member-steps per second of an ensemble of `size` on `device`, and its peak device memory per member."""
    import torch

    from harness.tracking.local_tracker import Tracker
    from harness.trainers.ensemble.trainer import EnsembleTrainer

    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated() if cuda else 0
    started = time.perf_counter()
    folders = [root / f"{device.replace(':', '')}-{size}-{k}" for k in range(size)]
    trainer = EnsembleTrainer([(spec, folder, Tracker(folder))
                               for spec, folder in zip(specs(size, device, root, shape), folders)], threads=threads)
    trainer.rl_step()  # warm-up: kernels chosen, caches filled
    sync()
    built = time.perf_counter() - started
    times = []
    for _ in range(steps):
        clock = time.perf_counter()
        trainer.rl_step()
        sync()
        times.append(time.perf_counter() - clock)
    peak = (torch.cuda.max_memory_allocated() - before) / size if cuda else None
    trained_on = str(trainer.params[0].device)  # the device asked for only where the trainer honours it
    del trainer
    return {"members": size, "trained_on": trained_on, "member_steps_per_s": size * steps / sum(times),
            "step_s": times, "build_and_warmup_s": built, "peak_device_bytes_per_member": peak}


def run(mode: str, steps: int, budget_s: float, sizes, out: Path) -> dict:
    import torch

    device = "cuda" if mode == "gpu" else "cpu"
    if mode == "gpu" and not torch.cuda.is_available():
        raise SystemExit("--mode gpu: no CUDA device is visible (use --mode cpu on a CPU machine)")
    started = time.perf_counter()
    figures, rate = [], None
    with tempfile.TemporaryDirectory(prefix="bench-gpu-ensemble-") as tmp:
        for size in sizes:
            spent = time.perf_counter() - started
            estimate = size * (steps + 1) / rate if rate else 0.0
            if spent + estimate > budget_s:
                figures.append({"members": size, "skipped": f"~{estimate:.0f} s at {rate:.1f} member-steps/s, "
                                                            f"{spent:.0f} s of the {budget_s:.0f} s budget spent"})
                continue
            try:
                figures.append(measure(size, device, steps, Path(tmp), SHAPE[mode]))
            except Exception as err:  # an M that fails (out of memory, a kernel's limit) is kept as its error
                figures.append({"members": size, "failed": f"{type(err).__name__}: {err}"[:2000]})
                print(f"M={size:>4}: failed: {figures[-1]['failed'][:200]}", flush=True)
                _write(out, _report(mode, steps, figures, None, started))
                break  # a larger M would fail too
            rate = figures[-1]["member_steps_per_s"]
            print(_row(figures[-1]), flush=True)
            _write(out, _report(mode, steps, figures, None, started))  # what is measured is kept at once
        cpu = measure(1, "cpu", steps, Path(tmp), SHAPE[mode], threads=1)
    print(f"one CPU thread, M=1: {cpu['member_steps_per_s']:.1f} member-steps/s", flush=True)
    report = _report(mode, steps, figures, cpu, started)
    _write(out, report)
    return report


def _write(out: Path, report: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))


def _report(mode: str, steps: int, figures: list, cpu, started: float) -> dict:
    import torch

    top = next((f for f in figures if f["members"] == TARGET_M and "member_steps_per_s" in f), None)
    ratio = top["member_steps_per_s"] / cpu["member_steps_per_s"] if top and cpu else None
    return {"mode": mode, "device": torch.cuda.get_device_name() if mode == "gpu" else platform.processor() or "cpu",
            "torch": torch.__version__, "python": platform.python_version(), "steps": steps, "sizes": figures,
            "cpu_one_thread": cpu, f"ratio_m{TARGET_M}_vs_cpu_thread": ratio, "wall_s": time.perf_counter() - started,
            "targets": {f"m{TARGET_M}_member_steps_per_s": f">= {TARGET_RATE:,.0f} on one H200",
                        f"ratio_m{TARGET_M}_vs_cpu_thread": f">= {TARGET_RATIO:.0f}"}}


def _row(figure: dict) -> str:
    peak = figure["peak_device_bytes_per_member"]
    return (f"M={figure['members']:>4} on {figure['trained_on']}: {figure['member_steps_per_s']:9.1f} member-steps/s, "
            f"step {min(figure['step_s']):.3f} s" + (f", peak {peak / 2**20:.1f} MiB per member" if peak else ""))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--wheels", type=Path, help="a folder of wheels from benchmarks/gpu_wheels.py")
    parser.add_argument("--out", type=Path, required=True, help="the JSON of the figures")
    parser.add_argument("--steps", type=int, help="timed steps per M (default: 3 on a GPU, 2 on a CPU)")
    parser.add_argument("--budget-s", type=float, default=240.0, help="skip an M that would end past this")
    args = parser.parse_args(argv)
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    site = install(args.wheels) if args.wheels is not None else None
    try:
        report = run(args.mode, args.steps or STEPS[args.mode], args.budget_s, SIZES[args.mode], args.out)
    finally:
        if site is not None:
            shutil.rmtree(site, ignore_errors=True)  # the temporary site (~300 MB) goes with the run
    print(f"figures in {args.out} ({report['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
