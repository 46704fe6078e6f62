"""`python -m harness report A B`: one page comparing two sweeps — their shared cells' final accuracy side by side
with 95% intervals and the difference B − A with its interval, each sweep's verdicts, how their settings differ
and what one has that the other lacks (`evidence/compare_cells.py` computes; this module lays out the page)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from harness.reports.evidence import compare_cells
from harness.reports.rendering import plots
from harness.reports.evidence.compare_cells import Cell
from harness.reports.results.data import SweepData
from harness.reports.rendering.kinds.sensitivity import design_of, sweep_overrides
from harness.reports.rendering.page import HTML_NAME, Page
from harness.reports.results.summary import LAST_K
from harness.reports.rendering.verdicts import read_verdicts
from harness.reports.rendering.verdict_tags import TAG_PREFIX

TITLE = "Compare two sweeps"
OUT_FILES = (HTML_NAME, "summary.md", "verdicts.json")
METHOD = ("Final accuracy = mean of a finished run's last {k} evaluations. A cell = an objective at one value of each "
          "setting either sweep varies; its seeds are the replicates. Per sweep: the mean over seeds with a 95% "
          "Student-t interval inside [0, 1]. Difference B − A with its 95% interval: paired over the seeds both "
          "sweeps ran in the cell (same seed, same cell settings; the sweeps' own differences, listed below, apply "
          "to every pair) when there are at least 2 of them — over those seeds only, so it may differ from the "
          "difference of the means shown — else Welch's t over each sweep's seeds; the test "
          "column says which. p: two-sided t-test of B = A; 'B higher/lower': p below α {alpha:g} after Holm over "
          "the cells; 'within ±{sesoi:g}': the difference shown smaller than the SESOI (two one-sided tests at α); "
          "else undecided.")


def check_out(out: Path) -> None:
    """The compare page's folder: new, empty, or holding an earlier compare page (its files and figures only)."""
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a folder for the compare page")
    if out.is_dir():
        others = [p.name for p in out.iterdir() if p.name not in OUT_FILES and p.suffix not in (".png", ".pdf")]
        if others:
            raise ValueError(f"--out {out} holds other files ({', '.join(sorted(others)[:3])}); the compare page "
                             "goes only into a new folder or one holding a compare page: choose another")


def sweep_verdicts(data: SweepData) -> Tuple[Dict[Tuple[str, str], Tuple[str, str]], str]:
    """({(report, subject): (word, short line)}, where they were read): the sweep's `reports/verdicts.json`,
    else its MLflow parent run's verdict tags (verdict_tags.py), else none."""
    if data.sweep_dir is not None:
        found = read_verdicts(data.sweep_dir / "reports")
        if found:
            return {(v.report, v.subject): (v.word, v.short) for v in found}, f"{data.sweep_dir / 'reports'}"
    tags = data.parent.tags if data.parent is not None else {}
    out = {}
    for key, word in tags.items():
        if key.startswith(TAG_PREFIX + ".") and not key.endswith(".line"):
            report, _, subject = key[len(TAG_PREFIX) + 1:].partition(".")
            out[(report, subject)] = (word, tags.get(key + ".line", word))
    if out:
        return out, f"the tags of its MLflow parent run {data.parent.run_id}"
    return {}, ""


def build_compare(a: SweepData, b: SweepData, out: Path) -> Path:
    """Write the compare page of sweeps A and B into `out`; returns its index.html."""
    sesoi, alpha, _, _ = design_of(a)
    page = Page(TITLE, out, f"A {a.sweep_id} vs B {b.sweep_id}", f"A: {a.source}; B: {b.source}", up=None)
    for which, data in (("A", a), ("B", b)):
        for run in data.runs:  # the runs-used table names each run's sweep
            run.display = f"{which} · {run.label}"
    page.uses([*a.runs, *b.runs])
    for which, data in (("A", a), ("B", b)):
        for note in data.notes:
            page.missing(f"sweep {which}: {note}")
    cells, only_a, only_b = compare_cells.cells(a, b, sesoi, alpha)
    page.text(f"A = sweep {a.sweep_id} ({len(a.runs)} runs), B = sweep {b.sweep_id} ({len(b.runs)} runs).")
    page.text(METHOD.format(k=LAST_K, alpha=alpha, sesoi=sesoi), "method")
    _headline(page, cells, sesoi)
    _cells(page, cells, sesoi)
    _verdicts(page, a, b)
    page.heading("How the sweeps' settings differ")
    rows = compare_cells.config_differences(a, b)
    if rows:
        page.table(["setting", "A", "B"], rows, caption="Values recorded by each sweep's runs (MLflow params), where "
                   "they differ; paths and tracking settings left out.")
    else:
        page.text("The two sweeps' runs record the same settings with the same values (seeds included).")
    _overrides(page, a, b)
    _lacks(page, a, b, only_a, only_b)
    return page.write()[0]


def _overrides(page: Page, a: SweepData, b: SweepData) -> None:
    """The sweeps' command-line overrides (their folders' multirun.yaml), key by key, where they differ."""
    found = {which: sweep_overrides(data) for which, data in (("A", a), ("B", b))}
    if not any(found.values()):
        return
    table = {which: dict(o.split("=", 1) if "=" in o else (o, "") for o in (found[which] or []))
             for which in found}
    keys = list(dict.fromkeys([*table["A"], *table["B"]]))
    rows = [[key, table["A"].get(key, "—" if found["A"] is not None else "(no multirun.yaml)"),
             table["B"].get(key, "—" if found["B"] is not None else "(no multirun.yaml)")]
            for key in keys if table["A"].get(key) != table["B"].get(key)]
    if rows:
        page.table(["override", "A", "B"], rows, caption="The sweeps' command-line overrides (multirun.yaml in each "
                   "sweep folder) that differ; —: not given.")
    else:
        page.text("Both sweeps were run with the same command-line overrides.")


def _headline(page: Page, cells: Sequence[Cell], sesoi: float) -> None:
    page.heading("Shared cells")
    if not cells:
        page.text("The sweeps share no cell (no objective at the same values of the settings either varies): "
                  "nothing to compare side by side; see what each has below.")
        return
    readings = [c.reading(sesoi) for c in cells]
    counts = ", ".join(f"{readings.count(w)} {w}" for w in dict.fromkeys(readings))
    page.text(f"{len(cells)} shared cell{'s' if len(cells) != 1 else ''}: {counts}.")


def _cells(page: Page, cells: Sequence[Cell], sesoi: float) -> None:
    if not cells:
        return
    rows = []
    for c in cells:
        rows.append([c.label, c.a.n, c.a.mean, _ci(c.a.low, c.a.high), c.b.n, c.b.mean, _ci(c.b.low, c.b.high),
                     None if c.diff is None else f"{c.diff.value:+.3f}", _ci(c.low, c.high, signed=True), c.test,
                     c.p, c.reading(sesoi)])
        for which in ("A", "B"):
            line = compare_cells.left_out(c, which)
            if line:
                page.missing(line)
    page.table(["cell", "A seeds", "A final acc", "A 95% CI", "B seeds", "B final acc", "B 95% CI", "B − A",
                "B − A 95% CI", "test", "p (B ≠ A)", "reading"], rows)
    _figure(page, cells, sesoi)


def _ci(low, high, signed: bool = False):
    if low is None or high is None:
        return None
    return f"[{low:+.3f}, {high:+.3f}]" if signed else f"[{low:.3f}, {high:.3f}]"


def _figure(page: Page, cells: Sequence[Cell], sesoi: float) -> None:
    n = len(cells)
    fig, (ax, dax) = plots.grid(2, ncols=2, width=4.6, height=1.4 + 0.4 * n, left=2.8)
    ys = list(range(n - 1, -1, -1))
    for which, interval, shift, marker, shade in (("A", "a", 0.12, "o", "#1f77b4"), ("B", "b", -0.12, "s", "#d62728")):
        label = f"sweep {which}"
        for y, c in zip(ys, cells):
            ci = getattr(c, interval)
            if ci.mean is None:
                continue
            err = [[ci.mean - ci.low], [ci.high - ci.mean]] if ci.low is not None else None
            ax.errorbar([ci.mean], [y + shift], xerr=err, fmt=marker, color=shade, capsize=3, markersize=5, label=label)
            label = None
    dax.axvspan(-sesoi, sesoi, color="#cfe3f3", zorder=0, label=f"±SESOI ({sesoi:g})")
    dax.axvline(0, color="#000", linewidth=0.8)
    for y, c in zip(ys, cells):
        if c.diff is not None:
            dax.errorbar([c.diff.value], [y], xerr=[[c.diff.value - c.low], [c.high - c.diff.value]], fmt="D",
                         color="#333", capsize=4, markersize=5, zorder=3)
    for axis in (ax, dax):
        axis.set_yticks(ys)
        axis.set_ylim(-0.6, n - 0.4)
    ax.set_yticklabels([c.label for c in cells])
    dax.set_yticklabels([])
    plots.finish(ax, "Final accuracy per cell (95% CI)", "final eval accuracy (mean of last evaluations)", "")
    plots.finish(dax, "B − A (95% CI)", "difference in final eval accuracy", "")
    page.figure(fig, "compare_cells", "Left: each shared cell's mean final accuracy in sweep A (circles) and B "
                "(squares) with 95% t intervals. Right: the difference B − A with its 95% interval (paired over shared "
                f"seeds where there are ≥ 2, else Welch; see the table); shaded: ±SESOI ({sesoi:g}).")


def _verdicts(page: Page, a: SweepData, b: SweepData) -> None:
    page.heading("Each sweep's verdicts")
    (va, where_a), (vb, where_b) = sweep_verdicts(a), sweep_verdicts(b)
    for which, data, where in (("A", a, where_a), ("B", b, where_b)):
        if where:
            page.text(f"Sweep {which}'s verdicts: read from {where}.", "method")
        else:
            page.missing(f"sweep {which} ({data.sweep_id}) has no recorded verdicts (no reports/verdicts.json in its "
                         "folder on this machine, no verdict tags on a parent run): build its reports with "
                         f"python -m harness report {data.sweep_id}")
    keys = list(dict.fromkeys([*va, *vb]))
    if not keys:
        page.text("Neither sweep has recorded verdicts.")
        return
    rows = [[report, subject, *(va.get((report, subject)) or ("—", "no verdict")),
             *(vb.get((report, subject)) or ("—", "no verdict"))] for report, subject in keys]
    page.table(["report", "subject", "A", "A's line", "B", "B's line"], rows)


def _lacks(page: Page, a: SweepData, b: SweepData, only_a: Dict, only_b: Dict) -> None:
    page.heading("What one sweep has that the other lacks")
    items: List[str] = []
    for which, data, other, cells in (("A", a, b, only_a), ("B", b, a, only_b)):
        have = compare_cells.only_in(data, other)
        if have["objectives"]:
            items.append(f"Only in {which}: objective{'s' if len(have['objectives']) > 1 else ''} "
                         f"{', '.join(have['objectives'])}.")
        if cells:
            items.append(f"Cells only in {which} ({sum(cells.values())} runs): " + "; ".join(
                f"{compare_cells.cell_label(k)} ({n} run{'s' if n != 1 else ''})" for k, n in
                sorted(cells.items(), key=lambda kv: compare_cells.cell_label(kv[0]))) + ".")
        if have["settings"]:
            items.append(f"Settings only {which}'s runs record: {', '.join(have['settings'])}.")
    if items:
        page.bullets(items)
    else:
        page.text("Nothing: both sweeps have the same objectives, cells and recorded settings.")
