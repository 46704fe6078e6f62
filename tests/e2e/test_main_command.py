"""The README's main command, in its deciding form (`multirun ... seed=auto budget.*`), with a small run budget in
place of its minutes: a test of the harness, never of a training outcome. Its rounds happen (2 seeds per value,
too few for any test at α, then 2 fresh ones), each look's α is recorded and spent once, every run is in MLflow
under one parent run, and the sensitivity verdicts on the page, in the terminal and on the parent run are the
ones the statistics give on the runs in the store, at the last look's α."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from mlflow_store import runs_of

pytestmark = pytest.mark.slow

# the deciding form's rounds, whatever the runs learn: 2 seeds per value cannot decide (2^-2 ≥ α), 4 is the cap
SMALL_BUDGET = ["budget.runs=24", "budget.per_round=2"]


def readme_main_command() -> list:
    """The overrides of the README's first command (`... python -m harness multirun <overrides>`)."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    words = shlex.split(block.split("-m harness", 1)[1])
    assert words[0] == "multirun" and "seed=auto" in words, block
    return words


def test_main_command_runs_its_rounds_and_its_verdicts_agree_with_the_store(run_harness):
    from harness.reports.results.collect import collect
    from harness.reports.results.locate import from_sweep_dir
    from harness.sweeps import report_looks

    command = [w for w in readme_main_command() if not w.startswith("budget.")] + SMALL_BUDGET
    proc = run_harness(*command, check=True, timeout=1800)
    out = proc.stdout
    assert "sweep auto: round 1: seeds 0..1" in out and "sweep auto: round 2: seeds 2..3" in out, out
    assert "look 1 (n=2 seeds per value" in out and "missing: dppo: " in out, out  # 2 seeds decide nothing
    client, runs = runs_of(run_harness.root)
    assert len(runs) == 24 and all(r.info.status == "FINISHED" for r in runs)
    _, parents = runs_of(run_harness.root, role="parent")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}
    assert sorted((r.data.params["algo.name"], float(r.data.params["algo.delta"]), int(r.data.params["seed"]))
                  for r in runs) == sorted((a, d, s) for a in ("dppo", "drpo") for d in (0.1, 0.15, 0.2) for s in range(4))

    sweep_dir = next((run_harness.root / "multirun" / "auto").glob("*/adaptive.yaml")).parent
    state = yaml.safe_load((sweep_dir / "adaptive.yaml").read_text())
    # fresh seeds each round: round 1's job folders hold seeds 0 and 1, round 2's seeds 2 and 3
    for tag, seeds in (("r1", {0, 1}), ("r2", {2, 3})):
        folders = list(sweep_dir.glob(f"g0{tag}_*"))
        assert len(folders) == 12, folders
        assert {yaml.safe_load((f / ".hydra" / "config.yaml").read_text())["seed"] for f in folders} == seeds
    looks = state["looks"]
    assert [look["seeds"] for look in looks] == [2, 4] and state["done"] == 4 and state["final"] is True
    assert [look["alpha"] for look in looks] == pytest.approx([report_looks.look_alpha(2, 0, 4, 0.05),
                                                               report_looks.look_alpha(4, 2, 4, 0.05)])
    assert sum(look["alpha"] for look in looks) == pytest.approx(0.05)  # α spent once over the looks
    assert f"look 2 (n=4 seeds per value, α={looks[-1]['alpha']:.2g})" in out, out

    # the evidence, computed here from the store at the last look's α, is what the page, terminal and parent say
    data = collect(from_sweep_dir(sweep_dir, f"sqlite:///{run_harness.root / 'mlruns.db'}"))
    judged = {j.name: j.verdict for j in report_looks.judge(data, looks[-1]["alpha"])}
    assert set(judged) == {"dppo", "drpo"}
    page = {v["subject"]: v for v in json.loads((sweep_dir / "reports" / "verdicts.json").read_text())
            if v["report"] == "sensitivity"}
    assert {s: v["word"] for s, v in page.items()} == {s: v.word for s, v in judged.items()}
    assert all(page[s]["decided"] == v.decided for s, v in judged.items())
    assert f"α {looks[-1]['alpha']:g}" in (sweep_dir / "reports" / "sensitivity" / "summary.md").read_text()
    tags = client.get_run(parents[0].info.run_id).data.tags
    for subject, verdict in page.items():
        assert tags[f"harness.verdict.sensitivity.{subject}"] == verdict["word"]
        assert f"sensitivity · {verdict['short']}" in out, out  # the terminal's last lines
    index = (sweep_dir / "reports" / "index.html").read_text()
    assert all(html_word in index for html_word in (v["word"] for v in page.values()))
    assert "stopped — budget spent" in out or "stopped — every verdict decided" in out, out
