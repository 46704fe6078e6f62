"""Character-level tokenizer for the built-in tasks, built locally (nothing is downloaded).

Every character the tasks write is one token, so a task string round-trips exactly through
encode/decode and the policy's per-token log-probs are per-character log-probs.
"""

from __future__ import annotations

import string

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"
SPECIAL_TOKENS = (PAD, BOS, EOS)
# Order is the id order; append new characters at the end so existing ids (and warm-start caches) stay valid.
CHARACTERS = string.digits + " +-*=,:()" + string.ascii_lowercase


def fixed_vocab() -> dict[str, int]:
    """The token -> id map; identical on every call and machine: <pad>=0, <bos>=1, <eos>=2, then CHARACTERS."""
    return {token: index for index, token in enumerate((*SPECIAL_TOKENS, *CHARACTERS))}


def build_tokenizer():
    """A `transformers.PreTrainedTokenizerFast` with one token per character of CHARACTERS.

    `decode(encode(s)) == s` for any string over CHARACTERS (spaces included); `encode` adds no
    special tokens on its own — `encode_batch` prepends `<bos>`.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(vocab=fixed_vocab(), unk_token=PAD))
    # Every single character becomes its own "word"; Fuse concatenates on decode instead of joining with spaces.
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        clean_up_tokenization_spaces=False,
    )


def encode_batch(tokenizer, prompts: list[str]) -> "torch.LongTensor":
    """Token ids of `<bos>` + prompt for each prompt: LongTensor [B, P], P = 1 + len(prompt).

    All prompts must have the same character length (one task config guarantees that), so no padding is needed.
    """
    lengths = {len(prompt) for prompt in prompts}
    if len(lengths) != 1:
        raise ValueError(f"encode_batch: prompts must all have the same length, got lengths {sorted(lengths)}")
    import torch  # lazily: the tasks import this module's token names while configs are validated

    ids = [[tokenizer.bos_token_id, *tokenizer.encode(prompt, add_special_tokens=False)] for prompt in prompts]
    return torch.tensor(ids, dtype=torch.long)


def char_ids(texts: list[str], width: int | None = None):
    """Token ids of each text over CHARACTERS (one per character, as `tokenizer.encode` gives them), right-padded
    with <pad> (id 0) to `width` (default: the longest): a numpy int64 array [N, width], made in a few numpy
    calls for the whole batch (no tokenizer call per text). A character outside CHARACTERS is refused."""
    import numpy as np

    width = max([len(t) for t in texts] + [0]) if width is None else width
    table = np.full(256, -1, dtype=np.int64)
    table[0] = 0  # the padding byte
    for token, index in fixed_vocab().items():
        if len(token) == 1:
            table[ord(token)] = index
    try:
        raw = "".join(t.ljust(width, "\0") for t in texts).encode("ascii")
    except UnicodeEncodeError as err:
        raise ValueError(f"char_ids: a character outside the tokenizer's vocabulary: {err}") from None
    if len(raw) != len(texts) * width:
        raise ValueError(f"char_ids: a text longer than width {width}")
    ids = table[np.frombuffer(raw, dtype=np.uint8)].reshape(len(texts), width)
    if (ids < 0).any():
        raise ValueError("char_ids: a character outside the tokenizer's vocabulary")
    return ids


def encode_prompts(prompts: list[str]):
    """`encode_batch`'s ids as a numpy int64 array [B, P], without a tokenizer call per prompt."""
    import numpy as np

    lengths = {len(prompt) for prompt in prompts}
    if len(lengths) != 1:
        raise ValueError(f"encode_prompts: prompts must all have the same length, got lengths {sorted(lengths)}")
    ids = char_ids(prompts)
    return np.concatenate([np.full((len(prompts), 1), fixed_vocab()[BOS], dtype=np.int64), ids], axis=1)
