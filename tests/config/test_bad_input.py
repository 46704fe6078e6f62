"""Bad input: one line on stderr naming the key, the value and what is allowed; exit code 2; nothing
created in MLflow."""
from __future__ import annotations

import pytest

from harness.cli import run_cli

BAD = [
    (["algo=nope"], ["algo=nope", "dppo", "drpo"]),
    (["precision=fp4"], ["precision=fp4", "bf16", "fp8_rollout"]),
    (["trainer.stepz=3"], ["trainer.stepz"]),
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
]


@pytest.mark.parametrize("overrides,expected", BAD, ids=[" ".join(o) for o, _ in BAD])
def test_bad_input_is_refused_with_one_line(overrides, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert run_cli(overrides) == 2
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
