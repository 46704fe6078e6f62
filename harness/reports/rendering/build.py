"""Building reports: collect the sweep once, build each kind into `<out>/<kind>/` (index.html + summary.md
+ PNGs), write `<out>/index.html` linking them, and log the folder to the sweep's parent run."""
from __future__ import annotations

import html
import logging
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from harness.reports.results.collect import collect
from harness.reports.results.data import SweepData
from harness.reports.results.local import collect_local
from harness.reports.results.locate import Target, TargetError, from_sweep_dir
from harness.reports.results.missing import missing_jobs, missing_note
from harness.reports.results.odd_params import set_aside_odd_params
from harness.launchers.folder_claims import FolderTaken
from harness.reports.rendering.out_folder import ReportsNotWritten, check_report_owner, disk_refusal
from harness.reports.rendering.parent_run import log_to_parent
from harness.reports.rendering.page import HTML_NAME, MD_NAME, Page
from harness.reports.rendering.render import ARTIFACTS, render_page
from harness.reports.rendering.registry import default_kinds, get_kind, list_kinds
from harness.reports.rendering.verdict_tags import log_verdicts
from harness.reports.rendering.verdicts import Verdict, gather, index_html, index_markdown
from harness.infra.atomic_file import write_text_atomically
from harness.infra.secrets import scrub

log = logging.getLogger("harness")


@dataclass
class BuildResult:
    out_dir: Path
    pages: Dict[str, Path] = field(default_factory=dict)  # kind -> its index.html
    skipped: Dict[str, str] = field(default_factory=dict)  # kind -> what data it lacks
    failed: Dict[str, str] = field(default_factory=dict)  # kind -> error
    logged_to: Optional[str] = None  # parent run id the reports were logged to
    verdicts: List[Verdict] = field(default_factory=list)  # the decisions of every page in the folder
    left_out: List[str] = field(default_factory=list)  # runs no report could read (SweepData.left_out)

    @property
    def paths(self) -> List[Path]:
        return [p for page in self.pages.values() for p in (page, page.with_name(MD_NAME))]


def default_out_dir(data: SweepData) -> Path:
    if data.sweep_dir is not None:
        return data.sweep_dir / "reports"
    return Path("reports") / "generated" / (data.sweep_id or "sweep").replace("/", "_")


def build_kind(name: str, data: SweepData, out_dir: Path, explicit: bool = False) -> Optional[Path]:
    """Build one kind into out_dir/name; None if its data is missing and it was not asked for by name
    (asked for by name, the page is written anyway and says what is missing)."""
    report = get_kind(name)
    reason = report.needs(data)
    if reason and not explicit:
        return None
    page = Page(report.title, out_dir / name, data.sweep_id, data.source)
    for note in data.notes:  # what the collector could not read concerns every page
        page.missing(note)
    if reason:
        page.missing(f"This sweep cannot show a {name} report: it {reason}.")
        page.uses([])
    else:
        report.build(data, page)
    return page.write(data.runs)[0]


def build_from_data(data: SweepData, kinds: Optional[Sequence[str]] = None, out_dir: Optional[Path] = None,
                    log_parent: bool = True) -> BuildResult:
    """Build `kinds` (default: every kind whose data is present) from collected data."""
    out = Path(out_dir) if out_dir else default_out_dir(data)
    check_report_owner(out, data.sweep_id)
    result = BuildResult(out, left_out=list(data.left_out))
    for name in default_kinds() if kinds is None else kinds:
        try:
            path = build_kind(name, data, out, explicit=kinds is not None)
        except Exception as err:  # boundary of each kind's code: one broken report must not cost the others
            refusal = disk_refusal(err, out)
            if refusal:  # not this kind's fault, and the next one would meet the same disk
                _drop_if_empty(out / name)
                raise refusal from None
            result.failed[name] = f"{type(err).__name__}: {err}"
            log.warning("report %s failed: %s\n%s", name, err, traceback.format_exc())
            continue
        if path is None:
            result.skipped[name] = get_kind(name).needs(data) or ""
        else:
            result.pages[name] = path
    # The index lists every report in the folder, not only this build's: a partial rebuild (`--kind`) keeps
    # the others linked, locally and on the parent run.
    present = [k for k in list_kinds() if (out / k / HTML_NAME).is_file()]
    try:  # a kind that failed now: its page there is an earlier build's, its verdicts not this data's
        result.verdicts = gather(out, [k for k in present if k not in result.failed])
        _write_index(data, result, out, present)
    except OSError as err:
        raise disk_refusal(err, out) or err from None
    parent_id = data.parent.run_id if data.parent else None
    if log_parent and parent_id and data.tracking_uri and log_to_parent(
            data.tracking_uri, parent_id, out, list(result.pages),
            lambda folder, kinds: _write_index(data, result, folder, kinds)):
        result.logged_to = parent_id
        log_verdicts(data.tracking_uri, parent_id, result.verdicts)
    return result


def collect_target(target: Target, history: str = "auto") -> SweepData:
    """The target's sweep from MLflow (its job folders when it was not tracked or MLflow holds none of its runs),
    with a note naming jobs MLflow lacks."""
    if target.tracking_uri is None:  # tracking=none: the job folders are all there is
        if target.sweep_dir is None:
            raise TargetError("no tracking store is known for this target; pass --tracking-uri")

        data = collect_local(target.sweep_dir, target.sweep_id or "")
        data.notes.append("the sweep was not tracked in MLflow (tracking=none): read from its job folders")
        return data
    data = collect(target, history=history)
    set_aside_odd_params(data)  # a threshold that is not a number: the run is named and left out, not a TypeError
    if not data.runs and target.sweep_dir is not None:
        return _local_or_empty(data, target)
    missing = missing_jobs(target.sweep_dir, data.runs, target.twin_run_ids)
    if missing:
        data.notes.append(missing_note(missing, scrub(str(target.tracking_uri))))
    return data


def build_reports(target: Target, kinds: Optional[Sequence[str]] = None, history: str = "auto") -> BuildResult:
    """Collect the target's sweep from MLflow and build its reports (see `build_from_data`)."""
    return build_from_data(collect_target(target, history), kinds, target.out_dir)


def _local_or_empty(data: SweepData, target: Target) -> SweepData:
    local = collect_local(target.sweep_dir, data.sweep_id)
    if local.runs:
        local.notes.append(f"no MLflow runs tagged harness.sweep_id={data.sweep_id} in {data.tracking_uri}; "
                           "read the job folders instead")
        local.parent = data.parent
        local.tracking_uri = data.tracking_uri
        return local
    return data


def build_sweep_reports(sweep_dir, kinds: Optional[Sequence[str]] = None,
                        tracking_uri: Optional[str] = None) -> List[Path]:
    """Reports of a finished sweep (the sweep-end callback): `kinds` (as a named sweep lists them), default
    every kind whose data is present, written to `<sweep_dir>/reports/<kind>/` and logged to the parent run
    if there is one. Returns the HTML and Markdown files written. Never raises: problems are logged and
    the reports that can be built are. `tracking_uri`: the store's full URI, when the caller knows it (the
    sweep folder holds it masked)."""
    sweep_dir = Path(sweep_dir)
    try:
        target = from_sweep_dir(sweep_dir, tracking_uri)
        try:
            result = build_reports(target, kinds)
        except (ReportsNotWritten, FolderTaken):
            raise
        except Exception as err:  # boundary of the store (MLflow, HTTP, SQL: any failure): read the job folders

            log.warning("reports: MLflow not readable for %s (%s); using the job folders", sweep_dir, err)
            data = collect_local(sweep_dir, target.sweep_id or "")
            data.notes.append(f"MLflow store {target.tracking_uri} not readable ({str(err).splitlines()[0][:160]})")
            result = build_from_data(data, kinds, target.out_dir, log_parent=False)
        for name, error in result.failed.items():
            log.warning("report %s of %s failed: %s", name, sweep_dir, error)
        return result.paths
    except (ReportsNotWritten, FolderTaken) as err:
        log.warning("reports for %s not built: %s", sweep_dir, err)
        return []
    except Exception as err:  # the sweep-end callback: a report problem must never fail a finished sweep
        log.warning("reports for %s not built: %s\n%s", sweep_dir, err, traceback.format_exc())
        return []


def _drop_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty (a page built before), or not there


def _write_index(data: SweepData, result: BuildResult, folder: Path, kinds: Sequence[str]) -> None:
    """`folder`/index.html and README.md linking the reports `kinds` (each at `<kind>/index.html`), then what
    this build skipped or could not build."""
    known = list_kinds()
    kinds = sorted(kinds, key=lambda k: (known.index(k) if k in known else len(known), k))
    lines = [f"# Reports of sweep {data.sweep_id}", "", f"{len(data.runs)} runs; data: {data.source}", ""]
    items = []
    for name in kinds:
        title = get_kind(name).title if name in known else name
        rel, summary = f"{name}/{HTML_NAME}", f"{name}/{MD_NAME}"
        items.append(f'<li><a href="{html.escape(rel)}">{html.escape(title)}</a> '
                     f'(<a href="{html.escape(summary)}">summary</a>)</li>')
        lines.append(f"- [{title}]({rel}) ([summary]({summary}))")
    for name, reason in result.skipped.items():
        if name not in kinds:
            items.append(f"<li>{html.escape(name)}: not built — this sweep {html.escape(reason)}</li>")
            lines.append(f"- {name}: not built — this sweep {reason}")
    for name, error in result.failed.items():
        items.append(f"<li>{html.escape(name)}: FAILED — {html.escape(error)}</li>")
        lines.append(f"- {name}: FAILED — {error}")
    lines[4:4] = index_markdown(result.verdicts)
    body = index_html(result.verdicts) + "<h2>Reports</h2><ul>" + "".join(items) + "</ul>"
    meta = f"{len(data.runs)} runs · data: {data.source}"
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomically(folder / HTML_NAME, render_page(f"Reports of sweep {data.sweep_id}", meta, body,
                                                          where=f"{ARTIFACTS}/"))
    write_text_atomically(folder / "README.md", "\n".join(lines) + "\n")
