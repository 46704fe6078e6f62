"""Skip-finished takes a FINISHED run as done only when the same code made it (tag harness.code_version);
a run made by other code is rerun unless `--reuse-across-versions` is given; the overview report names
each run's code version."""
from __future__ import annotations

import sqlite3

from harness.infra.code_version import code_version

RUN = ("debug=quick", "trainer.steps=1", "trainer.prompts_per_step=2")


def finished_runs(root) -> list:
    with sqlite3.connect(root / "mlruns.db") as conn:
        return [r[0] for r in conn.execute("SELECT run_uuid FROM runs WHERE status = 'FINISHED' ORDER BY start_time")]


def test_a_run_made_by_other_code_is_not_taken_as_done(run_harness, tmp_path):
    from mlflow.tracking import MlflowClient

    run_harness(*RUN, check=True)
    (first,) = finished_runs(run_harness.root)
    client = MlflowClient(f"sqlite:///{run_harness.root / 'mlruns.db'}")
    assert client.get_run(first).data.tags["harness.code_version"] == code_version()

    same = run_harness(*RUN, check=True)
    assert "SKIPPED" in same.stdout and len(finished_runs(run_harness.root)) == 1

    client.set_tag(first, "harness.code_version", "0123456789ab")  # as if an older checkout had made it
    other = run_harness(*RUN, check=True)
    assert "SKIPPED" not in other.stdout and len(finished_runs(run_harness.root)) == 2, other.stdout

    client.set_tag(finished_runs(run_harness.root)[1], "harness.code_version", "0123456789ab")
    reused = run_harness(*RUN, "--reuse-across-versions", check=True)
    assert "SKIPPED" in reused.stdout and len(finished_runs(run_harness.root)) == 2, reused.stdout


def test_overview_report_names_each_runs_code(run_harness):
    run_harness("-m", *RUN, "seed=1,2", check=True)
    (sweep,) = (run_harness.root / "multirun").glob("*/*")
    page = (sweep / "reports" / "overview" / "index.md")
    text = page.read_text() if page.is_file() else "\n".join(p.read_text() for p in sweep.rglob("reports/**/*.md"))
    assert code_version() in text
