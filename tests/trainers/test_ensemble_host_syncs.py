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


# -- the whole step, both directions -------------------------------------------------------------------------
CEILING = 4  # copies each way per step (issue 51: <= 4 per step, none per decoded token)


def _harness_caller(depth: int):
    frame = sys._getframe(depth)
    while frame is not None and "/harness/" not in frame.f_code.co_filename:
        frame = frame.f_back
    return None if frame is None else (frame.f_code.co_filename.split("/harness/")[-1], frame.f_code.co_name)


class Transfers(TorchFunctionMode):
    """Device-to-host reads (as HostReads) and host-to-device copies made by the harness: a tensor made of host
    values (torch.tensor, as_tensor of a list, number or array, from_numpy) is a copy to the device on a GPU
    (on a CPU run the trainer's device is the CPU, so moves themselves cannot be told from no-ops)."""

    def __init__(self):
        super().__init__()
        self.reads, self.writes = collections.Counter(), collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        read = READS.get(func)
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and _bool_mask(args[1]):
            read = "bool-mask"
        write = func.__name__ if func in (torch.tensor, torch.as_tensor) and args and \
            not isinstance(args[0], torch.Tensor) else None
        for name, counter in ((read, self.reads), (write, self.writes)):
            where = None if name is None else _harness_caller(2)
            if where is not None:
                counter[(name, *where)] += 1
        return func(*args, **(kwargs or {}))


def _step_transfers(trainer, monkeypatch) -> Transfers:
    from_numpy = torch.from_numpy  # not seen by a TorchFunctionMode: counted here
    with Transfers() as transfers:
        def counted(array):
            where = _harness_caller(2)
            if where is not None:
                transfers.writes[("from_numpy", *where)] += 1
            return from_numpy(array)

        monkeypatch.setattr(torch, "from_numpy", counted)
        trainer.rl_step()
        monkeypatch.setattr(torch, "from_numpy", from_numpy)
    return transfers


def test_a_whole_step_copies_at_most_four_times_each_way_and_never_per_token(tmp_path, warm_cache, monkeypatch):
    from harness.trainers.ensemble.stacked_rollout import CHECK_EVERY

    specs = []
    for algo in ("dppo delta=0.1", "drpo delta=0.2", "grpo trainer.advantage=rloo"):
        overrides = [f"output_root={tmp_path}", f"cache_dir={warm_cache}", "debug=quick", "trainer.mini_batches=2",
                     "trainer.eval_every=100", *f"algo={algo}".split()]
        specs.append(validate(compose(overrides), overrides))
    trainer = EnsembleTrainer([(s, tmp_path / str(k), Tracker(tmp_path / str(k))) for k, s in enumerate(specs)])
    trainer.rl_step()  # the first step makes the step's constants (which members are alive, ...) once
    counted = {}
    for tokens in (trainer.max_new_tokens, 3 * CHECK_EVERY):  # the task's answer length, and a long rollout
        trainer.max_new_tokens = tokens
        transfers = _step_transfers(trainer, monkeypatch)
        counted[tokens] = transfers
        assert sum(transfers.reads.values()) <= CEILING + tokens // CHECK_EVERY, transfers.reads
        assert sum(transfers.writes.values()) <= CEILING, transfers.writes
    short, long = counted.values()
    assert sum(long.reads.values()) - sum(short.reads.values()) <= 3  # a look every CHECK_EVERY tokens, at most
    assert long.writes == short.writes
