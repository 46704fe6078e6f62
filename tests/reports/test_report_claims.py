"""The claim reports: verdicts that follow the data, from the tests and preconditions declared in
sweeps/claim*.yaml (synthetic sweeps in a real MLflow store, built through `python -m harness report`). The
synthetic sweeps have 8 seeds per arm and no pilot, so each claim file is read here as a one-look design of
8 seeds (its tests, preconditions and α as committed; only the seed plan differs)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from report_pages import check_page

from harness.reports.cli import main
from harness.reports.results.synthetic import FakeRun, write_sweep

STEPS = list(range(1, 21))
EVAL_STEPS = [0, 5, 10, 15, 20]
SEEDS = range(8)
SWEEPS = Path(__file__).resolve().parents[2] / "sweeps"


@pytest.fixture(autouse=True)
def eight_seed_claims(tmp_path_factory, monkeypatch):
    folder = tmp_path_factory.mktemp("claims")
    for path in SWEEPS.glob("claim*.yaml"):
        data = yaml.safe_load(path.read_text())
        if data.get("seeds") == "auto":
            data.pop("pilot", None)
            data["budget"] = {"runs": 999, "per_round": len(SEEDS), "max_seeds": len(SEEDS)}
        (folder / path.name).write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    monkeypatch.setenv("HARNESS_SWEEPS", str(folder))


def _verdict_line(md: str) -> str:
    return next(line for line in md.splitlines() if line.startswith("**Verdict: "))


def _verdict(md: str) -> str:
    return _verdict_line(md)[len("**Verdict: "):].split(" — ")[0]


def _claim_page(uri, runs, sweep_id: str, kind: str, out) -> str:
    """The claim report `kind` of synthetic runs written as sweep `sweep_id` (20 steps, an eval every 5)."""
    write_sweep(uri, runs, sweep_id, steps=20, eval_every=5)
    assert main([sweep_id, "--tracking-uri", uri, "--out", str(out), "--kind", kind]) == 0
    return (out / kind / "summary.md").read_text()


def _flat(value, n=len(STEPS)):
    return np.full(n, value, dtype=float)


def _bandpo_runs(lowprob_share, swap=False, grpo_entropy_end=0.2):
    """GRPO's entropy falls from 1.2 to grpo_entropy_end (0.2: a collapse, 1/6 of its start), bandpo's to 1.1 (a
    gain above the stated size log 3); swapped: bandpo's to 0.2 and GRPO's to 0.5 (it still collapses)."""
    runs = []
    kept = 0.5 if swap else 1.1
    for shift, objective in enumerate(("grpo", "bandpo")):
        good = (objective == "bandpo") != swap
        for seed in SEEDS:
            jitter = 0.004 * ((seed * (7 + 2 * shift)) % 5 - 2)  # differs between the arms: contrasts have spread
            runs.append(FakeRun(objective, seed=seed, metrics={
                "objective/lowprob_masked_frac": (STEPS, _flat((0.05 if objective == "bandpo" else 0.30) + jitter)),
                "objective/lowprob_frac": (STEPS, _flat(lowprob_share)),
                "train/entropy": (STEPS, np.linspace(1.2, (kept if good else grpo_entropy_end) + jitter, len(STEPS))),
                "eval/accuracy": (EVAL_STEPS, [0.3, 0.4, 0.5, 0.6, 0.6 + jitter]),
                "train/accuracy": (STEPS, _flat(0.5))}))
    return runs


@pytest.mark.parametrize("swap, expected, entropy", [(False, "reproduced", "reproduced"),
                                                     (True, "not reproduced", "not reproduced")])
def test_bandpo_claim_follows_the_data(shared_store, tmp_path, swap, expected, entropy):
    """(b) entropy and (c) "accuracy no worse by 0.05" follow the data (method: sign, the median seed's
    contrast, 8 seeds): reproduced where bandpo keeps more entropy at equal accuracy, not reproduced where it
    keeps less."""
    uri, _ = shared_store
    sweep = f"2026-07-0{2 if swap else 1}/00-00-00-000000"
    write_sweep(uri, _bandpo_runs(0.3, swap), sweep, steps=20, eval_every=5)
    assert main([sweep, "--tracking-uri", uri, "--out", str(tmp_path), "--kind", "claim_bandpo"]) == 0
    md = (tmp_path / "claim_bandpo" / "summary.md").read_text()
    assert _verdict(md) == expected
    assert f"(b) bandpo keeps more entropy (log end/start ratio): {entropy}" in md
    assert "(c) bandpo accuracy no worse than grpo (−0.05): reproduced" in md and "sign test of the median" in md
    assert "(paired median, n=8)" in md  # the contrast shown is the one the sign tests are about
    assert "30.0% of sampled tokens have ν < 0.2" in md and "admitted if ≥ 15%: yes" in md
    assert "checks, not in the verdict: (a) implementation check" in md
    files = check_page(tmp_path / "claim_bandpo" / "index.html")
    assert "claim_bandpo.png" in files and "decisions.png" in files


def test_a_regime_where_grpos_entropy_does_not_collapse_cannot_test_bandpo(shared_store, tmp_path):
    """BandPO's claim is that it prevents GRPO's entropy collapse: where GRPO's entropy ends at 0.9 of its start
    there is nothing to prevent, so the verdict is "not testable here" with the measured ratio, even though
    bandpo "keeps more entropy" by the data."""
    md = _claim_page(shared_store[0], _bandpo_runs(0.3, grpo_entropy_end=1.08), "2026-07-08/00-00-00-000000",
                     "claim_bandpo", tmp_path)
    assert _verdict(md) == "not testable here"
    line = _verdict_line(md)
    assert "precondition failed: GRPO's entropy collapses (end/start ratio ≤ 0.5): log_entropy_change in " \
           "[algo=grpo] measured -0.0998 (mean over 8 seeds), one-sided 95% upper bound of the median seed (sign " \
           "test) -0.0928; the bound needs ≤ -0.693" in line  # a gate reads a bound, not the mean (#52)


def test_a_regime_without_low_probability_tokens_is_not_admitted(shared_store, tmp_path):
    uri, _ = shared_store
    write_sweep(uri, _bandpo_runs(0.04), "2026-07-05/00-00-00-000000", steps=20, eval_every=5)
    assert main(["2026-07-05/00-00-00-000000", "--tracking-uri", uri, "--out", str(tmp_path),
                 "--kind", "claim_bandpo"]) == 0
    md = (tmp_path / "claim_bandpo" / "summary.md").read_text()
    assert _verdict(md) == "not testable here" and "the regime is not admitted: only 4.0%" in md
    assert "the declared tests are not read" in md and "Declared tests" not in md


def _trust_region_runs(unstable_with_full_sync: bool = False, seeds=SEEDS):
    """pg_is and dppo with the fp8 engine synced in full (a mismatch that does not accumulate) or by deltas
    (it accumulates, fourfold over training): pg_is collapses with delta sync in every seed, nothing else."""
    runs = []
    for k, objective in enumerate(("pg_is", "dppo")):
        for sync in ("full", "delta"):
            for seed in seeds:
                hurt = sync == "delta" and objective == "pg_is"
                end = (0.05 if hurt else 0.62) + 0.01 * ((seed * (3 + 2 * k) + len(sync)) % 5)
                acc = [0.3, 0.5, 0.6, end, end]
                if unstable_with_full_sync and objective == "pg_is" and sync == "full":
                    acc = [0.3, 0.2, 0.1, 0.1, 0.1]  # falls below its start: unstable without accumulation
                mismatch = np.linspace(0.01, 0.04, len(STEPS)) if sync == "delta" else _flat(0.004)
                runs.append(FakeRun(objective, seed=seed, precision="fp8_rollout",
                                    params={"precision.weight_sync": sync}, metrics={
                                        "eval/accuracy": (EVAL_STEPS, acc), "train/mismatch": (STEPS, mismatch),
                                        "train/accuracy": (STEPS, np.interp(STEPS, EVAL_STEPS, acc))}))
    return runs


def test_trust_region_claim_tests_collapse_rates_with_and_without_accumulation(shared_store, tmp_path):
    uri, _ = shared_store
    # 24 seeds: the gate "pg_is stable with full sync (≤ 0.125)" reads the rate's upper 95% bound, which 0/8
    # cannot bring below 0.31 and 0/24 brings to 0.117 (#52: a gate passes on a bound, not a point estimate)
    write_sweep(uri, _trust_region_runs(seeds=range(24)), "2026-07-03/00-00-00-000000", steps=20, eval_every=5)
    assert main(["2026-07-03/00-00-00-000000", "--tracking-uri", uri, "--out", str(tmp_path),
                 "--kind", "claim_trust_region"]) == 0
    md = (tmp_path / "claim_trust_region" / "summary.md").read_text()
    assert _verdict(md) == "reproduced"
    assert "24/24 vs 0/24, one-sided Fisher" in md and "Preconditions (regime checks that gate the verdict)" in md
    assert "| pg_is · weight_sync=delta | 24 | 24 | 24/24" in md
    assert "| dppo · weight_sync=full | 24 | 24 | 0/24 [0%, 14%] |" in md
    assert "Serial redesigns: 5 earlier designs of this claim ran before this one (7b43aa0: first design" in md
    assert "at most 6·α" in md


def test_a_failed_precondition_makes_the_claim_not_testable_here(shared_store, tmp_path):
    """pg_is collapses with full sync too: the contrasts may still be "shown", but they say nothing about the
    accumulating mismatch, so the verdict names the failed check and its value, and the tests are not read."""
    md = _claim_page(shared_store[0], _trust_region_runs(unstable_with_full_sync=True), "2026-07-07/00-00-00-000000",
                     "claim_trust_region", tmp_path)
    assert _verdict(md) == "not testable here"
    line = _verdict_line(md)
    assert ("precondition failed: pg_is stable with full sync (≤ 1 collapse in 8 runs): collapsed in "
            "[algo=pg_is,precision.weight_sync=full] measured 1 (mean over 8 runs), one-sided 95% upper bound of the "
            "rate (Clopper–Pearson) 1; the bound needs ≤ 0.125") in line
    assert "Declared tests" not in md


GROWING_MISMATCH = (STEPS, np.linspace(0.01, 0.05, len(STEPS)))  # log growth 1.6: the mismatch accumulates


def test_an_undecided_claim_prints_its_power_figure_and_the_command(shared_store, tmp_path):
    """Claim 5's regime holds (DPPO's δ binds, the mismatch grows, runs collapse: each gate on its bound over 8
    seeds) but 8 seeds per arm cannot decide the collapse rates: the page says so, with the runs per arm the
    exact test needs and the command."""
    uri, _ = shared_store
    ends = {"dppo": [0.02, 0.02, 0.5, 0.6, 0.55, 0.5, 0.6, 0.58], "drpo": [0.02, 0.02, 0.02, 0.02, 0.6, 0.5, 0.55, 0.6]}
    runs = [FakeRun(o, seed=s, metrics={"eval/accuracy": (EVAL_STEPS, [0.3, 0.4, 0.5, acc, acc]),
                                        "objective/masked_frac": (STEPS, _flat(0.03)),  # DPPO's δ binds
                                        "train/mismatch": GROWING_MISMATCH})
            for o, accs in ends.items() for s, acc in enumerate(accs)]
    for run in runs:
        run.algo = {"delta": 0.15 if run.objective == "dppo" else 12.5}
    write_sweep(uri, runs, "2026-07-06/00-00-00-000000", steps=20, eval_every=5)
    assert main(["2026-07-06/00-00-00-000000", "--tracking-uri", uri, "--out", str(tmp_path),
                 "--kind", "claim_drpo_vs_dppo"]) == 0
    md = (tmp_path / "claim_drpo_vs_dppo" / "summary.md").read_text()
    assert _verdict(md) == "inconclusive"
    assert "close to pg_is by construction" in md and "2/8 vs 4/8: c = -0.250; exact score test" in md
    assert "seeds per arm for 80% power" in md and "python -m harness sweep claim5_drpo_vs_dppo" in md


def test_claim_pages_say_what_is_missing_when_asked_by_name(shared_store, tmp_path):
    uri, _ = shared_store
    write_sweep(uri, [FakeRun("grpo", seed=0), FakeRun("grpo", seed=1)], "2026-07-04/00-00-00-000000")
    kinds = ["claim_sanity", "claim_trust_region", "claim_anchor", "claim_relaxation", "claim_drpo_vs_dppo",
             "claim_bandpo"]
    argv = ["2026-07-04/00-00-00-000000", "--tracking-uri", uri, "--out", str(tmp_path)]
    for kind in kinds:
        argv += ["--kind", kind]
    assert main(argv) == 0
    for kind in kinds:
        assert f"cannot show a {kind} report" in (tmp_path / kind / "summary.md").read_text()


def test_an_intervention_that_changes_nothing_is_no_evidence_of_non_inferiority(shared_store, tmp_path):
    """Issue 35: DRPO and DPPO runs that end alike on 7 of 8 seeds (contrasts of 0, within one eval problem
    of 64 over the last 3 evaluations) and differ on one seed. The sign test read the seven ties as 8 of 8
    contrasts above −SESOI (p = 2^-8): non-inferior, claim reproduced. Ties are no evidence either way."""
    uri, _ = shared_store
    runs = []
    for objective, delta in (("dppo", 0.15), ("drpo", 12.5)):
        for seed in SEEDS:
            acc = 0.4 + 0.03 * seed + (0.01 if objective == "drpo" and seed == 0 else 0.0)
            acc = 0.02 if seed >= 4 else acc  # seeds 4-7 collapse alike in both arms: claim 5's regime has collapse
            # (half the runs: the gate's lower 95% bound of the rate is above its 0.1)
            runs.append(FakeRun(objective, algo={"delta": delta}, seed=seed,
                                params={"trainer.name": "builtin", "dataset.eval_size": 64},
                                metrics={"eval/accuracy": (EVAL_STEPS, [0.3, 0.4, 0.5, acc, acc]),
                                         "objective/masked_frac": (STEPS, _flat(0.03)),
                                         "train/mismatch": GROWING_MISMATCH}))
    write_sweep(uri, runs, "2026-07-08/00-00-00-000000", steps=20, eval_every=5)
    assert main(["2026-07-08/00-00-00-000000", "--tracking-uri", uri, "--out", str(tmp_path),
                 "--kind", "claim_drpo_vs_dppo"]) == 0
    md = (tmp_path / "claim_drpo_vs_dppo" / "summary.md").read_text()
    assert _verdict(md) == "inconclusive"
    assert md.count("7 of 8 per-seed contrasts lie within the measure's resolution (±0.00521)") == 1
    assert "4/8 vs 4/8: c = +0.000" in md  # the collapse rates alike, too few runs to show them within 0.2
