"""Speed of the report collector: bulk metric read versus one request per (run, metric), side by side.

    python benchmarks/bench_reports.py [--quick] [--json PATH]

Builds a synthetic sweep in a fresh MLflow SQLite store — 100 runs × 500 steps × 20 per-step metrics
(+ eval every 10 steps; --quick: 20 runs × 100 steps) — then, in the same process and alternating:
  bulk   `harness.reports.results.collect` as `python -m harness report` runs it: one search_runs query + one SQL
         query for every history;
  naive  the same search_runs + `MlflowClient.get_metric_history` per run and metric.
Both must return identical histories. Then every report kind is built from the bulk data; the target is
collection + reports <= 10 s for the full size. Last, `python -m harness report` on the same store from a
fresh process (imports included). Prints a table and the naive/bulk ratio; --json writes the figures.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.reports.rendering.build import build_from_data, build_kind  # noqa: E402
from harness.reports.results.collect import collect  # noqa: E402
from harness.reports.results.locate import Target  # noqa: E402
from harness.reports.rendering.registry import default_kinds  # noqa: E402
from harness.reports.results.synthetic import FakeRun, STEP_METRICS, write_sweep  # noqa: E402

SWEEP_ID = "2026-01-01/00-00-00-000000"
GRID = [("dppo", "delta", (0.05, 0.1, 0.2, 0.4)), ("drpo", "delta", (0.1, 0.5, 2.5, 12.5)),
        ("spo", "eps", (0.1, 0.5, 2.5, 12.5)), ("bandpo", "delta", (0.02, 0.05, 0.1, 0.2)),
        ("grpo", "relax_alpha", (0.0, 0.1, 0.2, 0.3))]
TARGET_SECONDS = 10.0


def fake_runs(n_runs: int):
    seeds = max(1, n_runs // sum(len(v) for _, _, v in GRID))
    runs = [FakeRun(objective=o, algo={k: v}, seed=s, collapse_at=300 if (o == "spo" and v == 0.1 and s == 0) else None)
            for o, k, values in GRID for v in values for s in range(seeds)]
    return runs[:n_runs]


def same(a, b) -> bool:
    if a.keys() != b.keys():
        return False
    return all(np.array_equal(a[k][0], b[k][0]) and np.allclose(a[k][1], b[k][1], equal_nan=True) for k in a)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="20 runs × 100 steps instead of 100 × 500")
    p.add_argument("--json", type=Path, help="write the figures as JSON here")
    p.add_argument("--reps", type=int, default=None, help="alternating repetitions (default: 3, quick: 2)")
    args = p.parse_args(argv)
    n_runs, steps = (20, 100) if args.quick else (100, 500)
    reps = args.reps or (2 if args.quick else 3)
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"sqlite:///{Path(tmp) / 'mlruns.db'}"
        started = time.perf_counter()
        write_sweep(uri, fake_runs(n_runs), SWEEP_ID, steps=steps, eval_every=10)
        build_s = time.perf_counter() - started
        target = Target(SWEEP_ID, uri, [], [], out_dir=Path(tmp) / "reports")
        collect(target)  # warm-up: imports, SQLAlchemy engine, page cache
        bulk, naive, bulk_cpu = [], [], []
        for _ in range(reps):
            t0, c0 = time.perf_counter(), time.process_time()
            data = collect(target)
            t1, c1 = time.perf_counter(), time.process_time()
            slow = collect(target, history="client")
            t2 = time.perf_counter()
            bulk.append(t1 - t0), naive.append(t2 - t1), bulk_cpu.append(c1 - c0)
        if not same(data.series, slow.series):
            print("ERROR: bulk and naive collectors disagree", file=sys.stderr)
            return 1
        per_kind = {}
        t0, c0 = time.perf_counter(), time.process_time()
        for kind in default_kinds():  # as build_from_data does for a sweep naming no kinds, timed one by one
            k0 = time.perf_counter()
            build_kind(kind, data, target.out_dir)
            per_kind[kind] = round(time.perf_counter() - k0, 2)
        report_s, report_cpu = time.perf_counter() - t0, time.process_time() - c0
        result = build_from_data(data, None, target.out_dir, log_parent=False)  # the pages + index, again
        t0 = time.perf_counter()  # the same from a fresh process: imports, MLflow store, collect, reports
        cli = subprocess.run([sys.executable, "-m", "harness", "report", SWEEP_ID, "--tracking-uri", uri,
                              "--out", str(Path(tmp) / "cli")], capture_output=True, text=True)
        cli_s = time.perf_counter() - t0
        if cli.returncode != 0:
            print(cli.stderr[-2000:], file=sys.stderr)
            return 1
    points = sum(len(s) for s, _ in data.series.values())
    figures = {
        "runs": len(data.runs), "steps": steps, "per_step_metrics": len(STEP_METRICS), "points": points,
        "store_build_s": round(build_s, 2), "reps": reps,
        "bulk_collect_s": round(statistics.median(bulk), 3), "naive_collect_s": round(statistics.median(naive), 3),
        "naive_over_bulk": round(statistics.median(n / b for n, b in zip(naive, bulk)), 1),
        "reports_s": round(report_s, 2), "reports_per_kind_s": per_kind, "reports_built": sorted(result.pages),
        "reports_failed": result.failed, "bulk_collect_cpu_s": round(statistics.median(bulk_cpu), 3),
        "reports_cpu_s": round(report_cpu, 2),
    }
    figures["collect_plus_reports_s"] = round(figures["bulk_collect_s"] + report_s, 2)
    figures["collect_plus_reports_cpu_s"] = round(figures["bulk_collect_cpu_s"] + report_cpu, 2)
    figures["cli_wall_s"] = round(cli_s, 2)
    figures["target_s"] = TARGET_SECONDS
    figures["within_target"] = figures["collect_plus_reports_s"] <= TARGET_SECONDS
    print(f"synthetic sweep: {len(data.runs)} runs × {steps} steps × {len(STEP_METRICS)} metrics "
          f"({points:,} points; store written in {build_s:.1f} s)")
    print(f"{'collector':<10} {'median s':>9}   (alternating, {reps} reps)")
    print(f"{'bulk':<10} {figures['bulk_collect_s']:>9.3f}   search_runs + 1 SQL query")
    print(f"{'naive':<10} {figures['naive_collect_s']:>9.3f}   search_runs + get_metric_history per run×metric")
    print(f"naive / bulk = {figures['naive_over_bulk']}x")
    print("reports: " + ", ".join(f"{k} {v:.2f} s" for k, v in per_kind.items()) + f" = {report_s:.2f} s")
    print(f"collect + reports = {figures['collect_plus_reports_s']:.2f} s wall, "
          f"{figures['collect_plus_reports_cpu_s']:.2f} s CPU of this process (target <= {TARGET_SECONDS:g} s wall: "
          f"{'met' if figures['within_target'] else 'MISSED'}; on a shared machine wall > CPU)")
    print(f"python -m harness report (fresh process, all of it): {cli_s:.2f} s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if not result.failed else 1


if __name__ == "__main__":
    sys.exit(main())
