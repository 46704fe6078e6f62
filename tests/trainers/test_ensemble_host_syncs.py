"""The loss half of an ensemble's RL step (objectives, log-probs, entropy, losses, clipping, metrics) hands no
value to the host but the step's one copy of its metrics: on a GPU every such read waits for the device. Counted
with a TorchFunctionMode over the Tensor methods that return host values (item, tolist, bool, float, int,
numpy, cpu) and boolean-mask indexing (its size is read back), attributed to the harness module that calls."""
from __future__ import annotations

import collections
import sys

import torch
from torch.overrides import TorchFunctionMode

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking.local_tracker import Tracker
from harness.trainers.ensemble.trainer import EnsembleTrainer

READS = {torch.Tensor.item: "item", torch.Tensor.tolist: "tolist", torch.Tensor.__bool__: "bool",
         torch.Tensor.__float__: "float", torch.Tensor.__int__: "int", torch.Tensor.numpy: "numpy",
         torch.Tensor.cpu: "cpu"}
LOSS_HALF = ("algorithms/", "trainers/ensemble/batched_loss.py", "trainers/ensemble/step_tensors.py",
             "trainers/ensemble/clip.py", "trainers/builtin/policy.py")


def _bool_mask(index) -> bool:
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool
               for i in (index if isinstance(index, tuple) else (index,)))


class HostReads(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.where = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = READS.get(func)
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and _bool_mask(args[1]):
            name = "bool-mask"
        if name is not None:
            frame = sys._getframe(1)
            while frame is not None and "/harness/" not in frame.f_code.co_filename:
                frame = frame.f_back
            if frame is not None:
                self.where[(name, frame.f_code.co_filename.split("/harness/")[-1], frame.f_code.co_name)] += 1
        return func(*args, **(kwargs or {}))


def test_the_loss_half_of_a_step_copies_to_the_host_once(tmp_path, warm_cache, monkeypatch):
    from harness.algorithms.base import Objective

    computes, compute_rows = [], Objective.compute_rows
    monkeypatch.setattr(Objective, "compute_rows", lambda self, *a, groups, **kw: computes.append(groups) or
                        compute_rows(self, *a, groups=groups, **kw))
    specs = []
    for algo, delta in (("dppo", 0.1), ("dppo", 0.2), ("drpo", 0.2)):
        overrides = [f"output_root={tmp_path}", f"cache_dir={warm_cache}", "debug=quick", "trainer.mini_batches=2",
                     "trainer.eval_every=100", f"algo={algo}", f"delta={delta}"]
        specs.append(validate(compose(overrides), overrides))
    trainer = EnsembleTrainer([(s, tmp_path / str(k), Tracker(tmp_path / str(k))) for k, s in enumerate(specs)])
    with HostReads() as reads:
        metrics = trainer.rl_step()
    assert sorted(metrics) == [0, 1, 2] and all("objective/binary_div_mean" in metrics[k] for k in (0, 1))
    assert computes == [2, 1, 2, 1]  # per mini-batch: both DPPO members (δ 0.1 and 0.2) in one compute, DRPO's
    loss_half = {key: n for key, n in reads.where.items() if key[1].startswith(LOSS_HALF)}
    assert loss_half == {("cpu", "trainers/ensemble/step_tensors.py", "host_metrics"): 1,
                         ("tolist", "trainers/ensemble/step_tensors.py", "host_metrics"): 1}, loss_half
