"""A large grid is composed by a pool of processes: the same configs, in the same order, as when every job is
composed in this process, and the same one-line refusal for the first job that cannot run."""
from __future__ import annotations

import subprocess
import sys

import pytest
from omegaconf import OmegaConf

import harness.launchers.compose as compose
from harness.config.errors import ConfigError

pytestmark = pytest.mark.slow  # spawns pools and composes each grid twice: about 26 s in all

GRID = ["seed=range(0,13)", "algo=dppo,drpo"]  # 26 jobs


def _in_this_process(monkeypatch):
    monkeypatch.setattr(compose, "POOL_MIN_JOBS", 10_000)


def test_pool_composes_the_same_jobs_in_the_same_order(monkeypatch):
    assert compose._pool_workers(26) > 1 or len(__import__("os").sched_getaffinity(0)) == 1
    pooled = compose.preflight_jobs(GRID, multirun=True)
    _in_this_process(monkeypatch)
    serial = compose.preflight_jobs(GRID, multirun=True)
    assert [j.overrides for j in pooled] == [j.overrides for j in serial]
    assert len(pooled) == 26 and pooled[1].overrides == ["seed=0", "algo=drpo"]
    for a, b in zip(pooled, serial):
        assert OmegaConf.to_yaml(a.config) == OmegaConf.to_yaml(b.config)
        assert OmegaConf.to_yaml(a.spec) == OmegaConf.to_yaml(b.spec)
        assert OmegaConf.is_struct(a.spec) == OmegaConf.is_struct(b.spec)


def test_pool_refuses_the_first_bad_job_with_the_serial_line(monkeypatch):
    seeds = [*range(20), -1, *range(20, 25), 2**64]  # two bad jobs, in different chunks; -1 comes first
    grid = ["seed=" + ",".join(map(str, seeds))]
    with pytest.raises(ConfigError) as pooled:
        compose.preflight_jobs(grid, multirun=True)
    assert str(pooled.value) == "seed=-1 is not allowed: must be an integer in [0, 2**64)"
    _in_this_process(monkeypatch)
    with pytest.raises(ConfigError) as serial:
        compose.preflight_jobs(grid, multirun=True)
    assert str(pooled.value) == str(serial.value)


def test_a_main_that_cannot_be_spawned_falls_back_to_this_process():
    """A script read from stdin has no file a spawned worker could import as __main__."""
    script = ("from harness.launchers.compose import preflight_jobs\n"
              "jobs = preflight_jobs(['seed=range(0,30)'], multirun=True)\n"
              "print(len(jobs), jobs[29].spec.seed)\n")
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["30", "29"]
