"""sweeper=optuna: a persistent study that resumes after its driver dies, and pruning from the
intermediate eval accuracy a run reports."""
from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from omegaconf import OmegaConf

from harness.trainers.pruning import Pruned, pruning_hook
from harness.config.search_space import parse_dimension, parse_space

SEARCH = ("multirun", "sweeper=optuna", "algo=drpo", '+hydra.sweeper.params.delta="float(0.05,20,log)"',
          "hydra.sweeper.n_trials=3", "debug=quick", "trainer.steps=4", "trainer.eval_every=2")


def test_search_space_syntax():
    assert parse_dimension("a", "float(0.1, 2, log)").log
    assert parse_dimension("b", "int(1,8)").distribution().high == 8
    assert parse_dimension("c", "choice(rollout, recompute)").choices == ("rollout", "recompute")
    for bad in ("float(2, 1)", "uniform(0,1)", "float(0, 1, log)", "choice()"):
        with pytest.raises(ValueError, match="hydra.sweeper.params.x"):
            parse_space({"x": bad})


def test_pruning_hook_stops_a_run_worse_than_the_median(tmp_path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize",
                                pruner=optuna.pruners.MedianPruner(n_startup_trials=1, n_warmup_steps=0))
    good = study.ask()
    for step in (2, 4, 6):
        good.report(0.8, step)
    study.tell(good, 0.8)
    weak = study.ask()
    cfg = OmegaConf.create({"optuna": {"storage": storage, "study": "s", "trial_id": weak._trial_id,
                                       "prune": True, "n_startup_trials": 1, "n_warmup_steps": 0}})
    report = pruning_hook(cfg.optuna)
    with pytest.raises(Pruned, match="step 2"):
        report(2, {"eval/accuracy": 0.1})
    assert pruning_hook(OmegaConf.create({"trial_id": None})) is None


@pytest.mark.slow  # end to end: two Optuna searches through the command line
def test_study_resumes_after_the_driver_dies(run_harness):
    killed = run_harness(*SEARCH, env={"HARNESS_FAULT_KILL_AT_STEP": "3"})
    assert killed.returncode == -9
    storage = f"sqlite:///{run_harness.root / 'optuna.db'}"
    (name,) = optuna.get_all_study_names(storage)
    study = optuna.load_study(study_name=name, storage=storage)
    assert [t.state.name for t in study.trials] == ["RUNNING"]
    resumed = run_harness(*SEARCH, check=True)
    assert "3 runs: 3 finished" in resumed.stdout
    assert optuna.get_all_study_names(storage) == [name]  # the same search resumed its own study
    study = optuna.load_study(study_name=name, storage=storage)
    states = [t.state.name for t in study.trials]
    assert states.count("COMPLETE") == 3 and states[0] == "FAIL", states
    assert all(0.05 <= t.params["delta"] <= 20 for t in study.trials if t.params)


def test_grid_values_are_refused_with_optuna(run_harness):
    proc = run_harness("multirun", "sweeper=optuna", "seed=0,1", '+hydra.sweeper.params.delta="float(0.1,1)"')
    assert proc.returncode == 2 and "hydra.sweeper.params" in proc.stderr
    proc = run_harness("multirun", "sweeper=optuna", '+hydra.sweeper.params.trainer.lr="float(-1,1)"')
    assert proc.returncode == 2


QUICK = ("debug=quick", "trainer.steps=2", "trainer.eval_every=2", "hydra.sweeper.n_trials=1")


def _best(root):
    (best,) = (root / "multirun").glob("*/*/optuna_best.yaml")
    return OmegaConf.load(best), best


def test_another_search_in_the_same_folder_gets_its_own_study(run_harness):
    """Issue 39 item 5: a DPPO learning-rate search after a DRPO δ search, same output folder. It ran nothing
    and called the δ search's trial its best when both shared a study named after the experiment."""
    storage = f"sqlite:///{run_harness.root / 'optuna.db'}"
    run_harness("multirun", "sweeper=optuna", "algo=drpo", '+hydra.sweeper.params.delta="float(0.05,20,log)"',
                *QUICK, check=True)
    (first, path) = _best(run_harness.root)
    path.unlink()
    second = run_harness("multirun", "sweeper=optuna", "algo=dppo",
                         '+hydra.sweeper.params={trainer.lr:"float(1e-4,1e-3,log)"}', *QUICK, check=True)
    assert "1 runs: 1 finished" in second.stdout, second.stdout[-2000:]
    (best, _) = _best(run_harness.root)
    assert list(best.params) == ["trainer.lr"] and best.study != first.study
    assert sorted(optuna.get_all_study_names(storage)) == sorted([first.study, best.study])
    # the same search on another launcher is the same study (resumed: its one trial is done, nothing runs)
    again = run_harness("multirun", "sweeper=optuna", "algo=dppo", "launcher=local_parallel",
                        '+hydra.sweeper.params={trainer.lr:"float(1e-4,1e-3,log)"}', *QUICK, check=True)
    assert f"study {best.study!r}" in again.stdout and "1 of 1 trials done" in again.stdout


def test_a_named_study_holding_another_search_is_refused(run_harness):
    named = ("multirun", "sweeper=optuna", "hydra.sweeper.study_name=mine", *QUICK)
    run_harness(*named, "algo=drpo", '+hydra.sweeper.params.delta="float(0.05,20,log)"', check=True)
    before = sorted(p.name for p in (run_harness.root / "multirun").glob("*/*"))
    proc = run_harness(*named, "algo=drpo", '+hydra.sweeper.params.delta="float(0.1,1)"')
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert "optuna study 'mine'" in line and "holds another search (space.delta was" in line, line
    assert sorted(p.name for p in (run_harness.root / "multirun").glob("*/*")) == before  # no sweep started
    study = optuna.load_study(study_name="mine", storage=f"sqlite:///{run_harness.root / 'optuna.db'}")
    assert len(study.trials) == 1


def test_the_documented_override_syntax_runs_and_the_plain_one_says_how(run_harness):
    """conf/sweeper/optuna.yaml's syntax: `+hydra.sweeper.params={...}` (Hydra's `+` adds keys to a node).
    Without the `+`, Hydra refuses to add keys; the refusal names the form that works."""
    space = '{delta:"float(0.05,20,log)",trainer.lr:"float(1e-4,1e-3,log)"}'
    text = (Path(__file__).parents[2] / "conf" / "sweeper" / "optuna.yaml").read_text()
    assert f"'+hydra.sweeper.params={space}'" in text
    proc = run_harness("multirun", "sweeper=optuna", "algo=drpo", f"+hydra.sweeper.params={space}", *QUICK,
                       check=True)
    (best, _) = _best(run_harness.root)
    assert sorted(best.params) == ["delta", "trainer.lr"], proc.stdout[-2000:]
    plain = run_harness("multirun", "sweeper=optuna", "algo=drpo", f"hydra.sweeper.params={space}", *QUICK)
    assert plain.returncode == 2
    (line,) = plain.stderr.strip().splitlines()
    assert "+hydra.sweeper.params=" in line and "unknown key" not in line, line
