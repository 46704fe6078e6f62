"""One run (not a sweep) with the config the command line composed and validated, the way Hydra's `run` does
it (Hydra's `run` would compose the same config a second time): Hydra's launcher API (`run_job`) with the
run's configured callbacks, and the task given the run's validated spec."""
from __future__ import annotations

import functools

from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, configure_log, run_job, setup_globals
from hydra.types import HydraContext
from omegaconf import DictConfig

from harness.config.names import CONFIG_NAME
from harness.launchers.compose import hydra_session
from harness.launchers.job import run_job as task


def run_single(config: DictConfig, spec: DictConfig) -> JobReturn:
    # Hydra's list of configured callbacks (hydra.callbacks) has no public constructor; its own run uses it
    from hydra._internal.callbacks import Callbacks

    setup_globals()
    with hydra_session():
        configure_log(config.hydra.hydra_logging, config.hydra.verbose)
        HydraConfig.instance().set_config(config)
        callbacks = Callbacks(config)
        callbacks.on_run_start(config=config, config_name=CONFIG_NAME)
        context = HydraContext(config_loader=GlobalHydra.instance().config_loader(), callbacks=callbacks)
        ret = run_job(hydra_context=context, task_function=functools.partial(task, spec=spec), config=config,
                      job_dir_key="hydra.run.dir", job_subdir_key=None)
        callbacks.on_run_end(config=config, config_name=CONFIG_NAME, job_return=ret)
    _ = ret.return_value  # raises what the job raised, as Hydra's run does
    return ret
