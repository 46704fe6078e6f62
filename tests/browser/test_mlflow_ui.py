"""The MLflow UI, in headless Chromium, after a 4-run sweep tracked on `python -m harness server`: the
experiment is a training experiment (its plain link opens on the runs, not on GenAI traces); the runs
table (harness view: `?viewStateShareKey=harness`) shows the objective, δ and final eval accuracy columns,
the sweep's parent and, expanded, its four jobs under it with short readable names (`dppo δ=0.1 s0 @ 04:35:12 #0`) and
their values; a job's metric chart renders; a single run's printed link opens that run in the UI's "Model
training" mode (the short `#/runs/<id>` link loses its mode on the UI's redirect and opens in GenAI mode). Screenshots are saved under $HARNESS_TEST_ARTIFACTS/browser
(or the test's tmp folder)."""
from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from chromium import DevTools, artifacts_dir, one_shot
from tracking_helpers import Server, free_port

from harness.tracking.ui import KIND_TAG, RUN_NAME_COLUMN, TRAINING_KIND, TRAINING_MODE, runs_url

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHART_METRIC = "train/entropy"
EXPANDER = ("[row-id='{id}'] button[data-component-id*='runnamecellrenderer']",
            "[row-id='{id}'] [col-id='attributes.`Run Name`'] button")


def metric_url(server_url: str, experiment_id: str, run_id: str, key: str) -> str:
    """MLflow's metric page (its route as the UI builds it: a JSON value per query parameter)."""
    query = {"runs": [run_id], "metric": key, "experiments": [experiment_id], "plot_metric_keys": [key],
             "plot_layout": {}, "x_axis": "step", "y_axis_scale": "linear", "line_smoothness": 1,
             "show_point": True, "deselected_curves": [], "last_linear_y_axis_range": []}
    args = "&".join(f"{k}={quote(v if k in ('x_axis', 'y_axis_scale') else json.dumps(v))}"
                    for k, v in query.items())
    return f"{server_url}/#/metric?{args}"


def row_text(page: DevTools, run_id: str) -> str:
    """A table row's text (ag-grid splits a row over pinned and scrolling containers)."""
    return page.evaluate(f"Array.from(document.querySelectorAll(\"[row-id='{run_id}']\"))"
                         ".map(e => e.innerText).join(' | ')") or ""


GENAI_ONLY = ("Judges", "Evaluation runs")  # sidebar entries of the GenAI mode


@pytest.fixture
def tracked_sweep(tmp_path, run_harness):
    """A 4-job sweep and, after it, a single run (its printed last line: its link), on one server."""
    server = Server(run_harness.root, free_port()).start()
    try:
        run_harness("multirun", "algo=dppo,drpo", "delta=0.1,0.2", "debug=quick", "tracking=server",
                    f"tracking.uri={server.url}", check=True)
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=server.url)
        experiment = client.get_experiment_by_name("harness")
        assert experiment.tags.get(KIND_TAG) == TRAINING_KIND
        runs = client.search_runs([experiment.experiment_id])
        single = run_harness("debug=quick", "trainer.steps=2", "tracking=server", f"tracking.uri={server.url}",
                             check=True)
        server.single_link = single.stdout.strip().splitlines()[-1].removeprefix("  mlflow: ")
        yield server, experiment.experiment_id, runs
    finally:
        assert server.stop() == 0


def test_runs_table_lists_the_jobs_under_their_parent_and_a_run_link_opens_in_training_mode(chromium, tracked_sweep, tmp_path):
    server, experiment_id, runs = tracked_sweep
    out = artifacts_dir(tmp_path)
    print(f"\nbrowser test artifacts: {out}")
    parent = next(r for r in runs if r.data.tags.get("harness.role") == "parent")
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 4
    url = runs_url(server.url, experiment_id)

    names = sorted(c.info.run_name for c in children)  # `dppo δ=0.1 s0 @ 04:35:12 #0`: config, sweep time, job
    assert [n.split(" @ ")[0] for n in names] == [f"{o} δ={d} s0 quick" for o in ("dppo", "drpo")
                                                  for d in ("0.1", "0.2")]  # a pipeline check, named as one
    assert len({n.split(" @ ")[1] for n in names}) == 4, names
    dom = one_shot(chromium, url, "--dump-dom")  # the standard flags: the parent, and the harness columns
    (out / "runs_table.html").write_text(dom)
    for text in ("algo.name", "algo.delta", "eval/final_accuracy", "eval/accuracy", parent.info.run_name[:30]):
        assert text in dom, f"{text!r} not in the runs table"

    plain = one_shot(chromium, f"{server.url}/#/experiments/{experiment_id}?{TRAINING_MODE}", "--dump-dom")
    (out / "experiment_page.html").write_text(plain)
    assert parent.info.run_name[:30] in plain, "the experiment's own link opens on its runs (a training experiment)"

    page = DevTools(chromium, url)
    try:
        page._loop.run_until_complete(page._call("Emulation.setDeviceMetricsOverride", width=2200, height=900,
                                                 deviceScaleFactor=1, mobile=False))  # every column on screen
        page.wait_for(lambda: parent.info.run_name[:30] in page.text(), "the parent run")
        clicked = page.evaluate("(() => { for (const s of %s) { const b = document.querySelector(s);"
                                " if (b) { b.click(); return true; } } return false; })()"
                                % json.dumps([e.format(id=parent.info.run_id) for e in EXPANDER]))
        assert clicked, "no expander on the parent row"
        page.wait_for(lambda: all(row_text(page, c.info.run_id) for c in children), "the four jobs")
        page.screenshot(out / "runs_table_expanded.png")
        order = page.evaluate("Array.from(document.querySelectorAll('.ag-center-cols-container [row-id]'))"
                              ".map(e => e.getAttribute('row-id'))")
        for child in children:
            text = row_text(page, child.info.run_id)
            assert child.info.run_name in text, f"the name is cut or missing: {text}"
            clipped = page.evaluate(  # an element of the name that hides overflow and holds more than it shows
                f"Array.from(document.querySelectorAll(\"[row-id='{child.info.run_id}'] [col-id='{RUN_NAME_COLUMN}'], "
                f"[row-id='{child.info.run_id}'] [col-id='{RUN_NAME_COLUMN}'] *\")).filter(e => "
                f"e.textContent.includes({json.dumps(child.info.run_name)}) && getComputedStyle(e).overflowX !== 'visible' "
                "&& e.clientWidth > 2 && e.scrollWidth > e.clientWidth + 1)"  # (1 px wide: a screen-reader label)
                ".map(e => e.tagName + '.' + e.className + ' ' + e.scrollWidth + '>' + e.clientWidth)")
            assert clipped == [], f"{clipped}: the Run Name column cuts {child.info.run_name!r} (see runs_table_expanded.png)"
            assert child.data.params["algo.name"] in text and child.data.params["algo.delta"] in text, text
            for metric in ("eval/final_accuracy", "eval/accuracy"):  # the reports' measure, and the last evaluation
                accuracy = child.data.metrics[metric]
                assert f"{accuracy:g}"[:4] in text or str(round(accuracy, 3))[:4] in text, (metric, accuracy, text)
            assert order.index(child.info.run_id) > order.index(parent.info.run_id), "jobs sit under the parent"
    finally:
        page.close()

    child = children[0]
    chart = metric_url(server.url, experiment_id, child.info.run_id, CHART_METRIC)
    one_shot(chromium, chart, f"--screenshot={out / 'metric_chart.png'}")
    assert (out / "metric_chart.png").stat().st_size > 20_000, "the chart screenshot looks empty"
    chart_dom = one_shot(chromium, chart, "--dump-dom")
    assert CHART_METRIC in chart_dom and "main-svg" in chart_dom, "no plotted chart on the metric page"

    single_run_link_opens_the_run_in_training_mode(chromium, server, experiment_id, runs, out)
    parent_run_shows_its_verdicts_and_report_figures(chromium, server, experiment_id, parent.info.run_id, out)


def parent_run_shows_its_verdicts_and_report_figures(chromium, server, experiment_id: str, run_id: str, out) -> None:
    """The sweep's answer where MLflow users look: the parent run's page shows its verdict lines (its
    description) and the verdict tags; a report figure opens inside MLflow's artifact view."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=server.url)
    tags = client.get_run(run_id).data.tags
    words = {k: v for k, v in tags.items() if k.startswith("harness.verdict.") and not k.endswith(".line")}
    assert words and set(words.values()) <= {"insensitive", "sensitive", "undecided"}, tags
    link = f"{server.url}/#/experiments/{experiment_id}/runs/{run_id}?{TRAINING_MODE}"
    page = DevTools(chromium, link)
    try:
        page.wait_for(lambda: "Verdicts of this sweep" in page.text(), "the parent run's verdict lines")
        page.screenshot(out / "parent_run_verdicts.png")
        shown = page.text()
        for key, word in words.items():
            assert tags[f"{key}.line"][:40] in shown, f"{tags[key + '.line']!r} not on the parent run's page"
    finally:
        page.close()
    figure = "reports/sensitivity/accuracy_vs_threshold.png"
    assert figure in [f.path for f in client.list_artifacts(run_id, "reports/sensitivity")]
    page = DevTools(chromium, f"{server.url}/#/experiments/{experiment_id}/runs/{run_id}/artifacts/{figure}"
                              f"?{TRAINING_MODE}")
    try:
        # MLflow's image view fetches the file and shows it from a blob: URL, beside the artifact tree
        loaded = ("Array.from(document.images).filter(i => (i.src.startsWith('blob:') || "
                  "i.src.includes('accuracy_vs_threshold')) && i.complete && i.naturalWidth > 300).length")
        page.wait_for(lambda: "accuracy_vs_threshold.png" in page.text() and page.evaluate(loaded),
                      "the report figure inside MLflow's artifact view", timeout=90)
        page.screenshot(out / "parent_run_report_figure.png")
    finally:
        page.close()


def single_run_link_opens_the_run_in_training_mode(chromium, server, experiment_id: str, runs, out) -> None:
    link = server.single_link
    assert link.startswith(f"{server.url}/#/experiments/{experiment_id}/runs/") and link.endswith(TRAINING_MODE), link
    from mlflow.tracking import MlflowClient

    run = MlflowClient(tracking_uri=server.url).get_run(link.split("/runs/")[1].split("?")[0])
    assert run.info.run_name.startswith("dppo δ=0.15 s0 quick @ ")
    assert run.info.run_name not in {r.info.run_name for r in runs}, "names tell runs of one config apart"
    page = DevTools(chromium, link)
    try:
        page.wait_for(lambda: run.info.run_name in page.text() and "Model metrics" in page.text(), "the run page")
        page.screenshot(out / "single_run_link.png")
        shown = page.text()
        assert not [word for word in GENAI_ONLY if word in shown], f"the run opened in GenAI mode:\n{shown[:1500]}"
        assert "Runs" in shown and "Models" in shown  # the training mode's breadcrumb and sidebar
    finally:
        page.close()
