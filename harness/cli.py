"""`python -m harness [run|multirun|algos] [hydra flags] [overrides]`.

Hydra-native: overrides, `-m`, `--cfg job`, `--info` behave exactly as in Hydra. Before Hydra starts any
job, every job of the run or sweep is composed and validated (`harness.config.compose.preflight`), so a
bad value is refused with one line and exit code 2 before anything is created or submitted. Heavy
modules (torch, mlflow) are only imported by the job itself. Compositions are cached on disk
(`harness.config.compose_cache`), so a repeated `--cfg job` does not even import Hydra."""
from __future__ import annotations

import sys
from typing import List, Optional

USAGE = """usage: python -m harness [run|multirun] [overrides ...]   one run / a sweep (Hydra overrides)
       python -m harness <tool> [args ...]                      tools: {tools}
Hydra's flags work as usual: --cfg job, --info, -m, --help."""

# Tools beside run/multirun: name -> "module:function", the function taking argv and returning an exit
# code. Imported only when called, so composing a run stays fast.
TOOLS = {
    "algos": "harness.cli:print_algos",
    "report": "harness.reports.cli:main",
    "sweep": "harness.sweeps.command:main",
    "findings": "harness.sweeps.findings:main",
    "server": "harness.tracking.server:main",
    "status": "harness.tracking.status:main",
    "repair": "harness.tracking.status:repair_main",
    "sync": "harness.tracking.sync:main",
}

EXIT_BAD_INPUT = 2
EXIT_RUN_FAILED = 1


def print_algos(argv: List[str]) -> int:
    """python -m harness algos: every objective, its family, parameters, geometry and source."""
    from harness.algorithms import objectives_table

    print(objectives_table())
    return 0


def _run_tool(name: str, argv: List[str]) -> int:
    import importlib

    module, function = TOOLS[name].split(":")
    return int(getattr(importlib.import_module(module), function)(argv) or 0)


def _fail(message: str) -> int:
    print(f"harness: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _hydra_args(argv: List[str]):
    from hydra._internal.utils import get_args_parser

    return get_args_parser().parse_args(argv)


def main(argv: Optional[List[str]] = None) -> None:
    code = run_cli(list(sys.argv[1:] if argv is None else argv))
    # Interpreter shutdown would then run the cyclic garbage collector over every torch / transformers /
    # MLflow / SQLAlchemy object left (1.5-3 s on a busy 2-core machine). By now every run is closed: its
    # tracker flushed and finished, files written and closed, worker pools shut down; atexit handlers
    # (logging) still run. Frozen objects are only exempt from that final collection.
    import gc

    gc.freeze()
    sys.exit(code)


def run_cli(argv: List[str]) -> int:
    multirun = False
    if "-v" in argv or "--verbose" in argv:  # libraries' log lines too (MLflow's store creation, migrations)
        argv = [a for a in argv if a not in ("-v", "--verbose")]
        import os

        os.environ["HARNESS_LOG_LEVEL"] = "INFO"
    if argv and argv[0] in TOOLS:
        return _run_tool(argv[0], argv[1:])
    if argv and argv[0] in ("run", "multirun"):
        multirun = argv[0] == "multirun"
        argv = argv[1:]
    argv, flags = _harness_flags(argv)
    if argv and argv[0] in ("-h", "--help") and len(argv) == 1:
        print(USAGE.format(tools=", ".join(sorted(TOOLS))) + "\n")
    args = _plain_cfg_job_args(argv) or _hydra_args(argv)
    multirun = multirun or args.multirun
    only_informs = args.help or args.hydra_help or args.shell_completion
    if not only_informs:
        from harness.config.compose import preflight_composed
        from harness.config.validate import ConfigError

        try:
            composed, configs = preflight_composed(args.overrides, multirun, cache=True)
        except ConfigError as err:
            return _fail(str(err))
        if not multirun and _prints_job_config_only(args):
            # Hydra would compose the same config a second time just to print it (and discover its plugins)
            from omegaconf import OmegaConf

            sys.stdout.write(OmegaConf.to_yaml(composed[0]))
            sys.stdout.flush()
            return 0
        launches_jobs = args.cfg is None and args.info is None
        if launches_jobs and any(c.trainer.get("verl", {}).get("dry_run") for c in configs):
            from harness.trainers.verl.dry_run import print_plans

            return print_plans(configs)
        if launches_jobs:
            from harness.tracking.store import prepare_stores

            try:
                _check_cluster(configs)
                _check_tasks(configs)
            except ValueError as err:
                return _fail(str(err).splitlines()[0])
            prepare_stores(configs)
    from harness import job

    hydra_argv = argv + (["--multirun"] if multirun and not args.multirun else [])
    job.RESULTS.clear()
    _run_hydra(hydra_argv)
    if multirun and job.RESULTS:
        print(job.summarize(job.RESULTS))
    return EXIT_RUN_FAILED if any(r.status not in job.OK_STATUSES for r in job.RESULTS) else 0


def _plain_cfg_job_args(argv: List[str]):
    """Hydra's parse of the common `--cfg job [overrides]` / `[overrides] --cfg job`, without importing Hydra
    (with a cached composition, `--cfg job` then never imports it); None for anything else."""
    for flag in ("--cfg", "-c"):
        pair = [flag, "job"]
        overrides = argv[2:] if argv[:2] == pair else argv[:-2] if argv[-2:] == pair else None
        if overrides is not None and not any(a.startswith("-") for a in overrides):
            from types import SimpleNamespace

            return SimpleNamespace(overrides=overrides, cfg="job", help=False, hydra_help=False, resolve=False,
                                   package=None, run=False, multirun=False, shell_completion=False,
                                   config_path=None, config_name=None, config_dir=None, experimental_rerun=None,
                                   info=None)
    return None


def _prints_job_config_only(args) -> bool:
    """`--cfg job` of one run with the default config and no other Hydra flag: the preflight's composition is
    exactly what Hydra prints (checked against Hydra in tests/config/test_cfg_job.py)."""
    return (args.cfg == "job" and args.info is None and not args.resolve and args.package is None
            and args.config_path is None and args.config_name is None and args.config_dir is None
            and not args.experimental_rerun and not args.run)


# Flags of harness itself, turned into overrides so they reach every job (and Slurm nodes) as config.
HARNESS_FLAGS = {"--force": "force=true", "--detach": "launcher.detach=true", "--dry-run": "trainer.verl.dry_run=true"}


def _harness_flags(argv: List[str]) -> tuple[List[str], List[str]]:
    flags = [a for a in argv if a in HARNESS_FLAGS]
    rest = [a for a in argv if a not in HARNESS_FLAGS]
    return rest + [HARNESS_FLAGS[f] for f in flags], flags


def _check_cluster(configs) -> None:
    """Things only the cluster can answer, asked before anything is submitted."""
    from harness.launchers.profiles import check_partition, profile_for

    for partition in sorted({profile_for(c.launcher).partition
                             for c in configs if c.launcher.name == "slurm"} - {None}):
        check_partition(partition)


def _check_tasks(configs) -> None:
    """The built-in tasks' splits can hold each run's eval set and train pool (asked once per dataset)."""
    from omegaconf import OmegaConf

    datasets = {OmegaConf.to_yaml(c.dataset): c.dataset for c in configs if c.trainer.name == "builtin"}
    if datasets:
        from harness.trainers.builtin.tasks import check_task

        for dataset in datasets.values():
            check_task(dataset)


def _run_hydra(hydra_argv: List[str]) -> None:
    import hydra

    from harness.config.schema import register_schemas
    from harness.job import run_job
    from harness.launchers import register_with_hydra

    register_schemas()
    register_with_hydra()
    entry = hydra.main(version_base="1.3", config_path="pkg://harness.conf", config_name="config")(run_job)
    saved = sys.argv
    sys.argv = [saved[0] if saved else "harness"] + hydra_argv
    try:
        entry()
    finally:
        sys.argv = saved
