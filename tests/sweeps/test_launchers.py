"""The local launchers run every job of a sweep, each in its own process, and report failures truthfully;
bad launcher input is refused before anything starts."""
from __future__ import annotations

import json

import pytest

from harness.cli import run_cli


@pytest.mark.slow  # end to end: a real sweep through the command line
def test_local_parallel_runs_jobs_in_two_workers(run_harness):
    proc = run_harness("multirun", "launcher=local_parallel", "launcher.workers=2", "algo=dppo,drpo",
                       "model.path=null,/nonexistent/model", "debug=quick")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "4 runs: 2 finished, 2 failed" in proc.stdout
    jobs = [json.loads(p.read_text()) for p in run_harness.root.glob("multirun/*/*/*/job.json")]
    assert len(jobs) == 4
    assert len({j["pid"] for j in jobs}) == 2, "two worker processes shared the four jobs"


@pytest.mark.slow  # end to end: a real sweep through the command line
def test_submitit_local_runs_a_sweep(run_harness):
    proc = run_harness("multirun", "launcher=submitit_local", "algo=dppo,drpo", "debug=quick", check=True)
    assert "2 runs: 2 finished" in proc.stdout
    jobs = json.loads(next(run_harness.root.glob("multirun/*/*/jobs.json")).read_text())
    assert len(jobs) == 2 and all(j["cluster"] == "local" for j in jobs)


@pytest.mark.parametrize("overrides,expected", [
    (["launcher=kubernetes"], ["launcher=kubernetes", "local_parallel", "slurm"]),
    (["launcher=slurm", "launcher.profile=nosuch"], ["launcher.profile='nosuch'", "test_cluster"]),
    (["multirun", "trainer.no_such_key=1,2"], ["trainer.no_such_key"]),
    (["launcher=local_parallel", "launcher.workers=0"], ["launcher.workers", ">= 1"]),
])
def test_bad_launcher_input_is_refused(overrides, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert run_cli(overrides) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    for fragment in expected:
        assert fragment in err, (fragment, err)
    assert not (tmp_path / "multirun").exists()


def test_unknown_named_sweep_and_empty_grid(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert run_cli(["sweep", "no_such_sweep"]) == 2
    assert "no_such_sweep" in capsys.readouterr().err
    sweeps = tmp_path / "mine"
    sweeps.mkdir()
    (sweeps / "empty.yaml").write_text("hypothesis: h\nreports: [overview]\ngrids:\n  - {seed: []}\n")
    (sweeps / "typo.yaml").write_text("hypothesis: h\nreports: [overview]\ngrids:\n  - {trainer.stepz: [1, 2]}\n")
    monkeypatch.setenv("HARNESS_SWEEPS", str(sweeps))
    assert run_cli(["sweep", "empty"]) == 2
    assert "empty" in capsys.readouterr().err
    assert run_cli(["sweep", "typo"]) == 2
    assert "trainer.stepz" in capsys.readouterr().err
    assert not (tmp_path / "multirun").exists()


@pytest.mark.slow  # end to end: a real sweep through the command line
def test_named_sweep_runs_its_grids_into_one_folder(run_harness, tmp_path, monkeypatch):
    sweeps = run_harness.root / "sweeps"
    sweeps.mkdir()
    (sweeps / "tiny.yaml").write_text(
        "hypothesis: two grids share one folder\nreports: [overview]\noverrides: [debug=quick]\n"
        "grids:\n  - {algo: dppo, delta: [0.1, 0.2]}\n  - {algo: drpo}\n")
    proc = run_harness("sweep", "tiny", check=True)
    folder = next(run_harness.root.glob("multirun/tiny/*"))
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("g")) == ["g0_0", "g0_1", "g1_0"]
    assert "two grids share one folder" in proc.stdout
    again = run_harness("sweep", "tiny", check=True)
    assert "2 skipped" in again.stdout and "1 skipped" in again.stdout, "finished configs are not rerun"
    second = sorted(run_harness.root.glob("multirun/tiny/*"))[-1]
    assert second != folder
    overview = (second / "reports" / "overview" / "summary.md").read_text()
    assert "3 runs: 3 finished" in overview, "the skipped jobs' reports use their finished twins"


@pytest.mark.parametrize("workers, configured, params, expected", [
    (1, 1, {}, []),                                       # a lone worker keeps trainer.torch_threads
    (1, 4, {}, []),
    (2, 1, {}, []),                                       # 1 <= 4 cores // 2: nothing to cap
    (2, 4, {}, ["trainer.torch_threads=2"]),              # capped at the worker's share of the cores
    (8, 1, {}, []),
    (2, 1, {"threads_per_worker": 3}, ["trainer.torch_threads=3"]),
])
def test_local_parallel_thread_share(monkeypatch, workers, configured, params, expected):
    from omegaconf import OmegaConf

    from harness.launchers.local_parallel import LocalParallelLauncher

    monkeypatch.setattr("os.cpu_count", lambda: 4)
    launcher = LocalParallelLauncher(workers=workers, **params)
    launcher.config = OmegaConf.create({"trainer": {"torch_threads": configured}})
    extra = [o for o in launcher.job_overrides(["seed=1"]) if o.startswith("trainer.torch_threads")]
    assert extra == expected
    assert launcher.job_overrides(["seed=1", "trainer.torch_threads=5"])[:2] == ["seed=1", "trainer.torch_threads=5"]
