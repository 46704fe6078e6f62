"""The verdicts of a sweep's reports, where the user looks: each page records its decisions in `verdicts.json`
beside it (`Page.verdict`); the build gathers them into `<reports>/verdicts.json`, which the index page, the
sweep's last terminal lines and its MLflow parent run (harness/reports/rendering/verdict_tags.py) read.

A verdict: the report kind, its subject (an objective, a claim), the word (sensitive, undecided, reproduced,
…), whether it decides, the page's sentence, a short line for the terminal, and the numbers behind it."""
from __future__ import annotations

import html
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence

from harness.infra.atomic_file import write_text_atomically
from harness.reports.rendering.layout import verdict_box

log = logging.getLogger("harness")
FILE = "verdicts.json"


@dataclass(frozen=True)
class Verdict:
    report: str
    subject: str
    word: str
    decided: bool
    text: str
    short: str
    measures: Dict[str, float] = field(default_factory=dict)


def write_verdicts(folder: Path, verdicts: Sequence[Verdict]) -> None:
    """`<folder>/verdicts.json` (a page's, or the gathered ones of a reports folder); none: no file."""
    path = Path(folder) / FILE
    if not verdicts:
        path.unlink(missing_ok=True)  # a rebuilt page that no longer decides leaves no old verdict behind
        return
    write_text_atomically(path, json.dumps([asdict(v) for v in verdicts], indent=1, ensure_ascii=False))


def read_verdicts(folder: Path) -> List[Verdict]:
    """The verdicts recorded in `<folder>/verdicts.json`; [] when there are none or the file is unreadable."""
    path = Path(folder) / FILE
    if not path.is_file():
        return []
    try:
        return [Verdict(**entry) for entry in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError) as err:  # a hand-edited or foreign file: no verdicts, said once
        log.warning("verdicts in %s not readable: %s", path, err)
        return []


def gather(out: Path, kinds: Sequence[str]) -> List[Verdict]:
    """Every verdict of the pages `kinds` in the reports folder `out` (in that order), also written to
    `<out>/verdicts.json`."""
    found = [v for kind in kinds for v in read_verdicts(Path(out) / kind)]
    write_verdicts(out, found)
    return found


def terminal_lines(verdicts: Sequence[Verdict]) -> List[str]:
    """The sweep's last lines: '  <report> · <short line>' per verdict, undecided ones marked."""
    if not verdicts:
        return []
    return ["verdicts:"] + [f"  {v.report} · {v.short}" for v in verdicts]


def sweep_answer(sweep_dir: Path) -> List[str]:
    """The terminal lines of the verdicts the sweep's reports recorded (`<sweep>/reports/verdicts.json`)."""
    return terminal_lines(read_verdicts(Path(sweep_dir) / "reports"))


def index_html(verdicts: Sequence[Verdict]) -> str:
    """The index page's verdict section: each verdict in its page's box (green decided, grey dashed undecided),
    linking its page."""
    if not verdicts:
        return ""
    items = "".join(verdict_box(f'<a href="{html.escape(v.report)}/index.html">{html.escape(v.report)}</a> · '
                                f'{html.escape(v.text)}', "verdict" if v.decided else "verdict undecided")
                    for v in verdicts)
    return f"<h2>Verdicts</h2>{items}\n"


def index_markdown(verdicts: Sequence[Verdict]) -> List[str]:
    if not verdicts:
        return []
    return ["## Verdicts", ""] + [f"- {'' if v.decided else '(undecided) '}[{v.report}]({v.report}/index.html): "
                                   f"{v.text}" for v in verdicts] + [""]
