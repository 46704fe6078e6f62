"""Each job of a run or sweep is composed once, by Hydra, and validated once: a single run by the command line,
a sweep's jobs by the launcher (through the config loader Hydra hands it, every job before any starts), and the
job receives its validated spec with its config."""
from __future__ import annotations

import collections

import pytest

from harness.cli import run_cli

FAST = ["debug=quick", "trainer.steps=1", "tracking=none"]


@pytest.fixture
def counted(monkeypatch):
    """How often Hydra composed a config (and from where), and how often a config was validated."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    import harness.launchers.compose as compose
    import harness.config.validate as validate_module

    counts = collections.Counter()
    load, validate = ConfigLoaderImpl.load_configuration, validate_module.validate

    def counting_load(self, *args, **kwargs):
        counts["compositions"] += 1
        return load(self, *args, **kwargs)

    def counting_validate(*args, **kwargs):
        counts["validations"] += 1
        return validate(*args, **kwargs)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", counting_load)
    monkeypatch.setattr(validate_module, "validate", counting_validate)
    monkeypatch.setattr(compose, "validate", counting_validate)
    return counts


def test_a_run_is_composed_once_and_validated_once(counted, tmp_path, monkeypatch, warm_cache):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert run_cli([*FAST, "algo=drpo", "delta=0.3", f"cache_dir={warm_cache}"]) == 0
    assert counted == {"compositions": 1, "validations": 1}
    run_dir = next(tmp_path.glob("outputs/*/*"))
    assert "delta: 0.3" in (run_dir / "config.yaml").read_text()


def test_a_sweep_composes_and_validates_each_job_once(counted, tmp_path, monkeypatch, warm_cache):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    assert run_cli(["multirun", *FAST, "algo=drpo", "delta=0.1,0.3", f"cache_dir={warm_cache}"]) == 0
    assert counted["validations"] == 2
    # two jobs, plus the sweep's own config: checked by the command line (one line for what Hydra would refuse)
    # and composed by Hydra to start the multirun (twice in Hydra 1.3)
    assert counted["compositions"] <= 2 + 3
    for folder in sorted(tmp_path.glob("multirun/*/*/[01]")):
        assert (folder / "status.txt").read_text().strip() == "FINISHED"


@pytest.mark.slow  # end to end: a sweep through two spawned workers
def test_the_launcher_composes_each_job_with_its_own_settings(counted, tmp_path, monkeypatch, warm_cache):
    """local_parallel adds each job's share of torch threads: the job is composed once, with them, and its
    folder records them as Hydra records any override."""
    import yaml

    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    assert run_cli(["multirun", *FAST, "launcher=local_parallel", "launcher.workers=2", "launcher.members=1",
                    "hydra.launcher.threads_per_worker=3", "seed=1,2", f"cache_dir={warm_cache}"]) == 0
    assert counted["validations"] == 2 and counted["compositions"] <= 2 + 3
    folders = sorted(tmp_path.glob("multirun/*/*/[01]"))
    assert len(folders) == 2
    for folder, seed in zip(folders, (1, 2)):
        overrides = yaml.safe_load((folder / ".hydra" / "overrides.yaml").read_text())
        assert overrides[-2:] == ["trainer.torch_threads=3", "trainer.progress=false"], overrides
        config = yaml.safe_load((folder / "config.yaml").read_text())
        assert config["trainer"]["torch_threads"] == 3 and config["trainer"]["progress"] is False
        assert config["seed"] == seed


def test_a_named_sweep_validates_every_grid_before_the_first_starts(tmp_path, monkeypatch):
    from harness.config.errors import ConfigError
    from harness.sweeps.grid_runs import prepare_jobs
    from harness.reports.evidence.sweep_spec import load_sweep

    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    (sweeps / "tiny.yaml").write_text("hypothesis: h\nreports: [overview]\noverrides: [debug=quick]\n"
                                      "grids:\n  - {algo: dppo, delta: [0.1, 0.2]}\n  - {algo: drpo}\n")
    (sweeps / "bad.yaml").write_text("hypothesis: h\nreports: [overview]\noverrides: [debug=quick]\n"
                                     "grids:\n  - {algo: dppo}\n  - {algo: drpo, delta: [-1]}\n")
    monkeypatch.chdir(tmp_path)
    sweep_dir, grids, jobs = prepare_jobs(load_sweep("tiny"), [], ["--force"])
    assert [len(j) for j in jobs] == [2, 1]
    folder = str(sweep_dir.relative_to(tmp_path))
    assert grids[0].argv[-1] == "force=true" and jobs[0][0].spec.force
    assert str(jobs[0][0].config.hydra.sweep.dir).endswith(folder)
    # each job composed once, by the launcher that runs it: it holds them, so launching composes none again
    assert all(grid.launcher.prepared[tuple(job.overrides)] is job for grid in grids for job in grid.jobs)
    with pytest.raises(ConfigError, match="algo.delta=-1"):
        prepare_jobs(load_sweep("bad"), [], [])
    assert not (tmp_path / "multirun").exists(), "checked, nothing created"
