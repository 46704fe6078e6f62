"""Kernel launches per RL step do not grow with the ensemble's size: every op of a step runs once for all
members (batched over the member dimension), none once per member. Counted with a TorchDispatchMode (each
aten op dispatched is one kernel launch on a GPU, or a few), one step at M = 1, 16 and 64 members of a tiny
model, after a first step (which makes the step's constants)."""
import collections

from omegaconf import OmegaConf
from torch.utils._python_dispatch import TorchDispatchMode

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking.local_tracker import Tracker
from harness.trainers.ensemble.trainer import EnsembleTrainer

TINY = ["model.hidden_size=16", "model.num_layers=1", "model.num_heads=2", "model.num_kv_heads=1",
        "model.intermediate_size=16", "trainer.warmstart.steps=1", "trainer.prompts_per_step=2",
        "trainer.group_size=2", "trainer.mini_batches=2", "trainer.eval_every=100", "trainer.topk=2"]
SLACK = 8  # launches M may add: the last of a chunked op, a member's failure path never taken, ...


class Launches(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def _launches(tmp_path, cache, members: int) -> collections.Counter:
    overrides = [f"output_root={tmp_path}", f"cache_dir={cache}", "tracking=none", *TINY]
    base = OmegaConf.to_container(validate(compose(overrides), overrides))
    specs = [OmegaConf.create({**base, "seed": k}) for k in range(members)]
    root = tmp_path / f"m{members}"
    trainer = EnsembleTrainer([(s, root / str(k), Tracker(root / str(k))) for k, s in enumerate(specs)], threads=1)
    trainer.rl_step()
    with Launches() as launches:
        trainer.rl_step()
    return launches.ops


def test_kernel_launches_per_step_are_the_same_at_1_16_and_64_members(tmp_path, warm_cache):
    counts = {m: _launches(tmp_path, warm_cache, m) for m in (1, 16, 64)}
    totals = {m: sum(ops.values()) for m, ops in counts.items()}
    grown = {op: (counts[1][op], counts[64][op]) for op in counts[64] if counts[64][op] != counts[1][op]}
    assert max(totals.values()) - min(totals.values()) <= SLACK, (totals, grown)
