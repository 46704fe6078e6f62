"""The benchmark suite: every speed figure as a ratio against a baseline measured side by side in the same run.

    python benchmarks/run.py [--quick] [--only NAME,...] [--json PATH]

Each benchmark is one script in this folder, run in its own process (`--quick`, `--json PATH`); this runner
merges their figures into one table (figure, ratio, target, pass/fail, baseline) and one JSON
(default benchmarks/results/latest.json; with --quick a file in the temp folder, so the committed full
figures stay). `--quick` only checks that the pipeline works (tiny sizes, < 3 min): its ratios mean nothing.

The machine is shared and has 2 cores, so absolute times are noise: a figure is always the median, over
interleaved repetitions, of a ratio between the measured thing and its baseline run in the same process or
alternately from it. The bench_* scripts share the small helpers at the bottom of this file.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_JSON = HERE / "results" / "latest.json"
# The warm-started base model is trained once per config and reused by every benchmark (and every run).
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "harness-bench-cache"


@dataclass
class Benchmark:
    script: str
    figures: List[str]  # every figure it must report (a value, a skip with its reason, or an error)
    extra_args: List[str] = field(default_factory=list)
    optional: bool = False  # the script may be absent: its figures are then skipped


BENCHMARKS: Dict[str, Benchmark] = {
    "trainer_vs_trl": Benchmark("bench_trainer_vs_trl.py", ["trainer_vs_trl.step_speedup",
                                                            "trainer_vs_trl.tokens_per_s",
                                                            "trainer_vs_trl.step_speedup_bigger"]),
    "compute_efficiency": Benchmark("bench_compute_efficiency.py", ["compute_efficiency.step"]),
    "overhead": Benchmark("bench_overhead.py", ["overhead.run_fraction", "overhead.run_fraction_3min"]),
    "tracking": Benchmark("bench_tracking.py", ["tracking.step_fraction", "tracking.batch_vs_per_metric"]),
    "objectives": Benchmark("bench_objectives.py", ["objectives.worst_vs_grpo",
                                                    "objectives.bandpo_kl_solver_speedup"]),
    "reports": Benchmark("bench_reports.py", ["reports.naive_over_bulk", "reports.collect_plus_reports_budget"],
                         optional=True),
    "sweep_scaling": Benchmark("bench_sweep_scaling.py", ["sweep_scaling.runs_per_hour_2_vs_1",
                                                          "sweep_scaling.runs_per_hour_2_vs_1_short_runs"]),
    "preflight": Benchmark("bench_preflight.py", ["preflight.grid_100_vs_20s_budget", "preflight.vs_hydra_serial"]),
    "ensemble": Benchmark("bench_ensemble.py", ["ensemble.sweep_vs_processes",
                                                "ensemble.runs_per_core_hour_vs_local_parallel",
                                                "ensemble.members_curve"]),
}
OWN = {"trainer_vs_trl", "compute_efficiency", "overhead", "tracking", "sweep_scaling", "ensemble"}  # take --cache-dir


# -- figures -----------------------------------------------------------------------------------------------
def figure(name: str, ratio: float, target: Optional[str], baseline: str, **detail) -> dict:
    """One figure. target: '>= 2.0', '<= 0.03' or None (reported, not judged)."""
    passed = None
    if target is not None and math.isfinite(ratio):
        op, threshold = target.split()
        passed = ratio >= float(threshold) if op == ">=" else ratio <= float(threshold)
    return {"name": name, "ratio": float(ratio), "target": target, "pass": passed, "baseline": baseline,
            "detail": detail}


def skipped(name: str, reason: str, target: Optional[str], baseline: str) -> dict:
    return {"name": name, "ratio": None, "target": target, "pass": None, "baseline": baseline, "skipped": reason,
            "detail": {}}


def errored(name: str, error: str) -> dict:
    return {"name": name, "ratio": None, "target": None, "pass": None, "baseline": "", "error": error, "detail": {}}


# -- adapters for the benchmarks written by others (their own JSON shapes) -----------------------------------
def from_objectives(data: dict) -> List[dict]:
    ratios = {label: r["plain"]["ratio_median"] for label, r in data["objectives"].items()}
    core = {k: v for k, v in ratios.items() if not k.startswith("dppo[topk")}  # Top-K reads [N, V] logits
    worst = max(core, key=core.get)
    solver = data["bandpo_kl_solver"]
    return [
        figure("objectives.worst_vs_grpo", core[worst], "<= 1.5",
               f"grpo forward+backward on {data['tokens']} tokens, same process, shuffled interleaving",
               worst=worst, ratios=ratios),
        figure("objectives.bandpo_kl_solver_speedup", solver["speedup_table"], ">= 1000",
               "scipy brentq per token (two roots), alternating with the table solver", **solver),
    ]


def from_reports(data: dict) -> List[dict]:
    return [
        figure("reports.naive_over_bulk", data["naive_over_bulk"], None,
               "get_metric_history per run x metric, alternating with the bulk collector",
               runs=data["runs"], steps=data["steps"], bulk_s=data["bulk_collect_s"], naive_s=data["naive_collect_s"]),
        figure("reports.collect_plus_reports_budget", data["collect_plus_reports_s"] / data["target_s"], "<= 1.0",
               f"absolute budget of {data['target_s']:g} s (not side by side)",
               seconds=data["collect_plus_reports_s"], runs=data["runs"], steps=data["steps"]),
    ]


ADAPTERS: Dict[str, Callable[[dict], List[dict]]] = {"objectives": from_objectives, "reports": from_reports}


# -- running -----------------------------------------------------------------------------------------------
def run_benchmark(name: str, quick: bool, cache_dir: Path, workdir: Path) -> dict:
    bench = BENCHMARKS[name]
    script = HERE / bench.script
    if not script.is_file():
        reason = f"{script.relative_to(REPO)} is not present"
        if bench.optional:
            return {"figures": [skipped(f, reason, None, "") for f in bench.figures], "seconds": 0.0}
        return {"figures": [errored(f, reason) for f in bench.figures], "seconds": 0.0}
    out = workdir / f"{name}.json"
    argv = [sys.executable, str(script), "--json", str(out), *bench.extra_args]
    argv += ["--quick"] if quick else []
    argv += ["--cache-dir", str(cache_dir)] if name in OWN else []
    print(f"\n=== {name}: {' '.join(argv[1:])}", flush=True)
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, stdout=sys.stdout, stderr=subprocess.PIPE, text=True,
                          timeout=600 if quick else 3600)
    seconds = time.perf_counter() - started
    sys.stdout.write(_tail(proc.stderr, 2000))
    sys.stdout.flush()
    result: dict = {"seconds": round(seconds, 1), "returncode": proc.returncode}
    data = json.loads(out.read_text()) if out.is_file() else None
    if proc.returncode != 0 or data is None:
        why = f"{bench.script} exited {proc.returncode}" + ("" if data else " without writing its JSON")
        error = f"{why}: {_tail(proc.stderr, 400).strip()}"
        return {**result, "figures": [errored(f, error) for f in bench.figures], "raw": data}
    figures = ADAPTERS[name](data) if name in ADAPTERS else data["figures"]
    got = {f["name"] for f in figures}
    figures += [errored(f, f"{bench.script} did not report it") for f in bench.figures if f not in got]
    return {**result, "figures": figures, "raw": data}


def _tail(text: str, n: int) -> str:
    # Drop the library chatter (deprecation warnings and the source line under each) that buries useful lines.
    lines, after_warning = [], False
    for line in (text or "").splitlines():
        if after_warning and line.startswith("  "):
            continue
        after_warning = "Warning:" in line
        if not after_warning:
            lines.append(line)
    return ("\n".join(lines)[-n:] + "\n") if lines else ""


def fmt_ratio(f: dict) -> str:
    if f.get("error"):
        return "ERROR"
    if f.get("skipped"):
        return "skipped"
    return f"{f['ratio']:.3g}"


def table(figures: Sequence[dict]) -> str:
    rows = [("figure", "ratio", "target", "pass", "baseline")]
    for f in figures:
        verdict = {True: "pass", False: "MISS", None: "-"}[f["pass"]]
        note = f.get("error") or (f"skipped: {f['skipped']}" if f.get("skipped") else f["baseline"])
        rows.append((f["name"], fmt_ratio(f), f["target"] or "-", verdict, note))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows)


def machine() -> dict:
    info = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}
    for module in ("torch", "transformers", "trl", "mlflow", "hydra"):
        try:
            info[module] = __import__(module).__version__
        except Exception:
            info[module] = None
    return info


def git_commit() -> Optional[str]:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:
        return None


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes: checks the pipeline only (< 3 min)")
    ap.add_argument("--only", default="", help=f"comma-separated subset of: {', '.join(BENCHMARKS)}")
    ap.add_argument("--json", type=Path, help=f"where to write the figures (default {DEFAULT_JSON.relative_to(REPO)}"
                                              "; with --quick, a file in the temp folder)")
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="warm-start cache shared by the runs")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"--only: unknown benchmark(s) {', '.join(unknown)}; allowed: {', '.join(BENCHMARKS)}")
    out = args.json or (Path(tempfile.gettempdir()) / "harness-bench-quick.json" if args.quick else DEFAULT_JSON)
    started, load_before, commit = time.perf_counter(), os.getloadavg(), git_commit()
    results = {}
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as workdir:
        for name in names:
            try:
                results[name] = run_benchmark(name, args.quick, args.cache_dir, Path(workdir))
            except subprocess.TimeoutExpired as err:
                results[name] = {"figures": [errored(f, f"timed out after {err.timeout:.0f} s")
                                             for f in BENCHMARKS[name].figures]}
    figures = [f for name in names for f in results[name]["figures"]]
    report = {
        "command": " ".join(["python", "benchmarks/run.py", *(argv if argv is not None else sys.argv[1:])]),
        "mode": "quick" if args.quick else "full", "git_commit": commit, "git_commit_at_end": git_commit(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "duration_s": round(time.perf_counter() - started, 1),
        "machine": {**machine(), "loadavg_before": load_before, "loadavg_after": os.getloadavg()},
        "figures": figures,
        "benchmarks": {n: {"seconds": r.get("seconds"), "returncode": r.get("returncode"), "raw": r.get("raw")}
                       for n, r in results.items()},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=float) + "\n")
    note = "\n--quick: tiny sizes, the ratios and verdicts below only show that the pipeline works" * args.quick
    print(f"{note}\n{table(figures)}\n\n{report['mode']} suite in {report['duration_s']:.0f} s; "
          f"load average {load_before[0]:.1f} -> {report['machine']['loadavg_after'][0]:.1f} on "
          f"{os.cpu_count()} cores; figures written to {out}")
    return 1 if any(f.get("error") for f in figures) else 0


# -- helpers shared by the bench_* scripts --------------------------------------------------------------------
def bench_args(doc: str, argv=None, add: Optional[Callable[[argparse.ArgumentParser], None]] = None):
    """The arguments every bench_* script takes (`add` adds a script's own)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    if add:
        add(ap)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: checks the pipeline only")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="warm-start cache")
    ap.add_argument("--reps", type=int, default=None, help="interleaved repetitions (default depends on --quick)")
    return ap.parse_args(argv)


def write_figures(path: Optional[Path], benchmark: str, figures: List[dict], **details) -> None:
    for f in figures:
        shown = f"skipped: {f['skipped']}" if f.get("skipped") else f"{f['ratio']:.3g}"
        print(f"{f['name']}: {shown} (target {f['target'] or '-'}; baseline: {f['baseline']})")
    if path:
        path.write_text(json.dumps({"benchmark": benchmark, "figures": figures, **details}, indent=2,
                                   default=float) + "\n")


def median_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """Median of per-repetition ratios: a load change hits both sides of one repetition alike."""
    return statistics.median(n / d for n, d in zip(numerators, denominators))


def bench_config(overrides: Sequence[str], output_root: Path, cache_dir: Path):
    """A validated run config, as `python -m harness <overrides>` would compose it."""
    sys.path.insert(0, str(REPO))
    from harness.launchers.compose import compose
    from harness.launchers.compose import validated as validate

    return validate(compose([f"output_root={output_root}", f"cache_dir={cache_dir}", *overrides]))


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


if __name__ == "__main__":
    sys.exit(main())
