"""python -m harness findings: the claim sweeps, FINDINGS.md written from the claim reports, and the
--quick pipeline check run end to end."""
from __future__ import annotations

import pytest

from harness.sweeps.findings import QUICK_SEEDS, claim_sweeps, quick_variant
from harness.sweeps.findings_carry import carry, read_page
from harness.sweeps.findings_doc import ClaimResult, read_verdicts, write_findings

CLAIMS = ["claim1_sanity", "claim2_trust_region", "claim3_anchor", "claim4_relaxation", "claim5_drpo_vs_dppo",
          "claim6_bandpo"]


def test_every_claim_is_a_pre_registered_design_with_a_claim_report():
    specs = claim_sweeps()
    assert [s.name for s in specs] == CLAIMS
    for spec in specs:
        assert any(k.startswith("claim_") for k in spec.reports), spec.name
        design = spec.design
        assert design.pilot or design.sizing, f"{spec.name}: sized by a pilot, or says how it was sized"
        if design.adaptive:  # rounds of seeds until decided or the budget is spent
            assert design.budget.runs and design.budget.minutes, spec.name
            assert not any("seed" in grid for grid in spec.grids), f"{spec.name}: seeds come from the design"
        else:  # one look at a fixed seed list (the collapse-rate designs), sized in `sizing`
            assert design.sizing and all(len(grid["seed"]) >= 8 for grid in spec.grids), spec.name
        if design.pilot:
            used = set(range(design.first_seed, design.first_seed + design.max_seeds(1)))
            assert not set(design.pilot.seeds) & used, spec.name
        assert design.tests and all(t.sesoi > 0 for t in design.tests), spec.name
        assert design.alpha == 0.05 and design.power == 0.8
        seeds_before = [grid.get("seed") for grid in spec.grids]
        quick = quick_variant(spec)
        assert all(len(g["seed"]) == QUICK_SEEDS for g in quick.grids) and not quick.design.adaptive
        assert [grid.get("seed") for grid in spec.grids] == seeds_before  # the original is untouched
        assert not any(o.startswith("trainer.steps=") for o in quick.overrides), quick.overrides  # debug=quick's


def test_findings_md_is_built_from_the_claim_page(tmp_path):
    spec = next(s for s in claim_sweeps() if s.name == "claim6_bandpo")
    page = tmp_path / "sweep" / "reports" / "claim_bandpo"
    page.mkdir(parents=True)
    (page / "claim_bandpo.png").write_bytes(b"\x89PNG fake")
    (page / "summary.md").write_text("\n".join([
        "# Claim 6", "", "_sweep x · 6 runs_", "", "_rule text_", "", "## Tests", "", "| part | verdict |",
        "|---|---|", "| (a) | reproduced |", "", "![The figure, bands inside [0, 1].](claim_bandpo.png)", "",
        "**Verdict: inconclusive — (a) reproduced; (b) inconclusive**", "", "## Runs used", "",
        "| run | run id | status |", "|---|---|---|", "| a | 1 | FINISHED |", "| b | 2 | FINISHED |",
        "| c | 3 | FAILED |"]))
    out = tmp_path / "out"
    path = write_findings([ClaimResult(spec, tmp_path / "sweep", 65.0, 1)], out, ["python", "-m", "harness",
                          "findings"], quick=False, seconds=70.0, runs_commit="abc1234",
                          rules={"": "def5678", "claim6_bandpo": "0123abc"})
    text = path.read_text()
    assert read_verdicts(path) == {"claim6_bandpo": "inconclusive"}
    assert "| **inconclusive** | 1 FAILED, 2 FINISHED | 1.1 min | `claim6_bandpo` |" in text
    assert "![The figure, bands inside [0, 1].](findings/claim6_bandpo/claim_bandpo.png)" in text  # relinked
    assert "runs at commit `abc1234`" in text  # read before the runs, not after FINDINGS dirtied the checkout
    assert "rules (the designs in `sweeps/claim*.yaml`) fixed at commit `def5678`" in text
    assert "Rules: `sweeps/claim6_bandpo.yaml` as last committed before the runs, at `0123abc`; runs at " \
           "`abc1234`." in text  # each claim page names its own rules commit
    assert (out / "findings" / "claim6_bandpo" / "claim_bandpo.png").read_bytes() == b"\x89PNG fake"
    assert "#### Tests" in text and "| (a) | reproduced |" in text and "Runs used" not in text
    assert "exited with code 1" in text


def test_a_claim_not_testable_here_keeps_its_word_and_the_failed_precondition(tmp_path):
    spec = next(s for s in claim_sweeps() if s.name == "claim2_trust_region")
    page = tmp_path / "sweep" / "reports" / "claim_trust_region"
    page.mkdir(parents=True)
    reason = ("precondition failed: pg_is stable without mismatch: gain in [algo=pg_is,precision.mismatch_scale=0] "
              "measured -0.12 (mean over 8 seeds), needs ≥ -0.05; the declared tests are not read")
    (page / "summary.md").write_text(f"# Claim 2\n\n**Verdict: not testable here — {reason}**\n")
    path = write_findings([ClaimResult(spec, tmp_path / "sweep", 65.0, 0)], tmp_path / "out",
                          ["python", "-m", "harness", "findings"], quick=False, seconds=70.0, runs_commit="abc1234")
    assert read_verdicts(path) == {"claim2_trust_region": "not testable here"}
    assert f"**Verdict: not testable here — {reason}**" in path.read_text()


def test_a_size_not_shown_keeps_its_own_word_in_findings(tmp_path):
    """#52: a claim whose hypothesis states a size and whose data show only its direction is neither
    "reproduced" nor "inconclusive" in FINDINGS.md: its row, its section and read_verdicts keep the word."""
    spec = next(s for s in claim_sweeps() if s.name == "claim6_bandpo")
    page = tmp_path / "sweep" / "reports" / "claim_bandpo"
    page.mkdir(parents=True)
    reason = "(b) bandpo keeps more entropy (log end/start ratio): direction reproduced, size not shown"
    (page / "summary.md").write_text(f"# Claim 6\n\n**Verdict: direction reproduced, size not shown — {reason}**\n")
    path = write_findings([ClaimResult(spec, tmp_path / "sweep", 65.0, 0)], tmp_path / "out",
                          ["python", "-m", "harness", "findings"], quick=False, seconds=70.0, runs_commit="abc1234")
    assert read_verdicts(path) == {"claim6_bandpo": "direction reproduced, size not shown"}
    text = path.read_text()
    assert "| **direction reproduced, size not shown** |" in text
    assert f"**Verdict: direction reproduced, size not shown — {reason}**" in text


def _claim_page(tmp_path, name, kind, verdict, figure=b"\x89PNG fake"):
    """A sweep folder whose claim report says `verdict`, with one figure."""
    page = tmp_path / name / "reports" / kind
    page.mkdir(parents=True)
    (page / f"{kind}.png").write_bytes(figure)
    (page / "summary.md").write_text("\n".join([
        f"# {name}", "", "_meta_", "", f"![Figure of {name}.]({kind}.png)", "", f"**Verdict: {verdict} — because**",
        "", "## Runs used", "", "| run | run id | status |", "|---|---|---|", "| a | 1 | FINISHED |"]))
    return tmp_path / name


def test_a_follow_up_study_carries_the_claims_it_did_not_rerun(tmp_path):
    """`findings --carry EARLIER`: the claims the new study did not run keep the earlier page's section,
    verdict, row and figures; the rerun claims are the new study's; the page says which is which."""
    specs = {s.name: s for s in claim_sweeps()}
    earlier_out = tmp_path / "earlier"
    earlier = write_findings(
        [ClaimResult(specs["claim2_trust_region"], _claim_page(tmp_path / "a", "c2", "claim_trust_region",
                                                               "not reproduced", b"\x89PNG two"), 600.0, 0),
         ClaimResult(specs["claim6_bandpo"], _claim_page(tmp_path / "a", "c6", "claim_bandpo", "inconclusive"),
                     120.0, 0)],
        earlier_out, ["python", "-m", "harness", "findings"], quick=False, seconds=720.0, runs_commit="old1234")
    out = tmp_path / "new"
    carried = carry(earlier, ["claim6_bandpo"], out)
    assert [c.name for c in carried] == ["claim2_trust_region"] and carried[0].verdict == "not reproduced"
    path = write_findings([ClaimResult(specs["claim6_bandpo"], _claim_page(tmp_path / "b", "c6", "claim_bandpo",
                                                                          "reproduced"), 60.0, 0)],
                          out, ["python", "-m", "harness", "findings"], quick=False, seconds=60.0,
                          runs_commit="new5678", carried=carried, carried_from="earlier/FINDINGS.md")
    text = path.read_text()
    assert read_verdicts(path) == {"claim2_trust_region": "not reproduced", "claim6_bandpo": "reproduced"}
    rows = [line for line in text.splitlines() if line.endswith((" this one |", ") |"))]
    assert [r.split("`")[1] for r in rows] == ["claim2_trust_region", "claim6_bandpo"]  # in claim order
    assert rows[0].endswith("| 10.0 min | `claim2_trust_region` | carried (" + carried[0].generated + ") |")
    assert "| 1 FINISHED | 1.0 min | `claim6_bandpo` | this one |" in rows[1]
    assert "are carried from `earlier/FINDINGS.md`" in text and "runs at commit `new5678`" in text
    earlier_section = earlier.read_text().split("\n## ")[1].rstrip()  # [0]: the title and the summary
    assert "`claim2_trust_region`" in earlier_section.splitlines()[0]
    for line in earlier_section.splitlines()[1:]:
        assert line in text  # copied as it stood: its rules and runs commits are the earlier study's
    assert "runs at `old1234`" in text and "Carried from `earlier/FINDINGS.md`" in text
    assert (out / "findings" / "claim2_trust_region" / "claim_trust_region.png").read_bytes() == b"\x89PNG two"
    assert (out / "findings" / "claim6_bandpo" / "claim_bandpo.png").is_file()
    assert text.index("`claim2_trust_region`\n") < text.index("## 6.")


def _earlier_page(tmp_path):
    """An earlier study's FINDINGS.md holding claim 2 with its figure findings/claim2_trust_region/claim_trust_region.png."""
    spec = next(s for s in claim_sweeps() if s.name == "claim2_trust_region")
    page = _claim_page(tmp_path / "a", "c2", "claim_trust_region", "not reproduced", b"\x89PNG two")
    return write_findings([ClaimResult(spec, page, 600.0, 0)], tmp_path / "earlier",
                          ["python", "-m", "harness", "findings"], quick=False, seconds=600.0, runs_commit="old1234")


def test_a_carried_figure_link_out_of_its_folder_is_refused_before_anything_is_written(tmp_path):
    earlier = _earlier_page(tmp_path)
    victim = tmp_path / "victim.png"
    victim.write_bytes(b"mine")
    text = earlier.read_text()
    assert "](findings/claim2_trust_region/claim_trust_region.png)" in text
    earlier.write_text(text.replace("](findings/claim2_trust_region/claim_trust_region.png)",
                                    "](findings/claim2_trust_region/../../../victim.png)"))
    (earlier.parent / "victim.png").write_bytes(b"planted")  # what the link names, beside the earlier page
    with pytest.raises(ValueError, match="leads out of its findings/<claim>/ folder"):
        read_page(earlier)
    out = tmp_path / "out" / "new"
    with pytest.raises(ValueError, match="leads out of"):
        carry(earlier, [], out)
    assert victim.read_bytes() == b"mine" and not out.exists()


def test_carry_never_writes_through_a_link_out_of_its_output_folder(tmp_path, capsys):
    earlier = _earlier_page(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "claim_trust_region.png").write_bytes(b"mine")
    out = tmp_path / "new"
    (out / "findings").mkdir(parents=True)
    (out / "findings" / "claim2_trust_region").symlink_to(outside)  # a planted link to another folder
    assert [c.name for c in carry(earlier, [], out)] == ["claim2_trust_region"]
    assert (outside / "claim_trust_region.png").read_bytes() == b"mine"
    assert "claim2_trust_region's figure not copied" in capsys.readouterr().err
    (out / "findings" / "claim2_trust_region").unlink()
    (out / "findings" / "claim2_trust_region").mkdir()
    (out / "findings" / "claim2_trust_region" / "claim_trust_region.png").symlink_to(outside / "claim_trust_region.png")
    carry(earlier, [], out)  # the figure itself a link to a file outside
    assert (outside / "claim_trust_region.png").read_bytes() == b"mine"


def test_a_page_to_carry_must_hold_claims(tmp_path):
    (tmp_path / "x.md").write_text("# not findings\n")
    with pytest.raises(ValueError, match="holds no claim written by"):
        read_page(tmp_path / "x.md")


def test_unknown_claim_is_refused_in_one_line(run_harness):
    proc = run_harness("findings", "--only", "claim9_nope")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "'claim9_nope' is not a claim sweep" in proc.stderr


def test_bad_override_is_refused_before_any_run(run_harness):
    proc = run_harness("findings", "--quick", "trainer.lr=-1")
    assert proc.returncode == 2 and "trainer.lr=-1" in proc.stderr
    assert not (run_harness.root / "multirun").exists()


@pytest.mark.slow
def test_quick_findings_run_every_claim_end_to_end(run_harness):
    """The CI pipeline check: every claim sweep runs (tiny runs, two seeds), every claim report is built,
    and FINDINGS.md carries a verdict and a figure per claim. The verdicts themselves mean nothing here."""
    proc = run_harness("findings", "--quick", timeout=1200)
    assert proc.returncode == 0, proc.stderr[-4000:]
    findings = run_harness.root / "findings-quick" / "FINDINGS.md"
    verdicts = read_verdicts(findings)
    assert sorted(verdicts) == CLAIMS
    assert set(verdicts.values()) <= {"reproduced", "not reproduced", "inconclusive", "not testable here"}
    text = findings.read_text()
    assert "Quick mode" in text
    for name in CLAIMS:
        figures = list((run_harness.root / "findings-quick" / "findings" / name).glob("*.png"))
        assert figures and f"](findings/{name}/{figures[0].name})" in text
    assert text.count(" FINISHED |") == len(CLAIMS)  # every run of every claim finished
    folders = sorted(str(p) for p in (run_harness.root / "multirun").glob("claim*/*"))
    rendered = run_harness("findings", "--render", *folders, "--out", str(run_harness.root / "rendered"))
    assert rendered.returncode == 0, rendered.stderr[-2000:]
    again = run_harness.root / "rendered" / "FINDINGS.md"
    assert read_verdicts(again) == verdicts  # the same pages, nothing rerun
    assert "Rules: `sweeps/claim1_sanity.yaml` as last committed before the runs" in again.read_text()
    # a follow-up of claim 6 alone: the other five carried from the quick page, as it had them
    follow = run_harness("findings", "--render", folders[-1], "--carry", str(findings), "--out",
                         str(run_harness.root / "follow"))
    assert follow.returncode == 0, follow.stderr[-2000:]
    assert read_verdicts(run_harness.root / "follow" / "FINDINGS.md") == verdicts
    bad = run_harness("findings", "--render", folders[-1], "--carry", str(run_harness.root / "nope.md"))
    assert bad.returncode == 2 and bad.stderr.startswith("harness: error: findings --carry:")


def test_a_claim_sweep_takes_more_seeds_from_the_command_line(tmp_path, monkeypatch):
    """`python -m harness sweep claim6_bandpo 'seed=range(0,10)'`: a sweep-valued override replaces the
    file's seed axis (and is validated like every other job before anything runs)."""
    from harness.config.overrides import expand_sweep
    from harness.sweeps.grid_runs import prepare
    from harness.reports.evidence.sweep_spec import load_sweep

    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    sweep_dir, grids = prepare(load_sweep("claim6_bandpo"), ["seed=range(0,10)"])
    jobs = expand_sweep(grids[0])
    assert len(jobs) == 20 and {j[-1] for j in jobs} == {f"seed={s}" for s in range(10)}
    assert sweep_dir.parent == tmp_path / "multirun" / "claim6_bandpo"


def test_toy_experiments_compose_for_the_builtin_trainer():
    from harness.launchers.compose import compose
    from harness.launchers.compose import validated as validate

    mismatch = validate(compose(["experiment=toy_mismatch"]))
    assert mismatch.trainer.name == "builtin" and mismatch.precision.name == "fp8_rollout"
    assert mismatch.precision.mismatch_scale == 8.0 and mismatch.trainer.mini_batches == 4
    sanity = validate(compose(["experiment=toy_sanity"]))
    assert sanity.dataset.train_size == 64 and sanity.trainer.steps == 400
    onpolicy = validate(compose(["experiment=toy_onpolicy", "seed=4"]))
    assert onpolicy.trainer.mini_batches == 1 and onpolicy.trainer.warmstart.seed == 4  # one warm start per seed
    assert validate(compose(["experiment=toy_lowprob"])).trainer.temperature == 1.5
    assert validate(compose(["experiment=toy_mismatch", "precision=fp32"])).precision.mismatch_scale == 8.0
