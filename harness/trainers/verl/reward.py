"""verl custom reward function (reward.custom_reward_function.path = this file, name = compute_score).

verl 0.9.1 loads it by file path in its reward workers and calls
  compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **kwargs)
with the decoded response and the row's reward_model.ground_truth (prepare_data.py writes it). The dict's
"score" is the reward; every key is reported (validation: val-core/<data_source>/acc/mean@k).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, Optional

# Loaded by path, maybe in a process without harness on sys.path: add the folder that holds the package.
_ROOT = str(Path(__file__).resolve().parents[3])
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

from harness.trainers.verl.verifier import extract_answer, is_equivalent, reference_answer  # noqa: E402


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Optional[dict] = None,
                  **kwargs: Any) -> Dict[str, float]:
    """1.0 for a verified correct final answer, else 0.0 (no format or length shaping)."""
    answer = extract_answer(solution_str)
    correct = is_equivalent(answer, reference_answer(ground_truth))
    return {"score": float(correct), "acc": float(correct), "answered": float(answer is not None)}
