"""Stands in for `python -m verl.trainer.main_ppo` in the CPU end-to-end test (tests/verl/test_verl_e2e.py).

Receives exactly the arguments the generated batch script passes, and checks what a real run depends on:
the overrides compose against verl's config, the Ray cluster the script started is reachable with the
expected GPUs, the loss plugin loads through model.external_lib and evaluates the run's objective from
$HARNESS_VERL_OBJECTIVE, the prepared data files exist. Then it writes verl-style metric lines (verl's
file logger format) and a verl checkpoint marker, like a two-step run.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import ray
import torch
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.utils.import_utils import import_external_libs
from verl.utils.py_functional import rename_dict

from verl_config import compose_verl


def main(argv):
    config_name = argv[0].split("=", 1)[1]
    cfg = compose_verl(config_name, argv[1:])
    ray.init(address=os.environ["RAY_ADDRESS"], logging_level="ERROR")
    gpus = ray.cluster_resources().get("GPU", 0)
    assert gpus == cfg.trainer.nnodes * cfg.trainer.n_gpus_per_node, gpus
    # what verl reserves on the head node (harness/trainers/verl/ray_resources.py): else its start-up hangs
    units = cfg.transfer_queue.backend.SimpleStorage.num_data_storage_units
    assert ray.cluster_resources().get("CPU", 0) >= 3 * cfg.trainer.n_gpus_per_node + 1 + units + 1
    assert cfg.trainer.use_v1 is True
    for f in [*cfg.data.train_files, *cfg.data.val_files]:
        assert Path(f).is_file(), f
    import_external_libs(cfg.actor_rollout_ref.model.external_lib)
    fn = get_policy_loss_fn(cfg.actor_rollout_ref.actor.policy_loss.loss_mode)
    logp = torch.full((2, 3), -1.0, requires_grad=True)
    loss, metrics = fn(old_log_prob=torch.full((2, 3), -1.2), log_prob=logp, advantages=torch.ones(2, 3),
                       response_mask=torch.ones(2, 3, dtype=torch.bool), loss_agg_mode="token-mean", config=None,
                       rollout_is_weights=None)
    loss.backward()
    log = Path(os.environ["VERL_FILE_LOGGER_PATH"])
    with log.open("a") as fh:
        fh.write(json.dumps({"step": 0, "data": {"val-core/aime2024/acc/mean@16": 0.25}}) + "\n")
        fh.write(json.dumps({"step": 1, "data": {"critic/score/mean": 0.5, "actor/pg_loss": float(loss),
                                                 **rename_dict(metrics, "actor/"),  # as verl's trainer logs them
                                                 "perf/cluster_gpus": gpus}}) + "\n")
    ckpt = Path(cfg.trainer.default_local_dir)
    (ckpt / "global_step_1").mkdir(parents=True, exist_ok=True)
    (ckpt / "latest_checkpointed_iteration.txt").write_text("1")
    print(f"fake main_ppo: {config_name}, {len(argv) - 1} overrides, {gpus:g} GPUs in Ray, loss {float(loss):.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
