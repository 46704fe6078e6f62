"""The resolution of a measure: the smallest difference between two runs it can show. A per-seed contrast
within it of 0 is a tie, no evidence either way: an intervention that never fires leaves contrasts of 0,
which say nothing about whether it would help. Sign tests (robust.MedianTests, the sign-flip test) drop
ties as they drop zeros, and a paired contrast with too few contrasts beyond the resolution for α is not
tested at all (inference.Estimate.untestable), whatever the method.

Accuracy on an eval set of N problems (one answer each) moves in steps of 1/N, so final accuracy and gain
(means of the last k evaluations) move in steps of 1/(N·k): 64 problems, k = 3 -> 1/192. Where N is not
known (verl's avg@k over several eval sets, or a run without `dataset.eval_size`), accuracies use
ACCURACY_RESOLUTION. The other measures (entropy, mismatch, token fractions, collapse indicators) are
continuous, with a noise floor of CONTINUOUS_FLOOR in the measure's units: the trainer computes them in
float32 (about 7 significant digits), and they are of order 0.01-10, so two runs that differ by less than a
millionth differ by rounding, not by what they did. A per-seed contrast within the floor is a tie under
every method (t, exact, sign); an unpaired contrast whose mean and spread both lie within it decides
nothing either (floor_untestable).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

ACCURACY_RESOLUTION = 1e-3  # a tenth of an accuracy point: finer than any eval set of ≤ 1000 answers
ACCURACIES = ("final_accuracy", "gain", "learning_speed", "train_accuracy")
EVAL_MEANS = ("final_accuracy", "gain")  # means of the last k evaluations
ROUNDING = 1e-12
CONTINUOUS_FLOOR = 1e-6  # the noise floor of a continuous measure, in its units (see the module)


def measure_resolution(name: str, eval_problem: Optional[float] = None, evaluations: int = 1) -> float:
    """Resolution of measure `name`; eval_problem: one eval problem's worth of accuracy (1/N) if known."""
    if name in EVAL_MEANS and eval_problem:
        return eval_problem / max(1, evaluations)
    return ACCURACY_RESOLUTION if name in ACCURACIES else CONTINUOUS_FLOOR


def floor_untestable(est) -> Optional[str]:
    """Why an unpaired contrast (inference.Estimate) decides nothing: its mean and its spread both lie within
    the measure's noise floor (a paired one's per-seed contrasts are ties: too_many_ties). None otherwise."""
    if est.paired or not est.resolution or abs(est.value) >= est.resolution or est.sd_unit >= est.resolution:
        return None
    return (f"the contrast {est.value:.3g} and its spread {est.sd_unit:.3g} lie within the measure's noise "
            f"floor (±{est.resolution:.3g}): differences of rounding, not of runs, so no test decides")


def ties(values: Sequence[float], resolution: float = 0.0) -> np.ndarray:
    """Which values lie within `resolution` of 0 (one full step, e.g. one problem of difference, is not a
    tie; 0 always is)."""
    return np.abs(np.asarray(values, dtype=np.float64)) < max(resolution * (1.0 - 1e-6), ROUNDING)


def too_many_ties(values: Sequence[float], resolution: float, alpha: float) -> Optional[str]:
    """Why the contrasts beyond the resolution are too few for any test to reach p < α, or None."""
    tied = int(ties(values, resolution).sum())
    left = len(values) - tied
    if not tied or 0.5 ** left < alpha:
        return None
    needed = next(n for n in range(1, 64) if 0.5 ** n < alpha)
    within = f"lie within the measure's resolution (±{resolution:.3g})" if resolution else "equal 0"
    return (f"{tied} of {len(values)} per-seed contrasts {within}: ties, no evidence either way; the {left} "
            f"left cannot reach p < {alpha:.3g} (at best {0.5 ** left:.3g}), at least {needed} contrasts beyond "
            "the resolution are needed, so no test decides")
