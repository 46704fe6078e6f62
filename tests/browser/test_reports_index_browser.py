"""The reports a sweep's MLflow parent run holds, as a person opens them after a partial rebuild
(`report --kind sensitivity --out DIR`): its index, in headless Chromium, links every report, and each
link opens a page that renders with its title and figures."""
from __future__ import annotations

import json
import re
from pathlib import Path

from chromium import one_shot
from mlflow.tracking import MlflowClient

REPO = Path(__file__).resolve().parents[2]


def test_parent_run_index_links_every_report_after_a_partial_rebuild(chromium, run_harness, tmp_path):
    run_harness("multirun", "algo=dppo,drpo", "delta=0.1,0.2", "debug=quick", "trainer.steps=4", check=True)
    (sweep_dir,) = (run_harness.root / "multirun").glob("*/*")
    before = set(p.parent.name for p in (sweep_dir / "reports").glob("*/index.html"))
    assert {"overview", "sensitivity", "geometry"} <= before
    run_harness("report", str(sweep_dir), "--kind", "sensitivity", "--out", str(tmp_path / "only"), check=True)

    info = json.loads((sweep_dir / "parent_run.json").read_text())
    recorded = Path(MlflowClient(info["tracking_uri"]).download_artifacts(info["run_id"], "reports",
                                                                         str(tmp_path / "parent")))
    dom = one_shot(chromium, (recorded / "index.html").as_uri(), "--dump-dom")
    verdicts = json.loads((sweep_dir / "reports" / "verdicts.json").read_text())  # the answer, first on the index
    assert verdicts and dom.index("<h2>Verdicts</h2>") < dom.index("sensitivity/index.html"), dom[:2000]
    for verdict in verdicts:
        box, label = ("verdict", "decided") if verdict["decided"] else ("verdict undecided", "not decided")
        assert (f'<p class="{box}"><span class="label">{label}</span> <a href="{verdict["report"]}/index.html">'
                in dom), (verdict, dom[:3000])
    links = re.findall(r'<a href="([\w.-]+)/index\.html">([^<]+)</a>', dom)
    assert {kind for kind, _ in links} == before, dom[:2000]
    links = [(kind, title) for kind, title in links if title != kind]  # the verdict section links by kind name
    assert {kind for kind, _ in links} == before, dom[:2000]  # the reports list: each report by its title
    for kind, title in links:
        page = one_shot(chromium, (recorded / kind / "index.html").as_uri(), "--dump-dom")
        assert f"<h1>{title}</h1>" in page, (kind, page[:500])
        for image in re.findall(r'<img[^>]+data-file="([^"]+\.png)"', page):  # shown embedded, kept as files
            assert (recorded / kind / image).is_file(), (kind, image)


def test_readme_screenshot_is_a_small_real_report_page():
    shot = REPO / "docs" / "report_sensitivity.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size < 300_000
    assert "](docs/report_sensitivity.png)" in (REPO / "README.md").read_text()
