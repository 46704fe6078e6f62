"""Two verl batch scripts on one node of the test Slurm cluster at once (HARNESS_SLURM_TESTS=1).

Each job starts its own CPU Ray cluster exactly as a verl run would (the generated batch script, with the
verl environment of launchers/verl/make_venv.sh), but runs a stand-in instead of verl's trainer: it
connects to its own cluster, runs a task, waits until the other job's cluster is up too, and checks its
cluster again after the other job has finished and stopped its Ray. The first job ends early, so its exit
trap runs while the second job still needs its cluster: with the old `ray stop --force` and fixed port,
the second job lost its cluster.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from harness.trainers.verl.layout import Cluster
from harness.trainers.verl.script import (RAY_PORT_BLOCK, RAY_PORT_FIRST, RAY_PORT_SLOTS, batch_script,
                                         main_ppo_command)

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]  # on PYTHONPATH in the job, as in a run
VENV = Path(os.environ.get("HARNESS_VERL_VENV") or Path.home() / ".cache" / "harness" / "verl-venv")

STAND_IN = r"""
import json, os, sys, time
import ray
name, other, folder, hold = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
out = os.path.join(folder, name)
def check():
    nodes = [n for n in ray.nodes() if n["Alive"]]
    value = ray.get(ray.remote(lambda: 41 + 1).remote(), timeout=120)
    return {"alive_nodes": len(nodes), "task": value, "cpus": ray.cluster_resources().get("CPU"),
            "gpus": ray.cluster_resources().get("GPU"), "at": time.time()}
ray.init(address=os.environ["RAY_ADDRESS"], logging_level="ERROR")
result = {"address": os.environ["RAY_ADDRESS"], "python": sys.executable, "first": check()}
open(out + ".up", "w").write("up")
deadline = time.time() + 300
while not os.path.exists(os.path.join(folder, other + ".up")):  # both clusters up at the same time
    if time.time() > deadline:
        sys.exit(f"{other} never came up")
    time.sleep(1)
if hold > 0:  # outlive the other job: its exit trap stops its Ray while this one still works
    while not os.path.exists(os.path.join(folder, other + ".gone")):
        if time.time() > deadline:
            sys.exit(f"{other} never finished")
        time.sleep(1)
    time.sleep(hold)
result["second"] = check()
json.dump(result, open(out + ".json", "w"))
"""


def wrapper(folder: Path, python: Path, stand_in: Path, name: str, other: str, hold: float) -> Path:
    """$VERL_PYTHON: the verl environment, with main_ppo replaced by the stand-in and data preparation skipped."""
    path = folder / f"python-{name}"
    path.write_text(f"""#!/usr/bin/env bash
if [ "$1 $2" = "-m verl.trainer.main_ppo" ]; then exec {python} {stand_in} {name} {other} {folder} {hold}; fi
if [ "$1 $2" = "-m harness.trainers.verl.prepare_data" ]; then exit 0; fi
exec {python} "$@"
""")
    path.chmod(0o755)
    return path


def job_script(folder: Path, name: str, other: str, hold: float, python: Path, stand_in: Path) -> Path:
    verl_python = wrapper(folder, python, stand_in, name, other, hold)
    script = batch_script(run_name=name, command=main_ppo_command(str(verl_python), "ppo_trainer", ["a.b=1"]),
                          env={"PYTHONPATH": str(REPO)}, shape=Cluster(1, 1, "test"), python=str(verl_python),
                          data_spec=folder / "data.json", ray_port=None, log_hint="")
    path = folder / f"{name}.sh"
    path.write_text(script)
    return path


def sbatch(script: Path, partition: str) -> str:
    out = subprocess.run(["sbatch", "--parsable", "-p", partition, "-N", "1", "-n", "1", "-c", "1", "--mem=3G",
                          "-t", "10", "-o", str(script.with_suffix(".log")), "--wrap",
                          f"bash {script}; rc=$?; touch {script.parent}/$(basename {script} .sh).gone; exit $rc"],
                         capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip().split(";")[0]


def state(job: str) -> str:
    out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job, "-o", "State"], capture_output=True, text=True,
                         timeout=30).stdout.split()
    return out[0] if out else "UNKNOWN"


def ray_processes_of(job: str):
    out = subprocess.run(["pgrep", "-u", str(os.getuid()), "-f", f"ray-{os.getuid()}-{job}/"], capture_output=True,
                         text=True)
    return out.stdout.split()


def test_two_verl_jobs_on_one_node_do_not_stop_each_other(slurm_cluster, tmp_path):
    python = VENV / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import ray"], capture_output=True) if python.is_file() else None
    if probe is None or probe.returncode != 0:
        pytest.skip(f"no verl environment with ray at {VENV}: run launchers/verl/make_venv.sh")
    folder = tmp_path  # shared with the jobs: the test cluster's node is this machine
    stand_in = folder / "stand_in.py"
    stand_in.write_text(STAND_IN)
    short = job_script(folder, "short", "long", 0, python, stand_in)
    long = job_script(folder, "long", "short", 10, python, stand_in)
    jobs = {"short": sbatch(short, slurm_cluster.partition), "long": sbatch(long, slurm_cluster.partition)}
    deadline = time.time() + 540
    final = {}
    while time.time() < deadline and len(final) < 2:
        for name, job in jobs.items():
            if name not in final and state(job) in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY"):
                final[name] = state(job)
        time.sleep(3)
    logs = {name: (folder / f"{name}.log").read_text() if (folder / f"{name}.log").exists() else "" for name in jobs}
    if len(final) < 2:
        subprocess.run(["scancel", *jobs.values()], timeout=30)
    assert final == {"short": "COMPLETED", "long": "COMPLETED"}, f"{final}\n{logs['short'][-3000:]}\n{logs['long'][-3000:]}"

    short_result = json.loads((folder / "short.json").read_text())
    long_result = json.loads((folder / "long.json").read_text())
    # two clusters, each on its own port, each driven by the configured verl interpreter
    assert short_result["address"] != long_result["address"]
    for name, result in (("short", short_result), ("long", long_result)):  # IPv4 head, port block from the job id
        host, port = result["address"].rsplit(":", 1)
        assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", host), result["address"]
        assert int(port) == RAY_PORT_FIRST + RAY_PORT_BLOCK * (int(jobs[name]) % RAY_PORT_SLOTS)
    assert short_result["python"] == long_result["python"] == str(python)
    # Ray got the allocation's CPUs (-c 1), not the node's 2
    assert short_result["first"]["cpus"] == 1.0 and long_result["first"]["gpus"] == 1.0
    # the long job's cluster still answered after the short job had stopped its own
    gone = (folder / "short.gone").stat().st_mtime
    assert long_result["second"]["at"] > gone
    assert long_result["second"]["alive_nodes"] == 1 and long_result["second"]["task"] == 42
    # each exit trap left nothing of its own cluster behind
    for job in jobs.values():
        assert ray_processes_of(job) == []
