"""verl's metric records -> harness namespaces, and following verl's file logger."""
from __future__ import annotations

import json

from harness.trainers.verl.metrics import MetricsFollower, translate


def test_translate_namespaces():
    out = translate({
        "critic/score/mean": 0.25, "critic/rewards/mean": 0.25, "response_length/mean": 812.0,
        "actor/entropy": 0.4, "actor/pg_loss": -0.01, "actor/grad_norm": 0.3,
        "objective/masked_frac": 0.02, "perf/throughput": 1234.0, "timing_s/gen": 40.0,
        "val-core/aime2024/acc/mean@16": 0.30, "val-aux/aime2024/acc/mean@4": 0.1,
        "val-core/aime2024/acc/best@16/mean": 0.6, "val-core/aime2025/acc/mean@16": 0.20,
        "val-aux/aime2025/answered/mean@16": 0.9, "training/global_step": 3, "note": "text",
    })
    assert out["train/accuracy"] == 0.25 and out["train/reward"] == 0.25 and out["train/loss"] == -0.01
    assert out["train/response_length"] == 812.0 and out["train/entropy"] == 0.4
    assert out["objective/masked_frac"] == 0.02 and out["perf/throughput"] == 1234.0
    assert out["perf/time_s/gen"] == 40.0
    assert out["eval/aime2024/accuracy"] == 0.30  # the largest k wins over mean@4
    assert out["eval/aime2024/pass_at_16"] == 0.6
    assert abs(out["eval/accuracy"] - 0.25) < 1e-12
    assert out["verl/val-aux/aime2025/answered/mean_at_16"] == 0.9
    assert out["verl/training/global_step"] == 3.0
    assert "note" not in str(out)


def test_follower_reads_complete_lines_and_restarts_after_truncation(tmp_path):
    path = tmp_path / "metrics.jsonl"
    follower = MetricsFollower(path)
    assert list(follower.poll()) == []
    with path.open("w") as fh:
        fh.write(json.dumps({"step": 1, "data": {"a": 1}}) + "\n" + '{"step": 2, "da')
    assert list(follower.poll()) == [(1, {"a": 1})]
    with path.open("a") as fh:
        fh.write('ta": {"a": 2}}\nnot json\n')
    assert list(follower.poll()) == [(2, {"a": 2})]
    path.write_text(json.dumps({"step": 7, "data": {"a": 7}}) + "\n")  # verl restarted: file truncated
    assert list(follower.poll()) == [(7, {"a": 7})]
