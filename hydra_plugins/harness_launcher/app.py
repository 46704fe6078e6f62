"""Hydra's command line for the harness's task: `run` and `multirun` started as `hydra.main` starts them
(hydra/_internal/utils.py: `_run_hydra`, `_run_app`), but returning what Hydra's `run` and `multirun` return,
which `hydra.main` drops: the run's JobReturn, the sweeper's return value (what its launches returned); a
multirun hands the harness's sweepers the command's `Options` (`sweep_with`), as Hydra hands them their config.
Every other command (--help, --hydra-help, --cfg, --info, shell completion, --experimental-rerun) is `hydra.main`'s."""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any, List, Optional

import hydra
from hydra import version
from hydra._internal.hydra import Hydra
from hydra._internal.utils import (create_automatic_config_search_path, detect_calling_file_or_module_from_task_function,
                                   detect_task_name, run_and_report, validate_config_path)
from hydra._internal.callbacks import Callbacks
from hydra.core.global_hydra import GlobalHydra
from hydra.core.plugins import Plugins
from hydra.errors import SearchPathException
from hydra.types import HydraContext, RunMode
from omegaconf import OmegaConf

from harness.config.flags import Options

from harness.config.names import CONFIG_MODULE, CONFIG_NAME
from harness.launchers.registry import store_configs
from harness.launchers.job import run_job as task
from hydra_plugins.harness_launcher import register_with_hydra
from hydra_plugins.harness_launcher.arguments import parse_hydra_args

VERSION_BASE = "1.3"
CONFIG_PATH = f"pkg://{CONFIG_MODULE}"


def run_hydra(argv: List[str], options: Optional[Options] = None) -> Any:
    """Hydra's command line on `argv`; what the run or sweep returned (None for a command that runs nothing)."""
    store_configs()
    register_with_hydra()
    saved = sys.argv
    sys.argv = [saved[0] if saved else "harness"] + argv
    try:
        args = parse_hydra_args(argv)
        if not _launches(args):
            hydra.main(version_base=VERSION_BASE, config_path=CONFIG_PATH, config_name=CONFIG_NAME)(task)()
            return None
        return _run_or_multirun(args, options or Options())
    finally:
        sys.argv = saved


def _launches(args: argparse.Namespace) -> bool:
    """A run or a sweep, with no other command (those `hydra.main` answers, or refuses)."""
    others = (args.help, args.hydra_help, args.cfg is not None, args.info is not None, args.shell_completion,
              args.resolve, args.experimental_rerun is not None)
    return not any(others) and not (args.run and args.multirun)


def _run_or_multirun(args: argparse.Namespace, options: Options) -> Any:
    version.setbase(VERSION_BASE)
    config_name = CONFIG_NAME if args.config_name is None else args.config_name
    config_path = CONFIG_PATH if args.config_path is None else args.config_path
    calling_file, calling_module = detect_calling_file_or_module_from_task_function(task)
    validate_config_path(config_path)
    search_path = create_automatic_config_search_path(calling_file, calling_module, config_path)

    def add_conf_dir() -> None:
        if args.config_dir is not None:
            config_dir = os.path.abspath(args.config_dir)
            if not os.path.isdir(config_dir):
                raise SearchPathException(f"Additional config directory '{config_dir}' not found")
            search_path.prepend(provider="command-line", path=f"file://{config_dir}", anchor="schema")

    run_and_report(add_conf_dir)
    app = run_and_report(lambda: Hydra.create_main_hydra2(task_name=detect_task_name(calling_file, calling_module),
                                                          config_search_path=search_path))
    try:
        overrides = args.overrides
        mode = app.get_mode(config_name=config_name, overrides=overrides)
        if mode is None:
            mode = RunMode.MULTIRUN if args.multirun else RunMode.RUN
            overrides.append(f"hydra.mode={mode.name}")
        elif args.multirun and mode == RunMode.RUN:
            warnings.warn(message="\n\tRunning Hydra app with --multirun, overriding with `hydra.mode=MULTIRUN`.",
                          category=UserWarning)
            mode = RunMode.MULTIRUN
            overrides.append("hydra.mode=MULTIRUN")
        if mode == RunMode.RUN:
            return run_and_report(lambda: app.run(config_name=config_name, task_function=task, overrides=overrides))
        return run_and_report(lambda: _multirun(app, config_name, overrides, options))
    finally:
        GlobalHydra.instance().clear()


def _multirun(app: Hydra, config_name: str, overrides: List[str], options: Options) -> Any:
    """Hydra's `multirun` (hydra/_internal/hydra.py), the harness's sweepers handed the command's options."""
    config = app.compose_config(config_name=config_name, overrides=overrides, with_log_configuration=True,
                                run_mode=RunMode.MULTIRUN)
    callbacks = Callbacks(config)
    callbacks.on_multirun_start(config=config, config_name=config_name)
    sweeper = Plugins.instance().instantiate_sweeper(
        config=config, hydra_context=HydraContext(config_loader=app.config_loader, callbacks=callbacks),
        task_function=task)
    arguments = OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
    sweep_with = getattr(sweeper, "sweep_with", None)
    returned = sweep_with(arguments, options) if sweep_with else sweeper.sweep(arguments=arguments)
    callbacks.on_multirun_end(config=config, config_name=config_name)
    return returned
