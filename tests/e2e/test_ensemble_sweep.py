"""Sweeps train their runs as ensembles from the command line, and each run stays a first-class run: the
same metrics as alone, its own MLflow run under the sweep's parent, KILLED on SIGTERM, resumed from its own
checkpoint after a crash, skipped when an identical run already FINISHED."""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from mlflow_store import runs_of

QUICK = ("debug=quick", "trainer.steps=3", "trainer.eval_every=2", "trainer.checkpoint_every=2")
GRID = ("algo=dppo,drpo", "seed=0,1")


def per_run(folder: Path) -> dict:
    """(algo, seed) -> {step: metrics without timings} of each run folder of a sweep."""
    import yaml

    found = {}
    for metrics in sorted(folder.glob("*/metrics.jsonl")):
        cfg = yaml.safe_load((metrics.parent / "config.yaml").read_text())
        steps: dict = {}
        for line in metrics.read_text().splitlines():
            record = json.loads(line)
            steps.setdefault(record["step"], {}).update(
                {k: v for k, v in record.items() if not k.startswith(("perf/", "warmstart/"))})
        found[(cfg["algo"]["name"], cfg["seed"])] = steps
    return found


def test_a_sweep_trains_ensembles_whose_runs_match_their_runs_alone(run_harness, tmp_path):
    # fp32: chosen when a bf16 rollout rounded by the ensemble's size (objective/abs_pi_minus_nu 0.00521
    # together against 0.00535 alone at step 3); since issue 36 a member is bit for bit its run alone
    together = run_harness("-m", *GRID, *QUICK, "precision=fp32", f"hydra.sweep.dir={tmp_path / 'together'}",
                           "experiment_name=together", check=True)
    assert "launching 4 jobs (launcher=local): 2 ensembles of 2 runs on 2 worker processes" in together.stdout
    assert "4 runs: 4 finished" in together.stdout
    alone = run_harness("-m", *GRID, *QUICK, "precision=fp32", "launcher.members=1",
                        f"hydra.sweep.dir={tmp_path / 'alone'}",
                        "experiment_name=alone", check=True)
    (launch,) = [line for line in alone.stdout.splitlines() if line.startswith("launching ")]
    said = launch.split("; job list: ")[0]  # (the folder's name holds the word)
    assert said == "launching 4 jobs (launcher=local): 4 runs, each alone, one after another in this process"
    a, b = per_run(tmp_path / "together"), per_run(tmp_path / "alone")
    assert a.keys() == b.keys() and len(a) == 4
    for run, steps in a.items():
        assert steps.keys() == b[run].keys() == {0, 1, 2, 3}
        for step, metrics in steps.items():
            for key, value in metrics.items():
                assert abs(value - b[run][step][key]) <= 1e-4, (run, step, key, value, b[run][step][key])
    _, runs = runs_of(run_harness.root, "together")
    _, parents = runs_of(run_harness.root, "together", role="parent")
    assert len(runs) == 4 and all(r.info.status == "FINISHED" for r in runs)
    assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parents[0].info.run_id}
    # each run records the ensemble it trained in: two ensembles of 2, each run naming its partner's folder
    tags = {Path(r.data.tags["harness.run_dir"]).name: r.data.tags for r in runs}
    assert {t["harness.ensemble_size"] for t in tags.values()} == {"2"}
    ensembles = {}
    for name, t in tags.items():
        ensembles.setdefault(t["harness.ensemble_id"], set()).add(name)
        assert t["harness.device"] == "cpu"
        assert t["harness.ensemble_peers"] in tags and t["harness.ensemble_peers"] != name
    assert sorted(len(names) for names in ensembles.values()) == [2, 2]
    _, lone = runs_of(run_harness.root, "alone")
    assert {(r.data.tags["harness.ensemble_size"], r.data.tags["harness.ensemble_peers"]) for r in lone} == {("1", "-")}


def test_sigterm_ends_every_member_killed(run_harness, tmp_path):
    folder = tmp_path / "sweep"
    driver = subprocess.Popen(run_harness.argv("-m", *GRID, "debug=quick", "trainer.steps=400",
                                               "trainer.checkpoint_every=100", f"hydra.sweep.dir={folder}"),
                              cwd=tmp_path, env=run_harness.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        deadline = time.monotonic() + 300
        while not all((folder / job / "metrics.jsonl").is_file() for job in "0123"):
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()[1][-3000:]
            time.sleep(0.5)
        time.sleep(3)
        driver.send_signal(signal.SIGTERM)
        driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
    deadline = time.monotonic() + 60
    while not all((folder / job / "status.txt").is_file() for job in "0123") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [(folder / job / "status.txt").read_text().strip() for job in "0123"] == ["KILLED"] * 4
    _, runs = runs_of(run_harness.root)
    assert sorted(r.info.status for r in runs) == ["KILLED"] * 4


def test_a_crashed_ensemble_resumes_each_run_from_its_checkpoint(run_harness, tmp_path):
    # one worker, one ensemble of four: the crash (a SIGKILL after step 2's checkpoint) stops all four at once
    steps = ("debug=quick", "trainer.steps=4", "trainer.eval_every=2", "trainer.checkpoint_every=2",
             "launcher=local_parallel", "launcher.workers=1")
    run_harness("-m", *GRID, *steps, f"hydra.sweep.dir={tmp_path / 'reference'}", "experiment_name=reference",
                check=True)
    folder = tmp_path / "crashed"
    crashed = run_harness("-m", *GRID, *steps, f"hydra.sweep.dir={folder}", "experiment_name=crashed",
                          env={"HARNESS_FAULT_KILL_AT_STEP": "2"})
    assert crashed.returncode != 0
    assert all(json.loads((folder / job / "checkpoints" / "last.json").read_text())["step"] == 2 for job in "0123")
    resumed = run_harness("-m", *GRID, *steps, f"hydra.sweep.dir={folder}", "experiment_name=crashed", check=True)
    assert resumed.stdout.count("resumed from step 2 of 4") == 4, resumed.stdout[-3000:]  # once per run
    reference, again = per_run(tmp_path / "reference"), per_run(folder)
    for run in reference:
        assert again[run][4] == reference[run][4], run
    _, runs = runs_of(run_harness.root, "crashed")
    assert len(runs) == 4 and all(r.info.status == "FINISHED" for r in runs)


def test_a_partly_finished_grid_skips_the_finished_runs(run_harness, tmp_path):
    run_harness("-m", "seed=0,1", *QUICK, check=True)
    again = run_harness("-m", "seed=0,1,2,3", *QUICK, check=True)
    assert again.stdout.count("SKIPPED, an identical config already FINISHED") == 2
    assert "4 runs: 2 finished, 0 failed, 0 killed, 2 skipped" in again.stdout


def test_submitit_trains_one_ensemble_per_job_with_launcher_members(run_harness, tmp_path):
    folder = tmp_path / "sweep"
    proc = run_harness("-m", "launcher=submitit_local", "launcher.members=2", "seed=0,1", "debug=quick",
                       "trainer.steps=2", f"hydra.sweep.dir={folder}", check=True)
    assert "2 runs: 2 finished" in proc.stdout
    submitted = json.loads((folder / "jobs.json").read_text())
    assert [entry["job_num"] for entry in submitted] == [0, 1]
    assert len({entry["job_id"] for entry in submitted}) == 1, "both runs train in one submitit job"
    assert [(folder / job / "status.txt").read_text().strip() for job in "01"] == ["FINISHED"] * 2
