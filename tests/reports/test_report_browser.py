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


def test_every_report_renders_with_all_figures(chromium, sweeps, built, tmp_path):
    pages = [p for paths in built.values() for p in paths if p.name == "index.html"]
    pages += [sweeps["delta"] / "reports" / "index.html"]
    keep = Path(os.environ.get("HARNESS_SCREENSHOT_DIR", tmp_path))
    keep.mkdir(parents=True, exist_ok=True)
    for page in pages:
        sources = check_page(page) if page.parent.name != "reports" else []
        dom, shot = render(chromium, page, tmp_path)
        assert shot.is_file() and shot.stat().st_size > 10_000, f"no screenshot of {page}"
        sweep = next(name for name, folder in sweeps.items() if folder in page.parents)
        shutil.copy(shot, keep / f"{sweep}-{page.parent.name}.png")
        images = re.search(r'data-images="(\d+)"', dom)
        broken = re.search(r'data-broken-images="(\d+)"', dom)
        assert images and broken, f"{page}: the page's load handler did not run"
        assert int(images.group(1)) == len(sources) and len(re.findall(r"<img ", dom)) == len(sources)
        assert broken.group(1) == "0", f"{page}: {broken.group(1)} images failed to load"


def test_overview_table_sorts_in_the_browser(chromium, sweeps, built, tmp_path):
    """Click 'seed' twice through a tiny script appended to a copy of the page; the DOM shows the order."""
    page = sweeps["delta"] / "reports" / "overview" / "index.html"
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
