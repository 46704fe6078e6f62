"""`trainer.device` names where the built-in trainer computes. A CUDA device asked for on a machine that has
none ends the run FAILED in one line naming the key, before any work (no base model trained), with no
traceback on the terminal; what a checkpoint writes is in CPU memory whatever device trained it."""
from __future__ import annotations

import pytest
import torch

from harness.trainers.checkpoint import snapshot


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is visible here: the run would train on it")
def test_a_missing_cuda_device_is_refused_in_one_line_before_the_run_starts(run_harness, tmp_path):
    """Issue 50 case 20: with a launcher whose jobs run here, a CUDA device that is not visible is refused at
    validation (exit 2, one line naming the key), before any folder, base model or run is made."""
    run_dir, cache = tmp_path / "run", tmp_path / "empty_cache"
    proc = run_harness("debug=quick", "trainer.steps=1", "trainer.device=cuda:0", f"hydra.run.dir={run_dir}",
                       f"cache_dir={cache}")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    (line,) = [line for line in text.splitlines() if line.startswith("harness: error: ")]
    assert "trainer.device=cuda:0" in line and "no CUDA device is visible" in line, line
    assert not (run_dir / "status.txt").exists(), "no run is started"
    assert not list(cache.glob("**/*.pt")), "no base model is trained for a run that cannot start"


def test_a_checkpoints_tensors_are_copied_to_cpu_memory():
    live = {"model": {"w": torch.ones(3, requires_grad=True)}, "step": 4, "rng": [torch.zeros(2)]}
    copied, moved = snapshot(live), snapshot(live, copy_tensors=False)
    assert copied["model"]["w"].device.type == "cpu" and not copied["model"]["w"].requires_grad
    assert copied["model"]["w"].data_ptr() != live["model"]["w"].data_ptr()  # the background write's own copy
    assert moved["rng"][0].data_ptr() == live["rng"][0].data_ptr()  # on the CPU already: written as it is
    assert copied["step"] == 4
