"""Figures ready for a paper, and pages that account for every objective of a sweep (issue #38): each figure
has a PDF twin at print resolution, the accuracy-versus-threshold axis is fitted to the data with the SESOI
drawn as a band, and the stability page counts (or says why it leaves out) every objective's runs."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from report_pages import check_page

from harness.reports.cli import main
from harness.reports.results.collect import collect
from harness.reports.rendering.kinds import sensitivity
from harness.reports.results.locate import Target
from harness.reports.results.synthetic import FakeRun, write_sweep
from harness.reports.rendering.threshold_figure import draw
from harness.stats.intervals import t_interval

STEPS, EVALS = list(range(1, 21)), [0, 5, 10, 15, 20]
SWEEP = "2026-09-11/00-00-00-000000"


def _runs():
    """dppo and drpo at δ 0.1 / 0.2 (final accuracy 0.60 vs 0.625, ±0.01 over 4 seeds: differences of
    0.02–0.03) and grpo at one clip value, all fp32; one bf16 drpo run (with mismatch)."""
    runs = []
    for objective, base in (("dppo", 0.60), ("drpo", 0.58)):
        for delta, shift in ((0.1, 0.0), (0.2, 0.025)):
            for seed in range(4):
                final = base + shift + 0.01 * (seed - 1.5) / 1.5
                runs.append(FakeRun(objective, {"delta": delta}, seed=seed, metrics={
                    "eval/accuracy": (EVALS, [0.2, 0.4, final, final, final]),
                    "train/accuracy": (STEPS, np.linspace(0.2, final, len(STEPS)))}))
    runs += [FakeRun("grpo", seed=s) for s in range(2)]
    runs.append(FakeRun("drpo", {"delta": 0.1}, seed=9, precision="bf16"))
    return runs


@pytest.fixture(scope="module")
def sweep(shared_store):
    uri, _ = shared_store
    write_sweep(uri, _runs(), SWEEP, steps=20, eval_every=5)
    return uri


@pytest.fixture(scope="module")
def pages(sweep, tmp_path_factory):
    out = tmp_path_factory.mktemp("paper") / "reports"
    assert main([SWEEP, "--tracking-uri", sweep, "--out", str(out), "--kind", "sensitivity,stability"]) == 0
    return out


def test_every_figure_has_a_pdf_twin_and_a_print_resolution_png(pages):
    for kind in ("sensitivity", "stability"):
        page = pages / kind / "index.html"
        sources = check_page(page)
        assert sources, kind
        html = page.read_text(encoding="utf-8")
        for png in sources:
            pdf = page.parent / png.replace(".png", ".pdf")
            assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 2000, pdf
            assert f'href="{pdf.name}"' in html  # the page offers the vector file
            with open(page.parent / png, "rb") as handle:
                head = handle.read(33)
            assert head[:8] == b"\x89PNG\r\n\x1a\n"
            # pHYs chunk or not, the pixel width is 2x the shown width (200 dpi shown at 100)
            width = struct.unpack(">I", head[16:20])[0]
            # the page embeds the PNG (a data URI) and names its file in data-file
            shown = int(html.split(f'data-file="{png}"', 1)[1].split('width="', 1)[1].split('"', 1)[0])
            assert width == pytest.approx(2 * shown, abs=1), (png, width, shown)


def test_accuracy_vs_threshold_axis_spans_the_data_and_draws_the_sesoi_band(sweep):
    data = collect(Target(SWEEP, sweep, [], []))
    groups = sensitivity.compared(data)
    assert sorted(name for _, name in groups) == ["dppo", "drpo precision=fp32"]  # grpo: one clip value; bf16 drpo: its own variant
    sesoi = 0.05
    fig, axes = draw(data, groups, sesoi)
    final_ax = axes[0]
    low, high = final_ax.get_ylim()
    ends, means = [], {}
    for objective, base in (("dppo", 0.60), ("drpo", 0.58)):
        for shift in (0.0, 0.025):
            values = [base + shift + 0.01 * (s - 1.5) / 1.5 for s in range(4)]
            ci = t_interval(values)
            ends += [ci.low, ci.high]
            means.setdefault(objective, []).append(ci.mean)
    assert low <= min(ends) and high >= max(ends)  # every error bar inside the axis
    assert high - low < 0.25, (low, high)  # fitted: not [0, 1] for differences of 0.02-0.03
    bands = sorted((p.get_y(), p.get_y() + p.get_height()) for p in final_ax.patches)
    want = sorted(((min(m) + max(m)) / 2 - sesoi / 2, (min(m) + max(m)) / 2 + sesoi / 2) for m in means.values())
    assert len(bands) == 2 and np.allclose(bands, want, atol=1e-6)
    assert all(low <= b[0] and b[1] <= high for b in bands)
    fig.clf()


def test_the_sensitivity_page_says_which_runs_it_leaves_out(pages):
    md = (pages / "sensitivity" / "summary.md").read_text(encoding="utf-8")
    assert "grpo: 2 runs left out — run at one value of its threshold (ε_high=0.2)" in md
    assert "drpo precision=bf16: 1 run left out — run at one value of its threshold (δ=0.1)" in md


def test_the_stability_page_counts_every_objective_of_a_sweep_with_drpo_runs(pages):
    md = (pages / "stability" / "summary.md").read_text(encoding="utf-8")
    line = next(x for x in md.splitlines() if x.startswith("_Collapse detector false-alarm rate"))
    assert "18/18" not in line and "/18 finished runs" in line  # 8 dppo + 8 fp32 drpo + 2 grpo
    assert "(dppo, drpo, grpo)" in line and "bandpo" not in line and "minirl" not in line
    assert "| drpo | 9 | 8 | 0 | 1 with mismatch (bf16) |" in md
    assert "| dppo | 8 | 8 | 0 | none |" in md and "| grpo | 2 | 2 | 0 | none |" in md
