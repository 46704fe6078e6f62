"""`python -m harness [run|multirun|algos] [hydra flags] [overrides]`.

Hydra-native: overrides, `-m`, `--cfg job`, `--info` behave exactly as in Hydra. Before Hydra starts any
job, every job of the run or sweep is composed by Hydra and validated (`harness.launchers.compose`), so a
bad value is refused with one line and exit code 2 before anything is created or submitted. The launch
uses those configs: a job is composed and validated once. Heavy modules (torch, mlflow) are only imported
by the job itself."""
from __future__ import annotations

import sys
from typing import Any, List, Optional

from harness.config.flags import VERBOSE_FLAGS, Options  # standard library only
from harness.config.mistakes import unknown_command  # standard library only
from harness.infra.claim import claimed_any  # standard library only
from harness.infra.extensions import warn_broken  # loaded with the package
from harness.infra.paths import LoopedPath  # standard library only
from harness.infra.refused import Refused  # imports nothing
from harness.infra.stop_signals import Killed  # standard library only
from hydra_plugins.harness_launcher.arguments import asks_auto, informs_only, parse_hydra_args, read_flags  # Hydra: when parsing

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
    "clean": ("harness.launchers.cleanup:main", "list old sweep/run folders whose runs all ended (--yes: delete)"),
    "algos": ("harness.cli:print_algos", "the objective library: families, parameters, defaults"),
    "stage": ("harness.launchers.stage_command:main", "fetch a verl run's model and datasets once into a shared folder"),
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
  python -m harness multirun algo=dppo,drpo delta=0.1,0.15,0.2 seed=auto budget.minutes=14   # seeds until decided
  python -m harness sweep claim1_sanity                          # a claim's design: 40 runs and its verdict
  python -m harness report multirun/<date>/<time> --kind sensitivity

overrides are Hydra's: group=option (algo=drpo precision=bf16), key=value (trainer.steps=80, seed=3).
flags: --plan (jobs, already finished, ensembles, time, #SBATCH lines; run nothing), --cfg job (the spec),
       --force (rerun finished configs), --detach, --dry-run (verl plans), --yes (a grid of over 10,000 jobs),
       --hydra-help (Hydra's own help),
       --new-sweep (a new sweep folder, where re-running a stopped sweep's command would continue it)
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
    warn_broken()  # an extension that could not be loaded: what it would have registered is missing from the table
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
    try:
        return int(getattr(importlib.import_module(module), function)(argv) or 0)
    except (LoopedPath, Refused) as err:  # the output root or a folder given, a named sweep's checks: one line
        return _fail(str(err))
    except (KeyboardInterrupt, Killed) as err:
        if name not in RUNS_SWEEPS:
            raise
        return _stopped(err, "its runs in progress are recorded as KILLED")


# Tools that run a named sweep's grids in this process: stopped, they end like a sweep
RUNS_SWEEPS = ("sweep", "findings")


def _fail(message: str) -> int:
    print(f"harness: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


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
    verbose = [a for a in argv if a in VERBOSE_FLAGS]  # -v: libraries' log lines too (MLflow's store creation)
    argv = [a for a in argv if a not in VERBOSE_FLAGS]
    if argv and argv[0] in TOOLS:
        if verbose:
            import logging

            logging.getLogger("harness").setLevel(logging.DEBUG)  # what a job's `hydra.verbose=harness` sets
            if argv[0] == "sweep" and argv[1:2] and not argv[1].startswith("-"):
                argv = [*argv, "--verbose"]  # for its jobs, also those in worker processes and on Slurm nodes
        return _run_tool(argv[0], argv[1:])
    if argv and argv[0] == "help":
        return print_help(argv[1:])
    if argv and argv[0] in ("run", "multirun"):
        multirun = argv[0] == "multirun"
        argv = argv[1:]
    if any(a in ("-h", "--help") for a in argv):  # Hydra's own help (a config dump) stays at --hydra-help
        return print_help([])
    if argv and "=" not in argv[0] and not argv[0].startswith(("-", "+", "~")):  # no override nor flag: a command
        return _fail(unknown_command(argv[0], ["run", "multirun", "help", *TOOLS]))
    # a grid above HARNESS_MAX_JOBS jobs runs only with --yes; --new-sweep: no stopped sweep is continued;
    # --plan: what would run, printed once every job is validated (harness/launchers/plan.py); -v: an override
    options, argv = read_flags(argv + verbose)
    checks = not informs_only(argv)  # a run or sweep to validate (and to start, without --plan)
    launches = checks and not options.plan
    if launches:  # said before Hydra's argument parser is even imported
        notice("composing the sweep's jobs…" if multirun or {"-m", "--multirun"} & set(argv) else "composing the run…")
    from harness.config.errors import ConfigError  # imports nothing

    try:
        args = parse_hydra_args(argv)  # an override written as an option: one line, not Hydra's usage
    except ConfigError as err:
        return _fail(str(err))
    multirun = multirun or args.multirun
    hydra_argv = argv + (["--multirun"] if multirun and not args.multirun else [])
    if checks and asks_auto(args.overrides):  # seed=auto: rounds of fresh seeds until the reports decide
        return _run_auto(args.overrides, options, multirun)
    if args.help or args.hydra_help or args.shell_completion:
        return _launch(lambda: _run_hydra(hydra_argv, options), multirun, options)
    from harness.launchers.compose import check_overrides, check_sweep_config, preflight_jobs

    try:
        # parses, no key twice, the environment, the grid's size (any: --yes)
        check_overrides(args.overrides, multirun, options.any_size)
        if _prints_job_config_only(args):
            print_job_configs(preflight_jobs(args.overrides, multirun), multirun)
            return 0
        if multirun or not _launches_with_default_config(args):
            # Hydra composes each job in the launcher; the sweeper has the launcher validate them all first
            if multirun and checks:
                check_sweep_config(args.overrides)
            if launches:
                notice("starting the sweep (loading torch, mlflow)…" if multirun else "starting the run…")
            return _launch(lambda: _run_hydra(hydra_argv, options), multirun, options)
        jobs = preflight_jobs(args.overrides, multirun=False)  # the run's one composition and validation
    except ConfigError as err:
        return _fail(str(err))
    return _launch(lambda: _run_one(jobs[0], options), multirun, options)


def _run_auto(overrides: List[str], options: Options, multirun: bool) -> int:  # harness/sweeps/auto_study.py
    from harness.sweeps.auto_study import main as auto_main

    try:
        return auto_main(overrides, options.plan, options.new_sweep, options.any_size, multirun)
    except (KeyboardInterrupt, Killed) as err:
        return _stopped(err, "its runs in progress are recorded as KILLED; the same command continues the study")


def _run_one(job, options: Options) -> Any:
    """The run's JobReturn (None for a plan printed instead)."""
    from harness.launchers import plan, results
    from harness.launchers.preflight import check_jobs, print_dry_run
    from hydra_plugins.harness_launcher.single_run import run_single

    if print_dry_run([job]):  # the plan only: nothing is checked against the cluster or started
        return None
    if options.plan:
        plan.print_plan(f"run {' '.join(job.overrides)}".rstrip(), plan.launcher_for([job]), [job])
        return None
    check_jobs([job], multirun=False)
    notice(f"starting run {results.run_name(job.overrides) or job.spec.algo.name} (loading torch, mlflow)…")
    return run_single(job.config, job.spec)


def _launch(start, multirun: bool, options: Options) -> int:
    """Run a single run or Hydra (`start` returns what the run or sweep returned), and end with the runs'
    summary and a truthful exit code."""
    from harness.launchers import job_returns, results, where
    from harness.reports.rendering import verdicts

    try:
        returned = start()
    except Refused as err:
        return _fail(str(err))
    except (KeyboardInterrupt, Killed) as err:  # the job closed its run as KILLED; no traceback
        return _stopped(err, _how_to_go_on(multirun, options))
    ended = job_returns.job_results(returned)
    if multirun and ended:
        print(results.summarize(ended))
        sweep_dir = where.sweep_folder(ended)
        if sweep_dir:
            print(where.sweep_where(sweep_dir, verdicts.sweep_answer(sweep_dir)))
    elif ended and ended[-1].status != "SUBMITTED":
        print(where.run_where(ended[-1]))
    return EXIT_RUN_FAILED if any(r.status not in results.OK_STATUSES for r in ended) else 0


def _stopped(err: BaseException, left: str) -> int:
    """A run or sweep stopped by Ctrl-C, SIGTERM or SIGHUP (the job closed its run as KILLED; no traceback):
    one line."""
    # stopped while the jobs were still being checked: no folder, no run, nothing to continue
    left = left if claimed_any() else "before any run started: nothing was recorded"
    print(f"harness: stopped: {str(err) or 'interrupted (Ctrl-C)'}; {left}", file=sys.stderr)
    return 128 + getattr(err, "signum", 15) if isinstance(err, Killed) else EXIT_KILLED  # 143 TERM, 129 HUP


def _how_to_go_on(multirun: bool, options: Options) -> str:
    """What a stopped run or sweep left, and how to continue a sweep (harness/sweeps/continued.py)."""
    if not multirun:
        return "the run in progress is recorded as KILLED"
    again = "the same command (without --new-sweep)" if options.new_sweep else "the same command"
    return (f"its unfinished runs are recorded as KILLED; to continue the sweep from their checkpoints, run {again} "
            "again")


def print_job_configs(jobs, multirun: bool) -> None:
    """What `--cfg job` prints: the job's config as Hydra composed it (each job's, headed by its overrides,
    for a sweep: Hydra itself refuses --cfg with --multirun)."""
    from omegaconf import OmegaConf

    for job in jobs:
        if multirun:
            sys.stdout.write(f"# job: {' '.join(job.overrides)}\n")
        sys.stdout.write(OmegaConf.to_yaml(job.run_config))
    sys.stdout.flush()


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


def _run_hydra(hydra_argv: List[str], options: Options = Options()) -> Any:
    """What the run or sweep Hydra started returned (None for a command that runs nothing)."""
    from hydra_plugins.harness_launcher.app import run_hydra

    return run_hydra(hydra_argv, options)
