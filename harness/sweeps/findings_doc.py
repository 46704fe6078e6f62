"""FINDINGS.md from the claim reports of finished claim sweeps: nothing in it is typed by hand. Per claim:
the command, the claim report's tables (with their 95% intervals), its figure and its verdict line."""
from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from harness.reports.evidence.sweep_spec import SweepSpec
from harness.sweeps.findings_carry import CLAIM_HEADING, CarriedClaim, section_lines
from harness.stats.words import INCONCLUSIVE, VERDICT_PREFIX, VERDICTS

FINDINGS_NAME = "FINDINGS.md"
VERDICT_LINE = re.compile(rf"^\*\*{re.escape(VERDICT_PREFIX)}(?P<word>{'|'.join(map(re.escape, VERDICTS))}) — "
                          r"(?P<reason>.*)\*\*$")
FIGURE = re.compile(r"^!\[(?P<caption>.*)\]\((?P<file>[^()\s]+\.png)\)$")  # captions may hold [0, 1]


@dataclass
class ClaimResult:
    spec: SweepSpec
    sweep_dir: Path
    seconds: float
    exit_code: int


@dataclass
class ClaimPage:
    verdict: str
    reason: str
    body: List[str]
    statuses: Dict[str, int]


def claim_kind(spec: SweepSpec) -> Optional[str]:
    return next((k for k in spec.reports if k.startswith("claim_")), None)


def read_claim_page(result: ClaimResult, out: Path) -> ClaimPage:
    """The claim report's summary.md, its figures copied under out/findings/<sweep>/ and relinked."""
    kind = claim_kind(result.spec)
    summary = result.sweep_dir / "reports" / str(kind) / "summary.md"
    if kind is None or not summary.is_file():
        why = "the sweep names no claim_* report" if kind is None else f"no report at {summary}"
        return ClaimPage("inconclusive", f"no claim report was generated ({why})", [], {})
    figures = out / "findings" / result.spec.name
    if figures.exists():
        shutil.rmtree(figures)
    figures.mkdir(parents=True)
    verdict, reason, body, statuses = INCONCLUSIVE, "the report states no verdict", [], {}
    lines = summary.read_text(encoding="utf-8").splitlines()
    runs_at = next((i for i, line in enumerate(lines) if line == "## Runs used"), len(lines))
    for line in lines[2:runs_at]:  # title and meta line dropped
        match = VERDICT_LINE.match(line)
        if match:
            verdict, reason = match["word"], match["reason"]
            continue
        figure = FIGURE.match(line)
        if figure:
            source = summary.parent / figure["file"]
            if source.is_file():
                shutil.copy2(source, figures / source.name)
            line = f"![{figure['caption']}](findings/{result.spec.name}/{figure['file']})"
        elif line.startswith("## "):
            line = "#### " + line[3:]
        body.append(line)
    for row in lines[runs_at + 4:]:  # heading, blank, table header, separator
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) >= 3:
            statuses[cells[-1]] = statuses.get(cells[-1], 0) + 1
    while body and not body[-1].strip():
        body.pop()
    return ClaimPage(verdict, reason, body, statuses)


def code_commit() -> str:
    """`git describe --dirty` of the harness's checkout: read before the runs, it names the code they use."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], capture_output=True,
                             text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def rules_commit(pattern: str = "sweeps/claim*.yaml") -> str:
    """The last commit that changed the claim designs (default: every sweeps/claim*.yaml; or one claim's file):
    the pre-registration. Read before the runs, so that nothing committed meanwhile can move it."""
    try:
        root = Path(__file__).resolve().parents[2]
        files = ["--", pattern]
        out = subprocess.run(["git", "log", "-1", "--format=%h", *files], capture_output=True, text=True,
                             timeout=10, cwd=root)
        dirty = subprocess.run(["git", "status", "--porcelain", *files], capture_output=True, text=True,
                               timeout=10, cwd=root)
        commit = out.stdout.strip() or "unknown"
        return commit + (" + uncommitted changes to the claim files" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def write_findings(results: Sequence[ClaimResult], out: Path, argv: Sequence[str], quick: bool,
                   seconds: float, runs_commit: Optional[str] = None,
                   rules: Optional[Dict[str, str]] = None, runs_by_claim: Optional[Dict[str, str]] = None,
                   carried: Sequence[CarriedClaim] = (), carried_from: str = "") -> Path:
    """FINDINGS.md from the claim pages. runs_commit: the code the runs used, and rules: {"": every claim
    file's last commit, sweep name: its own file's}, both read before the runs started (the output written
    here may itself sit in the checkout and would mark it dirty; commits made during the study must not
    move them); default: read now. runs_by_claim: each claim's own code version, where they differ.
    carried: claims of an earlier page (`carried_from`) this study did not rerun (findings_carry.py)."""
    rules = dict(rules or {})
    rules.setdefault("", rules_commit())
    runs_commit = runs_commit or code_commit()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pages = [read_claim_page(r, out) for r in results]
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# Findings at toy scale", ""]
    if quick:
        lines += ["> **Quick mode** (`--quick`): tiny runs and two seeds check the pipeline; the verdicts below "
                  "say nothing about the claims.", ""]
    lines += [f"Generated by `{' '.join(argv)}` on {now}, runs at commit `{runs_commit}`, rules (the designs in "
              f"`sweeps/claim*.yaml`) fixed at commit `{rules['']}`, {os.cpu_count()} CPU cores, "
              f"{_minutes(seconds)} in all. Every number, interval, figure and verdict below comes from the claim "
              "reports the sweeps generated (`harness/reports/rendering/kinds/claim_*.py`), and each verdict from "
              "the tests the claim's sweep file declares (hypothesis, measure, SESOI, α, power, seed budget). Seeds "
              "run in rounds until every declared test is decided or the budget is spent (α spent over the looks); "
              "every run of every sweep is counted.", ""]
    if carried:
        lines += [f"This study reran {len(results)} claim(s); the other {len(carried)} "
                  f"({', '.join(f'`{c.name}`' for c in carried)}) are carried from `{carried_from}`, as that "
                  "study decided them with its own pre-registered designs and runs (their sections are copied as "
                  "they stand; the time above is this study's only).", ""]
    reused = sum(len(list(r.sweep_dir.glob("*/skipped.json"))) for r in results)
    if reused:
        lines += [f"{reused} job(s) were not rerun: an identical configuration had already FINISHED in this "
                  "output folder (skip-finished), and the reports use that run. Their time is not in the "
                  "totals above.", ""]
    study = " study |" if carried else ""
    lines += ["| claim | verdict | runs | time | sweep |" + study, "|---|---|---|---|---|" + ("---|" if carried else "")]
    rows = []
    for result, page in zip(results, pages):
        runs = ", ".join(f"{n} {s}" for s, n in sorted(page.statuses.items())) or "—"
        rows.append((result.spec.name, f"| {result.spec.claim} | **{page.verdict}** | {runs} | "
                     f"{_minutes(result.seconds)} | `{result.spec.name}` |" + (" this one |" if carried else "")))
    for c in carried:
        rows.append((c.name, f"| {c.claim} | **{c.verdict}** | {c.runs} | {c.time} | `{c.name}` | carried "
                     f"({c.generated}) |"))
    lines += [row for _, row in sorted(rows)] + [""]
    sections = [(r.spec.name, r, p) for r, p in zip(results, pages)] + [(c.name, c, None) for c in carried]
    for _, result, page in sorted(sections, key=lambda item: item[0]):
        if page is None:
            lines += section_lines(result, carried_from)
            continue
        spec = result.spec
        lines += [f"## {spec.claim} · `{spec.name}`", "",
                  f"**{VERDICT_PREFIX}{page.verdict} — {page.reason}**", "",
                  f"_Hypothesis:_ {spec.hypothesis.strip()}", "", f"_Source:_ {spec.source}", "",
                  f"Rules: `sweeps/{spec.name}.yaml` as last committed before the runs, at "
                  f"`{rules.get(spec.name) or rules_commit(f'sweeps/{spec.name}.yaml')}`; runs at "
                  f"`{(runs_by_claim or {}).get(spec.name, runs_commit)}`."
                  + (" Its pilot, and the power the pilot gave each test at its SESOI before the main runs, are in "
                     "the page's Pilot section." if spec.design.pilot else
                     " How it was sized before its main runs is in the page's Sizing section."
                     if spec.design.sizing else ""), "",
                  "Command (this claim alone): `python -m harness sweep " + spec.name + " launcher=local_parallel`"
                  f"; sweep file `sweeps/{spec.name}.yaml`; overrides {', '.join(spec.overrides) or 'none'}; "
                  f"reports in `{result.sweep_dir}/reports/`.", ""]
        if result.exit_code:
            lines += [f"_The sweep exited with code {result.exit_code}: some runs failed; they are counted in the "
                      "report's tables as not finished._", ""]
        lines += page.body + [""]
    path = out / FINDINGS_NAME
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path


def read_verdicts(path: Path) -> Dict[str, str]:
    """{claim sweep name: verdict word} from a FINDINGS.md this module wrote."""
    found: Dict[str, str] = {}
    name = None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        heading = CLAIM_HEADING.match(line)
        if heading:
            name = heading["name"]
            continue
        match = VERDICT_LINE.match(line)
        if match and name and name not in found:
            found[name] = match["word"]
    return found
