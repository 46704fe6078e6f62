#!/usr/bin/env python3
"""Flake hunt: run a chosen set of tests N times with a CPU-stress process beside them, and list every test
that ever failed.

    .venv/bin/python .ci/flake_hunt.py tests/e2e tests/safety --runs 5
    .venv/bin/python .ci/flake_hunt.py tests/tracking --runs 3 --stress 2 -- -k outage

Each run is one pytest process over the given paths (its own temporary folders, a JUnit XML report read back
for the outcome of every test). While it runs, `--stress` busy processes (default: one per core) spin at
full speed, so timings that hold only on an idle machine show up. The table at the end is tests x runs x
failures; the exit status is 1 if any test failed in any run, 0 otherwise. Arguments after `--` go to pytest.
Leave the checkout alone while it runs: runs record the code version they ran, so an edit or a commit midway
fails tests for that reason alone (a run during which the checkout changed is named as such).
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _spin(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


class Stress:
    """`count` processes that keep the CPU busy until the block ends."""

    def __init__(self, count: int):
        self.count = count
        self.stop = multiprocessing.Event()
        self.processes = []

    def __enter__(self):
        for _ in range(self.count):
            process = multiprocessing.Process(target=_spin, args=(self.stop,), daemon=True)
            process.start()
            self.processes.append(process)
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for process in self.processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()


def outcomes(junit_xml: Path) -> dict:
    """{test id: "passed" | "failed" | "skipped"} from a pytest JUnit XML report."""
    results = {}
    for case in ElementTree.parse(junit_xml).getroot().iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        tags = {child.tag for child in case}
        results[test] = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
    return results


def checkout_state() -> str:
    """The checkout's commit and its uncommitted changes: runs record the code version they ran (HEAD, dirty or
    not), so a tree edited or committed to while tests run fails them for that reason alone."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout

    return git("rev-parse", "HEAD") + git("diff", "HEAD") + git("status", "--porcelain")


def one_run(paths: list, pytest_args: list, stress: int, folder: Path, index: int) -> tuple:
    report = folder / f"run{index}.xml"
    command = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
               *pytest_args]
    started = time.monotonic()
    with Stress(stress), open(folder / f"run{index}.log", "w") as log:
        code = subprocess.run(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - started
    if not report.exists():
        return {f"<pytest run {index} ended {code} without a report>": "failed"}, seconds
    return outcomes(report), seconds


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="test files or folders, as pytest takes them")
    parser.add_argument("--runs", type=int, default=5, help="how many times to run them (default 5)")
    parser.add_argument("--stress", type=int, default=os.cpu_count() or 1,
                        help="busy processes beside the tests (default: one per core; 0: none)")
    parser.add_argument("--keep", type=Path, help="keep the runs' logs and reports in this folder")
    args = parser.parse_args(argv)

    folder = args.keep or Path(tempfile.mkdtemp(prefix="flake-hunt-"))
    folder.mkdir(parents=True, exist_ok=True)
    failures, seen = Counter(), Counter()
    changed_runs = []
    for index in range(1, args.runs + 1):
        before = checkout_state()
        results, seconds = one_run(args.paths, pytest_args, args.stress, folder, index)
        changed = checkout_state() != before
        failed = sorted(test for test, outcome in results.items() if outcome == "failed")
        seen.update(test for test, outcome in results.items() if outcome != "skipped")
        failures.update(failed)
        changed_runs += [index] * changed
        print(f"run {index}/{args.runs}: {len(results)} tests, {len(failed)} failed, {seconds:.0f} s"
              f" (stress {args.stress})" + ("; the checkout changed during this run" * changed), flush=True)
        for test in failed:
            print(f"  FAILED {test}  (log: {folder / f'run{index}.log'})", flush=True)
    print(f"\n{len(seen)} tests x {args.runs} runs under stress {args.stress}: "
          f"{sum(failures.values())} failures in {len(failures)} tests")
    for test, count in failures.most_common():
        print(f"  {count}/{args.runs}  {test}")
    if changed_runs:
        print(f"the checkout changed (an edit or a commit) during run(s) {', '.join(map(str, changed_runs))}: a failure "
              "there may come from the change, not from chance; leave the checkout alone while it runs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
