"""A sweep's report page where MLflow users open it: the parent run's Artifacts tab, on `python -m harness
server`, in headless Chromium. MLflow 3.18 shows an HTML artifact in an iframe of the fetched file (a blob:
URL, sandbox="allow-scripts": no popups, no top navigation, relative files never resolve), so the page must
carry its figures, and a link to another file must not blank the preview. The sweep is synthetic (a real
store written through MLflow's client, harness/reports/results/synthetic.py): no training. The screenshot
`artifacts_tab.png` is saved under $HARNESS_TEST_ARTIFACTS/browser (or the test's tmp folder)."""
from __future__ import annotations

import time

import pytest
from chromium import DevTools, artifacts_dir
from tracking_helpers import Server, free_port

from harness.tracking.ui import TRAINING_MODE

pytestmark = pytest.mark.browser

SWEEP = "2026-08-01/00-00-00-000000"
FIGURES = ("pairwise_differences.png", "accuracy_vs_threshold.png", "learning_curves.png")
# every figure shown (decoded, not a broken placeholder), and what the page's own check found
IMAGES = ("(() => { const imgs = Array.from(document.images); return {n: imgs.length, files: imgs.map(i => "
          "i.getAttribute('data-file')), loaded: imgs.filter(i => i.complete && i.naturalWidth > 0).length, "
          "broken: document.body.getAttribute('data-broken-images'), text: document.body.innerText}; })()")


@pytest.fixture
def server_with_reports(tmp_path):
    """A harness server holding a 6-run synthetic sweep with a parent run, its sensitivity report logged there."""
    from mlflow.tracking import MlflowClient

    from harness.reports.cli import main
    from harness.reports.results.synthetic import FakeRun, write_sweep

    server = Server(tmp_path, free_port()).start()
    try:
        runs = [FakeRun("dppo", {"delta": d}, seed=s) for d in (0.1, 0.2) for s in range(3)]
        parent = write_sweep(server.url, runs, SWEEP, parent=True)["parent_id"]
        assert main([SWEEP, "--tracking-uri", server.url, "--out", str(tmp_path / "reports"),
                     "--kind", "sensitivity"]) == 0
        client = MlflowClient(tracking_uri=server.url)
        logged = {f.path for f in client.list_artifacts(parent, "reports/sensitivity")}
        assert {f"reports/sensitivity/{f}" for f in FIGURES} <= logged  # the PNG files stay, for papers
        yield server, client.get_run(parent).info.experiment_id, parent
    finally:
        assert server.stop() == 0


def test_report_page_shows_its_figures_and_keeps_its_preview_in_mlflow_artifacts_tab(chromium, server_with_reports,
                                                                                     tmp_path):
    server, experiment_id, parent = server_with_reports
    out = artifacts_dir(tmp_path)
    link = (f"{server.url}/#/experiments/{experiment_id}/runs/{parent}/artifacts/reports/sensitivity/index.html"
            f"?{TRAINING_MODE}")
    page = DevTools(chromium, link)
    try:
        preview = {}

        def shown() -> bool:  # the preview's own target (Chromium isolates a sandboxed iframe) with its page loaded
            preview["session"] = preview.get("session") or page.frame_session("blob:")
            if not preview["session"]:
                return False
            preview.update(page.evaluate_in(preview["session"], IMAGES) or {})
            return preview.get("broken") not in (None, "unknown")

        page.wait_for(shown, "the report page inside MLflow's artifact preview", timeout=120)
        assert "missing figure" not in preview["text"], preview["text"][:2000]
        assert preview["broken"] == "0" and sorted(preview["files"]) == sorted(FIGURES), preview
        assert preview["loaded"] == preview["n"] == len(FIGURES), preview
        assert preview["text"].lstrip().startswith("← all reports of this sweep"), preview["text"][:300]

        # MLflow 3.18 opens its Assistant panel by itself on a loopback address (no setting turns it off): closed
        # here as a user does once, so the screenshot shows the page at the width a user reads it
        page.evaluate("(document.querySelector(\"[data-component-id='mlflow.assistant.chat_panel.close']\") || "
                      "{click() {}}).click()")
        page.evaluate_in(preview["session"], "document.querySelector('figure').scrollIntoView({block: 'center'})")
        time.sleep(1)  # the scrolled frame painted
        page.screenshot(out / "artifacts_tab.png")
        print(f"\nscreenshot: {out / 'artifacts_tab.png'}")

        # a link to another file (here: back to the index) leaves the page in place and names that file
        page.evaluate_in(preview["session"], "document.querySelector('a.up').click()")
        page.wait_for(lambda: page.evaluate_in(preview["session"], "(document.getElementById('viewer-note') || "
                                               "{}).hidden === false"), "the note on a link", timeout=20)
        after = page.evaluate_in(preview["session"], "({url: location.href, text: document.body.innerText})")
        assert after["url"].startswith("blob:") and "Threshold sensitivity" in after["text"], after["url"]
        assert "open reports/index.html in the run's artifact list" in after["text"], after["text"][:500]
        page.screenshot(out / "artifacts_tab_link.png")
    finally:
        page.close()
    log = server.log.read_text()
    assert "Traceback" not in log, log[-3000:]  # a quiet server: the UI, its panels and the preview used
