"""The 2-node verl batch script on the two-node test cluster (HARNESS_SLURM_TESTS=1; two slurmd on this host).

The generated script runs as a real 2-node Slurm job: Ray's head on the first node, a Ray worker started with
`srun --overlap -w` on the second, the wait for both nodes, then a stand-in for verl's trainer (no GPU here;
Ray gets the 8 GPUs per node the run declares, as numbers) that runs a task on each node. Both nodes are this
host, so the second node's `ray start` gets its ports shifted by the stand-in interpreter (on a cluster each
node has the job's port block on its own address). Checked: the job completes, Ray spans both Slurm nodes,
each node's Ray worker port range is sized from its CPUs and GPUs (8 GPUs: more than the 90 ports of a
small job), and the exit trap leaves no Ray process of the job behind.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from harness.trainers.verl.layout import Cluster
from harness.trainers.verl.script import (RAY_PORT_BLOCK, RAY_PORT_FIRST, RAY_PORT_SLOTS, RAY_WORKER_PORTS_EXTRA,
                                         RAY_WORKER_PORTS_PER_GPU, batch_script, main_ppo_command)

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]  # on PYTHONPATH in the job, as in a run
VENV = Path(os.environ.get("HARNESS_VERL_VENV") or Path.home() / ".cache" / "harness" / "verl-venv")
GPUS_PER_NODE = 8
SAME_HOST_SHIFT = 1000

STAND_IN = r"""
import json, os, sys
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address=os.environ["RAY_ADDRESS"], logging_level="ERROR")
nodes = [n for n in ray.nodes() if n["Alive"]]
@ray.remote(num_cpus=0)
def slurm_node():
    return os.environ.get("SLURMD_NODENAME")
on = [ray.get(slurm_node.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(),
              timeout=300) for n in nodes]
json.dump({"alive_nodes": len(nodes), "slurm_nodes": sorted(on), "gpus": ray.cluster_resources().get("GPU")},
          open(sys.argv[1], "w"))
"""


def interpreter(folder: Path, python: Path, stand_in: Path) -> Path:
    """$VERL_PYTHON: the verl environment; main_ppo is the stand-in, data preparation is skipped, each `ray start`
    is recorded, and the second node's ports move off the first node's (same host)."""
    path = folder / "python"
    path.write_text(f"""#!/usr/bin/env bash
if [ "$1 $2" = "-m verl.trainer.main_ppo" ]; then exec {python} {stand_in} {folder}/result.json; fi
if [ "$1 $2" = "-m harness.trainers.verl.prepare_data" ]; then exit 0; fi
if [ "$1 $2 $3" = "-m ray.scripts.scripts start" ]; then
  {python} -c 'import json, os, sys; print(json.dumps({{"node": os.environ.get("SLURMD_NODENAME"), "argv": sys.argv[1:]}}))' \\
      "$@" >> {folder}/ray_starts.jsonl
  if [ "$SLURMD_NODENAME" != "$(hostname -s)" ]; then
    args=()
    for a in "$@"; do
      case "$a" in --*-port=*) args+=("${{a%%=*}}=$(( ${{a#*=}} + {SAME_HOST_SHIFT} ))");; *) args+=("$a");; esac
    done
    set -- "${{args[@]}}"
  fi
fi
exec {python} "$@"
""")
    path.chmod(0o755)
    return path


def option(argv, name: str) -> int:
    return int(next(a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")))


def state(job: str) -> str:
    out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job, "-o", "State"], capture_output=True, text=True,
                         timeout=30).stdout.split()
    return out[0] if out else "UNKNOWN"


def test_the_two_node_batch_script_runs_ray_over_both_nodes(slurm_two_nodes, tmp_path):
    python = VENV / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import ray"], capture_output=True) if python.is_file() else None
    if probe is None or probe.returncode != 0:
        pytest.skip(f"no verl environment with ray at {VENV}: run launchers/verl/make_venv.sh")
    folder = tmp_path  # shared with the job: both nodes are this machine
    stand_in = folder / "stand_in.py"
    stand_in.write_text(STAND_IN)
    verl_python = interpreter(folder, python, stand_in)
    script = folder / "launch.sh"
    script.write_text(batch_script(run_name="two-nodes", command=main_ppo_command(str(verl_python), "ppo_trainer", []),
                                   env={"PYTHONPATH": str(REPO)}, shape=Cluster(2, GPUS_PER_NODE, "test"),
                                   python=str(verl_python), data_spec=folder / "data.json", ray_port=None, log_hint=""))
    log = folder / "job.log"
    job = subprocess.run(["sbatch", "--parsable", "-p", slurm_two_nodes.partition, "-N", "2", "--ntasks-per-node=1",
                          "-c", "1", "--mem=3G", "-t", "10", "-o", str(log), str(script)],
                         capture_output=True, text=True, check=True, timeout=60).stdout.strip().split(";")[0]
    deadline = time.time() + 540
    while state(job) not in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"):
        if time.time() > deadline:
            subprocess.run(["scancel", job], timeout=30)
            break
        time.sleep(3)
    text = log.read_text() if log.exists() else ""
    assert state(job) == "COMPLETED", text[-4000:]

    head = subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
    result = json.loads((folder / "result.json").read_text())
    assert result == {"alive_nodes": 2, "slurm_nodes": sorted([head, f"{head}-node2"]),
                      "gpus": 2.0 * GPUS_PER_NODE}
    starts = [json.loads(line) for line in (folder / "ray_starts.jsonl").read_text().splitlines()]
    assert sorted(s["node"] for s in starts) == sorted([head, f"{head}-node2"])
    worker_ports = 1 + RAY_WORKER_PORTS_PER_GPU * GPUS_PER_NODE + RAY_WORKER_PORTS_EXTRA  # -c 1, 8 GPUs
    assert worker_ports > RAY_PORT_BLOCK - 10  # more than a small job's 90
    block = 10 + worker_ports
    base = RAY_PORT_FIRST + block * (int(job) % (RAY_PORT_BLOCK * RAY_PORT_SLOTS // block))
    for start in starts:  # the ports as the script gives them (the stand-in shifts the second node's afterwards)
        argv = start["argv"]
        assert option(argv, "min-worker-port") == base + 10, start
        assert option(argv, "max-worker-port") - option(argv, "min-worker-port") + 1 == worker_ports, start
    leftover = subprocess.run(["pgrep", "-u", str(os.getuid()), "-f", f"ray-{os.getuid()}-{job}/"],
                              capture_output=True, text=True).stdout.split()
    assert leftover == []
