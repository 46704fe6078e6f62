"""The per-run outcomes a sweep's tests may be declared on (`measure:`): each name with what it means and
the range it can take. How each is computed from a run's curves is in harness/reports/evidence/outcomes.py."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

Bounds = Tuple[Optional[float], Optional[float]]

MEASURES: Dict[str, Tuple[str, Bounds]] = {  # name -> (description, bounds)
    "final_accuracy": ("eval accuracy, mean of the last k evaluations", (0.0, 1.0)),
    "gain": ("final accuracy (last k evaluations) minus the run's first evaluation", (-1.0, 1.0)),
    "learning_speed": ("mean eval accuracy over the evaluations after step 0 in the first half of training",
                       (0.0, 1.0)),
    "train_accuracy": ("training accuracy, mean over the last 10% of steps", (0.0, 1.0)),
    "entropy": ("token entropy (nats), mean over the last 10% of steps", (0.0, None)),
    "log_entropy_change": ("log(token entropy over the last 10% of steps / over the first 10%): −2.3 is a "
                           "tenfold fall", (None, None)),
    "masked_share": ("fraction of tokens the trust region masks or clips (objective/masked_frac), mean over all "
                     "steps: does the threshold bind?", (0.0, 1.0)),
    "lowprob_clipped": ("fraction of low-probability tokens (ν < 0.2) clipped, mean over all steps", (0.0, 1.0)),
    "lowprob_share": ("fraction of sampled tokens with ν < 0.2, mean over the first 10% of steps", (0.0, 1.0)),
    "mismatch": ("mismatch |μ − π'|, mean over the last 10% of steps", (0.0, None)),
    "mismatch_start": ("mismatch |μ − π'|, mean over the first 10% of steps (is the cause present?)", (0.0, None)),
    "log_mismatch_growth": ("log(mismatch over the last 10% of steps / over the first 10%)", (None, None)),
    "log_mismatch": ("log of the mismatch |μ − π'| over the last 10% of steps (its end level, on the ratio scale: "
                     "a contrast is the log of the arms' ratio)", (None, None)),
    "runaway": ("1 if the run's mismatch ran away (its last 10% of steps at least 10 times its first 10%, or "
                "non-finite), else 0", (0.0, 1.0)),
    "clipped_lowprob_share": ("share of the clipped tokens that are low-probability (ν < 0.2), pooled over all "
                              "steps from the logged fractions", (0.0, 1.0)),
    "collapsed": ("1 if the run collapsed (below its own start, smoothed; or non-finite), else 0", (0.0, 1.0)),
}
