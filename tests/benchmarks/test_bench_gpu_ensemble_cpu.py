"""The prepared GPU benchmark's `--mode cpu` (issue 36 item 7): the same script that a GPU machine runs trains
ensembles of 1 and 4 members and a run on one CPU thread, and writes every figure to the JSON it is given."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "bench_gpu_ensemble.py"


def test_cpu_mode_measures_each_ensemble_and_one_cpu_thread(tmp_path):
    out = tmp_path / "figures" / "cpu.json"
    env = {**os.environ, "TMPDIR": str(tmp_path), "HARNESS_OUTPUT_ROOT": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--mode", "cpu", "--out", str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)  # ~7 s of CPU; a loaded machine waits longer
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    report = json.loads(out.read_text())
    assert (report["mode"], report["steps"]) == ("cpu", 2)
    assert [f["members"] for f in report["sizes"]] == [1, 4]
    for figure in [*report["sizes"], report["cpu_one_thread"]]:
        assert "skipped" not in figure, figure
        assert len(figure["step_s"]) == 2 and all(s > 0 for s in figure["step_s"])
        assert math.isfinite(figure["member_steps_per_s"]) and figure["member_steps_per_s"] > 0
        assert figure["peak_device_bytes_per_member"] is None  # a device figure only on a GPU
        assert figure["trained_on"] == "cpu"
    assert report["ratio_m512_vs_cpu_thread"] is None  # no M = 512 in cpu mode
    assert "M=   4 on cpu:" in proc.stdout and "one CPU thread, M=1:" in proc.stdout
    assert not list(tmp_path.glob("bench-gpu-ensemble-*"))  # its run folders were temporary


def test_a_wheel_folder_without_the_machines_architecture_is_named_before_anything_installs(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    from gpu_wheels import missing_for

    for name in ("numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                 "PyYAML-6.0.2-cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
                 "PyYAML-6.0.2-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                 "tqdm-4.67.1-py3-none-any.whl"):
        (tmp_path / name).write_bytes(b"")
    assert missing_for(tmp_path, "aarch64") == ["numpy"]  # x86_64 only: a GH200 is refused, naming it
    assert missing_for(tmp_path, "x86_64") == []
