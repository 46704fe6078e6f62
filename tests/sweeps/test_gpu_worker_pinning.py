"""launcher=local_parallel with GPUs: one worker per GPU, each pinned to its own through CUDA_VISIBLE_DEVICES in
the worker's own environment (issue 36 item 4). No GPU is needed: the pool is given the environments."""
from __future__ import annotations

import os

from harness.launchers.gpu_workers import pinned_environments
from harness.launchers.worker_pool import run_groups


def test_runs_on_auto_or_cuda_get_one_pinned_worker_per_gpu():
    assert pinned_environments(["2", "3"], "auto") == [{"CUDA_VISIBLE_DEVICES": "2"}, {"CUDA_VISIBLE_DEVICES": "3"}]
    assert pinned_environments(["0"], "cuda") == [{"CUDA_VISIBLE_DEVICES": "0"}]
    assert pinned_environments(["0", "1"], "cpu") == pinned_environments(["0", "1"], "cuda:1") == []
    assert pinned_environments([], "auto") == []


def test_each_worker_process_runs_with_its_own_environment():
    from hydra.core.utils import JobReturn, JobStatus

    class ReportsItsGpu:  # defined here: it travels to the spawned workers by value
        def progress_units(self, jobs, groups):
            return None

        def for_job(self, *overrides):
            return self

        def run_group(self, group, state, threads, progress=True):
            return [JobReturn(overrides=list(o), status=JobStatus.COMPLETED,
                              _return_value=(os.getpid(), os.environ.get("CUDA_VISIBLE_DEVICES"))) for o, _ in group]

    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    jobs = [([f"seed={k}"], k) for k in range(4)]
    rets = run_groups(ReportsItsGpu(), jobs, [[k] for k in range(4)], 2, lambda members: 1,
                      [{"CUDA_VISIBLE_DEVICES": "5"}, {"CUDA_VISIBLE_DEVICES": "7"}])
    seen = {ret._return_value for ret in rets}
    assert {gpu for _, gpu in seen} == {"5", "7"}  # the first two groups go to worker 0 and worker 1
    assert len({pid for pid, _ in seen}) == 2 and all(pid != os.getpid() for pid, _ in seen)
    assert all(len({gpu for p, gpu in seen if p == pid}) == 1 for pid, _ in seen)  # a worker keeps its GPU
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == before  # the driver's own environment is untouched
