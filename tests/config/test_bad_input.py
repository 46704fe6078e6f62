"""Bad input: one line on stderr naming the key, the value and what is allowed; exit code 2; nothing
created in MLflow; refused in well under a second per job."""
from __future__ import annotations

import gc
import time

import pytest

from harness.cli import run_cli

BAD = [
    (["algo=nope"], ["algo=nope", "dppo", "drpo"]),
    (["precision=fp4"], ["precision=fp4", "bf16", "fp8_rollout"]),
    (["trainer.stepz=3"], ["trainer.stepz"]),
    (["--dry-run"], ["trainer.verl.dry_run applies to trainer=verl only", "--dry-run prints the verl command"]),
    (["algo.dleta=0.1"], ["dleta"]),
    (["trainer.steps=abc"], ["trainer.steps", "abc", "int"]),
    (["trainer.steps=-1"], ["trainer.steps", "-1", ">= 1"]),
    (["trainer.group_size=1"], ["trainer.group_size", ">= 2"]),
    (["algo=dppo", "delta=0"], ["delta", "0"]),
    (["algo=drpo", "delta=-0.5"], ["delta", "-0.5"]),
    (["algo=grpo", "algo.eps_high=1.5"], ["eps_high", "1.5"]),
    (["algo=grpo", "alpha=1.5"], ["relax_alpha", "1.5"]),
    (["algo=drpo", "alpha=0.1"], ["alpha=0.1", "algo=drpo", "grpo"]),
    (["algo=grpo", "delta=0.1"], ["delta=0.1", "algo=grpo", "dppo"]),
    (["anchor=sideways"], ["anchor", "sideways", "recompute"]),
    (["algo=dppo", "algo.divergence=js"], ["divergence", "js", "binary_tv"]),
    (["algo=dppo", "algo.topk=0"], ["topk", "0"]),
    (["algo=bandpo", "algo.band=l2"], ["band", "l2", "chi2"]),
    (["tracking.uri=ftp://host/x"], ["tracking.uri", "ftp", "sqlite"]),
    (["trainer.advantage=gae"], ["trainer.advantage", "gae", "rloo"]),
    (["dataset.train_size=0"], ["dataset.train_size", "0", ">= 1"]),
    (["precision.mismatch_scale=-2"], ["precision.mismatch_scale", "-2", ">= 0"]),
    # a split too small for the run: the task is asked before any job starts
    (["dataset=arithmetic", "dataset.difficulty=1", "dataset.eval_size=50"], ["dataset.eval_size=50", "eval split"]),
    (["dataset=arithmetic", "dataset.difficulty=1", "dataset.eval_size=4", "dataset.train_size=120"],
     ["dataset.train_size=120", "train split"]),
    # accepted, then failing inside a run (issue #18): refused at preflight
    (["seed=18446744073709551616"], ["seed=18446744073709551616", "2**64"]),
    (["seed=99999999999999999999999"], ["seed=99999999999999999999999", "2**64"]),
    (["dataset.seed=-3"], ["dataset.seed=-3", "2**64"]),
    (["trainer.lr=inf"], ["trainer.lr=inf", "finite"]),
    (["trainer.temperature=inf"], ["trainer.temperature=inf", "finite"]),
    (["precision.mismatch_scale=inf"], ["precision.mismatch_scale=inf", "finite"]),
    (["precision.mismatch_scale=nan"], ["precision.mismatch_scale=nan", "finite"]),
    (["trainer.grad_clip=-inf"], ["trainer.grad_clip=-inf"]),
    (["algo=drpo", "delta=nan"], ["delta=nan", "finite"]),
    (["algo=drpo", "algo.delta=0.1", "delta=0.3"], ["delta=0.3", "algo.delta=0.1"]),
    (["algo=spo", "algo.eps=0.2", "delta=0.3"], ["delta=0.3", "algo.eps=0.2"]),
    (["algo=grpo", "algo.relax_alpha=0.1", "alpha=0.2"], ["alpha=0.2", "algo.relax_alpha=0.1"]),
    (["algo=grpo", "algo.anchor=rollout", "anchor=recompute"], ["anchor=recompute", "algo.anchor=rollout"]),
    (["dataset.eval_size=1000000000000"], ["dataset.eval_size=1000000000000", "at most"]),
    (["dataset.train_size=1000000000000"], ["dataset.train_size=1000000000000", "at most"]),
    (["dataset=sorting", "dataset.eval_size=50000"], ["dataset.eval_size=50000", "eval split"]),
    # Hydra's lexer and parser, and mistyped names: what is wrong, and the nearest valid name
    (["algo=dpp\u043e"], ["algo=dpp\u043e", "CYRILLIC SMALL LETTER O", "did you mean algo=dppo?"]),
    (["algo=[dppo"], ["algo=[dppo", "cannot parse"]),
    (["algo=grpo_clip_higher"], ["algo=grpo_clip_higher", "did you mean algo=grpo_cliphigher?"]),
    (["precision=bf61"], ["precision=bf61", "did you mean precision=bf16?"]),
    (["trainer.stepz=3"], ["did you mean trainer.steps?"]),
    (["algo=drpo", "algo.dleta=0.1"], ["did you mean algo.delta?"]),
    # a key no component reads (issue #17)
    (["+no_such_key=1"], ["no_such_key", "no component reads it"]),
    (["+trainer.stpes=3"], ["trainer.stpes", "did you mean trainer.steps?"]),
    (["++model.depth=3"], ["model.depth"]),
    # further malformed specs
    (["trainer.lr=0"], ["trainer.lr=0", "> 0"]),
    (["trainer.lr=-1e-3"], ["trainer.lr=-0.001", "> 0"]),
    (["dataset.eval_size=-5"], ["dataset.eval_size=-5", ">= 1"]),
    (["precision.name=fp4"], ["precision.name='fp4'", "bf16"]),
    (["trainer.steps=1.5"], ["trainer.steps", "1.5", "int"]),
    (["trainer.progress=maybe"], ["trainer.progress", "maybe", "bool"]),
    (["algo="], ["algo=", "not a known choice"]),
    (["experiment_name="], ["experiment_name=''", "non-empty"]),
    (["trainer.warmstart.target_accuracy=1.5"], ["trainer.warmstart.target_accuracy=1.5", "(0, 1]"]),
    (["trainer.mini_batches=0"], ["trainer.mini_batches=0", ">= 1"]),
    (["trainer.max_new_tokens=0"], ["trainer.max_new_tokens=0", ">= 1"]),
    (["model.num_kv_heads=3"], ["model.num_heads=4", "num_kv_heads=3"]),
]


@pytest.fixture(scope="module")
def hydra_imported():
    """Hydra's imports and first composition, paid once: not part of any refusal's time."""
    from harness.launchers.compose import compose

    compose([])


def _refusal_seconds(overrides: list[str], capsys) -> float:
    """This thread's CPU time for one refusal, best of two: the machine may be shared, threads left by earlier
    tests in this process (MLflow's logging, heartbeats) must not count, and neither must one collection of
    the heap a long suite has built. A refusal that is really slow is slow both times."""
    timings = []
    for _ in range(2):
        capsys.readouterr()  # the refusal read afterwards is the last one's
        gc.collect()
        started = time.thread_time()
        assert run_cli(overrides) == 2
        timings.append(time.thread_time() - started)
        if timings[-1] < 1.0:
            break
    return min(timings)


@pytest.mark.parametrize("overrides,expected", BAD, ids=[" ".join(o) for o, _ in BAD])
def test_bad_input_is_refused_with_one_line(overrides, expected, capsys, tmp_path, monkeypatch, hydra_imported):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert _refusal_seconds(overrides, capsys) < 1.0, "a refusal takes well under a second"
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for fragment in expected:
        assert fragment in err, (fragment, err)
    assert not (tmp_path / "mlruns.db").exists()
    assert not (tmp_path / "outputs").exists()


def test_one_bad_job_refuses_the_whole_sweep_before_anything_runs(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert run_cli(["multirun", "algo=dppo,drpo", "delta=0.1,-1"]) == 2
    assert "-1" in capsys.readouterr().err
    assert not (tmp_path / "multirun").exists() and not (tmp_path / "mlruns.db").exists()


def test_empty_sweep_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert run_cli(["multirun", "delta=range(0.1,0.1,0.05)"]) == 2
    assert "empty" in capsys.readouterr().err
