"""`trainer=builtin` has one RL loop, the ensemble trainer's: a checkpoint the stacked model does not compute
(here a Qwen3 with attention biases) is refused in one line naming `model.path`, before any training."""
from __future__ import annotations

import pytest

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking.local_tracker import Tracker
from harness.trainers.ensemble.loop import SoloTrainer


def test_another_architecture_is_refused_in_one_line(tmp_path, tokenizer):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, attention_bias=True,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2)
    Qwen3ForCausalLM(config).save_pretrained(tmp_path / "biased")
    overrides = [f"output_root={tmp_path}", f"cache_dir={tmp_path / 'cache'}", "debug=quick",
                 f"model.path={tmp_path / 'biased'}"]
    cfg = validate(compose(overrides), overrides)
    with pytest.raises(ValueError) as err:
        SoloTrainer(cfg, tmp_path / "run", Tracker(tmp_path / "run"))
    assert str(err.value).count("\n") == 0
    assert str(err.value).startswith(f"model.path={tmp_path / 'biased'}: ") and "trainer=verl" in str(err.value)
    assert not (tmp_path / "cache").exists()  # no warm start began
