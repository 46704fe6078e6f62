"""Run in the verl environment: the harness loss's metrics along verl 0.9.1's own path to its file logger.

  python metrics_path.py <loss_mode> <metrics.jsonl> out.json     (read by tests/verl/test_verl_metrics.py)

verl's functions, in the order its v1 trainer calls them for one actor update of two micro-batches:
workers/utils/losses.py `ppo_loss` (the policy loss found by loss_mode, after the plugin was loaded the way
workers load model.external_lib) -> engine/utils.py `append_to_dict` over micro-batches -> engine_workers.py
`Metric.aggregate_dp` over data-parallel ranks, `append_to_dict` over mini-batches -> trainer_base.py
`_update_actor`: `rename_dict(metrics, "actor/")`, `reduce_metrics` -> utils/tracking.py `FileLogger.log`.
Writes the keys the loss returned and the record the file logger wrote to out.json.
"""
from __future__ import annotations

import json
import os
import sys

import torch
from omegaconf import open_dict
from verl.utils import tensordict_utils as tu
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.import_utils import import_external_libs
from verl.utils.metric import Metric, reduce_metrics
from verl.utils.py_functional import append_to_dict, rename_dict
from verl.utils.tracking import FileLogger
from verl.workers.utils.losses import ppo_loss
from verl_config import compose_verl


def nested(rows):
    return torch.nested.as_nested_tensor(rows, layout=torch.jagged)


def micro_batch(seed: int):
    """A TensorDict as the actor engine hands ppo_loss one micro-batch (no padding: jagged tensors)."""
    g = torch.Generator().manual_seed(seed)
    prompt_lens, response_lens = [3, 5], [4, 2]
    prompts = nested([torch.ones(n, dtype=torch.long) for n in prompt_lens])
    responses = nested([torch.ones(n, dtype=torch.long) for n in response_lens])
    mu = [torch.nn.functional.logsigmoid(2 * torch.randn(n, generator=g)) for n in response_lens]
    data = tu.get_tensordict(tensor_dict={
        "prompts": prompts, "responses": responses,
        "response_mask": nested([torch.ones(n) for n in response_lens]),
        "old_log_probs": nested(mu),
        "advantages": nested([torch.full((n,), a) for n, a in zip(response_lens, (1.0, -1.0))]),
    }, non_tensor_dict={"dp_size": 1, "batch_num_tokens": sum(response_lens) * 2, "global_batch_size": 4})
    # the model's log-probs over whole sequences: π_θ near μ on the response tokens
    full = [torch.cat([torch.zeros(p), m + 0.1 * torch.randn(len(m), generator=g)])
            for p, m in zip(prompt_lens, mu)]
    return {"log_probs": nested(full)}, data


def main(loss_mode: str, log_path: str, out_path: str) -> None:
    node = compose_verl("ppo_trainer", ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
                                        f"actor_rollout_ref.actor.policy_loss.loss_mode={loss_mode}",
                                        f"actor_rollout_ref.model.external_lib=harness.trainers.verl.plugin"])
    import_external_libs(node.actor_rollout_ref.model.external_lib)
    actor = node.actor_rollout_ref.actor.copy()
    with open_dict(actor):
        actor.rollout_n = 1
    config = omega_conf_to_dataclass(actor)
    micro, returned = {}, set()
    for seed in (1, 2):
        model_output, data = micro_batch(seed)
        _, metrics = ppo_loss(config, model_output, data)
        returned |= set(metrics)
        append_to_dict(micro, metrics)  # engine/utils.py, over micro-batches
    per_rank = {k: Metric.aggregate_dp([v]) if isinstance(v, Metric) else v for k, v in micro.items()}
    per_rank["perf/max_memory_allocated_gb"] = 1.5  # engine_workers.py train_batch logs these beside the loss's
    mini = {}
    append_to_dict(mini, per_rank)  # engine_workers.py, over mini-batches
    mini["mfu"] = [0.0]
    actor_metrics = rename_dict(mini, "actor/")  # trainer_base.py _update_actor
    actor_metrics["perf/mfu/actor"] = actor_metrics.pop("actor/mfu")
    logged = reduce_metrics(actor_metrics)
    os.environ["VERL_FILE_LOGGER_PATH"] = log_path
    logger = FileLogger("harness", "metrics_path")
    logger.log(logged, step=1)
    logger.finish()
    with open(out_path, "w") as fh:
        json.dump({"loss_keys": sorted(returned), "logged_keys": sorted(logged)}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:4])
