"""Speed of every objective relative to grpo, and of the BandPO-KL bound solver relative to a scalar root finder.

    python benchmarks/bench_objectives.py [--quick] [--json PATH] [--reps N]

1. Forward + backward (token_objective -> token-mean aggregate -> backward) on 1M tokens (--quick: 64k),
   float32, one CPU thread. All objectives are timed side by side in the same run, interleaved in a
   shuffled order each repetition; the ratio to grpo is taken per repetition and the median reported.
   The `+metrics` column times `compute` (objective + shared metrics) the same way.
   Top-K objectives also read logits [N, V] (V = 64, K = 20): their cost grows with V.
2. BandPO-KL bounds for N tokens, float64 (table interpolation as used by the objective; also float32,
   and the vectorised bisection on 64k tokens) vs scipy.optimize.brentq per token (two roots each) on a
   subsample, extrapolated per token; timed in alternation, median of per-rep speedups.
Targets: every objective within 1.5x of grpo; the KL solver >= 1000x faster than the per-token loop.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.algorithms import aggregate, build_objective, list_objectives  # noqa: E402
from harness.algorithms.bandpo_bounds import BISECT_ITERS, band_bounds, kl_roots_bisect  # noqa: E402

V, K, T = 64, 20, 512


def configs():
    """(label, name, params) for every objective plus the variants with different code paths."""
    out = [(n, n, {}) for n in list_objectives()]
    out += [("dppo[binary_kl]", "dppo", {"divergence": "binary_kl"}),
            ("dppo[topk_tv]", "dppo", {"divergence": "topk_tv"}),
            ("dppo[topk_kl]", "dppo", {"divergence": "topk_kl"}),
            ("bandpo[tv]", "bandpo", {"band": "tv"}), ("bandpo[chi2]", "bandpo", {"band": "chi2"}),
            ("grpo[alpha=0.1]", "grpo", {"relax_alpha": 0.1})]
    return out


def make_inputs(n_tokens: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    B = max(1, n_tokens // T)
    logp = -torch.rand(B, T, generator=g) ** 2 * 12
    rollout = (logp + 0.3 * torch.randn(B, T, generator=g)).clamp(max=0)
    recomputed = (logp + 0.1 * torch.randn(B, T, generator=g)).clamp(max=0)
    mask = torch.arange(T)[None, :] < torch.randint(T // 2, T + 1, (B, 1), generator=g)
    return dict(logp=logp, rollout_logp=rollout, advantages=torch.randn(B, generator=g), response_mask=mask,
                recomputed_logp=recomputed)


def make_topk(inputs: dict, seed: int = 1) -> dict:
    g = torch.Generator().manual_seed(seed)
    B = inputs["logp"].shape[0]
    logits = torch.randn(B, T, V, generator=g) * 2
    top_lp, top_ids = torch.topk(torch.log_softmax(logits + 0.1 * torch.randn(B, T, V, generator=g), -1), K, -1)
    return dict(logits=logits, rollout_topk_logp=top_lp, rollout_topk_ids=top_ids)


def time_step(obj, inputs: dict, topk: dict, with_metrics: bool) -> float:
    logp = inputs["logp"].clone().requires_grad_(True)
    kwargs = {k: v for k, v in inputs.items() if k != "logp"}
    if obj.needs_topk:
        kwargs.update(topk)
    start = time.perf_counter()
    if with_metrics:
        J, _ = obj.compute(logp, **kwargs)
    else:
        J = obj.token_objective(logp, **kwargs)
    aggregate(J, inputs["response_mask"], "token-mean").backward()
    return time.perf_counter() - start


def bench_objectives(n_tokens: int, reps: int) -> dict:
    inputs, objs = make_inputs(n_tokens), {}
    topk = make_topk(inputs)
    for label, name, params in configs():
        objs[label] = build_objective(name, **params)
    labels = list(objs)
    results = {}
    for with_metrics in (False, True):
        times = {label: [] for label in labels}
        for label in labels:  # warm-up (builds the BandPO table once)
            time_step(objs[label], inputs, topk, with_metrics)
        for rep in range(reps):
            order = labels[:]
            random.Random(rep).shuffle(order)
            for label in order:
                times[label].append(time_step(objs[label], inputs, topk, with_metrics))
        key = "metrics" if with_metrics else "plain"
        for label in labels:
            ratios = [t / g for t, g in zip(times[label], times["grpo"])]
            results.setdefault(label, {})[key] = {"ratio_median": statistics.median(ratios),
                                                  "ms_median": 1e3 * statistics.median(times[label])}
    return results


def _kl_bounds_scalar(p: float, delta: float):
    """Per-token reference: brentq on g(r) = δ for both roots (lo in log space)."""
    from scipy.optimize import brentq  # imported before the timed loop by bench_kl_solver

    def g_log(s):  # g at r = e^s
        return -p * s - (1 - p) * math.log((1 - math.exp(s) * p) / (1 - p)) - delta

    lo = math.exp(brentq(g_log, -(delta / p + 2), 0.0, xtol=1e-12))
    top = -math.log(p) - 1e-15  # just below r = 1/p; if g is still below δ there, hi = 1/p
    hi = math.exp(brentq(g_log, 0.0, top, xtol=1e-12)) if g_log(top) > 0 else 1.0 / p
    return lo, hi


def bench_kl_solver(n_tokens: int, n_scalar: int, reps: int, delta: float = 0.05) -> dict:
    """Per-token time of the table (float64 and float32) and of the vectorised bisection vs brentq.

    The contenders are timed in alternation, rep by rep, and each speedup is the median per-rep ratio,
    so a load change on the machine hits both sides alike.
    """
    g = torch.Generator().manual_seed(2)
    logp = -torch.rand(n_tokens, generator=g, dtype=torch.float64) * 15 - 1e-5
    logp32 = logp.float()
    band_bounds("kl", logp[:8], delta, 10.0), band_bounds("kl", logp32[:8], delta, 10.0)  # build tables
    _kl_bounds_scalar(0.5, delta)  # import scipy outside the timing
    n_bisect = min(n_tokens, 65_536)

    def per_token(fn, n):
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) / n

    runs = {"table": [], "table_f32": [], "bisect": [], "brentq": []}
    for rep in range(reps):
        sub = logp[rep * n_scalar:(rep + 1) * n_scalar].tolist()
        runs["table"].append(per_token(lambda: band_bounds("kl", logp, delta, 10.0), n_tokens))
        runs["brentq"].append(per_token(lambda: [_kl_bounds_scalar(math.exp(lp), delta) for lp in sub], len(sub)))
        runs["table_f32"].append(per_token(lambda: band_bounds("kl", logp32, delta, 10.0), n_tokens))
        runs["bisect"].append(per_token(lambda: kl_roots_bisect(logp[:n_bisect], delta), n_bisect))

    def speedup(key):
        return statistics.median(b / t for b, t in zip(runs["brentq"], runs[key]))

    med = {k: statistics.median(v) for k, v in runs.items()}
    return {"tokens": n_tokens, "scalar_tokens_per_rep": n_scalar, "reps": reps,
            "table_ns_per_token": 1e9 * med["table"], "table_f32_ns_per_token": 1e9 * med["table_f32"],
            "bisect_ns_per_token": 1e9 * med["bisect"], "brentq_us_per_token": 1e6 * med["brentq"],
            "speedup_table": speedup("table"), "speedup_table_f32": speedup("table_f32"),
            "speedup_bisect": speedup("bisect")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="64k tokens instead of 1M")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--reps", type=int, default=None, help="interleaved repetitions (default 7, quick 5)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    n_tokens = 65_536 if args.quick else 1_048_576
    reps = args.reps or (5 if args.quick else 7)
    objectives = bench_objectives(n_tokens, reps)
    solver = bench_kl_solver(n_tokens, 200 if args.quick else 1000, reps)

    print(f"forward+backward, {n_tokens} tokens, float32, 1 thread, {reps} interleaved reps "
          "(ratio = median of per-rep ratios to grpo)")
    print(f"{'objective':<18} {'x grpo':>8} {'ms':>9}   {'x grpo +metrics':>15} {'ms':>9}")
    worst = 0.0
    for label, r in objectives.items():
        p, m = r["plain"], r["metrics"]
        flag = "" if p["ratio_median"] <= 1.5 else "  > 1.5x"
        if not label.startswith("dppo[topk"):
            worst = max(worst, p["ratio_median"])
        print(f"{label:<18} {p['ratio_median']:>8.2f} {p['ms_median']:>9.2f}   {m['ratio_median']:>15.2f} "
              f"{m['ms_median']:>9.2f}{flag}")
    print(f"\nBandPO-KL bounds (lo and hi), {solver['tokens']} tokens: table {solver['table_ns_per_token']:.1f} "
          f"ns/token (float32: {solver['table_f32_ns_per_token']:.1f}), {BISECT_ITERS}-step bisection "
          f"{solver['bisect_ns_per_token']:.1f} ns/token, scalar brentq {solver['brentq_us_per_token']:.1f} us/token "
          f"({solver['scalar_tokens_per_rep']} tokens per rep)")
    print(f"speedup vs per-token brentq: table {solver['speedup_table']:.0f}x (float32 "
          f"{solver['speedup_table_f32']:.0f}x), vectorised bisection {solver['speedup_bisect']:.0f}x")
    print(f"worst ratio without Top-K: {worst:.2f}x (target <= 1.5x); solver target >= 1000x")
    if args.json:
        args.json.write_text(json.dumps({"tokens": n_tokens, "reps": reps, "objectives": objectives,
                                         "bandpo_kl_solver": solver}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
