"""The `report` command once its arguments are read (harness/reports/cli.py): list the sweeps under the output root, or
check the target and build its reports."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from harness.config.errors import EXIT_BAD_INPUT
from harness.reports.rendering.out_folder import ReportsNotWritten, check_report_out
from harness.reports.rendering.build import build_reports, collect_target
from harness.reports.rendering.compare import build_compare, check_out
from harness.reports.results.locate import TargetError, default_root, job_dirs, resolve, sweep_folders
from harness.reports.rendering.verdicts import terminal_lines
from harness.tracking.outage import apply_client_defaults, store_errors
from harness.tracking.store_check import check_store, corruption_in

EXIT_REPORT_FAILED = 1


def _list_sweeps() -> int:
    """`report` without a target: the sweeps under the output root and their reports index."""
    root = default_root()
    sweeps = sweep_folders(root)
    if not sweeps:
        print(f"no sweeps under {root / 'multirun'} (run one: python -m harness multirun ...; or give a sweep "
              "folder, sweep id or parent run id, see --help)")
        return 0
    print(f"sweeps under {root / 'multirun'} (python -m harness report <folder> [--kind K] to rebuild):")
    for folder in sweeps:
        index = folder / "reports" / "index.html"
        print(f"  {folder.relative_to(root)}  " + (f"reports: {index.relative_to(root)}" if index.is_file()
                                                    else "no reports yet"))
    return 0


def _check_folder(target: str) -> None:
    """A folder given as the target must be a sweep's (or a run's): reports are never written into another."""
    folder = Path(target).expanduser()
    if not folder.is_dir():
        return
    is_sweep = bool(job_dirs(folder)) or any((folder / name).is_file() for name in ("parent_run.json", "multirun.yaml"))
    is_run = (folder / "config.yaml").is_file() or (folder / ".hydra").is_dir()
    if not (is_sweep or is_run):
        raise TargetError(f"{folder} is not a sweep or run folder (no job folders, parent_run.json, multirun.yaml "
                          "or config.yaml in it); nothing written")


def compare_out(a: str, b: str) -> Path:
    """The compare page's default folder: <output root>/reports/compare/<A>_vs_<B> (ids or folder names)."""
    def name(target: str) -> str:
        path = Path(target).expanduser()
        return "_".join(path.resolve().parts[-2:]) if path.is_dir() else target.replace("/", "_")
    return default_root() / "reports" / "compare" / f"{name(a)}_vs_{name(b)}"


def _compare(args: argparse.Namespace, kinds: Optional[List[str]]) -> int:
    """`report A B`: the compare page of two sweeps, its path printed."""
    try:
        if kinds is not None:
            raise ValueError("--kind does not apply to comparing two sweeps (report A B builds one compare page)")
        out = Path(args.out).expanduser() if args.out else compare_out(args.target, args.other)
        check_out(out)
        datas = []
        for arg in (args.target, args.other):
            _check_folder(arg)
            target = resolve(arg, args.tracking_uri, args.experiment)
            if target.tracking_uri:
                check_store(target.tracking_uri)
            datas.append(collect_target(target, args.history))
            if not datas[-1].runs:
                raise TargetError(f"sweep {arg} has no runs (in {target.tracking_uri or 'its job folders'})")
    except (TargetError, ValueError) as err:
        print(f"harness report: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"compare            {build_compare(datas[0], datas[1], out)}")
    return 0


def run(args: argparse.Namespace, kinds: Optional[List[str]]) -> int:
    """Build the reports `kinds` (None: every kind with data) of `args.target`, compare it with `args.other`,
    or list the sweeps."""
    if not args.target:
        return _list_sweeps()
    apply_client_defaults()  # short HTTP retries and timeout against a store that is down
    if getattr(args, "other", None):
        return _compare(args, kinds)
    try:
        _check_folder(args.target)
        if args.out is not None:
            check_report_out(args.out)
        if args.tracking_uri:
            check_store(args.tracking_uri)  # before any MLflow call: one line, seconds, not minutes
        target = resolve(args.target, args.tracking_uri, args.experiment, args.out)
        if target.tracking_uri:
            check_store(target.tracking_uri)
        try:
            result = build_reports(target, kinds, history=args.history)
        except store_errors() as err:  # a store corrupt in pages the check did not read: one line too
            fault = corruption_in(err, target.tracking_uri)
            if fault is None:
                raise
            raise fault from None
    except (TargetError, ValueError) as err:
        print(f"harness report: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ReportsNotWritten as err:
        print(f"harness report: error: {err}", file=sys.stderr)
        return EXIT_REPORT_FAILED
    for line in result.left_out:
        print(f"harness report: warning: {line}", file=sys.stderr)
    for name, page in result.pages.items():
        print(f"{name:18s} {page}")
    for name, reason in result.skipped.items():
        print(f"{name:18s} skipped: this sweep {reason}")
    for name, error in result.failed.items():
        print(f"{name:18s} FAILED: {error}", file=sys.stderr)
    print(f"index              {result.out_dir / 'index.html'}")
    if result.logged_to:
        print(f"logged to parent run {result.logged_to} (artifacts: reports/; verdicts: its tags harness.verdict.*)")
    for line in terminal_lines(result.verdicts):
        print(line)
    return EXIT_REPORT_FAILED if result.failed else 0
