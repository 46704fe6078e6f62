"""`python -m harness findings [--quick] [--only a,b] [--out DIR] [overrides] [--force]`: run every claim
sweep (a named sweep with a `claim:`), build its reports, and write FINDINGS.md from the claim reports.
`python -m harness findings --render FOLDER... [--out DIR]` writes FINDINGS.md from claim sweeps that already
ran, running nothing: e.g. after `python -m harness report FOLDER` rebuilt their pages with newer report code
(each claim's time, status and code version are read from its runs in MLflow). `--carry EARLIER/FINDINGS.md`
(with either form) keeps the claims this study did not run as the earlier page has them (findings_carry.py):
follow-up designs of some claims, reported beside the others' own study.

The full set runs with `launcher=local_parallel` unless the overrides name another launcher. A claim whose
design says `seeds: auto` runs its seeds in rounds until its declared tests are decided or its budget is
spent (`adaptive.py`); every job is rerun (`--force` is implied) so no result of older code is reused.
`--quick` checks the pipeline, not the claims: every run shrinks to `debug=quick` and each grid runs two
seeds; its FINDINGS.md goes to `<output_root>/findings-quick/` unless `--out` says otherwise."""
from __future__ import annotations

import argparse
import copy
import dataclasses
import sys
import time
from pathlib import Path
from typing import List

from harness.config.errors import ConfigError
from harness.reports.evidence.sweep_spec import SweepSpec, available_sweeps, load_sweep
from harness.sweeps.findings_carry import carry, read_page
from harness.sweeps.findings_doc import ClaimResult, code_commit, rules_commit, write_findings

QUICK_OVERRIDES = ["debug=quick"]
QUICK_SEEDS = 2
QUICK_DROPS = ("trainer.steps=",)  # design overrides --quick leaves out: the pipeline check stays tiny


def claim_sweeps() -> List[SweepSpec]:
    """Every named sweep that states a claim, in name order (claim1_..., claim2_...)."""
    specs = []
    for name in available_sweeps():
        try:
            spec = load_sweep(name)
        except ValueError:
            continue
        if spec.claim:
            specs.append(spec)
    return specs


def quick_variant(spec: SweepSpec) -> SweepSpec:
    """The same sweep with QUICK_SEEDS seeds per grid (the statistics still see ≥ 2 seeds), run once
    (no adaptive rounds)."""
    quick = copy.deepcopy(spec)
    for grid in quick.grids:
        grid["seed"] = grid["seed"][:QUICK_SEEDS] if isinstance(grid.get("seed"), list) else list(range(QUICK_SEEDS))
    quick.design = dataclasses.replace(quick.design, seeds=None, pilot=None)
    # a design's own run length (e.g. claim 2's trainer.steps=200) would outrank debug=quick's
    quick.overrides = [o for o in quick.overrides if not o.startswith(QUICK_DROPS)]
    return quick


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness findings", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny runs and two seeds: checks the pipeline only")
    parser.add_argument("--only", default="", help="comma-separated claim sweeps to run (default: all)")
    parser.add_argument("--out", default=None, help="folder for FINDINGS.md and its figures "
                        "(default: ./reports, or <output_root>/findings-quick with --quick)")
    parser.add_argument("--force", action="store_true", help="rerun jobs that already FINISHED (always, "
                        "without --quick)")
    parser.add_argument("--render", nargs="+", metavar="SWEEP_FOLDER", default=None,
                        help="write FINDINGS.md from these claim sweep folders (<root>/multirun/<claim>/<stamp>), "
                             "running nothing")
    parser.add_argument("--carry", default=None, metavar="FINDINGS_MD",
                        help="an earlier FINDINGS.md: its claims that this study does not run are carried into the "
                             "new page as that study decided them (follow-up designs of some claims)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides applied to every run")
    return parser


def main(argv: List[str]) -> int:
    args = _parser().parse_args(argv)
    if args.carry:  # checked before anything runs
        try:
            read_page(Path(args.carry))
        except (OSError, ValueError) as err:
            print(f"harness: error: findings --carry: {err}", file=sys.stderr)
            return 2
    if not _out_allowed(args.out or ("reports" if args.render else None)):
        return 2
    if args.render:
        return _render(args.render, Path(args.out or "reports"), argv, args.carry)
    from harness.sweeps import adaptive, grid_runs  # (the runners load only past --help)

    specs = claim_sweeps()
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - {s.name for s in specs})
        if unknown:
            print(f"harness: error: --only {unknown[0]!r} is not a claim sweep; allowed: "
                  f"{', '.join(s.name for s in specs)}", file=sys.stderr)
            return 2
        specs = [s for s in specs if s.name in wanted]
    if not specs:
        print("harness: error: no claim sweeps found (sweeps/*.yaml with a 'claim:' key)", file=sys.stderr)
        return 2
    user = list(args.overrides)
    if not any(o.split("=", 1)[0].lstrip("+~") == "launcher" for o in user):
        user.insert(0, "launcher=local_parallel")
    if args.quick:
        specs = [quick_variant(s) for s in specs]
        user = [*QUICK_OVERRIDES, *user]
    flags = ["--force"] if args.force or not args.quick else []
    prepared = []
    try:  # every job of every claim is validated before the first one starts
        for spec in specs:
            prepared.append((spec, *grid_runs.prepare_jobs(spec, user, flags)))
    except (ConfigError, ValueError) as err:
        print(f"harness: error: findings: {err}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else _default_out(prepared[0][1], args.quick)
    if not _out_allowed(out):  # before anything runs
        return 2
    started, commit = time.time(), code_commit()
    rules = {"": rules_commit(), **{spec.name: rules_commit(f"sweeps/{spec.name}.yaml") for spec, *_ in prepared}}
    results: List[ClaimResult] = []
    worst = 0
    for index, (spec, sweep_dir, grids, jobs) in enumerate(prepared, 1):
        print(f"findings: claim {index}/{len(prepared)}: {spec.name}", flush=True)
        began = time.time()
        if spec.design.adaptive:
            code = adaptive.run_adaptive(spec, sweep_dir, user, flags)
        else:
            code = grid_runs.run(spec, sweep_dir, grids, flags, jobs)
        worst = max(worst, code)
        results.append(ClaimResult(spec, sweep_dir, time.time() - began, code))
    path = write_findings(results, out, argv=["python", "-m", "harness", "findings", *argv], quick=args.quick,
                          seconds=time.time() - started, runs_commit=commit, rules=rules,
                          **_carried(args.carry, results, out))
    print(f"findings: {path}")
    return worst


def _out_allowed(out) -> bool:
    """--out is refused as `report --out` refuses a folder: never over a user's own FINDINGS.md (one line)."""
    from harness.reports.rendering.out_folder import FolderTaken, check_findings_out  # (past --help only)

    try:
        if out is not None:
            check_findings_out(Path(out))
    except FolderTaken as err:
        print(f"harness: error: findings: {err}", file=sys.stderr)
        return False
    return True


def _carried(page, results: List[ClaimResult], out: Path) -> dict:
    """write_findings' keywords for the claims `page` holds that `results` did not rerun (none without page)."""
    if not page:
        return {}
    return {"carried": carry(Path(page), [r.spec.name for r in results], out), "carried_from": str(page)}


def _render(folders: List[str], out: Path, argv: List[str], carry_from=None) -> int:
    # (the store's readers load only past --help, as the runners do)
    from harness.launchers.skip_finished import VERSION_TAG
    from harness.reports.results.collect import collect
    from harness.reports.results.locate import from_sweep_dir

    claims = {s.name: s for s in claim_sweeps()}
    results, runs_at = [], {}
    for folder in folders:
        folder = Path(folder).expanduser().resolve()
        spec = claims.get(folder.parent.name)
        if spec is None or not folder.is_dir():
            print(f"harness: error: findings --render: {folder} is not the folder of a claim sweep "
                  f"(<root>/multirun/<claim>/<stamp>; claims: {', '.join(claims)})", file=sys.stderr)
            return 2
        try:
            data = _collected(folder, collect, from_sweep_dir)
        except ValueError as err:  # its store gone, corrupt or unreachable: one line, nothing written
            print(f"harness: error: findings --render: cannot read the runs of {folder}: {err}", file=sys.stderr)
            return 2
        seconds = _busy_seconds([(r.start_time, r.end_time) for r in data.runs if r.start_time and r.end_time])
        versions = sorted({r.tags[VERSION_TAG][:7] for r in data.runs if r.tags.get(VERSION_TAG)})
        runs_at[spec.name] = ", ".join(versions) or "unknown"
        results.append(ClaimResult(spec, folder, seconds, int(any(r.status != "FINISHED" for r in data.runs))))
    results.sort(key=lambda r: r.spec.name)
    path = write_findings(results, out, argv=["python", "-m", "harness", "findings", *argv], quick=False,
                          seconds=sum(r.seconds for r in results),
                          runs_commit=", ".join(sorted(set(runs_at.values()))), runs_by_claim=runs_at,
                          **_carried(carry_from, results, out))
    print(f"findings: {path}")
    return 0


def _collected(folder: Path, collect, from_sweep_dir):
    """The claim sweep's runs from its store; ValueError (one line) when the store is not there or not usable."""
    from harness.infra.secrets import scrub
    from harness.tracking.outage import describe, store_errors
    from harness.tracking.store_check import check_store, corruption_in

    target = from_sweep_dir(folder)
    if target.tracking_uri:
        check_store(target.tracking_uri)
    try:
        return collect(target)
    except store_errors() as err:
        raise corruption_in(err, target.tracking_uri) or ValueError(
            f"tracking store {scrub(str(target.tracking_uri))} failed: {describe(err)}") from None


def _busy_seconds(spans) -> float:
    """Seconds during which some run of the claim was training: the union of its runs' [start, end] (ms), so a
    study continued later does not count the time between."""
    total, end = 0, None
    for start, stop in sorted(spans):
        if end is None or start > end:
            total, end = total + (stop - start), stop
        elif stop > end:
            total, end = total + (stop - end), stop
    return total / 1000.0


def _default_out(sweep_dir: Path, quick: bool) -> Path:
    if quick:
        return sweep_dir.parents[2] / "findings-quick"  # <output_root>/multirun/<name>/<stamp>
    return Path("reports")

