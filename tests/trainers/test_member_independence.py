"""A run's numbers do not depend on its ensemble, bit for bit on a CPU: each member of an ensemble of 3 (first,
middle and last slot; two objectives; the default bf16 rollout) logs exactly what the same config logs alone
(the default regime, two steps). Its samples come from its own stream (seed, step, row, position), the
model's ops are per member, and the gradient norm for clipping reduces each member's own contiguous row (summed down a
column of [parameters, M] before, its rounding depended on M: issue 36 item 6)."""
from __future__ import annotations

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from test_ensemble_trainer import records, train


def test_a_member_logs_bit_for_bit_what_it_logs_alone(tmp_path, warm_cache):
    # the default regime (16 prompts x 8, 8 mini-batches): gradients pass the clip's norm, whose rounding counts
    variants = (("dppo", 0.1, 0), ("drpo", 0.2, 1), ("dppo", 0.4, 2))
    specs = []
    for algo, delta, seed in variants:
        overrides = [f"output_root={tmp_path}", f"cache_dir={warm_cache}", "trainer.steps=2", "trainer.eval_every=1",
                     "trainer.checkpoint_every=100", "trainer.progress=false", f"algo={algo}", f"delta={delta}",
                     f"seed={seed}"]
        specs.append(validate(compose(overrides), overrides))
    train(specs, tmp_path / "together")
    for k, s in enumerate(specs):
        train([s], tmp_path / f"alone{k}")
        together, alone = records(tmp_path / "together" / str(k)), records(tmp_path / f"alone{k}" / "0")
        assert len(together) == len(alone) >= 3
        for a, b in zip(together, alone):
            assert a == b, (k, [(key, a[key], b.get(key)) for key in a if a[key] != b.get(key)])
