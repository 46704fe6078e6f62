"""Ray's CPUs for verl: what verl 0.9.1 reserves on the head node, the refusal of a Slurm profile with fewer
CPUs per task, the local floor in the batch script, the shipped GPU profiles, and the READMEs' GPU commands
passing preflight with them."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.launchers.compose import compose, preflight
from harness.config.errors import ConfigError
from harness.launchers.compose import validated as validate
from harness.trainers.verl.layout import Cluster
from harness.trainers.verl.plan import build_plan
from harness.trainers.verl.ray_resources import (POOL_CPUS_PER_GPU, TQ_STORAGE_UNITS, TQ_STORAGE_UNITS_KEY, check_cpus,
                                                 head_cpus)

REPO = Path(__file__).resolve().parents[2]
VERL_SIDE_CHECK = """import json, sys, yaml, verl, os
from verl.single_controller.ray.base import ResourcePoolManager
tq = yaml.safe_load(open(os.path.join(os.path.dirname(verl.__file__), "trainer/config/transfer_queue/transfer_queue.yaml")))
json.dump({"colocate": ResourcePoolManager.__dataclass_fields__["max_colocate_count"].default,
           "units": tq["backend"]["SimpleStorage"]["num_data_storage_units"]}, open(sys.argv[1], "w"))
"""


def test_head_node_needs_what_verl_reserves():
    assert head_cpus(Cluster(1, 1, "x")) == 13  # 3 + controller 1 + 8 storage units + 1 to place actors
    assert head_cpus(Cluster(1, 8, "x")) == 34
    assert head_cpus(Cluster(2, 8, "x")) == 30  # storage units round-robin over the nodes


def test_too_few_cpus_is_refused_naming_the_number_that_fits():
    with pytest.raises(ValueError) as err:
        check_cpus(8, Cluster(1, 1, "launcher profile 'gpu_node'"))
    line = str(err.value)
    assert line.startswith("launcher.cpus_per_task=8 is not allowed with trainer=verl on 1 GPU(s) per node")
    assert line.endswith("set launcher.cpus_per_task=13 or more (launcher profile 'gpu_node')")
    check_cpus(13, Cluster(1, 1, "x"))


def test_the_storage_units_counted_are_the_ones_launched():
    cfg = validate(compose(["trainer=verl", "trainer.verl.python=/x/bin/python"]))
    command = build_plan(cfg, Path("/run")).command
    assert f"{TQ_STORAGE_UNITS_KEY}={TQ_STORAGE_UNITS}" in command


def test_outside_slurm_ray_gets_at_least_the_reserved_cpus():
    cfg = validate(compose(["trainer=verl", "trainer.verl.local_gpus=2", "trainer.verl.python=/x/bin/python"]))
    script = build_plan(cfg, Path("/run")).script
    assert "RAY_CPUS=${SLURM_CPUS_PER_TASK:-$(( $(nproc) > 16 ? $(nproc) : 16 ))}" in script


@pytest.mark.parametrize("profile", ["gpu_node", "gpu_node8"])
def test_the_shipped_gpu_profiles_give_ray_enough_cpus(profile):
    data = yaml.safe_load((REPO / "launchers" / "profiles" / f"{profile}.yaml").read_text())
    check_cpus(data["cpus_per_task"], Cluster(data["nodes"], data["gpus_per_node"], profile))
    validate(compose(["trainer=verl", "launcher=slurm", f"launcher.profile={profile}", "launcher.hub_access=true"]))


def readme_gpu_commands():
    """Every `python -m harness` command of the READMEs that runs on a shipped or copied GPU profile."""
    commands = []
    for readme in (REPO / "README.md", REPO / "launchers" / "verl" / "README.md"):
        text = readme.read_text().replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("python -m harness") and re.search(r"launcher\.profile=(gpu_node8?|mysite)\b", line):
                # the hub reachable: the README stages first (`harness stage`); preflight's other checks are asked
                line = line.replace("launcher.profile=mysite", "launcher.profile=gpu_node8")
                commands.append((str(readme.relative_to(REPO)), line + " launcher.hub_access=true"))
    return commands


def test_the_readmes_name_their_gpu_commands():
    assert len(readme_gpu_commands()) >= 4


@pytest.mark.parametrize("readme,command", readme_gpu_commands())
def test_every_readme_gpu_command_passes_preflight(readme, command):
    args = [a for a in shlex.split(command)[3:] if not a.startswith("--")]
    if args[0] == "stage":
        return
    multirun = args[0] == "multirun"
    preflight(args[1:] if multirun else args, multirun=multirun)


def test_the_one_gpu_template_refuses_an_eight_gpu_run_in_one_line():
    with pytest.raises(ConfigError) as err:
        validate(compose(["trainer=verl", "model=Qwen3-8B-Base", "launcher=slurm", "launcher.profile=gpu_node",
                          "launcher.hub_access=true", "launcher.gpus_per_node=8"]))
    assert "\n" not in str(err.value) and "set launcher.cpus_per_task=34 or more" in str(err.value)


@pytest.mark.verl
def test_the_constants_are_verls(verl_python, tmp_path):
    out = tmp_path / "out.json"
    subprocess.run([str(verl_python), "-c", VERL_SIDE_CHECK, str(out)], check=True, timeout=300)
    found = json.loads(out.read_text())
    assert found == {"colocate": POOL_CPUS_PER_GPU, "units": TQ_STORAGE_UNITS}
