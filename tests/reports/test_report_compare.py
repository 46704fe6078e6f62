"""`python -m harness report A B`: the compare page of two synthetic sweeps in a real MLflow store. The shared
cells carry the differences computed here independently (paired over shared seeds, else Welch), the settings
that differ, what each sweep lacks, both sweeps' verdicts (from their parent runs' tags) and a figure with its
PDF twin."""
from __future__ import annotations

import math

import numpy as np
import pytest
from report_pages import check_page
from scipy import stats

from harness.config.errors import EXIT_BAD_INPUT
from harness.reports.cli import main
from harness.reports.results.synthetic import FakeRun, write_sweep

A, B = "2026-09-21/00-00-00-000000", "2026-09-22/00-00-00-000000"
EVALS, STEPS = [0, 5, 10, 15, 20], list(range(1, 21))
FINALS = {  # (sweep, objective, δ) -> {seed: final accuracy}
    ("A", "dppo", 0.1): {0: 0.60, 1: 0.62, 2: 0.59, 3: 0.61},
    ("B", "dppo", 0.1): {0: 0.64, 1: 0.655, 2: 0.625, 7: 0.70},  # 3 seeds shared with A: paired
    ("A", "dppo", 0.2): {0: 0.55, 1: 0.57, 2: 0.56, 3: 0.58},
    ("B", "dppo", 0.2): {10: 0.50, 11: 0.53, 12: 0.49},  # no shared seed: Welch
    ("A", "drpo", 0.1): {0: 0.5, 1: 0.52},
}


def _run(objective, delta, seed, final, params):
    return FakeRun(objective, {"delta": delta}, seed=seed, params=params, metrics={
        "eval/accuracy": (EVALS, [0.2, final, final, final, final]),
        "train/accuracy": (STEPS, np.linspace(0.2, final, len(STEPS)))})


@pytest.fixture(scope="module")
def sweeps(shared_store, tmp_path_factory):
    uri, _ = shared_store
    for sweep, sweep_id in (("A", A), ("B", B)):
        params = {"trainer.lr": 0.002} if sweep == "B" else {}
        runs = [_run(o, d, s, f, params) for (w, o, d), seeds in FINALS.items() if w == sweep for s, f in seeds.items()]
        runs += [FakeRun("grpo", seed=s, params=params) for s in range(2)] if sweep == "B" else []
        write_sweep(uri, runs, sweep_id, steps=20, eval_every=5, parent=True)
        out = tmp_path_factory.mktemp(f"reports_{sweep}")
        assert main([sweep_id, "--tracking-uri", uri, "--out", str(out / "r"), "--kind", "sensitivity"]) == 0
    return uri


@pytest.fixture(scope="module")
def page(sweeps, tmp_path_factory):
    out = tmp_path_factory.mktemp("compare") / "a_vs_b"
    assert main([A, B, "--tracking-uri", sweeps, "--out", str(out)]) == 0
    return out / "index.html"


def _rows(md: str, first: str) -> dict:
    """{first cell: [cells]} of the Markdown table whose header starts with `first`."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first} |"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def _paired(a: dict, b: dict):
    shared = sorted(set(a) & set(b))
    d = np.array([b[s] - a[s] for s in shared])
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean(), d.mean() - half, d.mean() + half, stats.ttest_1samp(d, 0.0).pvalue


def _welch(a: dict, b: dict):
    x, y = np.array(list(a.values())), np.array(list(b.values()))
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    df = (va + vb) ** 2 / (va ** 2 / (len(x) - 1) + vb ** 2 / (len(y) - 1))
    diff, half = y.mean() - x.mean(), stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    return diff, diff - half, diff + half, stats.ttest_ind(y, x, equal_var=False).pvalue


def test_the_shared_cells_show_the_differences_computed_independently(page):
    md = page.with_name("summary.md").read_text(encoding="utf-8")
    rows = _rows(md, "cell")
    assert set(rows) == {"dppo δ=0.1", "dppo δ=0.2"}  # drpo only in A, grpo only in B
    for delta, method, test in ((0.1, _paired, "paired over 3 shared seeds (0, 1, 2)"), (0.2, _welch, "Welch (4 vs 3 seeds)")):
        a, b = FINALS[("A", "dppo", delta)], FINALS[("B", "dppo", delta)]
        diff, low, high, p = method(a, b)
        row = rows[f"dppo δ={delta}"]
        assert int(row[1]) == len(a) and float(row[2]) == pytest.approx(np.mean(list(a.values())), abs=6e-4)
        assert int(row[4]) == len(b) and float(row[5]) == pytest.approx(np.mean(list(b.values())), abs=6e-4)
        assert float(row[7]) == pytest.approx(diff, abs=6e-4)
        shown_low, shown_high = (float(v) for v in row[8].strip("[]").split(","))
        assert shown_low == pytest.approx(low, abs=6e-4) and shown_high == pytest.approx(high, abs=6e-4)
        assert row[9] == test and float(row[10]) == pytest.approx(p, abs=6e-4)
    assert rows["dppo δ=0.2"][11] == "B lower"  # Welch p ≈ 0.01, Holm over 2 cells at 0.05


def test_the_page_lists_setting_differences_and_what_each_sweep_lacks(page):
    md = page.with_name("summary.md").read_text(encoding="utf-8")
    settings = _rows(md, "setting")
    assert settings["trainer.lr"][1:] == ["(not recorded)", "0.002"]
    assert settings["seed"][1:] == ["0, 1, 2, 3", "0, 1, 2, 7, 10, 11, 12"]
    assert settings["algo.name"][1:] == ["dppo, drpo", "dppo, grpo"]
    assert "algo.eps_high" not in settings  # grpo's parameter: its absence from A is the objective's, listed apart
    assert "- Only in A: objective drpo." in md and "- Only in B: objective grpo." in md
    assert "Cells only in A (2 runs): drpo δ=0.1 (2 runs)." in md and "Settings only B's runs record: trainer.lr." in md


def test_each_sweeps_verdicts_are_shown_side_by_side(page):
    md = page.with_name("summary.md").read_text(encoding="utf-8")
    verdicts = _rows(md, "report")
    assert "sensitivity" in verdicts  # keyed by report: one row per (report, subject); here dppo's
    row = verdicts["sensitivity"]
    assert row[1] == "dppo" and row[2] != "—" and row[4] != "—" and row[3].startswith("dppo: ")
    assert "the tags of its MLflow parent run" in md


def test_the_figure_has_its_pdf_twin_and_the_page_loads_it(page):
    sources = check_page(page)
    assert sources == ["compare_cells.png"]
    assert page.with_name("compare_cells.pdf").read_bytes()[:5] == b"%PDF-"
    assert 'href="compare_cells.pdf"' in page.read_text(encoding="utf-8")


def test_default_folder_under_the_output_root_and_kind_refused(sweeps, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert main([A, B, "--tracking-uri", sweeps]) == 0
    printed = capsys.readouterr().out.split()[-1]
    assert printed == str(tmp_path / "reports" / "compare" / f"{A.replace('/', '_')}_vs_{B.replace('/', '_')}"
                          / "index.html")
    assert main([A, B, "--tracking-uri", sweeps]) == 0  # rebuilt in place
    assert main([A, B, "--tracking-uri", sweeps, "--kind", "overview"]) == EXIT_BAD_INPUT
    assert "--kind does not apply" in capsys.readouterr().err
