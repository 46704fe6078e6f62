"""Which sweep re-running a command continues (harness/sweeps/continued.py): the latest stopped sweep of the same
command (the same overrides, in any order), never a sweep whose jobs all ended, one held by a live process, one
of another command, nor any with `--new-sweep` or an explicit `hydra.sweep.dir`."""
from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hydra.core.utils import setup_globals
from omegaconf import OmegaConf

from harness.config.flags import Options
from hydra_plugins.harness_launcher.arguments import read_flags
from harness.infra.claim import claim, release
from harness.sweeps.continued import continue_stopped_sweep, fingerprint, record_command, stopped_sweep

COMMAND = ["algo=dppo", "seed=0,1,2,3", "debug=quick"]
JOB_OVERRIDES = [["algo=dppo", f"seed={seed}", "debug=quick"] for seed in range(4)]


def sweep_config(root: Path, task=COMMAND, sweep_dir=None) -> OmegaConf:
    stamped = f"{root}/multirun/${{now:%Y-%m-%d}}/${{now:%H-%M-%S-%f}}"
    return OmegaConf.create({"hydra": {"sweep": {"dir": sweep_dir or stamped, "subdir": "${hydra.job.num}"},
                                       "overrides": {"task": list(task), "hydra": ["hydra.mode=MULTIRUN"]}},
                             "launcher": {"detach": False}})


def make_sweep(root: Path, name: str, statuses, task=COMMAND, started: float = 0.0) -> Path:
    """A sweep folder of 4 jobs made by `task`; statuses: one per job folder made (None: no status yet)."""
    folder = root / "multirun" / "2026-01-01" / name
    folder.mkdir(parents=True)
    record_command(folder, sweep_config(root, task), 4)
    record = json.loads((folder / "command.json").read_text())
    (folder / "command.json").write_text(json.dumps({**record, "started": started}))
    for index, status in enumerate(statuses):
        job = folder / str(index)
        (job / ".hydra").mkdir(parents=True)
        (job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(JOB_OVERRIDES[index]))
        if status:
            (job / "status.txt").write_text(status + "\n")
    return folder


def jobs_of(root: Path) -> list:
    config = sweep_config(root)
    return [SimpleNamespace(overrides=o, config=OmegaConf.create({"hydra": OmegaConf.to_container(config.hydra)}))
            for o in JOB_OVERRIDES]


@pytest.fixture(autouse=True)
def hydra_resolvers():
    setup_globals()  # Hydra's ${now:} resolver


def test_the_same_overrides_in_any_order_are_the_same_command(tmp_path):
    same = fingerprint(sweep_config(tmp_path, ["seed=0,1,2,3", "debug=quick", "algo=dppo"]))
    assert fingerprint(sweep_config(tmp_path)) == same
    assert fingerprint(sweep_config(tmp_path, ["algo=dppo", "seed=0,1,2", "debug=quick"])) != same


def test_the_latest_stopped_sweep_of_the_same_command_is_continued(tmp_path):
    make_sweep(tmp_path, "older", ["FINISHED", "KILLED", "KILLED", "KILLED"], started=1)
    newer = make_sweep(tmp_path, "newer", ["FINISHED", "KILLED", None], started=2)  # one job never started
    make_sweep(tmp_path, "other", ["KILLED"] * 4, task=["algo=drpo", "seed=0,1,2,3", "debug=quick"], started=3)
    make_sweep(tmp_path, "ended", ["FINISHED", "FAILED", "FINISHED", "FINISHED"], started=4)
    assert stopped_sweep(sweep_config(tmp_path)) == newer


def test_a_sweep_whose_jobs_all_ended_is_not_continued(tmp_path):
    make_sweep(tmp_path, "done", ["FINISHED", "FINISHED", "FAILED", "FINISHED"])
    assert stopped_sweep(sweep_config(tmp_path)) is None
    make_sweep(tmp_path, "short", ["FINISHED", "FINISHED", "FINISHED"])  # its last job never started
    assert stopped_sweep(sweep_config(tmp_path)).name == "short"


def test_no_sweep_is_continued_with_new_sweep_an_explicit_folder_or_a_live_holder(tmp_path):
    folder = make_sweep(tmp_path, "stopped", ["KILLED"] * 4)
    assert stopped_sweep(sweep_config(tmp_path, sweep_dir=str(tmp_path / "mine"))) is None
    claim(folder, "sweep folder")
    try:
        assert stopped_sweep(sweep_config(tmp_path)) is None, "a sweep running now is not stopped"
    finally:
        release(folder)
    assert stopped_sweep(sweep_config(tmp_path), new_sweep=True) is None
    assert stopped_sweep(sweep_config(tmp_path)) == folder


def test_a_continued_sweep_runs_in_its_folder(tmp_path, capsys):
    folder = make_sweep(tmp_path, "stopped", ["FINISHED", "KILLED", "KILLED"])
    config, jobs = sweep_config(tmp_path), jobs_of(tmp_path)
    assert continue_stopped_sweep(config, jobs) == folder
    assert capsys.readouterr().out.count(f"sweep: continuing the stopped sweep {folder} (1 of 4 runs FINISHED") == 1
    assert config.hydra.sweep.dir == str(folder) and all(j.config.hydra.sweep.dir == str(folder) for j in jobs)
    assert f"hydra.sweep.dir={folder}" in config.hydra.overrides.hydra  # a job composed again lands there too


def test_a_folder_whose_jobs_are_other_jobs_is_not_continued(tmp_path, capsys):
    folder = make_sweep(tmp_path, "stopped", ["KILLED", "KILLED"])
    (folder / "1" / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(["algo=dppo", "seed=9"]))
    config = sweep_config(tmp_path)
    assert continue_stopped_sweep(config, jobs_of(tmp_path)) is None
    assert f"sweep: not continuing {folder}" in capsys.readouterr().out
    assert "${now:" in OmegaConf.to_container(config.hydra.sweep, resolve=False)["dir"]  # a new sweep


def test_the_new_sweep_flag_is_no_override_and_no_environment_variable():
    before = dict(os.environ)
    assert read_flags(["-m", "--new-sweep", "seed=0,1"]) == (Options(new_sweep=True), ["-m", "seed=0,1"])
    assert dict(os.environ) == before


def test_minus_v_does_not_make_another_command(tmp_path):
    """-v is Hydra's `hydra.verbose`: re-running a stopped sweep's command with or without it continues it."""
    quiet = sweep_config(tmp_path)
    loud = sweep_config(tmp_path)
    loud.hydra.overrides.hydra.append("hydra.verbose=harness")
    assert fingerprint(loud) == fingerprint(quiet)


def test_a_stopped_ensemble_sweep_continues_with_another_packing(run_harness):
    """Issue 39 item 10: `launcher.members` packs runs into processes, it does not change what they compute; a
    sweep stopped as 2-member ensembles (its process killed at step 3) is continued by the same command with
    `launcher.members=1`, in its own folder (it was refused as "another job", or started a new sweep)."""
    sweep = ("multirun", "seed=4,5", "debug=quick", "trainer.steps=4", "trainer.checkpoint_every=2")
    killed = run_harness(*sweep, "launcher.members=2", env={"HARNESS_FAULT_KILL_AT_STEP": "3"})
    assert killed.returncode == -9, killed.stderr[-2000:]
    (folder,) = run_harness.root.glob("multirun/*/*")
    saved = {job.name: json.loads((job / "checkpoints" / "last.json").read_text())["step"]
             for job in folder.glob("[0-1]") if (job / "checkpoints" / "last.json").is_file()}
    assert saved, "no run had a checkpoint when its process was killed"
    again = run_harness(*sweep, "launcher.members=1", check=True)
    assert f"sweep: continuing the stopped sweep {folder}" in again.stdout, again.stdout[-3000:]
    assert list(run_harness.root.glob("multirun/*/*")) == [folder], "no second sweep folder"
    assert [(job / "status.txt").read_text().strip() for job in sorted(folder.glob("[0-1]"))] == ["FINISHED"] * 2
    for name, step in saved.items():  # each run with a checkpoint went on from it
        assert f"resumed from its checkpoint at step {step} " in (folder / name / "job.log").read_text(), name
    # the same folder named explicitly takes its jobs on any packing too (a re-run that skips what FINISHED)
    explicit = run_harness(*sweep, "launcher.members=2", f"hydra.sweep.dir={folder}", check=True)
    assert explicit.stdout.count("FINISHED earlier in this sweep") == 2, explicit.stdout[-3000:]
