"""`python -m harness status` (where runs stand) and `python -m harness repair` (close runs that died).

    python -m harness status [--experiment NAME] [--sweep SWEEP_ID] [--watch] [--stale-after S]
    python -m harness repair [--experiment NAME] [--sweep SWEEP_ID] [--stale-after S] [--dry-run]

Both read --tracking-uri, else MLFLOW_TRACKING_URI, else the default store (<HARNESS_OUTPUT_ROOT or .>/mlruns.db),
and the experiment --experiment, else MLFLOW_EXPERIMENT_NAME, else harness. A RUNNING
run whose heartbeat (tag `harness.heartbeat`, refreshed every ~30 s) is older than --stale-after is shown
STALE: its process died without closing it (SIGKILL, OOM, a lost node). `repair` marks those KILLED."""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from harness.tracking.heartbeat import HEARTBEAT_TAG, default_stale_after
from harness.tracking.liveness import CLOCK_SKEW_TOLERANCE_S, alive_here, dead_here
from harness.tracking.outage import apply_client_defaults, describe, store_errors
from harness.tracking.params import scrub
from harness.tracking.store import EXPERIMENT_ENV, URI_ENV, default_uri
from harness.tracking.store_check import StoreFault, check_store, corruption_in
from harness.tracking.tags import STEP_TAG
from harness.tracking.ui import runs_url

TERMINAL = ("FINISHED", "FAILED", "KILLED")
COLUMNS = ("run", "status", "step", "train/reward", "eval/accuracy", "heartbeat")


class BadInput(Exception):
    """One line naming the offending option, its value and what is allowed (exit code 2)."""


@dataclass
class RunRow:
    name: str
    run_id: str
    status: str  # an MLflow status, or STALE for a RUNNING run with an old heartbeat
    step: str
    reward: Optional[float]
    accuracy: Optional[float]
    heartbeat_age: Optional[float]  # seconds, None once the run ended


def heartbeat_age(run, now: float) -> float:
    """Seconds since the run's last heartbeat (since its start, for runs without one)."""
    beat = run.data.tags.get(HEARTBEAT_TAG)
    try:
        return now - float(beat)
    except (TypeError, ValueError):
        return now - run.info.start_time / 1000


def is_stale(run, now: float, stale_after: float) -> bool:
    """RUNNING with a heartbeat older than `stale_after`, and not alive on this host (its folder's claim held,
    or its process alive); or RUNNING and proved dead on this host, whatever its heartbeat says."""
    if run.info.status != "RUNNING":
        return False
    return dead_here(run) or (heartbeat_age(run, now) > stale_after and alive_here(run) is None)


def _row(run, now: float, stale_after: float) -> RunRow:
    metrics, status = run.data.metrics, run.info.status
    return RunRow(name=run.info.run_name or run.info.run_id, run_id=run.info.run_id,
                  status="STALE" if is_stale(run, now, stale_after) else status,
                  step=run.data.tags.get(STEP_TAG, "-"), reward=metrics.get("train/reward"),
                  accuracy=metrics.get("eval/accuracy"),
                  heartbeat_age=None if status in TERMINAL else heartbeat_age(run, now))


def format_age(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    for limit, unit, size in ((120, "s", 1), (7200, "m", 60), (172800, "h", 3600)):
        if seconds < limit:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds / 86400:.0f}d"


def format_table(rows: List[RunRow]) -> str:
    cells = [COLUMNS] + [(r.name, r.status, r.step, "-" if r.reward is None else f"{r.reward:.4f}",
                          "-" if r.accuracy is None else f"{r.accuracy:.4f}", format_age(r.heartbeat_age))
                         for r in rows]
    widths = [max(len(str(c[i])) for c in cells) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells)


# -- the store ---------------------------------------------------------------------------------------------
def open_client(uri: Optional[str]):
    """A client for --tracking-uri (else MLFLOW_TRACKING_URI), or for the default store, which must already
    exist (never created here)."""
    from mlflow.tracking import MlflowClient

    apply_client_defaults()
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    uri = uri or os.environ.get(URI_ENV)
    if uri is None:
        uri = default_uri()
        if not Path(uri[len("sqlite:///"):]).is_file():
            raise BadInput(f"--tracking-uri not given and no store at {uri[len('sqlite:///'):]}: run from the "
                           "output folder, set HARNESS_OUTPUT_ROOT, or pass --tracking-uri URI")
    try:
        check_store(uri)
    except StoreFault as err:
        raise BadInput(str(err)) from None
    return MlflowClient(tracking_uri=uri), uri


def fetch_runs(client, experiment: str, sweep: Optional[str]) -> Tuple[str, list, list]:
    """(experiment id, parent runs, job runs), oldest first, optionally of one sweep only; BadInput (one line
    naming the store) when the store fails to answer."""
    try:
        return _fetch_runs(client, experiment, sweep)
    except BadInput:
        raise
    except store_errors() as err:  # the command's boundary: the store's errors, as one line
        fault = corruption_in(err, client.tracking_uri)
        raise BadInput(str(fault) if fault else f"tracking store {scrub(client.tracking_uri)} failed: {describe(err)}"
                       ) from None


def _fetch_runs(client, experiment: str, sweep: Optional[str]) -> Tuple[str, list, list]:
    found = client.get_experiment_by_name(experiment)
    if found is None:
        known = ", ".join(sorted(e.name for e in client.search_experiments())) or "none"
        raise BadInput(f"--experiment={experiment!r} is not allowed: no such experiment (known: {known})")
    query = f"tags.`harness.sweep_id` = '{sweep}'" if sweep else ""
    runs = client.search_runs([found.experiment_id], filter_string=query, max_results=5000,
                              order_by=["attributes.start_time ASC"])
    parents = [r for r in runs if r.data.tags.get("harness.role") == "parent"]
    return found.experiment_id, parents, [r for r in runs if r.data.tags.get("harness.role") != "parent"]


def _header(parents: list, jobs: list, now: float, stale_after: float) -> str:
    lines = []
    for p in parents:
        status = "STALE" if is_stale(p, now, stale_after) else p.info.status
        size = p.data.tags.get("harness.sweep_size", "?")
        lines.append(f"sweep {p.data.tags.get('harness.sweep_id', '?')}: parent {status} ({size} jobs, "
                     f"run {p.info.run_id})")
    counts = {s: sum(_row(r, now, stale_after).status == s for r in jobs)
              for s in ("RUNNING", "STALE", "FINISHED", "FAILED", "KILLED")}
    lines.append(f"{len(jobs)} runs: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items() if n))
    return "\n".join(lines)


def _common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--experiment", default=os.environ.get(EXPERIMENT_ENV) or "harness",
                        help="experiment name (default: MLFLOW_EXPERIMENT_NAME, else harness)")
    parser.add_argument("--sweep", help="a sweep id (<date>/<time>, tag harness.sweep_id)")
    parser.add_argument("--tracking-uri", help="default: MLFLOW_TRACKING_URI, else "
                                               "sqlite:///<HARNESS_OUTPUT_ROOT or .>/mlruns.db")
    parser.add_argument("--stale-after", type=float, default=None,
                        help="seconds without heartbeat before a RUNNING run is presumed dead (default: 6 beats, "
                             "at least 180, plus 300 for the hosts' clock skew); a run alive on this host (its "
                             "folder held, its process running) is never presumed dead")


def _stale_after(args) -> float:
    try:
        value = default_stale_after() + CLOCK_SKEW_TOLERANCE_S if args.stale_after is None else args.stale_after
    except ValueError as err:  # a bad HARNESS_HEARTBEAT_S
        raise BadInput(str(err)) from None
    if not value > 0:
        raise BadInput(f"--stale-after={args.stale_after} is not allowed: a number of seconds > 0")
    return value


# -- status --------------------------------------------------------------------------------------------------
def _watch(client, args, stale_after: float) -> int:
    from tqdm import tqdm

    bar = None
    shown = ""
    try:
        while True:
            now = time.time()
            _, parents, jobs = fetch_runs(client, args.experiment, args.sweep)
            rows = [_row(r, now, stale_after) for r in jobs]
            text = _header(parents, jobs, now, stale_after) + "\n" + format_table(rows)
            if text != shown:
                if bar is not None:
                    bar.clear()
                print("\x1b[H\x1b[2J" + text if sys.stdout.isatty() else text + "\n", flush=True)
                shown = text
            ended = sum(r.status in TERMINAL + ("STALE",) for r in rows)
            sizes = [int(p.data.tags.get("harness.sweep_size", 0)) for p in parents]
            expected = max(len(rows), sum(sizes) if sizes and all(sizes) else 0)
            parents_open = any(p.info.status == "RUNNING" and not is_stale(p, now, stale_after) for p in parents)
            if bar is None:
                bar = tqdm(total=expected, desc="runs ended", unit="run", file=sys.stderr, dynamic_ncols=True)
            bar.total, bar.n = expected, ended
            bar.refresh()
            if rows and ended == expected and not parents_open:
                return 0 if all(r.status == "FINISHED" for r in rows) else 1
            time.sleep(args.interval)
    finally:
        if bar is not None:
            bar.close()


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness status", description="Where the runs stand: one line per run (status, progress, eval accuracy), then the counts; RUNNING runs whose heartbeat stopped are shown STALE.",
                                     epilog="example: python -m harness status --sweep 2026-11-29/10-00-00-000000 --watch")
    _common_args(parser)
    parser.add_argument("--watch", action="store_true",
                        help="refresh until every run has ended (exit 0 if all FINISHED, else 1)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes with --watch")
    args = parser.parse_args(argv)
    try:
        stale_after = _stale_after(args)
        client, uri = open_client(args.tracking_uri)
        if args.watch:
            return _watch(client, args, stale_after)
        now = time.time()
        experiment_id, parents, jobs = fetch_runs(client, args.experiment, args.sweep)
    except BadInput as err:
        print(f"harness status: error: {err}", file=sys.stderr)
        return 2
    print(_header(parents, jobs, now, stale_after))
    print(format_table([_row(r, now, stale_after) for r in jobs]))
    url = runs_url(uri, experiment_id)
    if url:
        print(f"UI: {url}")
    if any(is_stale(r, now, stale_after) for r in parents + jobs):
        print(f"STALE: no heartbeat for {stale_after:.0f} s; mark them KILLED with: python -m harness repair "
              f"--experiment {args.experiment}" + (f" --tracking-uri {scrub(uri)}" if args.tracking_uri else ""))
    return 0


# -- repair --------------------------------------------------------------------------------------------------
def repair_main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness repair",
                                     description="Mark RUNNING runs whose heartbeat stopped as KILLED.")
    _common_args(parser)
    parser.add_argument("--dry-run", action="store_true", help="only say which runs would be marked")
    args = parser.parse_args(argv)
    try:
        stale_after = _stale_after(args)
        client, _ = open_client(args.tracking_uri)
        now = time.time()
        _, parents, jobs = fetch_runs(client, args.experiment, args.sweep)
    except BadInput as err:
        print(f"harness repair: error: {err}", file=sys.stderr)
        return 2
    stale = [r for r in jobs + parents if is_stale(r, now, stale_after)]
    for run in stale:
        age = heartbeat_age(run, now)
        name = run.info.run_name or run.info.run_id
        why = ("its process is gone on this host" if dead_here(run) else
               f"no heartbeat for {age:.0f} s (threshold {stale_after:.0f} s)")
        if not args.dry_run:
            last_seen_ms = int((now - age) * 1000)
            try:
                client.set_tag(run.info.run_id, "harness.repaired", f"KILLED by repair: {why}")
                client.set_terminated(run.info.run_id, status="KILLED",
                                      end_time=max(last_seen_ms, run.info.start_time))
            except store_errors() as err:  # the command's boundary: a read-only or full store, as one line
                print(f"harness repair: error: tracking store {scrub(client.tracking_uri)} refused marking {name}: "
                      f"{describe(err)}", file=sys.stderr)
                return 2
        print(f"{'would mark' if args.dry_run else 'marked'} KILLED: {name} (run {run.info.run_id}), "
              + (why if why.startswith("its process") else f"no heartbeat for {format_age(age)}"))
    if not stale:
        print(f"nothing to repair: no RUNNING run without a heartbeat for {stale_after:.0f} s, nor one whose "
              "process is gone on this host")
    return 0
