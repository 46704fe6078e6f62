"""The batch script's exit trap cleans the job's Ray temp dir on every node of the allocation: the head's
here, each worker's through `srun -w <node>` (a stand-in srun records the step and runs it on this machine)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.verl.plan import build_plan
from harness.trainers.verl.script import STOP_RAY

FAKE_SRUN = """#!/usr/bin/env bash
# records the node of each step, then runs the step's command here
node=
while [ $# -gt 0 ]; do
  case "$1" in -w) node=$2; shift 2;; --*) shift;; *) break;; esac
done
echo "$node $*" >> "$SRUN_LOG"
exec "$@"
"""


def test_the_trap_cleans_the_temp_dir_of_every_node(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(FAKE_SRUN)
    (bin_dir / "srun").chmod(0o755)
    ray_tmp = tmp_path / "ray-tmp"
    (ray_tmp / "session").mkdir(parents=True)
    sleeper = subprocess.Popen(["bash", "-c", f"exec -a 'raylet {ray_tmp}/session' sleep 60"])  # a leftover Ray process
    script = f"""{STOP_RAY}
NODES=(head worker1 worker2)
RAY_PIDS=()
RAY_TMP={ray_tmp}
trap stop_ray EXIT
exit 3
"""
    log = tmp_path / "srun.log"
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SRUN_LOG": str(log)})
    assert proc.returncode == 3, proc.stderr  # the script's own exit code survives the trap
    steps = log.read_text().splitlines()
    assert [s.split()[0] for s in steps] == ["worker1", "worker2"]
    assert all(s.endswith(f"clean-ray {ray_tmp}") for s in steps)
    assert not ray_tmp.exists()
    assert sleeper.wait(timeout=30) != 0  # killed: it named the job's temp dir


def test_the_generated_script_installs_that_trap():
    cfg = validate(compose(["trainer=verl", "trainer.verl.python=/x/bin/python"]))
    script = build_plan(cfg, Path("/run")).script
    assert STOP_RAY + "trap stop_ray EXIT\n" in script
    assert script.index("NODES=(") < script.index("trap stop_ray EXIT")
