"""python -m harness report <sweep-id | sweep folder | parent-run-id> [--kind K ...] [--experiment NAME]
[--tracking-uri URI] [--out DIR]: build a sweep's reports from what MLflow holds; `report A B`: compare two sweeps."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from harness.config.errors import EXIT_BAD_INPUT
from harness.config.names import did_you_mean
from harness.reports.rendering.registry import get_kind, list_kinds


def _parser(kinds: List[str]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m harness report",
        description="Build HTML + Markdown reports of a sweep from its MLflow runs. Reports go to\n"
                    "<sweep folder>/reports/<kind>/ (index: <sweep folder>/reports/index.html) and are logged to\n"
                    "the sweep's parent run, if any. A sweep builds its reports when it ends; run this to rebuild\n"
                    "them or to build one kind: the other reports already there are kept. Two targets (report A B):\n"
                    "one page comparing the sweeps (shared cells' final accuracy and differences, verdicts, settings),\n"
                    "written to --out or <output root>/reports/compare/<A>_vs_<B>/.",
        epilog="examples:\n  python -m harness report multirun/2026-11-29/10-00-00-000000\n"
               "  python -m harness report multirun/2026-11-29/10-00-00-000000 --kind sensitivity --out /tmp/sens\n"
               "  python -m harness report multirun/2026-11-29/10-00-00-000000 multirun/2026-11-30/09-00-00-000000\n"
               "  python -m harness report --list",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", nargs="?", help="a sweep folder (multirun/<date>/<time>), a sweep id "
                   "(<date>/<time>) or an MLflow (parent) run id; none: list the sweeps under the output root")
    p.add_argument("other", nargs="?", metavar="B", help="a second sweep (same forms): compare the two sweeps, "
                   "A = the first, B = this one; both are read from --tracking-uri when given")
    p.add_argument("--kind", action="append", default=None, metavar="KIND",
                   help=f"report kind(s) to build, repeated or comma-separated; default: every kind whose data "
                        f"the sweep holds (a kind asked for by name whose data is missing gets a page saying "
                        f"what is missing). Kinds: {', '.join(kinds)}, all")
    p.add_argument("--experiment", help="MLflow experiment name (default: the sweep's, else all experiments)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: the sweep's store, else "
                   "sqlite:///$HARNESS_OUTPUT_ROOT/mlruns.db)")
    p.add_argument("--out", type=Path, help="output folder (default: <sweep folder>/reports): a new one, or one "
                   "holding reports already (a folder with other files is refused)")
    p.add_argument("--history", choices=("auto", "sql", "rest", "client"), default="auto",
                   help="how to read metric histories (auto: one SQL query for sqlite stores, bulk requests for "
                        "servers; client: one request per run and metric)")
    p.add_argument("--list", action="store_true", help="list the report kinds and exit")
    return p


def _kinds(values: Optional[List[str]], known: List[str]) -> Optional[List[str]]:
    if not values:
        return None
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    if "all" in names:
        return list(known)
    for name in names:
        if name not in known:
            raise ValueError(f"--kind {name!r} is not a report kind; {did_you_mean(name, [*known, 'all'])}"
                             f"known: {', '.join(known)}, all")
    return list(dict.fromkeys(names))


def main(argv: Optional[List[str]] = None) -> int:
    known = list_kinds()
    args = _parser(known).parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.list:
        for name in known:
            print(f"{name:18s} {get_kind(name).title}")
        return 0
    try:
        kinds = _kinds(args.kind, known)  # first: a mistyped kind is said whatever else the command says
    except ValueError as err:
        print(f"harness report: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from harness.reports.rendering.rebuild import run  # (the store and the builders load only past --help and --list)

    return run(args, kinds)
