"""The verl batch script's worker start on the two-node test cluster (HARNESS_SLURM_TESTS=1): its generated
`srun --overlap -w <node> --gres=gpu:N` line, run as it is inside a real 2-node allocation with a trivial
command instead of `ray start`, is accepted by Slurm and runs on the other node. The test cluster has no GPU
gres, so the job declares SLURM_GPUS_ON_NODE=0 and the line asks for --gres=gpu:0 (the same syntax as gpu:8)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness.trainers.verl.layout import Cluster
from harness.trainers.verl.script import batch_script

pytestmark = pytest.mark.slurm


def worker_lines() -> str:
    """The script's STEP_GPUS lines and its worker loop, `ray start` replaced by printing the step's node."""
    script = batch_script(run_name="r", command=["python", "-m", "verl.trainer.main_ppo", "--config-name=x"],
                          env={}, shape=Cluster(2, 8, "test"), python="python3", data_spec=Path("/d"),
                          ray_port=None, log_hint="")
    gpus = re.search(r"^STEP_GPUS=\(\)\n.*?\n", script, re.M | re.S).group(0)
    loop = re.search(r'^for node in "\$\{NODES\[@\]:1\}"; do\n.*?^done\n', script, re.M | re.S).group(0)
    assert "--overlap" in loop and '"${STEP_GPUS[@]}"' in loop and "--gres=" in gpus
    loop = loop.replace('"${RAY[@]}" start --address="$RAY_ADDRESS" "${RAY_NODE[@]}" &',
                        'bash -c \'echo "$SLURMD_NODENAME $SLURM_STEP_GPUS"\' > "$OUT" &')
    return gpus + loop


def test_the_worker_step_with_gres_and_overlap_runs_on_the_other_node(slurm_two_nodes, tmp_path):
    out = tmp_path / "worker.txt"
    body = f"""#!/usr/bin/env bash
set -euo pipefail
export SLURM_GPUS_ON_NODE=0 OUT={out}
mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
RAY_CPUS=1
RAY_GPUS=$SLURM_GPUS_ON_NODE
RAY_PIDS=()
{worker_lines()}wait "${{RAY_PIDS[@]}}"
"""
    (tmp_path / "job.sh").write_text(body)
    job = subprocess.run(["sbatch", "--wait", "--parsable", "-p", slurm_two_nodes.partition, "-N", "2",
                          "--ntasks-per-node=1", "-o", str(tmp_path / "job.out"), str(tmp_path / "job.sh")],
                         capture_output=True, text=True, timeout=120)
    log = (tmp_path / "job.out").read_text() if (tmp_path / "job.out").exists() else ""
    assert job.returncode == 0, job.stderr + log
    nodes = subprocess.run(["sinfo", "-h", "-N", "-p", slurm_two_nodes.partition, "-o", "%N"], capture_output=True,
                           text=True, timeout=30).stdout.split()
    assert out.read_text().split()[0] == sorted(set(nodes))[-1]  # the second node of the allocation


def test_the_profiles_requeue_limit_reaches_the_submitted_job(slurm_cluster, tmp_path):
    """submitit's own executor, built as the launcher builds it, submits to the test cluster; the job it pickles
    carries the profile's max_num_timeout as its count of requeues after a time limit (not submitit's 3)."""
    import submitit
    from submitit.core.utils import DelayedSubmission

    from harness.config.profiles import executor_arguments, load_profile, submitit_parameters

    profile = load_profile("test_cluster", {"max_num_timeout": 45})
    executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="slurm", **executor_arguments(profile, "slurm"))
    executor.update_parameters(**submitit_parameters(profile, "slurm"))
    job = executor.submit(int, "7")
    assert job.result() == 7
    assert DelayedSubmission.load(job.paths.submitted_pickle)._timeout_countdown == 45
