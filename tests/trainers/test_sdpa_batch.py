"""Any ensemble size up to the cap runs on a GPU: no SDPA call is handed a batch over 65,535 rows (flash
attention's grid.y and cuDNN's batch limit), however many members times rows the rollout or the training
forward holds. Shapes recorded at SDPA's call site with a shape-only stand-in (zeros of the output's shape),
at M = 1,024 (the cap) and the default eval size (128 rows per member), on a tiny model."""
import pytest
import torch
from conftest import tiny_model_cfg

from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.ensemble.stacked_model import SDPA_MAX_BATCH, StackedQwen3
from harness.trainers.ensemble.stacked_rollout import StackedRollout

M, ROWS, PROMPT = 1024, 128, 8  # the trainer's member cap; conf/dataset's eval_size; a prompt's tokens
LIMIT = 65_535


@pytest.fixture
def recorded(monkeypatch):
    shapes = []

    def shape_only(q, k, v, **kwargs):
        shapes.append((tuple(q.shape), tuple(k.shape)))
        return q.new_zeros(q.shape)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", shape_only)
    return shapes


@pytest.fixture(scope="module")
def model():
    cfg = tiny_model_cfg(hidden_size=16, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=16)
    return StackedQwen3(build_model(cfg, vocab_size=48, seed=0), M)


def test_the_rollout_of_1024_members_at_the_eval_size_hands_sdpa_at_most_65535_rows(model, recorded):
    engine = StackedRollout(model, precision_spec("bf16"), [1.0] * M)  # bf16 rollout: SDPA's path
    prompts = torch.ones(1, ROWS, PROMPT, dtype=torch.long).expand(M, -1, -1)
    engine.generate(prompts, 2, [1.0] * M, None, [True] * M, greedy=True)  # the prefill and one decoded token
    assert recorded, "the rollout's attention did not go through SDPA"
    assert max(q[0] for q, _ in recorded) <= min(SDPA_MAX_BATCH, LIMIT)
    assert sum(q[0] for q, _ in recorded) == 2 * M * ROWS  # every row attended, in chunks


def test_the_training_forward_of_1024_members_hands_sdpa_at_most_65535_rows(model, recorded):
    prompts = torch.ones(M, 16, PROMPT, dtype=torch.long)  # 16 distinct prompts, 8 rows each
    rows = torch.arange(16).repeat_interleave(8).expand(M, -1)
    responses = torch.ones(M, ROWS, 3, dtype=torch.long)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # off the CPU's float32 path: SDPA, as on a GPU
        model.run_shared(model.param, prompts, rows, responses)
    assert max(q[0] for q, _ in recorded) <= LIMIT
    assert sum(q[0] for q, _ in recorded if q[2] == 3) == M * ROWS
