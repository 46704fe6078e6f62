import numpy as np
import pytest
import torch

from harness.trainers.builtin.tasks import build_task
from harness.trainers.builtin.tokenizer import CHARACTERS, build_tokenizer, encode_batch, fixed_vocab

from conftest import dataset_cfg


def test_vocabulary_is_pinned(tokenizer):
    vocab = tokenizer.get_vocab()
    assert len(tokenizer) == 48
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    assert vocab["0"] == 3 and vocab["9"] == 12 and vocab[" "] == 13 and vocab["a"] == 22 and vocab["z"] == 47
    assert build_tokenizer().get_vocab() == vocab == fixed_vocab()


@pytest.mark.parametrize(
    "cfg",
    [dataset_cfg(difficulty=3, ops="+-*"), dataset_cfg(name="sorting", difficulty=5)],
    ids=["arithmetic", "sorting"],
)
def test_task_strings_round_trip_one_token_per_character(tokenizer, cfg):
    task = build_task(cfg)
    for problem in task.sample_train(np.random.default_rng(0), 50):
        for text in (problem.prompt, problem.answer, problem.prompt + problem.answer):
            ids = tokenizer.encode(text, add_special_tokens=False)
            assert len(ids) == len(text)
            assert tokenizer.decode(ids) == text


def test_every_character_round_trips_including_spaces(tokenizer):
    text = CHARACTERS + "  sort: 1, 2 "
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text


def test_decode_can_drop_special_tokens(tokenizer):
    ids = [tokenizer.bos_token_id, *tokenizer.encode("12+3", add_special_tokens=False), tokenizer.eos_token_id, 0, 0]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "12+3"


def test_encode_batch_prepends_bos_and_refuses_ragged_prompts(tokenizer):
    ids = encode_batch(tokenizer, ["12+34=", "05+99="])
    assert ids.dtype == torch.long and ids.shape == (2, 7)
    assert ids[:, 0].tolist() == [tokenizer.bos_token_id] * 2
    assert tokenizer.decode(ids[1, 1:].tolist()) == "05+99="
    with pytest.raises(ValueError, match="same length"):
        encode_batch(tokenizer, ["1+2=", "10+2="])
