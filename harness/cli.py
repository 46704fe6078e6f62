"""`python -m harness [run|multirun|algos] [hydra flags] [overrides]`.

Hydra-native: overrides, `-m`, `--cfg job`, `--info` behave exactly as in Hydra. Before Hydra starts any
job, every job of the run or sweep is composed by Hydra and validated (`harness.config.compose`), so a
bad value is refused with one line and exit code 2 before anything is created or submitted. The launch
uses those configs: a job is composed and validated once. Heavy modules (torch, mlflow) are only imported
by the job itself."""
from __future__ import annotations

import os
import sys
from typing import List, Optional

# Tools beside run/multirun: name -> ("module:function", one line for the help page), the function taking argv
# and returning an exit code. Imported only when called, so composing a run stays fast.
TOOLS = {
    "sweep": ("harness.sweeps.command:main", "run a named sweep from sweeps/ (no name: list them)"),
    "report": ("harness.reports.cli:main", "build a sweep's reports from MLflow (no sweep: list the sweeps here)"),
    "findings": ("harness.sweeps.findings:main", "run the paper-claim sweeps and write reports/FINDINGS.md"),
    "status": ("harness.tracking.status:main", "where the runs of an experiment or sweep stand"),
    "repair": ("harness.tracking.status:repair_main", "mark runs whose process died (no heartbeat) KILLED"),
    "sync": ("harness.tracking.sync:main", "upload tracking records spooled while the store was away"),
    "server": ("harness.tracking.server:main", "start an MLflow tracking server for many writers"),
    "algos": ("harness.cli:print_algos", "the objective library: families, parameters, defaults"),
    "stage": ("harness.trainers.verl.stage:main", "fetch a verl run's model and datasets once into a shared folder"),
}

HELP = """usage: python -m harness [run|multirun] [overrides ...]     one run / a sweep of runs
       python -m harness <command> [args ...]             a tool (<command> --help explains its arguments)

commands:
  run          one run of the spec composed from conf/ and the overrides (the default command)
  multirun     a sweep: every combination of comma-separated values (also: -m)
{tools}
  help         this page (help <command>: that command's arguments)

examples:
  python -m harness debug=quick                                  # one tiny run, end to end
  python -m harness multirun algo=dppo,drpo delta=0.1,0.15,0.2   # 6 runs, then their reports
  python -m harness report multirun/<date>/<time> --kind sensitivity

overrides are Hydra's: group=option (algo=drpo precision=bf16), key=value (trainer.steps=80, seed=3).
flags: --cfg job (print the composed spec, run nothing), --force (rerun finished configs), --detach,
       --dry-run (verl plans), --yes (a grid of over 10,000 jobs), --hydra-help (Hydra's own help)
read more: README.md (runs, sweeps, reports, MLflow), docs/algorithms.md (the objectives), conf/config.yaml"""

# What a tool prepares before its first line of output (its heavy imports), said at once on stderr.
TOOL_NOTICES = {
    "report": "loading the report kinds and mlflow…",
    "sweep": "composing the sweep's jobs…",
    "findings": "composing the claim sweeps…",
    "status": "reading the tracking store (loading mlflow)…",
    "repair": "reading the tracking store (loading mlflow)…",
    "sync": "reading the spooled records (loading mlflow)…",
    "server": "preparing the store (loading mlflow)…",
    "algos": "loading the objective library (torch)…",
    "stage": "reading the spec and the staging folder…",
}

EXIT_BAD_INPUT = 2
EXIT_RUN_FAILED = 1
EXIT_KILLED = 130


def print_algos(argv: List[str]) -> int:
    """python -m harness algos: every objective, its family, parameters, geometry and source."""
    import argparse

    argparse.ArgumentParser(
        prog="python -m harness algos",
        description="Print the objective library: every objective (algo=<name>) with its family, parameters "
                    "and defaults, trust-region geometry and the paper section it follows. "
                    "docs/algorithms.md explains the formulas and what each threshold means.").parse_args(argv)
    from harness.algorithms import objectives_table

    print(objectives_table())
    return 0


def help_text() -> str:
    return HELP.format(tools="\n".join(f"  {name:12s} {line}" for name, (_, line) in TOOLS.items()))


def print_help(argv: List[str]) -> int:
    """`python -m harness help [command]`: the short help page, or that command's own --help."""
    if argv and argv[0] in TOOLS:
        return _run_tool(argv[0], ["--help"])
    print(help_text())
    return 0


def notice(message: str) -> None:
    """One line on stderr saying what is being prepared, before the slow part (imports, composition); only on a
    terminal, like the progress bars (a log file or a caller reading stderr gets the output alone)."""
    if sys.stderr.isatty():
        sys.stderr.write(f"harness: {message}\n")
        sys.stderr.flush()


def _run_tool(name: str, argv: List[str]) -> int:
    import importlib

    listing = name == "sweep" and (not argv or argv[0].startswith("-"))  # a quick listing of the named sweeps
    if name in TOOL_NOTICES and not listing and not any(a in ("-h", "--help") for a in argv):
        notice(f"{name}: {TOOL_NOTICES[name]}")

    module, function = TOOLS[name][0].split(":")
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
        os.environ["HARNESS_LOG_LEVEL"] = "INFO"
    if argv and argv[0] in TOOLS:
        return _run_tool(argv[0], argv[1:])
    if argv and argv[0] == "help":
        return print_help(argv[1:])
    if argv and argv[0] in ("run", "multirun"):
        multirun = argv[0] == "multirun"
        argv = argv[1:]
    if any(a in ("-h", "--help") for a in argv):  # Hydra's own help (a config dump) stays at --hydra-help
        return print_help([])
    from harness.config.limits import take_yes_flag

    argv = take_yes_flag(argv)  # a grid above HARNESS_MAX_JOBS jobs runs only with --yes
    argv, flags = _harness_flags(argv)
    launches = not any(a in INFORMING_FLAGS or a.startswith(("--cfg=", "--info=")) for a in argv)
    if launches:  # said before Hydra's argument parser is even imported
        notice("composing the sweep's jobs…" if multirun or {"-m", "--multirun"} & set(argv) else "composing the run…")
    args = _plain_cfg_job_args(argv) or _hydra_args(argv)
    multirun = multirun or args.multirun
    only_informs = args.help or args.hydra_help or args.shell_completion
    jobs = []
    if not only_informs:
        from harness.config.compose import preflight_jobs
        from harness.config.errors import ConfigError

        try:
            jobs = preflight_jobs(args.overrides, multirun)
        except ConfigError as err:
            return _fail(str(err))
        if _prints_job_config_only(args):
            _print_job_configs(jobs, multirun)
            return 0
        configs = [job.spec for job in jobs]
        launches_jobs = args.cfg is None and args.info is None
        if launches_jobs and any(c.trainer.get("verl", {}).get("dry_run") for c in configs):
            from harness.trainers.verl.dry_run import print_plans

            return print_plans(configs)
        if launches_jobs:
            from harness.tracking.store import prepare_stores

            try:
                from harness.folder_claims import check_output_folders

                check_output_folders(jobs, multirun)
                _check_cluster(configs)
                _check_tasks(configs)
                _check_resumes(configs, args.overrides, multirun)
            except ValueError as err:
                return _fail(str(err).splitlines()[0])
            prepare_stores(configs)
    from harness import job, results
    from harness.config import composed
    from harness.refused import Refused

    if launches:
        study = multirun and configs[0].sweeper.name == "optuna"  # its trials are asked one by one
        notice("starting the Optuna study (loading torch, mlflow, optuna)…" if study else
               f"starting {len(configs)} jobs (loading torch, mlflow)…" if multirun else
               f"starting run {results.run_name(args.overrides) or configs[0].algo.name} (loading torch, mlflow)…")

    results.RESULTS.clear()
    composed.clear()
    for composed_job in jobs:
        composed.remember(composed_job.overrides, composed_job.config, composed_job.spec)
    try:
        if jobs and not multirun and _launches_with_default_config(args):
            from harness.launchers.single import run_single

            run_single(jobs[0].config)
        else:
            _run_hydra(argv + (["--multirun"] if multirun and not args.multirun else []))
    except Refused as err:
        return _fail(str(err))
    except (KeyboardInterrupt, job.Killed) as err:  # the job closed its run as KILLED; no traceback
        reason = str(err) or "interrupted (Ctrl-C)"
        print(f"harness: stopped: {reason}; the run in progress is recorded as KILLED", file=sys.stderr)
        return EXIT_KILLED + (13 if isinstance(err, job.Killed) else 0)  # 130 Ctrl-C, 143 SIGTERM
    if multirun and results.RESULTS:
        print(results.summarize(results.RESULTS))
        sweep_dir = job.sweep_folder(results.RESULTS)
        if sweep_dir and not os.environ.get("HARNESS_NAMED_SWEEP"):  # a named sweep says it once, at its end
            print(job.sweep_where(sweep_dir))
    elif results.RESULTS and results.RESULTS[-1].status != "SUBMITTED":
        print(job.run_where(results.RESULTS[-1]))
    return EXIT_RUN_FAILED if any(r.status not in results.OK_STATUSES for r in results.RESULTS) else 0


def _print_job_configs(jobs, multirun: bool) -> None:
    """What `--cfg job` prints: the job's config as Hydra composed it (each job's, headed by its overrides,
    for a sweep: Hydra itself refuses --cfg with --multirun)."""
    from omegaconf import OmegaConf

    from harness.config.compose import task_config

    for job in jobs:
        if multirun:
            sys.stdout.write(f"# job: {' '.join(job.overrides)}\n")
        sys.stdout.write(OmegaConf.to_yaml(task_config(job.config)))
    sys.stdout.flush()


def _plain_cfg_job_args(argv: List[str]):
    """Hydra's parse of the common `--cfg job [overrides]` / `[overrides] --cfg job` (Hydra's argument parser
    is not needed for it); None for anything else."""
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


def _launches_with_default_config(args) -> bool:
    """No Hydra flag that changes which config is composed or what is done with it."""
    return (args.cfg is None and args.info is None and args.package is None and args.config_path is None
            and args.config_name is None and args.config_dir is None and not args.experimental_rerun)


def _prints_job_config_only(args) -> bool:
    """`--cfg job` with the default config and no other Hydra flag: the preflight's composition is exactly
    what Hydra prints (checked against Hydra in tests/config/test_cfg_job.py)."""
    return (args.cfg == "job" and args.info is None and not args.resolve and args.package is None
            and args.config_path is None and args.config_name is None and args.config_dir is None
            and not args.experimental_rerun and not args.run)


# Hydra flags that print something and run nothing.
INFORMING_FLAGS = ("--cfg", "-c", "--info", "-i", "--hydra-help", "--shell-completion", "-sc")

# Flags of harness itself, turned into overrides so they reach every job (and Slurm nodes) as config.
HARNESS_FLAGS = {"--force": "force=true", "--detach": "launcher.detach=true", "--dry-run": "trainer.verl.dry_run=true",
                 "--reuse-across-versions": "reuse_across_versions=true"}


def _harness_flags(argv: List[str]) -> tuple[List[str], List[str]]:
    flags = [a for a in argv if a in HARNESS_FLAGS]
    rest = [a for a in argv if a not in HARNESS_FLAGS]
    return rest + [HARNESS_FLAGS[f] for f in flags], flags


def _check_cluster(configs) -> None:
    """Things only the cluster can answer, asked before anything is submitted."""
    from harness.config.profiles import check_partition, profile_for

    for partition in sorted({profile_for(c.launcher).partition
                             for c in configs if c.launcher.name == "slurm"} - {None}):
        check_partition(partition)
    if any(c.trainer.name == "verl" for c in configs):
        from harness.trainers.verl.environment import check_runs

        check_runs(configs)  # the verl environment each run names imports verl and ray at the expected versions


def _check_tasks(configs) -> None:
    """The built-in tasks' splits can hold each run's eval set and train pool (asked once per dataset)."""
    from omegaconf import OmegaConf

    datasets = {OmegaConf.to_yaml(c.dataset): c.dataset for c in configs if c.trainer.name == "builtin"}
    if datasets:
        from harness.trainers.builtin.tasks import check_task

        for dataset in datasets.values():
            check_task(dataset)


def _check_resumes(configs, overrides, multirun: bool) -> None:
    """trainer.resume / trainer.branch_from name an intact run, and a resume keeps that run's spec."""
    if any(c.trainer.get("resume") or c.trainer.get("branch_from") for c in configs):
        from harness.config.compose import expand_sweep
        from harness.folder_claims import check_resume_source
        from harness.trainers.resume import check_resumes

        for config in configs:
            if config.trainer.get("resume") and config.trainer.name == "builtin":
                check_resume_source(str(config.trainer.resume))  # not running, and its checkpoint is its own
        check_resumes(configs, expand_sweep(overrides) if multirun else [list(overrides)])


def _run_hydra(hydra_argv: List[str]) -> None:
    import hydra

    from harness.config.schema import register_schemas
    from harness.job import run_job
    from hydra_plugins.harness_launcher import register_with_hydra

    register_schemas()
    register_with_hydra()
    entry = hydra.main(version_base="1.3", config_path="pkg://harness.conf", config_name="config")(run_job)
    saved = sys.argv
    sys.argv = [saved[0] if saved else "harness"] + hydra_argv
    try:
        entry()
    finally:
        sys.argv = saved
