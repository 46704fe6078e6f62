"""The threshold_contrast page (DPPO paper App. F.4) on a synthetic sweep: GRPO's final accuracy moves with
ε_high by 0.2, DPPO's does not move with δ; the page reproduces the contrast with its values, draws one panel of
curves per objective, and a sweep without GRPO is 'not testable here'. The precondition: GRPO flat, DPPO moving
is 'not reproduced' only where every threshold binds (its masked share ≥ 1% at the tightest value and moving with
it); a GRPO ε_high or a DPPO δ that does not bind makes it 'not testable here', whatever the accuracies."""
from __future__ import annotations

import json

import pytest

from harness.reports.cli import main
from harness.reports.results.synthetic import FakeRun, write_sweep

BINDING = (0.04, 0.03, 0.02)  # masked share per threshold value, tightest first: acts and moves


def _curve(final, seed, masked=0.03, key="objective/masked_frac"):
    accuracy = [0.35, 0.5, final - 0.02 + 0.01 * (seed % 3), final + 0.01 * (seed % 2), final]
    steps = list(range(1, 21))
    return {"eval/accuracy": ([0, 5, 10, 15, 20], accuracy),
            key: (steps, [masked + 0.002 * ((seed + t) % 3) for t in steps])}


def test_the_contrast_is_reproduced_when_only_grpo_moves(shared_store, tmp_path, capsys):
    uri, _ = shared_store
    runs = [FakeRun("dppo", {"delta": d}, seed=s, metrics=_curve(0.6 + 0.005 * ((s * 7 + i) % 5), s, BINDING[i]))
            for i, d in enumerate((0.1, 0.15, 0.2)) for s in range(6)]
    runs += [FakeRun("grpo", {"eps_high": e}, seed=s, metrics=_curve(0.7 - i * 0.1 + 0.005 * ((s * 3) % 5), s,
                                                                     BINDING[i], "objective/masked_frac_pos"))
             for i, e in enumerate((0.2, 0.28, 0.4)) for s in range(6)]
    write_sweep(uri, runs, "2026-05-09/00-00-00-000000", steps=20, eval_every=5)
    out = tmp_path / "reports"
    assert main(["2026-05-09/00-00-00-000000", "--tracking-uri", uri, "--out", str(out), "--kind",
                 "threshold_contrast"]) == 0, capsys.readouterr().err
    md = (out / "threshold_contrast" / "summary.md").read_text()
    assert "less sensitive to its threshold than GRPO to ε_high: reproduced" in md, md[:3000]
    assert "dppo: spread 0.0" in md and " vs grpo 0." in md and "bootstrap p = " in md
    assert (out / "threshold_contrast" / "curves_per_threshold.png").is_file()
    verdicts = json.loads((out / "verdicts.json").read_text())
    assert any(v["word"] == "reproduced" for v in verdicts), verdicts


def test_without_grpo_the_contrast_is_not_testable(shared_store, tmp_path, capsys):
    uri, _ = shared_store
    runs = [FakeRun("dppo", {"delta": d}, seed=s, metrics=_curve(0.6, s)) for d in (0.1, 0.2) for s in range(4)]
    write_sweep(uri, runs, "2026-05-10/00-00-00-000000", steps=20, eval_every=5)
    out = tmp_path / "reports"
    assert main(["2026-05-10/00-00-00-000000", "--tracking-uri", uri, "--out", str(out), "--kind",
                 "threshold_contrast"]) == 0, capsys.readouterr().err
    assert "needs DPPO and GRPO" in (out / "threshold_contrast" / "summary.md").read_text()


@pytest.mark.parametrize("grpo_masked, dppo_masked, word", [
    (BINDING, BINDING, "not reproduced"),  # every threshold binds: the verdict is the contrast's
    ((0.002, 0.0015, 0.001), BINDING, "not testable here"),  # GRPO's ε_high barely masks (< 1%)
    (BINDING, (0.03, 0.03, 0.03), "not testable here"),  # DPPO's δ masks 3% but the same at every δ
])
def test_the_contrast_is_read_only_where_the_thresholds_bind(shared_store, tmp_path, capsys, grpo_masked,
                                                              dppo_masked, word):
    uri, _ = shared_store
    sweep = f"2026-05-11/00-00-00-{abs(hash((grpo_masked, dppo_masked))) % 10 ** 6:06d}"
    runs = [FakeRun("dppo", {"delta": d}, seed=s, metrics=_curve((0.68, 0.68, 0.6)[i], s, dppo_masked[i]))
            for i, d in enumerate((0.1, 0.15, 0.2)) for s in range(6)]
    runs += [FakeRun("grpo", {"eps_high": e}, seed=s, metrics=_curve(0.67, s, grpo_masked[i],
                                                                     "objective/masked_frac_pos"))
             for i, e in enumerate((0.2, 0.28, 0.4)) for s in range(6)]
    write_sweep(uri, runs, sweep, steps=20, eval_every=5)
    out = tmp_path / "reports"
    assert main([sweep, "--tracking-uri", uri, "--out", str(out), "--kind", "threshold_contrast"]) == 0, \
        capsys.readouterr().err
    md = (out / "threshold_contrast" / "summary.md").read_text()
    assert f"less sensitive to its threshold than GRPO to ε_high: {word} —" in md, md[:4000]
    assert "Precondition (the threshold binds" in md and "| objective/masked_frac_pos |" in md
    assert ("precondition failed (the threshold does not bind)" in md) == (word == "not testable here")
    bad = "grpo" if grpo_masked != BINDING else "dppo" if dppo_masked != BINDING else None
    rows = [line for line in md.splitlines() if line.startswith(("| grpo |", "| dppo |")) and "% (n=6)" in line]
    assert [row.split(" | ")[0][2:] for row in rows if row.endswith("| no |")] == ([bad] if bad else []), rows
