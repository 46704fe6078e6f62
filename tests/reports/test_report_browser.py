"""The generated HTML opened in headless Chromium: it renders, every figure loads (checked in the DOM the
browser built, via the page's own image check), and a screenshot is kept for a human to look at.

Skipped when Chromium is not installed, unless HARNESS_BROWSER_TESTS=1 (CI), where it must be there
(`.ci/install_chromium.sh`, or `apt-get install -y --no-install-recommends chromium`)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from report_pages import check_page

pytestmark = pytest.mark.browser
CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,2000")


@pytest.fixture(scope="module")
def chromium() -> str:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    reason = "headless Chromium not installed (apt-get install -y --no-install-recommends chromium)"
    if os.environ.get("HARNESS_BROWSER_TESTS") == "1":
        pytest.fail(reason + " but HARNESS_BROWSER_TESTS=1")
    pytest.skip(reason)


def render(chromium: str, page: Path, tmp: Path) -> tuple:
    """(DOM after load, screenshot path) of one page, one browser run."""
    shot = tmp / f"{page.parent.name}.png"
    proc = subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp / 'profile'}", f"--screenshot={shot}",
                           "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, shot


def test_every_report_renders_with_all_figures(chromium, real_sweeps, built, tmp_path):
    pages = [p for paths in built.values() for p in paths if p.name == "index.html"]
    pages += [real_sweeps["delta"] / "reports" / "index.html"]
    keep = Path(os.environ.get("HARNESS_SCREENSHOT_DIR", tmp_path))
    keep.mkdir(parents=True, exist_ok=True)
    for page in pages:
        sources = check_page(page) if page.parent.name != "reports" else []
        dom, shot = render(chromium, page, tmp_path)
        assert shot.is_file() and shot.stat().st_size > 10_000, f"no screenshot of {page}"
        sweep = next(name for name, folder in real_sweeps.items() if folder in page.parents)
        shutil.copy(shot, keep / f"{sweep}-{page.parent.name}.png")
        images = re.search(r'data-images="(\d+)"', dom)
        broken = re.search(r'data-broken-images="(\d+)"', dom)
        assert images and broken, f"{page}: the page's load handler did not run"
        assert int(images.group(1)) == len(sources) and len(re.findall(r"<img ", dom)) == len(sources)
        assert broken.group(1) == "0", f"{page}: {broken.group(1)} images failed to load"


def test_overview_table_sorts_in_the_browser(chromium, real_sweeps, built, tmp_path):
    """Click 'seed' twice through a tiny script appended to a copy of the page; the DOM shows the order."""
    page = real_sweeps["delta"] / "reports" / "overview" / "index.html"
    html = page.read_text().replace("</body>", """<script>
      window.addEventListener('load', function () {
        var th = Array.prototype.find.call(document.querySelectorAll('table.sortable th'),
                                           function (h) { return h.textContent === 'seed'; });
        th.click(); th.click();
        var col = Array.prototype.indexOf.call(th.parentNode.cells, th);
        var seeds = Array.prototype.map.call(th.closest('table').tBodies[0].rows,
                                             function (r) { return r.cells[col].textContent; });
        document.body.setAttribute('data-sorted', seeds.join(','));
      });</script></body>""")
    copy = page.with_name("sort_check.html")
    copy.write_text(html)
    try:
        dom, _ = render(chromium, copy, tmp_path)
    finally:
        copy.unlink()
    assert 'data-sorted="1,1,1,1,0,0,0,0"' in dom


def _claim_sweeps(uri):
    """Synthetic sweeps for the claim kinds and a single-precision stability report: {kind: sweep id}."""
    from harness.reports.results.synthetic import FakeRun, write_sweep

    steps, evals = list(range(1, 21)), [0, 5, 10, 15, 20]
    flat = lambda v: np.full(len(steps), v)  # noqa: E731
    sweeps = {}
    runs = [FakeRun(o, seed=s, metrics={
        "objective/lowprob_masked_frac": (steps, flat((0.05 if o == "bandpo" else 0.3) + 0.01 * s)),
        "objective/lowprob_frac": (steps, flat(0.3)), "train/entropy": (steps, np.linspace(1.2, 0.2 + 0.02 * s, len(steps))),  # collapses: testable
        "eval/accuracy": (evals, [0.3, 0.5, 0.7, 0.95, 1.0 - 0.01 * s]),
        "train/accuracy": (steps, np.linspace(0.3, 1.0, len(steps)))}) for o in ("grpo", "bandpo") for s in range(5)]
    write_sweep(uri, runs, "2026-08-01/00-00-00-000000", steps=20, eval_every=5)
    sweeps["claim_bandpo"] = "2026-08-01/00-00-00-000000"
    runs = [FakeRun(o, seed=s, precision="fp8_rollout", params={"precision.weight_sync": w}, metrics={
        "eval/accuracy": (evals, [0.3, 0.4, 0.5, e, e]),
        "train/mismatch": (steps, np.linspace(0.01, 0.04, len(steps)) if w == "delta" else flat(0.004))})
        for o in ("pg_is", "dppo") for w in ("full", "delta") for s in range(4)
        for e in [(0.05 if (w == "delta" and o == "pg_is") else 0.6) + 0.02 * s]]
    write_sweep(uri, runs, "2026-08-02/00-00-00-000000", steps=20, eval_every=5)
    sweeps["claim_trust_region"] = "2026-08-02/00-00-00-000000"
    runs = [FakeRun(o, {"delta": d}, seed=s) for o, d in (("dppo", 0.1), ("dppo", 0.2), ("drpo", 0.2), ("drpo", 12.5))
            for s in range(3)]
    write_sweep(uri, runs, "2026-08-03/00-00-00-000000", steps=40, eval_every=10)
    sweeps["stability"] = sweeps["sensitivity"] = "2026-08-03/00-00-00-000000"
    runs = [FakeRun(o, {"delta": d}, seed=s, metrics={  # claim 5's regime: DPPO's δ binds, the mismatch grows
        "eval/accuracy": (evals, [0.3, 0.2, 0.1, 0.02, 0.02] if o == "drpo" and s < 2 else
                          [0.3, 0.4, 0.5, 0.55 + 0.02 * s, 0.55 + 0.02 * s]),
        "objective/masked_frac": (steps, flat(0.03 if o == "dppo" else 0.0)),
        "train/mismatch": (steps, np.linspace(0.01, 0.05, len(steps)))})
        for o, d in (("dppo", 0.15), ("drpo", 12.5)) for s in range(4)]
    write_sweep(uri, runs, "2026-08-04/00-00-00-000000", steps=20, eval_every=5)
    sweeps["claim_drpo_vs_dppo"] = "2026-08-04/00-00-00-000000"
    return sweeps


def test_claim_and_stability_pages_render_in_the_browser(chromium, shared_store, tmp_path):
    """Each claim kind with a decision, and the stability report of a one-precision sweep, opened in headless
    Chromium as a person would: every figure loads, the headline figure of contrasts is there, the stability
    page says it compares no precisions and counts replicates in seeds."""
    from harness.reports.cli import main

    uri, _ = shared_store
    keep = Path(os.environ.get("HARNESS_SCREENSHOT_DIR", tmp_path))
    keep.mkdir(parents=True, exist_ok=True)
    for kind, sweep in _claim_sweeps(uri).items():
        out = tmp_path / kind
        assert main([sweep, "--tracking-uri", uri, "--out", str(out), "--kind", kind]) == 0
        page = out / kind / "index.html"
        sources = check_page(page)
        dom, shot = render(chromium, page, tmp_path)
        shutil.copy(shot, keep / f"synthetic-{kind}.png")
        assert re.search(r'data-broken-images="0"', dom), f"{kind}: an image failed to load"
        assert int(re.search(r'data-images="(\d+)"', dom).group(1)) == len(sources)
        if kind.startswith("claim_"):
            # the decisions figure when its tests ran; a claim whose gate fails on its bound is "not testable here"
            assert ("decisions.png" in sources or "not testable here" in dom) and "Verdict" in dom
        if kind == "stability":
            assert "This sweep runs one precision (fp32)" in dom and re.search(r"<th[^>]*>seeds</th>", dom)


def test_compare_page_renders_in_the_browser(chromium, shared_store, tmp_path):
    """`report A B` of two synthetic sweeps opened in headless Chromium: the figure loads, the shared cells'
    table and the settings that differ are in the DOM, and the figure's PDF is offered."""
    from harness.reports.cli import main
    from harness.reports.results.synthetic import FakeRun, write_sweep

    uri, _ = shared_store
    a, b = "2026-08-21/00-00-00-000000", "2026-08-22/00-00-00-000000"
    write_sweep(uri, [FakeRun("dppo", {"delta": d}, seed=s) for d in (0.1, 0.2) for s in range(3)], a)
    write_sweep(uri, [FakeRun("dppo", {"delta": d}, seed=s, params={"trainer.lr": 0.002}) for d in (0.1, 0.2)
                      for s in range(3)], b)
    out = tmp_path / "compare"
    assert main([a, b, "--tracking-uri", uri, "--out", str(out)]) == 0
    page = out / "index.html"
    sources = check_page(page)
    dom, shot = render(chromium, page, tmp_path)
    keep = Path(os.environ.get("HARNESS_SCREENSHOT_DIR", tmp_path))
    keep.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, keep / "synthetic-compare.png")
    assert sources == ["compare_cells.png"] and re.search(r'data-broken-images="0"', dom)
    assert "dppo δ=0.1" in dom and "paired over 3 shared seeds" in dom and "trainer.lr" in dom
    assert 'href="compare_cells.pdf"' in dom
