"""Every report kind built from real tiny sweeps, and from synthetic stores with missing data."""
from __future__ import annotations

import math

import numpy as np
import pytest
from report_pages import check_page

from harness.reports.cli import main
from harness.reports.results.synthetic import FakeRun, write_sweep

EXPECTED = {"delta": {"overview", "sensitivity", "stability", "geometry"},
            "alpha": {"overview", "alpha_relaxation", "anchor_ablation", "stability", "geometry"}}


def _run_ids(sweep_dir):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{sweep_dir.parents[2] / 'mlruns.db'}")  # <root>/multirun/<date>/<time>
    sweep_id = "/".join(sweep_dir.parts[-2:])
    return {r.info.run_id for r in client.search_runs(
        [e.experiment_id for e in client.search_experiments()], f"tags.`harness.sweep_id` = '{sweep_id}'")
        if r.data.tags.get("harness.role") != "parent"}  # the jobs' runs, not the sweep's parent run


@pytest.mark.parametrize("sweep", sorted(EXPECTED))
def test_real_sweep_builds_its_kinds(real_sweeps, built, sweep):
    folder = real_sweeps[sweep] / "reports"
    pages = {p.parent.name for p in built[sweep] if p.name == "index.html"}
    assert pages == EXPECTED[sweep]
    assert {p.name for p in built[sweep]} == {"index.html", "summary.md"}
    ids = _run_ids(real_sweeps[sweep])
    assert len(ids) == 8
    for kind in pages:
        images = check_page(folder / kind / "index.html")
        assert images, f"{kind} has no figure"
        md = (folder / kind / "summary.md").read_text()
        assert sum(run_id in md for run_id in ids) >= 4, f"{kind} does not list its runs"
    index = (folder / "index.html").read_text()
    assert all(f'href="{kind}/index.html"' in index for kind in pages)
    assert "not built" in (folder / "README.md").read_text()


def test_sensitivity_states_method_and_verdict(real_sweeps, built):
    md = (real_sweeps["delta"] / "reports" / "sensitivity" / "summary.md").read_text()
    assert "Student-t interval" in md and "t(0.975, n−1)" in md
    assert "**dppo: " in md and "**drpo: " in md
    assert "| dppo | δ | 0.1 | 2 |" in md and "| drpo | δ | 0.2 | 2 |" in md
    assert "SESOI ±0.05 accuracy (the harness's default" in md and "α 0.05, power target 0.8" in md  # not a named sweep
    assert "## What the threshold did" in md and "| dppo | δ=0.1 | 2 |" in md
    verdicts = [line for line in md.splitlines() if line.startswith("**dppo: ") or line.startswith("**drpo: ")]
    assert len(verdicts) == 2 and all(any(w in v for w in ("sensitive", "insensitive", "undecided")) for v in verdicts)
    assert "| dppo | δ=0.1 − δ=0.2 | 2 |" in md  # the pairwise contrast, paired over the 2 seeds
    if any("undecided" in v for v in verdicts):  # the exact command for the missing seeds, from multirun.yaml
        assert "python -m harness multirun algo=dppo,drpo delta=0.1,0.2" in md and "'seed=range(2," in md


def test_geometry_contrasts_the_sweep_with_the_library_default(real_sweeps, built):
    md = (real_sweeps["delta"] / "reports" / "geometry" / "summary.md").read_text()
    assert "drpo δ=12.5 (library default)" in md and "dppo δ=0.15 (library default)" in md
    assert "drpo δ=0.1" in md and "weight_drpo.png" in md


def test_alpha_anchor_and_precision_pages(real_sweeps, built):
    reports = real_sweeps["alpha"] / "reports"
    alpha = (reports / "alpha_relaxation" / "summary.md").read_text()
    assert "| grpo anchor=rollout precision=fp32 | 0.3 | both | 1 |" in alpha
    assert "clipped_token_histograms.png" in alpha  # the built-in trainer saves token_stats/ at eval steps
    anchor = (reports / "anchor_ablation" / "summary.md").read_text()
    assert "rollout" in anchor and "recompute" in anchor and "mismatch" in anchor
    stability = (reports / "stability" / "summary.md").read_text()
    assert "| bf16 | 1 |" in stability and "| fp32 | 1 |" in stability and "Collapse rule" in stability
    assert "precision=bf16" in stability  # a variant per setting: replicates are seeds only (here one each)
    assert "Collapse detector false-alarm rate" in stability


def test_cli_by_sweep_id_through_the_harness_cli(real_sweeps, tmp_path, monkeypatch):
    """`python -m harness report <sweep id>` (the harness CLI's routing, in-process), run from elsewhere."""
    from harness.cli import run_cli

    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(real_sweeps["delta"].parents[2]))
    monkeypatch.chdir(tmp_path)
    sweep_id = "/".join(real_sweeps["delta"].parts[-2:])
    assert run_cli(["report", sweep_id, "--kind", "overview", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "overview" / "index.html").is_file()
    assert not (tmp_path / "out" / "sensitivity").exists()


def test_a_finished_run_without_a_finite_accuracy_is_named_as_such(shared_store, tmp_path, capsys):
    """A run that FINISHED with NaN evaluations is left out of the statistics as "finished without a final
    accuracy", not called "not finished (FINISHED)"."""
    uri, _ = shared_store
    nan_eval = {"eval/accuracy": ([0, 10, 20], [math.nan] * 3), "eval/best_accuracy": ([0, 10, 20], [math.nan] * 3)}
    runs = [FakeRun("drpo", {"delta": d}, seed=s) for d in (0.1, 0.2) for s in (0, 1)]
    runs.append(FakeRun("drpo", {"delta": 0.2}, seed=2, metrics=nan_eval))
    runs.append(FakeRun("drpo", {"delta": 0.1}, seed=2, status="KILLED", stop_at=5))
    write_sweep(uri, runs, "2026-05-06/00-00-00-000000", steps=20, eval_every=10)
    out = tmp_path / "reports"
    assert main(["2026-05-06/00-00-00-000000", "--tracking-uri", uri, "--out", str(out), "--kind", "sensitivity"]) == 0, \
        capsys.readouterr().err
    sens = (out / "sensitivity" / "summary.md").read_text()
    assert "not finished (FINISHED)" not in sens
    assert "drpo δ=0.2: 1 of 3 runs finished without a finite final accuracy — left out of the statistics." in sens
    assert "drpo δ=0.1: 1 of 3 runs not finished (KILLED) — left out of the statistics." in sens


def test_missing_data_is_said_not_fatal(shared_store, tmp_path, capsys):
    """FAILED and RUNNING runs, one seed: every kind is still built and says what is missing."""
    uri, _ = shared_store
    folder = tmp_path
    runs = [FakeRun("drpo", {"delta": 0.1}, seed=0), FakeRun("drpo", {"delta": 0.2}, seed=0),
            FakeRun("drpo", {"delta": 0.2}, seed=1, status="FAILED", stop_at=8,
                    error="Traceback (most recent call last):\nFloatingPointError: non-finite loss nan at step 9"),
            FakeRun("dppo", {"delta": 0.1}, seed=0, status="RUNNING", stop_at=5),
            FakeRun("dppo", {"delta": 0.2}, seed=0, collapse_at=10)]
    write_sweep(uri, runs, "2026-05-05/00-00-00-000000", steps=20, eval_every=2)
    out = folder / "reports"
    code = main(["2026-05-05/00-00-00-000000", "--tracking-uri", uri, "--out", str(out), "--kind", "all"])
    assert code == 0, capsys.readouterr().err
    sens = (out / "sensitivity" / "summary.md").read_text()
    assert "one finished seed — no confidence interval" in sens and "not finished" in sens
    assert "undecided to δ — fewer than 2 threshold values with ≥ 2 finished seeds: no test" in sens
    overview = (out / "overview" / "summary.md").read_text()
    assert "FloatingPointError: non-finite loss nan at step 9" in overview and "RUNNING" in overview
    stability = (out / "stability" / "summary.md").read_text()
    assert "still running" in stability and "| 9 |" in stability  # the FAILED run collapsed at step 9
    assert "This sweep runs one precision (fp32)" in stability
    anchor = (out / "anchor_ablation" / "summary.md").read_text()
    assert "cannot show a anchor_ablation report" in anchor  # asked for by name: a page saying why
    for kind in ("overview", "sensitivity", "alpha_relaxation", "anchor_ablation", "stability", "geometry"):
        check_page(out / kind / "index.html")


def test_token_stats_give_histograms_and_reports_go_to_the_parent_run(shared_store, tmp_path):
    from mlflow.tracking import MlflowClient

    uri, _ = shared_store
    folder = tmp_path
    rng = np.random.default_rng(0)

    def stats():
        return {step: {"nu": rng.random(200), "masked": (rng.random(200) < 0.3).astype(np.int8),
                       "entropy": rng.random(200) * 2} for step in (5, 10)}

    runs = [FakeRun("grpo", {"relax_alpha": a}, seed=0, token_stats=stats()) for a in (0.0, 0.2)]
    runs.append(FakeRun("grpo", {"relax_alpha": 0.2, "relax": "high"}, seed=0))
    out = write_sweep(uri, runs, "2026-06-06/00-00-00-000000", parent=True)
    argv = [out["parent_id"], "--tracking-uri", uri, "--out", str(folder / "r"), "--kind", "alpha_relaxation"]
    assert main(argv) == 0
    images = check_page(folder / "r" / "alpha_relaxation" / "index.html")
    assert "clipped_token_histograms.png" in images
    md = (folder / "r" / "alpha_relaxation" / "summary.md").read_text()
    assert "1 of 3 runs have no token stats" in md
    logged = {f.path for f in MlflowClient(uri).list_artifacts(out["parent_id"], "reports/alpha_relaxation")}
    assert "reports/alpha_relaxation/index.html" in logged and "reports/alpha_relaxation/summary.md" in logged


def test_cli_errors_are_one_line(capsys):
    assert main(["x", "--kind", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "'nope' is not a report kind; known: overview, sensitivity" in err
    assert main([]) == 0 and "sweeps under" in capsys.readouterr().out  # no target: lists the sweeps here
    assert main(["--list"]) == 0 and "geometry" in capsys.readouterr().out


def test_sensitivity_says_what_the_threshold_did(shared_store, tmp_path, capsys):
    """Beside the verdict: the masked share, gradient weights, mismatch and collapses per δ, from the runs'
    histories; a line where δ barely acts, where the rollout has no real mismatch, and where δ is off the
    objective's paper scale (DRPO: 12.5); a collapsed run counts in its δ's collapse rate."""
    uri, _ = shared_store
    steps = [1, 2, 3, 4]

    def acted(masked, mismatch, seed, collapsed=False):
        accuracy = [0.45, 0.5, 0.1, 0.05, 0.05] if collapsed else [0.45, 0.5, 0.55 + 0.01 * seed, 0.6, 0.6]
        return {"eval/accuracy": ([0, 5, 10, 15, 20], accuracy),
                "objective/masked_frac": (steps, [masked] * 4), "train/mismatch": (steps, [mismatch] * 4),
                "objective/weight_mean": (steps, [0.9] * 4), "objective/weight_min": (steps, [-0.5, -0.3, -0.5, -0.3]),
                "objective/weight_max": (steps, [2.0] * 4)}
    runs = [FakeRun("drpo", {"delta": d}, seed=s, metrics=acted(m, 1e-8, s)) for d, m in ((0.1, 0.03), (0.2, 0.004))
            for s in range(3)]
    runs.append(FakeRun("drpo", {"delta": 0.2}, seed=3, metrics=acted(0.004, 1e-8, 3, collapsed=True)))
    killed = acted(0.03, 1e-8, 4)  # stopped early without collapsing: in no collapse rate, table or verdict
    runs.append(FakeRun("drpo", {"delta": 0.1}, seed=4, status="KILLED",
                        metrics={k: (x[:2], y[:2]) for k, (x, y) in killed.items()}))
    write_sweep(uri, runs, "2026-05-07/00-00-00-000000", steps=20, eval_every=2)
    out = tmp_path / "reports"
    assert main(["2026-05-07/00-00-00-000000", "--tracking-uri", uri, "--out", str(out), "--kind", "sensitivity"]) == 0, \
        capsys.readouterr().err
    sens = (out / "sensitivity" / "summary.md").read_text()
    assert "## What the threshold did" in sens
    assert "| drpo | δ=0.1 | 4 | 3.00% | 0.900 [-0.400, 2.000] | 1e-08 | 0/3 |" in sens
    assert "| drpo | δ=0.2 | 4 | 0.40% | 0.900 [-0.400, 2.000] | 1e-08 | 1/4 |" in sens
    assert "drpo: at δ=0.2 (0.40%) the objective stopped pushing fewer than 1% of tokens" in sens
    assert "drpo: the rollout's mismatch with the trainer is float noise" in sens
    assert "drpo: δ = 0.1, 0.2 is off the paper's scale (δ = 12.5" in sens
    assert "Declared: SESOI ±0.05 accuracy (the harness's default" in sens
    assert "drpo: undecided to δ" in sens and "(0.1: 0/3, 0.2: 1/4)" in sens  # the failure part: counts per δ
