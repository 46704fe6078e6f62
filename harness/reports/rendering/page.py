"""A report page written twice from the same blocks: HTML and a Markdown summary. Both end with the runs they used.

The HTML page is self-contained: its figures are embedded (PNG as data URIs, so the page renders where relative
files do not resolve, as in MLflow's artifact preview: a sandboxed iframe of the fetched file); the PNG files and
their PDF twins stay beside it (for a paper) and are linked; no external resources. It leads with its answer
(`layout.py`), and a report's page links back to the sweep's index.

Report kinds only add blocks (`heading`, `text`, `table`, `figure`, ...) and declare `uses(runs)` and
`missing(...)`; `write()` renders `index.html` and `summary.md` into the page's folder.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import struct
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from harness.infra.atomic_file import write_atomically, write_text_atomically
from harness.reports.results.data import Run, fmt
from harness.reports.rendering.layout import answer_html, arrange, method_html, verdict_box
from harness.reports.rendering.render import ARTIFACTS, render_page
from harness.reports.rendering.verdicts import Verdict, write_verdicts

HTML_NAME, MD_NAME = "index.html", "summary.md"
UP = f"../{HTML_NAME}"  # a report's page sits in <reports>/<kind>/, beside the sweep's index one folder up
VECTOR = "pdf"  # every figure's vector twin, beside its PNG (for a paper: LaTeX includes PDF)
SCREEN_DPI = 100  # the PNG is shown at this density (its pixels at savefig.dpi make it sharp on HiDPI screens)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


class Page:
    def __init__(self, title: str, out_dir: Path, sweep_id: str = "", source: str = "", up: Optional[str] = UP):
        """`up`: the index this page links back to (None: a page of its own, such as the compare page)."""
        self.title, self.out_dir, self.sweep_id, self.source, self.up = title, Path(out_dir), sweep_id, source, up
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.blocks: List[tuple] = []
        self.notes: List[str] = []
        self.runs: Optional[List[Run]] = None
        self.figures: List[str] = []
        self.verdicts: List[Verdict] = []

    # -- content ------------------------------------------------------------------------------------
    def heading(self, text: str) -> None:
        self.blocks.append(("h", text))

    def text(self, text: str, cls: str = "") -> None:
        """A paragraph; cls: '' | 'method' (folded under "How this was decided") | 'action' (what to run
        next to decide: shown with the verdicts, first)."""
        self.blocks.append(("p", text, cls))

    def verdict(self, subject: str, word: str, text: str, decided: bool, short: str = "",
                measures: Optional[Dict[str, float]] = None) -> None:
        """A decision this page makes about `subject` (an objective, a claim): `text` shown in a box (green when
        decided, grey and dashed when not), and recorded in `verdicts.json` beside the page for the sweep's index,
        its last terminal lines and its MLflow parent run (`short`: the terminal's line, default `text`;
        `measures`: numbers behind it, logged to the parent run as metrics under their names)."""
        self.blocks.append(("p", text, "verdict" if decided else "verdict undecided"))
        self.verdicts.append(Verdict(self.out_dir.name, subject, word, decided, text, short or text,
                                     {k: float(v) for k, v in (measures or {}).items()}))

    def bullets(self, items: Sequence[str]) -> None:
        if items:
            self.blocks.append(("ul", list(items)))

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "",
              sortable: bool = True, row_classes: Optional[Sequence[str]] = None) -> None:
        """Cells: str, numbers (formatted by `fmt`, sorted numerically) or None (shown as —)."""
        self.blocks.append(("table", list(columns), [list(r) for r in rows], caption, sortable,
                            list(row_classes) if row_classes else None))

    def figure(self, fig, name: str, caption: str, tight: bool = False) -> str:
        """Save a matplotlib figure as `<name>.png` (at savefig.dpi, see plots.py) and `<name>.pdf` beside the
        page and show the PNG, linked with its PDF; returns the PNG's file name. tight=True crops to the drawn
        content (an extra layout pass: slow on large figures); the default keeps the figure's own layout,
        which `plots.grid` sets with fixed margins."""
        from harness.reports.rendering.plots import close  # matplotlib only for a figure (the registry imports page)

        filename, vector = f"{name}.png", f"{name}.{VECTOR}"
        box = "tight" if tight else None
        try:  # each file whole or not at all (a full disk leaves no empty PNG)
            write_atomically(self.out_dir / filename, lambda tmp: fig.savefig(
                tmp, format="png", bbox_inches=box, pil_kwargs={"compress_level": 3}))
            write_atomically(self.out_dir / vector, lambda tmp: fig.savefig(tmp, format=VECTOR, bbox_inches=box))
        finally:
            close(fig)
        self.figures.append(filename)
        self.blocks.append(("fig", filename, caption, vector, _screen_width(self.out_dir / filename)))
        return filename

    def missing(self, text: str) -> None:
        """Something the report could not show, said at the top of the page."""
        if text not in self.notes:
            self.notes.append(text)

    def uses(self, runs: Sequence[Run]) -> None:
        """The runs this report is built from (default: every run of the sweep)."""
        self.runs = list(runs)

    # -- output -------------------------------------------------------------------------------------
    def write(self, all_runs: Sequence[Run] = ()) -> List[Path]:
        runs = self.runs if self.runs is not None else list(all_runs)
        stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
        meta = f"sweep {self.sweep_id} · {len(runs)} runs · generated {stamp}"
        meta += f" · data: {self.source}" if self.source else ""
        answer, method, rest = arrange(self.blocks)
        html_body = (answer_html(answer, self._html) + self._html_notes() + method_html(method, bool(self.verdicts))
                     + "".join(self._html(b) for b in rest) + self._html_runs(runs))
        page = render_page(self.title, meta, html_body, up=self.up and (self.up, "all reports of this sweep"),
                           where=f"{ARTIFACTS}/{self.out_dir.name}/" if self.up else "")
        md = [f"# {self.title}", "", f"_{meta}_", ""]
        if self.notes:
            md += ["## Missing data", ""] + [f"- {n}" for n in self.notes] + [""]
        for block in self.blocks:
            md += self._md(block) + [""]
        md += ["## Runs used", ""] + self._md_table(["run", "run id", "status"],
                                                   [[r.label, r.run_id, r.status] for r in runs])
        write_text_atomically(self.out_dir / HTML_NAME, page)
        write_text_atomically(self.out_dir / MD_NAME, "\n".join(md) + "\n")
        write_verdicts(self.out_dir, self.verdicts)
        return [self.out_dir / HTML_NAME, self.out_dir / MD_NAME]

    def _html_notes(self) -> str:
        if not self.notes:
            return ""
        items = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return f'<section class="missing"><h2>Missing data</h2><ul>{items}</ul></section>\n'

    def _html(self, block: tuple) -> str:
        kind = block[0]
        if kind == "h":
            return f"<h2>{html.escape(block[1])}</h2>\n"
        if kind == "p":
            if block[2].startswith("verdict"):
                return verdict_box(html.escape(block[1]), block[2]) + "\n"
            cls = f' class="{block[2]}"' if block[2] else ""
            return f"<p{cls}>{html.escape(block[1])}</p>\n"
        if kind == "ul":
            return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in block[1]) + "</ul>\n"
        if kind == "fig":
            src, caption = html.escape(block[1], quote=True), html.escape(block[2])
            vector = html.escape(block[3], quote=True)
            width = f' width="{block[4]}"' if block[4] else ""
            return (f'<figure><a href="{src}"><img src="{_data_uri(self.out_dir / block[1])}" data-file="{src}" '
                    f'alt="{caption}"{width} loading="eager"></a>'
                    f'<figcaption>{caption} <span class="files">Files: <a href="{src}">PNG</a> · '
                    f'<a href="{vector}">{VECTOR.upper()} (vector)</a></span></figcaption></figure>\n')
        if kind == "table":
            return self._html_table(*block[1:])
        raise ValueError(f"unknown block kind {kind!r}")

    @staticmethod
    def _html_table(columns, rows, caption, sortable, row_classes) -> str:
        cls = ' class="sortable"' if sortable else ""
        out = [f'<div class="scroll"><table{cls}>']
        out += [f"<caption>{html.escape(caption)}</caption>"] if caption else []
        out.append("<thead><tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in columns) + "</tr></thead><tbody>")
        for i, row in enumerate(rows):
            rc = f' class="{html.escape(row_classes[i])}"' if row_classes and row_classes[i] else ""
            cells = []
            for value in row:
                if _is_number(value):
                    sort = repr(float(value)) if np.isfinite(float(value)) else ""
                    cells.append(f'<td class="num" data-sort="{sort}">{html.escape(fmt(value))}</td>')
                else:
                    cells.append(f"<td>{html.escape(fmt(value))}</td>")
            out.append(f"<tr{rc}>" + "".join(cells) + "</tr>")
        out.append("</tbody></table></div>\n")
        return "".join(out)

    @staticmethod
    def _html_runs(runs: Sequence[Run]) -> str:
        rows = "".join(f"<tr class=\"status-{html.escape(r.status)}\"><td>{html.escape(r.label)}</td>"
                       f"<td><code>{html.escape(r.run_id)}</code></td><td>{html.escape(r.status)}</td></tr>"
                       for r in runs)
        return (f"<h2>Runs used</h2><details{' open' if len(runs) <= 12 else ''}><summary>{len(runs)} runs "
                f"(MLflow run names and ids)</summary><table class=\"sortable\"><thead><tr><th>run</th>"
                f"<th>run id</th><th>status</th></tr></thead><tbody>{rows}</tbody></table></details>\n")

    def _md(self, block: tuple) -> List[str]:
        kind = block[0]
        if kind == "h":
            return [f"## {block[1]}"]
        if kind == "p":
            wrap = {"verdict": "**", "method": "_"}.get(block[2].split(" ")[0], "")
            return [f"{wrap}{block[1]}{wrap}"]
        if kind == "ul":
            return [f"- {i}" for i in block[1]]
        if kind == "fig":
            return [f"![{block[2]}]({block[1]})"]
        if kind == "table":
            return ([f"_{block[3]}_", ""] if block[3] else []) + self._md_table(block[1], block[2])
        raise ValueError(f"unknown block kind {kind!r}")

    @staticmethod
    def _md_table(columns, rows) -> List[str]:
        def cell(v):
            return fmt(v).replace("|", "\\|").replace("\n", " ")
        lines = ["| " + " | ".join(cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
        return lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]


def _data_uri(png: Path) -> str:
    """The PNG as a data URI (the page shows it with no file beside it); its name when it cannot be read."""
    try:
        return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")
    except OSError:
        return html.escape(png.name, quote=True)


def _screen_width(png: Path) -> Optional[int]:
    """The PNG's width in CSS pixels at SCREEN_DPI (its header's width scaled from the saved density), so a
    200-dpi figure shows at the size a 100-dpi one did; None if the header is unreadable."""
    from matplotlib import rcParams

    try:
        with open(png, "rb") as handle:
            head = handle.read(24)
        width = struct.unpack(">I", head[16:20])[0]
    except (OSError, struct.error):
        return None
    dpi = rcParams["savefig.dpi"]
    dpi = rcParams["figure.dpi"] if dpi == "figure" else float(dpi)
    return max(1, round(width * SCREEN_DPI / dpi))
