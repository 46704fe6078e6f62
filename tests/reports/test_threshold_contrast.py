"""The threshold_contrast page (DPPO paper App. F.4) on a synthetic sweep: GRPO's final accuracy moves with
ε_high by 0.2, DPPO's does not move with δ; the page reproduces the contrast with its values, draws one panel of
curves per objective, and a sweep without GRPO is 'not testable here'."""
from __future__ import annotations

import json

from harness.reports.cli import main
from harness.reports.results.synthetic import FakeRun, write_sweep


def _curve(final, seed):
    accuracy = [0.35, 0.5, final - 0.02 + 0.01 * (seed % 3), final + 0.01 * (seed % 2), final]
    return {"eval/accuracy": ([0, 5, 10, 15, 20], accuracy)}


def test_the_contrast_is_reproduced_when_only_grpo_moves(shared_store, tmp_path, capsys):
    uri, _ = shared_store
    runs = [FakeRun("dppo", {"delta": d}, seed=s, metrics=_curve(0.6 + 0.005 * ((s * 7 + i) % 5), s))
            for i, d in enumerate((0.1, 0.15, 0.2)) for s in range(6)]
    runs += [FakeRun("grpo", {"eps_high": e}, seed=s, metrics=_curve(0.7 - i * 0.1 + 0.005 * ((s * 3) % 5), s))
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
