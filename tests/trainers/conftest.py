"""Shared fixtures for the built-in trainer components: a tiny model and its config."""

import types

import pytest


def tiny_model_cfg(**overrides):
    fields = dict(
        hidden_size=32,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        path=None,
    )
    fields.update(overrides)
    return types.SimpleNamespace(**fields)


def dataset_cfg(**overrides):
    fields = dict(name="arithmetic", difficulty=2, eval_size=32, seed=0, ops="+")
    fields.update(overrides)
    return types.SimpleNamespace(**fields)


@pytest.fixture(scope="module")
def tokenizer():
    from harness.trainers.builtin.tokenizer import build_tokenizer

    return build_tokenizer()


@pytest.fixture
def model_cfg():
    return tiny_model_cfg()
