"""`sweeper=optuna`: the harness's own Hydra sweeper on Optuna's ask/tell API (hydra-optuna-sweeper pins
optuna < 3 and cannot prune).

The study lives in persistent storage (default: `optuna.db` beside the MLflow store), so a sweep whose
driver died resumes by running the same command: finished trials count, trials left RUNNING by the dead
driver are marked FAIL. A study is named by its search (`<experiment>-<hash>` of the space, the metric and
direction, the pruner and the overrides that change a computation), so another search never reuses it; an
explicit `study_name` holding another search is refused. Each job gets `optuna.*` overrides naming its trial; the trainer reports
intermediate eval accuracy to it and stops early when the pruner says so."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from harness.config.compose_errors import parse_overrides
from harness.config.errors import ConfigError
from harness.config.flags import Options
from harness.infra.refused import Refused
from harness.launchers.job_returns import job_result
from harness.trainers.pruning import make_pruner
from harness.config.search_space import parse_space
from harness.sweeps.design_identity import computing_overrides, digest, first_difference


log = logging.getLogger("harness")
SEARCH_ATTR = "harness.search"  # the study's user attribute recording the search it belongs to


class OptunaSweeper(Sweeper):
    def __init__(self, params: Dict[str, str], n_trials: int = 20, n_jobs: int = 1, direction: str = "maximize",
                 metric: str = "eval/accuracy", storage: Optional[str] = None, study_name: Optional[str] = None,
                 sampler_seed: int = 0, pruner: Optional[Dict[str, Any]] = None) -> None:
        self.params = dict(params)
        self.n_trials, self.n_jobs, self.direction, self.metric = n_trials, n_jobs, direction, metric
        self.storage, self.study_name, self.sampler_seed = storage, study_name, sampler_seed
        self.pruner_cfg = dict(pruner or {})

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context = config, hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config)

    def _search(self, arguments: List[str]) -> dict:
        """What this search is: another one (another space, objective, pruner or computation) is another study."""
        return {"space": {key: dim.text() for key, dim in sorted(self.space.items())}, "metric": self.metric,
                "direction": self.direction, "pruner": list(self._pruner_settings()),
                "overrides": computing_overrides(arguments)}

    def _study(self, arguments: List[str]):
        """The search's study, made or resumed; Refused when the named study holds another search."""
        import optuna

        root = Path(str(self.config.output_root)).expanduser().resolve()
        storage = self.storage or f"sqlite:///{root / 'optuna.db'}"
        search = self._search(arguments)
        name = self.study_name or f"{self.config.experiment_name}-{digest(search)[:12]}"
        pruner = make_pruner(*self._pruner_settings())
        verbosity = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.WARNING)  # its "Using an existing study": said below, once
        try:
            study = optuna.create_study(study_name=name, storage=storage, load_if_exists=True, pruner=pruner,
                                        direction=self.direction,
                                        sampler=optuna.samplers.TPESampler(seed=self.sampler_seed))
        finally:
            optuna.logging.set_verbosity(verbosity)
        recorded = study.user_attrs.get(SEARCH_ATTR)
        if recorded is None and study.trials:
            raise Refused(f"optuna study {name!r} in {storage} holds trials of a search it does not record: leave "
                          "hydra.sweeper.study_name unset (each search gets its own study) or give a new name")
        if recorded is not None and recorded != search:
            raise Refused(f"optuna study {name!r} in {storage} holds another search "
                          f"({first_difference(recorded, search)}): leave hydra.sweeper.study_name unset (each "
                          "search gets its own study) or give a new name")
        study.set_user_attr(SEARCH_ATTR, search)
        return study, storage, name

    def _pruner_settings(self) -> tuple:
        return (bool(self.pruner_cfg.get("enabled", True)), int(self.pruner_cfg.get("n_startup_trials", 2)),
                int(self.pruner_cfg.get("n_warmup_steps", 0)))

    def sweep(self, arguments: List[str]) -> Any:
        return self.sweep_with(arguments, Options())

    def sweep_with(self, arguments: List[str], options: Options) -> Any:
        """Every edge of the search space composed and validated by the launcher (never run as such) and the
        sweep's checks, before the study, the sweep folder or its parent run exist; then the trials."""
        # the sweep's own modules (MLflow, reports) load only when a sweep runs: Hydra scans its plugins always
        from harness.launchers.preflight import check_jobs
        from harness.sweeps.continued import run_sweep

        self.space = self._checked_space(arguments)
        edges = self.launcher.prepare([[*arguments, f"{key}={value}"] for key, dim in self.space.items()
                                       for value in dim.sample_values()], keep=False)
        if options.plan:  # --plan: trials are chosen as the study goes; only their count and space are known
            print(f"plan: sweeper=optuna, {self.n_trials} trials ({self.n_jobs} at a time) over "
                  f"{', '.join(self.space)}; every edge of the space validated (--plan: nothing started, nothing "
                  "written; the trials' ensembles and time depend on what the study picks)", flush=True)
            return []
        check_jobs(edges, multirun=True)
        study = self._study(arguments)
        return run_sweep(self.config, self.n_trials, lambda: self._trials(arguments, *study))

    def _checked_space(self, arguments: List[str]) -> dict:
        try:
            parsed = parse_overrides(arguments)
        except ConfigError as err:
            raise Refused(str(err)) from None
        if any(override.is_sweep_override() for override in parsed):
            raise Refused("with sweeper=optuna, put every dimension in hydra.sweeper.params "
                          "(comma-separated sweep values are a grid, not a search)")
        try:
            space = parse_space(self.params)
        except ValueError as err:
            raise Refused(str(err)) from None
        for ok, message in ((self.n_trials >= 1, f"hydra.sweeper.n_trials={self.n_trials} is not allowed: must be >= 1"),
                            (self.n_jobs >= 1, f"hydra.sweeper.n_jobs={self.n_jobs} is not allowed: must be >= 1"),
                            (self.direction in ("maximize", "minimize"),
                             f"hydra.sweeper.direction={self.direction!r} is not allowed: maximize or minimize")):
            if not ok:
                raise Refused(message)
        return space

    def _trials(self, arguments: List[str], study, storage: str, name: str) -> Any:
        from optuna.trial import TrialState

        for stale in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            log.warning("trial %d was left RUNNING by an earlier driver: marked FAIL", stale.number)
            study.tell(stale.number, state=TrialState.FAIL)
        done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))
        print(f"optuna: study {name!r} in {storage}: {done} of {self.n_trials} trials done", flush=True)
        distributions = {key: dim.distribution() for key, dim in self.space.items()}
        returns, job_idx = [], 0
        while done < self.n_trials:
            trials = [study.ask(distributions) for _ in range(min(self.n_jobs, self.n_trials - done))]
            batch = [[*arguments, *(f"{k}={_override(v)}" for k, v in t.params.items()),
                      f"optuna.storage={storage}", f"optuna.study={name}", f"optuna.trial_id={t._trial_id}",
                      *(f"optuna.{k}={v}" for k, v in zip(("prune", "n_startup_trials", "n_warmup_steps"),
                                                           self._pruner_settings()))]
                     for t in trials]
            results = self.launcher.launch(batch, initial_job_idx=job_idx)
            job_idx += len(batch)
            for trial, ret in zip(trials, results):
                self._tell(study, trial, ret)
            returns.extend(results)
            done += len(trials)
        best = study.best_trial if any(t.state == TrialState.COMPLETE for t in study.trials) else None
        if best is not None:
            log.info("best trial %d: %s = %s with %s", best.number, self.metric, best.value, best.params)
            (Path(str(self.config.hydra.sweep.dir)) / "optuna_best.yaml").write_text(
                OmegaConf.to_yaml({"study": name, "trial": best.number, "value": best.value, "params": best.params}))
        return returns

    def _tell(self, study, trial, ret) -> None:
        from optuna.trial import TrialState

        result = job_result(ret)
        if result.status == "PRUNED":
            study.tell(trial, state=TrialState.PRUNED)
            return
        value = (result.final_metrics or {}).get(self.metric)
        if result.status in ("FINISHED", "SKIPPED") and value is not None:
            study.tell(trial, float(value))
        else:
            study.tell(trial, state=TrialState.FAIL)


def _override(value: Any) -> str:
    return "null" if value is None else str(value)
