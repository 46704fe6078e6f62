"""sweeper=optuna: a persistent study that resumes after its driver dies, and pruning from the
intermediate eval accuracy a run reports."""
from __future__ import annotations

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
    report = pruning_hook(cfg)
    with pytest.raises(Pruned, match="step 2"):
        report(2, {"eval/accuracy": 0.1})
    assert pruning_hook(OmegaConf.create({"optuna": {"trial_id": None}})) is None


@pytest.mark.slow  # end to end: two Optuna searches through the command line
def test_study_resumes_after_the_driver_dies(run_harness):
    killed = run_harness(*SEARCH, env={"HARNESS_FAULT_KILL_AT_STEP": "3"})
    assert killed.returncode == -9
    study = optuna.load_study(study_name="harness", storage=f"sqlite:///{run_harness.root / 'optuna.db'}")
    assert [t.state.name for t in study.trials] == ["RUNNING"]
    resumed = run_harness(*SEARCH, check=True)
    assert "3 runs: 3 finished" in resumed.stdout
    study = optuna.load_study(study_name="harness", storage=f"sqlite:///{run_harness.root / 'optuna.db'}")
    states = [t.state.name for t in study.trials]
    assert states.count("COMPLETE") == 3 and states[0] == "FAIL", states
    assert all(0.05 <= t.params["delta"] <= 20 for t in study.trials if t.params)


def test_grid_values_are_refused_with_optuna(run_harness):
    proc = run_harness("multirun", "sweeper=optuna", "seed=0,1", '+hydra.sweeper.params.delta="float(0.1,1)"')
    assert proc.returncode == 2 and "hydra.sweeper.params" in proc.stderr
    proc = run_harness("multirun", "sweeper=optuna", '+hydra.sweeper.params.trainer.lr="float(-1,1)"')
    assert proc.returncode == 2
