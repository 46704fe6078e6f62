"""A cluster's first day (issue 54): offline by default, the network interface, megatron pins at --plan, requeue
and attempts, sglang refused, SQLite on a network filesystem. Fast: composition, validation and the plan, with
real subprocesses where the CLI answers."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config.errors import ConfigError
from harness.config.network_fs import filesystem_of, sqlite_warning
from harness.config.profiles import executor_arguments, load_profile
from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.verl.attempt import (STEP_S_FLOOR, Attempt, attempt_of, estimated_step_seconds,
                                           save_freq, step_seconds)
from harness.trainers.verl.cluster_plan import verl_plan_lines
from harness.trainers.verl.driver import driver_problem
from harness.trainers.verl.environment import check_environment, required_packages
from harness.trainers.verl.layout import Cluster
from harness.trainers.verl.script import batch_script
from harness.trainers.verl.options import verl_options
from harness.trainers.verl.overrides import RunPaths, job_env, verl_overrides
from harness.trainers.verl.prepare_data import load_source

GPU8 = ["trainer=verl", "algo=drpo", "model=Qwen3-8B-Base", "launcher=slurm", "launcher.profile=gpu_node8"]
TWO_NODES = ["launcher.nodes=2", "launcher.use_srun=false"]


def test_a_cluster_is_offline_unless_its_profile_gives_hub_access():
    with pytest.raises(ConfigError) as err:
        validate(compose(GPU8))
    line = str(err.value)
    assert "\n" not in line and "'Qwen/Qwen3-8B-Base' is neither staged nor reachable" in line
    assert "is offline (hub_access: false)" in line and "`python -m harness stage <the same overrides>`" in line
    validate(compose([*GPU8, "launcher.hub_access=true"]))


def test_the_job_reads_the_hub_cache_from_the_stage_folder(tmp_path):
    env = job_env(compose([*GPU8, f"launcher.stage_dir={tmp_path}"]), RunPaths(tmp_path / "run"), tmp_path)
    assert env["HF_HOME"] == str(tmp_path / "hf-home")
    assert env["HF_HUB_OFFLINE"] == env["HF_DATASETS_OFFLINE"] == "1"
    online = job_env(compose([*GPU8, "launcher.hub_access=true"]), RunPaths(tmp_path / "run"), tmp_path)
    assert "HF_HUB_OFFLINE" not in online and "HF_HOME" not in online


def test_data_preparation_never_asks_the_hub_on_an_offline_node(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(SystemExit) as err:
        load_source({"ref": "hf:open-r1/DAPO-Math-17k-Processed@train"})
    assert "is not staged and this node is offline" in str(err.value) and "python -m harness stage" in str(err.value)


def test_the_network_interface_comes_from_the_profile_or_the_route():
    spec = validate(compose([*GPU8, *TWO_NODES, "launcher.hub_access=true"]))
    lines = verl_plan_lines([spec])
    assert "  network: the interface of the route to the other nodes (found in the job)" in lines
    assert max(len(line) for line in lines if "environment:" not in line) <= 80 - 2
    named = validate(compose([*GPU8, *TWO_NODES, "launcher.hub_access=true", "launcher.network_interface=ib0"]))
    assert "  network: ib0 (the profile's network_interface)" in verl_plan_lines([named])
    env = job_env(named, RunPaths(Path("/run")), Path("/repo"))
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == "ib0"
    overrides = verl_overrides(named, RunPaths(Path("/run")))
    assert "+ray_kwargs.ray_init.runtime_env.env_vars.NCCL_SOCKET_IFNAME=ib0" in overrides


def test_plan_refuses_a_megatron_preset_without_its_pinned_packages(run_harness):
    proc = run_harness("experiment=dppo_moe_qwen3_30b", "delta=0.2", "launcher=slurm", "launcher.profile=gpu_node8",
                       *TWO_NODES, "launcher.hub_access=true", f"launcher.verl_python={sys.executable}", "--plan")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert "trainer.verl.strategy=megatron is not allowed here" in line and "lacks megatron-core" in line
    assert "requirements-gpu-megatron.txt" in line and "builds from source" in line


def test_requeue_limit_comes_from_the_profile():
    assert executor_arguments(load_profile("gpu_node8"), "slurm")["slurm_max_num_timeout"] == 60
    assert executor_arguments(load_profile("gpu_node", {"max_num_timeout": 7}), "slurm")["slurm_max_num_timeout"] == 7


def test_later_attempts_skip_validation_and_checkpoint_within_half_an_hour(tmp_path):
    paths = RunPaths(tmp_path)
    assert attempt_of(paths.metrics, paths.checkpoints) == Attempt(first=True, step_seconds=None)
    paths.verl_dir.mkdir(parents=True)
    paths.metrics.write_text("\n".join(json.dumps({"step": s, "data": {"timing_s/step": t}})
                                       for s, t in ((1, 420.0), (2, 600.0))) + "\n{\"step\": 3, \"da")
    later = attempt_of(paths.metrics, paths.checkpoints)
    assert later == Attempt(first=False, step_seconds=600.0)
    spec = validate(compose([*GPU8, "launcher.hub_access=true", "trainer.checkpoint_every=50"]))
    items = dict(o.split("=", 1) for o in verl_overrides(spec, paths, attempt=later))
    assert items["trainer.val_before_train"] == "false" and items["trainer.save_freq"] == "3"  # 1800 s / 600 s
    first = dict(o.split("=", 1) for o in verl_overrides(spec, paths))
    assert first["trainer.val_before_train"] == "true"
    assert save_freq(50, 20, 600.0) == 50  # a 20-minute limit cannot lose more than 20 minutes
    assert save_freq(50, 1440, 7200.0) == 1


def test_a_first_time_limited_attempt_checkpoints_from_a_high_step_estimate(tmp_path):
    """Without a measured step or trainer.verl.step_minutes, a first 24-hour slot no longer keeps
    checkpoint_every=50: the step is estimated high from the model and the step's tokens."""
    def first_save_freq(*overrides: str) -> int:
        spec = validate(compose([*GPU8, "launcher.hub_access=true", "trainer.checkpoint_every=50", *overrides]))
        items = dict(o.split("=", 1) for o in verl_overrides(spec, RunPaths(tmp_path)))
        return int(items["trainer.save_freq"])

    # Qwen3-8B-Base, 128 prompts x 8, 2048 + 4096 tokens, 8 GPUs: 10 x 8.2e9 x 1024 x 6144 / 8e14 = 645 s
    assert estimated_step_seconds(8.2, 1024, 6144, 8) == pytest.approx(645.0, abs=1.0)
    assert first_save_freq() == 2  # 1800 s // 645 s
    assert first_save_freq("trainer.max_new_tokens=1024") == 5  # 1800 // 322 s: fewer tokens, a shorter step
    assert first_save_freq("model=Qwen3-1.7B-Base") == 13  # 1800 // 134 s
    assert first_save_freq("trainer.verl.step_minutes=1") == 30  # the user's estimate wins
    assert estimated_step_seconds(0.0, 1024, 6144, 8) == STEP_S_FLOOR  # an unknown model: at least a minute
    assert estimated_step_seconds(0.001, 1, 1, 8) == STEP_S_FLOOR
    # a mixture of experts counts the parameters a token passes through (Qwen3-30B-A3B: ~3.3 of 30.5 billion)
    moe = validate(compose(["experiment=dppo_moe_qwen3_30b", "delta=0.2", "launcher=slurm",
                            "launcher.profile=gpu_node8", *TWO_NODES, "launcher.hub_access=true"]))
    seconds = step_seconds(Attempt(), moe, verl_options(moe), 16)
    t = moe.trainer
    tokens = t.prompts_per_step * t.group_size * (moe.trainer.verl.max_prompt_length + t.max_new_tokens)
    assert seconds == pytest.approx(max(STEP_S_FLOOR, 10 * 3.3125e9 * tokens / 16e14))


def test_sglang_is_refused_and_vllm_is_checked_on_a_cluster():
    with pytest.raises(ConfigError) as err:
        validate(compose([*GPU8, "launcher.hub_access=true", "trainer.verl.rollout=sglang"]))
    assert str(err.value).startswith("trainer.verl.rollout='sglang' is not allowed: no requirements set")
    options = verl_options(compose(GPU8))
    assert required_packages(options, cluster=True)["vllm"] == ("vllm", "trainer.verl.rollout=vllm")


def test_sqlite_on_a_network_filesystem_gets_one_warning(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/sda1 / ext4 rw 0 0\nnas:/export/home /shared nfs4 rw,relatime 0 0\n"
                      "mds@tcp:/lfs /lustre lustre rw 0 0\n")
    assert filesystem_of("/shared/me/mlruns/mlflow.db", mounts) == "nfs4"
    line = sqlite_warning("sqlite:////lustre/me/mlflow.db", mounts)
    assert "\n" not in line and "network filesystem (lustre)" in line and "tracking server" in line
    assert "PostgreSQL" in line
    assert sqlite_warning("sqlite:////home/me/mlflow.db", mounts) is None
    assert sqlite_warning("http://tracking:5000", mounts) is None
    assert sqlite_warning(f"sqlite:///{tmp_path}/mlflow.db") is None  # this machine's own mount table: local


def network_block(nodes: str) -> subprocess.CompletedProcess:
    """The batch script's interface choice, run by bash as in the job (set -euo pipefail), for NODES=(nodes)."""
    script = batch_script(run_name="r", command=["python", "-m", "verl.trainer.main_ppo", "--config-name=x"], env={},
                          shape=Cluster(2, 8, "test"), python="python3", data_spec=Path("/d"), ray_port=None,
                          log_hint="")
    block = re.search(r'^ROUTE_IP=""\n.*?^HEAD_IP=.*?\n', script, re.M | re.S).group(0)
    code = f"set -euo pipefail\nNNODES=2\nNODES=({nodes})\n{block}echo \"${{NCCL_SOCKET_IFNAME:-}} ${{GLOO_SOCKET_IFNAME:-}} $HEAD_IP\"\n"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_SOCKET_IFNAME")}
    return subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30, env=env)


@pytest.mark.skipif(shutil.which("ip") is None, reason="no iproute2 here")
def test_the_job_takes_the_interface_of_the_route_to_the_other_node():
    gateway = subprocess.run(["ip", "-4", "route", "show", "default"], capture_output=True, text=True).stdout.split()
    if "via" not in gateway:
        pytest.skip("no default route here to stand for the other node")
    peer = gateway[gateway.index("via") + 1]
    route = subprocess.run(["ip", "-o", "route", "get", peer], capture_output=True, text=True).stdout.split()
    proc = network_block(f"{socket.gethostname()} {peer}")
    assert proc.returncode == 0, proc.stderr
    device, source = route[route.index("dev") + 1], route[route.index("src") + 1]
    assert proc.stdout.split()[-3:] == [device, device, source]  # NCCL, Gloo, and Ray's head address on it
    # a peer name that does not resolve (the test cluster's second node) or the loopback route: no interface set
    unresolved = network_block(f"{socket.gethostname()} no-such-node.invalid")
    assert unresolved.returncode == 0 and "network interface (any" in unresolved.stdout


def test_the_environments_cuda_must_be_the_profiles(tmp_path):
    """The probe reads torch's CUDA build from torch/version.py without importing torch; a CUDA 12 build under a
    profile that says 13 (the default) is refused in one line naming the set that matches."""
    packages = tmp_path / "site"
    for name, text in (("verl", "__version__ = '0.9.1'\n"), ("ray", "__version__ = '2.60.0'\n"),
                       ("torch", "")):
        (packages / name).mkdir(parents=True)
        (packages / name / "__init__.py").write_text(text)
    (packages / "torch" / "version.py").write_text("__version__ = '2.10.0'\ncuda: Optional[str] = '12.8'\n")
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f"#!/usr/bin/env bash\nPYTHONPATH={packages} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    with pytest.raises(ValueError) as err:
        check_environment(str(python), "profile verl_python")
    line = str(err.value)
    assert "has a torch built for CUDA 12.8, the profile's verl_cuda is 13" in line
    assert "set verl_cuda: 12 in the profile" in line
    check_environment(str(python), "profile verl_python", cuda=12)


def test_an_old_driver_is_pointed_at_the_cuda_12_set():
    line = driver_problem("570.124.06", "13.0")
    assert "requirements-gpu-cu12.txt" in line and "verl_cuda: 12" in line
    assert "requirements-gpu-cu12.txt" not in driver_problem("470.82.01", "13.0")  # CUDA 11 only: no set of ours
    assert driver_problem("550.54.15", "12.8") is None
