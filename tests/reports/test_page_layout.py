"""Pages lead with the answer, read from the HTML of real reports of synthetic sweeps (a real SQLite store):
a report's page links back to the sweep's index above its title; its first section is the verdict (each box
labelled `decided` or `not decided`) with what to run next and the rest of the kind's own Verdict section;
the method follows, folded under "How this was decided", as whole sentences; a claim page's verdict sits above
its tests. The compare page, which no index lists, has no link up."""
from __future__ import annotations

import re

from harness.reports.cli import main
from harness.reports.results.synthetic import FakeRun, write_sweep

SENSITIVITY, CLAIM = "2026-09-01/00-00-00-000000", "2026-09-02/00-00-00-000000"
BOX = re.compile(r'<p class="(verdict(?: undecided)?)"><span class="label">([^<]+)</span> ')


def _main_body(html: str) -> str:
    return html[html.index("<main>") + len("<main>"):html.index("</main>")].lstrip()


def _check_leads_with_answer(html: str) -> str:
    """The checks every deciding page passes; returns its body."""
    assert re.search(r'<header><nav><a href="\.\./index\.html" class="up">[^<]*all reports of this sweep</a></nav>'
                     r'<h1>', html), html[html.index("<header"):][:400]
    body = _main_body(html)
    assert body.startswith('<section class="answer"><h2>Verdict</h2>'), body[:400]
    answer = body[:body.index("</section>")]
    boxes = BOX.findall(answer)
    assert boxes and all(label == {"verdict": "decided", "verdict undecided": "not decided"}[cls]
                         for cls, label in boxes), boxes
    assert len(BOX.findall(body)) == len(boxes), "every verdict box is in the answer section"
    fold = re.search(r'<details class="how"><summary>How this was decided</summary>(.*?)</details>', body, re.S)
    assert fold and body.index("</section>") < fold.start(), body[:2000]
    methods = re.findall(r'<p class="method">(.)', body)
    assert methods and len(methods) == len(re.findall(r'<p class="method">', fold.group(1))), "method: in the fold"
    assert all(first.isupper() for first in methods), methods  # sentences, not a clause such as "two-sided …"
    return body


def test_sensitivity_page_opens_with_its_verdict_and_folds_its_method(shared_store, tmp_path):
    uri, _ = shared_store
    write_sweep(uri, [FakeRun("dppo", {"delta": d}, seed=s) for d in (0.1, 0.2) for s in range(3)], SENSITIVITY)
    assert main([SENSITIVITY, "--tracking-uri", uri, "--out", str(tmp_path), "--kind", "sensitivity"]) == 0
    body = _check_leads_with_answer((tmp_path / "sensitivity" / "index.html").read_text(encoding="utf-8"))
    answer = body[:body.index("</section>")]
    assert '<p class="action">Undecided: run ' in answer  # what decides it, with the verdict
    assert "Typical seed: " in answer and "Failures: " in answer  # both parts of the two-part verdict
    assert "<p>dppo: failed runs (gain below " in answer  # the rest of the kind's own Verdict section came along
    assert body.count("<h2>Verdict</h2>") == 1, "one Verdict: the kind's own Verdict section joins the page's"
    assert body.index("<h2>What the threshold did</h2>") > body.index("</details>")
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert 'class="up"' not in index and '<span class="label">not decided</span> <a href="sensitivity/' in index


def test_claim_page_has_its_verdict_box_above_its_tests(shared_store, tmp_path):
    uri, _ = shared_store
    steps, evals = list(range(1, 21)), [0, 5, 10, 15, 20]
    runs = [FakeRun(o, seed=s, metrics={
        "objective/lowprob_masked_frac": (steps, [(0.05 if o == "bandpo" else 0.3) + 0.01 * s] * len(steps)),
        "objective/lowprob_frac": (steps, [0.3] * len(steps)),
        "train/entropy": (steps, [1.2 - (1.0 - 0.02 * s) * i / (len(steps) - 1) for i in range(len(steps))]),
        "eval/accuracy": (evals, [0.3, 0.5, 0.7, 0.95, 1.0 - 0.01 * s])}) for o in ("grpo", "bandpo") for s in range(5)]
    write_sweep(uri, runs, CLAIM, steps=20, eval_every=5)
    assert main([CLAIM, "--tracking-uri", uri, "--out", str(tmp_path), "--kind", "claim_bandpo"]) == 0
    body = _check_leads_with_answer((tmp_path / "claim_bandpo" / "index.html").read_text(encoding="utf-8"))
    assert "Verdict: " in body[:body.index("</section>")]
    tests = re.search(r"<h2>Declared tests</h2>|<h2>Preconditions", body)
    assert tests and tests.start() > body.index("</details>"), body[:3000]


def test_compare_page_has_no_link_up(shared_store, tmp_path):
    uri, _ = shared_store
    a, b = "2026-09-03/00-00-00-000000", "2026-09-04/00-00-00-000000"
    for sweep in (a, b):
        write_sweep(uri, [FakeRun("dppo", {"delta": d}, seed=s) for d in (0.1, 0.2) for s in range(2)], sweep)
    assert main([a, b, "--tracking-uri", uri, "--out", str(tmp_path / "compare")]) == 0
    html = (tmp_path / "compare" / "index.html").read_text(encoding="utf-8")
    assert 'class="up"' not in html and "<h1>" in html
