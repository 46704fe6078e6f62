"""Run in the verl environment: does the actor verl builds from generated overrides load and run its attention?

  python check_attention.py model_dir cases.json out.json     cases: {label: {"config_name": ..., "overrides": [...]}}

For each case: verl's own trainer config composed with the overrides (model.path pointed at model_dir), the
model config built as verl's v1 trainer builds it (omega_conf_to_dataclass -> HFModelConfig, which picks the
attention implementation), the actor loaded as verl's fsdp engine loads it (the auto class from_pretrained
with that config) and one forward on a padded batch. Writes {label: {"ok": ..., ...}} as JSON to out.json.
"""
from __future__ import annotations

import json
import sys
import traceback

import torch
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.model import get_hf_auto_model_class

from verl_config import compose_verl


def check(model_dir: str, config_name: str, overrides: list) -> dict:
    cfg = compose_verl(config_name, [*overrides, f"actor_rollout_ref.model.path={model_dir}"])
    model_config = omega_conf_to_dataclass(cfg.actor_rollout_ref.model)
    out = {"attn_implementation": model_config.hf_config._attn_implementation,
           "use_remove_padding": model_config.use_remove_padding}
    try:
        auto_class = get_hf_auto_model_class(hf_config=model_config.hf_config)
        model = auto_class.from_pretrained(model_dir, torch_dtype=torch.float32, config=model_config.hf_config)
        ids = torch.tensor([[5, 6, 7, 8], [0, 0, 9, 10]])
        mask = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])
        logits = model(input_ids=ids, attention_mask=mask).logits
        out.update(loaded=model.config._attn_implementation, finite=bool(torch.isfinite(logits).all()))
    except Exception as err:  # the load error is the answer (e.g. flash_attention_2 without flash-attn)
        out["load_error"] = traceback.format_exception_only(type(err), err)[-1].strip()
    return out


def main(model_dir: str, path: str, out_path: str) -> None:
    out = {}
    for label, case in json.loads(open(path).read()).items():
        try:
            out[label] = {"ok": True, **check(model_dir, case["config_name"], case["overrides"])}
        except Exception as err:  # report every case
            out[label] = {"ok": False, "error": traceback.format_exception_only(type(err), err)[-1].strip()}
    with open(out_path, "w") as fh:
        json.dump(out, fh, default=str)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
