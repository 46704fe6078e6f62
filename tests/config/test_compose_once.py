"""Each job of a run or sweep is composed once, by Hydra, and validated once: the launch uses the preflight's
config (harness.config.composed) and the job its validated spec."""
from __future__ import annotations

import collections

import pytest

from harness.cli import run_cli

FAST = ["debug=quick", "trainer.steps=1", "tracking=none"]


@pytest.fixture
def counted(monkeypatch):
    """How often Hydra composed a config (and from where), and how often a config was validated."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    import harness.config.compose as compose
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
    # two jobs, plus the sweep's own config that Hydra composes to start the multirun (twice in Hydra 1.3)
    assert counted["compositions"] <= 2 + 2
    for folder in sorted(tmp_path.glob("multirun/*/*/[01]")):
        assert (folder / "status.txt").read_text().strip() == "FINISHED"


def test_a_worker_takes_its_jobs_config_from_the_preflight(tmp_path, monkeypatch):
    """The launcher carries each job's preflight config to the process that runs it, with the settings the
    launcher adds (here, local_parallel's torch-thread share) applied as a composition with them would."""
    from omegaconf import OmegaConf

    from harness.config import composed
    from harness.config.compose import preflight_jobs
    from harness.launchers.local_parallel import LocalParallelLauncher

    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    jobs = preflight_jobs(["launcher=local_parallel", "launcher.workers=2", "seed=1,2"], multirun=True)
    composed.clear()
    for job in jobs:
        composed.remember(job.overrides, job.config, job.spec)
    launcher = LocalParallelLauncher(workers=2, threads_per_worker=3)
    launcher.config = jobs[0].config
    base = jobs[1].overrides
    extended = list(launcher.job_overrides(base))
    launcher._take_composed(base, extended)
    worker = launcher.for_job(extended)
    assert list(worker.composed) == [composed.key(extended)]
    config, spec = worker.composed[composed.key(extended)]
    assert config.trainer.torch_threads == spec.trainer.torch_threads == 3
    assert config.trainer.progress is False and config.seed == 2
    assert list(config.hydra.overrides.task)[-2:] == ["trainer.torch_threads=3", "trainer.progress=false"]
    assert OmegaConf.to_yaml(jobs[1].config.trainer) != OmegaConf.to_yaml(config.trainer), "copied, not changed"
    composed.clear()


def test_a_named_sweep_hands_its_jobs_to_each_multirun(tmp_path, monkeypatch):
    from harness.config.composed import PREFLIGHTED_ENV, handed_over, save_jobs
    from harness.sweeps.grid_runs import _grid_argv, prepare_jobs
    from harness.reports.sweep_spec import load_sweep

    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    (sweeps / "tiny.yaml").write_text("hypothesis: h\nreports: [overview]\noverrides: [debug=quick]\n"
                                      "grids:\n  - {algo: dppo, delta: [0.1, 0.2]}\n  - {algo: drpo}\n")
    monkeypatch.chdir(tmp_path)
    sweep_dir, grids, jobs = prepare_jobs(load_sweep("tiny"), [], ["--force"])
    assert [len(j) for j in jobs] == [2, 1]
    save_jobs(jobs[0], tmp_path / "g0.pickle")
    monkeypatch.setenv(PREFLIGHTED_ENV, str(tmp_path / "g0.pickle"))
    from harness.config.compose import expand_sweep

    folder = str(sweep_dir.relative_to(tmp_path))
    argv = _grid_argv(grids[0], 0, folder, ["--force"])
    assert argv[-1] == "force=true"
    assert [j.overrides for j in handed_over(expand_sweep(argv[1:]))] == [j.overrides for j in jobs[0]]
    assert handed_over(expand_sweep(argv[1:-1])) is None, "other overrides: composed again"
    assert str(jobs[0][0].config.hydra.sweep.dir).endswith(folder)
