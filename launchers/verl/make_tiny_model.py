"""A tiny random Qwen3 checkpoint with its own tokenizer, made offline (no hub): what gpu_smoke.sh trains.

  <verl python> launchers/verl/make_tiny_model.py OUT_DIR

The shape is conf/model/tiny_qwen3.yaml's (hidden 64, 2 layers, 4 heads, 2 KV heads, context 64 is raised
to 512 here so a prompt and a short response fit), with head_dim 64 (a width vLLM's attention kernels
take). The tokenizer is a character-level WordLevel vocabulary over printable ASCII plus the chat
markers verl's chat template needs; the weights are random, so rewards are ~0: the smoke test checks that
the step runs end to end, not that it learns.
"""
from __future__ import annotations

import string
import sys
from pathlib import Path

CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def main(out: Path) -> None:
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    chars = sorted(set(string.printable))
    vocab = {token: i for i, token in enumerate(SPECIAL + chars)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|endoftext|>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # every character
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        additional_special_tokens=SPECIAL[1:])
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)

    config = Qwen3Config(vocab_size=len(vocab), hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=512,
                         tie_word_embeddings=True, bos_token_id=None, eos_token_id=vocab["<|im_end|>"],
                         pad_token_id=vocab["<|endoftext|>"], torch_dtype="bfloat16")
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = config.eos_token_id
    model.save_pretrained(out)
    print(f"tiny model: {out} ({sum(p.numel() for p in model.parameters())} parameters, vocab {len(vocab)})")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
