"""Smoke test of benchmarks/bench_objectives.py on a tiny budget (the figures themselves are not checked)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_objectives.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_objectives", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_runs_on_a_tiny_budget():
    bench = _load()
    results = bench.bench_objectives(n_tokens=2048, reps=1)
    assert {label for label, _, _ in bench.configs()} == set(results)
    assert results["grpo"]["plain"]["ratio_median"] == 1.0
    assert all(r["plain"]["ms_median"] > 0 and r["metrics"]["ms_median"] > 0 for r in results.values())
    solver = bench.bench_kl_solver(n_tokens=2048, n_scalar=10, reps=1)
    assert solver["speedup_table"] > 1 and solver["brentq_us_per_token"] > 0
