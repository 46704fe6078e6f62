"""A report's verdicts reach the places a user looks: the page (undecided in a box unlike a decision's),
the index's verdict section, the terminal's last lines, and the MLflow parent run's tags, metrics and
description (a real SQLite store)."""
from __future__ import annotations

import re

from mlflow.tracking import MlflowClient

from harness.reports.rendering.page import Page
from harness.reports.rendering.verdict_tags import log_verdicts
from harness.reports.rendering.verdicts import gather, index_html, read_verdicts, terminal_lines


def two_verdicts(folder):
    page = Page("Threshold sensitivity", folder / "sensitivity", "2026-12-01/10-00-00")
    page.verdict("dppo", "insensitive", "dppo: insensitive to δ — every pair within ±0.05.", True,
                 "dppo: insensitive to δ (8 seeds per value)", {"final_accuracy_delta_0.1": 0.61})
    page.verdict("drpo", "undecided", "drpo: undecided to δ — no pair shown to differ.", False,
                 "drpo: undecided to δ (8 seeds per value; for 80% power 23 would show insensitivity)",
                 {"seeds_for_insensitive": 23})
    page.write([])
    return page


def test_undecided_verdicts_look_unlike_decisions_on_the_page_and_the_index(tmp_path):
    page = two_verdicts(tmp_path)
    html = (page.out_dir / "index.html").read_text()
    assert '<p class="verdict"><span class="label">decided</span> dppo: insensitive to δ' in html
    assert '<p class="verdict undecided"><span class="label">not decided</span> drpo: undecided to δ' in html
    undecided_style = re.search(r"\.verdict\.undecided \{([^}]*)\}", html).group(1)
    decided_style = re.search(r"\n  \.verdict \{([^}]*)\}", html).group(1)
    assert "dashed" in undecided_style and "#4a9a4a" in decided_style and "#4a9a4a" not in undecided_style
    summary = (page.out_dir / "summary.md").read_text()
    assert "**drpo: undecided to δ — no pair shown to differ.**" in summary  # findings read verdicts from here

    verdicts = gather(tmp_path, ["overview", "sensitivity"])
    assert [v.subject for v in verdicts] == ["dppo", "drpo"] == [v.subject for v in read_verdicts(tmp_path)]
    section = index_html(verdicts)
    assert section.count('class="verdict"') == 1 and section.count('class="verdict undecided"') == 1
    assert 'href="sensitivity/index.html"' in section
    assert terminal_lines(verdicts) == [
        "verdicts:", "  sensitivity · dppo: insensitive to δ (8 seeds per value)",
        "  sensitivity · drpo: undecided to δ (8 seeds per value; for 80% power 23 would show insensitivity)"]


def test_a_page_that_no_longer_decides_leaves_no_verdict_behind(tmp_path):
    two_verdicts(tmp_path)
    Page("Threshold sensitivity", tmp_path / "sensitivity").write([])
    assert read_verdicts(tmp_path / "sensitivity") == [] and gather(tmp_path, ["sensitivity"]) == []


def test_the_parent_run_carries_the_verdicts(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns.db'}")
    experiment = client.create_experiment("verdicts", artifact_location=str(tmp_path / "artifacts"))
    run_id = client.create_run(experiment).info.run_id
    verdicts = two_verdicts(tmp_path).verdicts
    assert log_verdicts(f"sqlite:///{tmp_path / 'mlruns.db'}", run_id, verdicts)
    data = client.get_run(run_id).data
    assert data.tags["harness.verdict.sensitivity.dppo"] == "insensitive"
    assert data.tags["harness.verdict.sensitivity.drpo"] == "undecided"
    assert data.tags["harness.verdict.sensitivity.drpo.line"].startswith("drpo: undecided to δ (8 seeds")
    assert "- sensitivity: dppo: insensitive to δ" in data.tags["mlflow.note.content"]
    assert data.metrics == {"sensitivity/dppo/final_accuracy_delta_0.1": 0.61,
                            "sensitivity/drpo/seeds_for_insensitive": 23.0}
