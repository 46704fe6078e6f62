"""The sensitivity verdict (threshold_effect.decide) in simulated studies of the main job, with the project's own
functions end to end: each run is an eval-accuracy curve on a 128-problem eval set, its collapse found by
stats/collapse.detect_collapse, its final accuracy the mean of its last 3 evaluations and its gain over its own
first evaluation (stats/failures.py decides which runs did not learn).

The model is the main job's measured spread (`multirun algo=dppo,drpo delta=0.1,0.15,0.2 'seed=range(0,8)'`,
2026-12-08, this machine, 4.6 CPU-minutes): every run starts from the shared warm start at START (eval accuracy
at step 0: 0.352 in all 48 runs), ends near FINAL (means per δ 0.64-0.68) with a seed-to-seed SD of final
accuracy of 0.021-0.053 (root mean square 0.042; modelled as FINAL_SD plus the curve's own eval noise, 0.045 in
all), gains 0.23-0.37 (median 0.30); paired per-seed contrasts between δ values spread by SD 0.04-0.08.
Monte-Carlo tolerance: a rate bounded by α is asserted ≤ α + 2.5 standard errors of the simulated share
(sqrt(α(1 − α)/sims)); a power target is asserted on the simulated share itself."""
from __future__ import annotations

import numpy as np
import pytest

from harness.reports.evidence import threshold_effect as te
from harness.stats import failures, sequential
from harness.stats.collapse import detect_collapse

START, START_SD, FINAL, FINAL_SD = 0.352, 0.0, 0.66, 0.043  # measured: see the module's docstring
EVAL_SIZE, STEPS, VALUES, ALPHA = 128, np.arange(0, 61, 5), (0.1, 0.15, 0.2), 0.05


def _run(rng, final: float):
    """(final accuracy, gain, collapsed?) of one run whose eval curve rises (or falls) from START to `final`."""
    start = START + rng.normal(0.0, START_SD)
    shape = (1 - np.exp(-4 * STEPS / 60.0)) / (1 - np.exp(-4))
    curve = start + (final - start) * shape + rng.normal(0.0, 0.02, len(STEPS))
    curve = np.clip(np.round(curve * EVAL_SIZE) / EVAL_SIZE, 0.0, 1.0)
    out = float(curve[-3:].mean())
    collapsed = detect_collapse(eval_acc=(STEPS, curve), eval_resolution=1.0 / EVAL_SIZE) is not None
    return out, out - float(curve[0]), collapsed


def _study(rng, seeds: int, rate: float = 0.0, kind: str = "stay"):
    """The last value's runs fail at `rate`: they stay at their start ('stay', not learning) or fall 0.25 below
    it ('drop', a collapse). Returns decide()'s inputs and the true failure flags."""
    outcomes, gains, collapsed, truth = {}, {}, {}, {}
    for v in VALUES:
        outcomes[v], gains[v], collapsed[v], truth[v] = {}, {}, {}, {}
        for s in range(seeds):
            fail = v == VALUES[-1] and rng.random() < rate
            final = (START if kind == "stay" else START - 0.25) if fail else FINAL + rng.normal(0.0, FINAL_SD)
            outcomes[v][s], gains[v][s], collapsed[v][s] = _run(rng, final)
            truth[v][s] = fail
    return dict(by_value=outcomes, gains=gains, collapsed=collapsed), truth


def _decide(inputs, alpha=ALPHA):
    return te.decide(inputs["by_value"], collapsed=inputs["collapsed"], gains=inputs["gains"], alpha=alpha,
                     resolution=1.0 / (3 * EVAL_SIZE))


@pytest.mark.parametrize("kind", ["stay", "drop"])
def test_both_kinds_of_failure_are_found_at_any_start(kind):
    """The failure detector flags runs that stay at their start (which the collapse detector alone misses) and
    runs that fall below it, and no healthy run."""
    rng = np.random.default_rng(7)
    inputs, truth = _study(rng, 40, rate=0.5, kind=kind)
    flags = failures.flags(inputs["gains"], inputs["collapsed"])
    failed = [flags[v][s] for v in VALUES for s in truth[v] if truth[v][s]]
    healthy = [flags[v][s] for v in VALUES for s in truth[v] if not truth[v][s]]
    assert len(failed) > 10 and all(failed) and not any(healthy)
    if kind == "stay":
        assert not any(inputs["collapsed"][VALUES[-1]][s] for s in truth[VALUES[-1]] if truth[VALUES[-1]][s])


@pytest.mark.parametrize("kind,seeds", [("stay", 24), ("drop", 24), ("stay", 40)])
def test_false_insensitive_at_most_alpha_when_one_value_fails_in_15_percent(kind, seeds):
    rng = np.random.default_rng({"stay": 11, "drop": 12}[kind] + seeds)
    sims = 300
    said = sum(_decide(_study(rng, seeds, 0.15, kind)[0]).word == te.INSENSITIVE for _ in range(sims))
    assert said / sims <= ALPHA + 2.5 * np.sqrt(ALPHA * (1 - ALPHA) / sims), said / sims


def test_insensitive_in_80_percent_of_studies_at_24_seeds_without_an_effect():
    rng = np.random.default_rng(21)
    sims = 300
    words = [_decide(_study(rng, 24)[0]).word for _ in range(sims)]
    assert words.count(te.INSENSITIVE) / sims >= 0.80, {w: words.count(w) for w in set(words)}


def test_no_sensitive_verdict_beyond_alpha_over_a_whole_sequential_study():
    """No effect; rounds of 8 seeds up to 40 per value, each look at its share of α (stats/sequential.py, the
    O'Brien–Fleming-type spending the adaptive sweeps use), stopping when decided: any 'sensitive' word at any
    look at most α of the time over the whole study."""
    rng = np.random.default_rng(31)
    sims, per_round, most = 200, 8, 40
    alarms = 0
    for _ in range(sims):
        inputs, _ = _study(rng, most)
        for n in sequential.looks(per_round, most):
            seen = {k: {v: {s: x for s, x in d.items() if s < n} for v, d in inputs[k].items()} for k in inputs}
            result = _decide(seen, alpha=sequential.level(n, per_round, most, ALPHA))
            if result.word in (te.SENSITIVE, te.SMALL, te.DIFFERS):
                alarms += 1
                break
            if result.decided:
                break
    assert alarms / sims <= ALPHA + 2.5 * np.sqrt(ALPHA * (1 - ALPHA) / sims), alarms / sims
