"""The objective × threshold interaction test (stats/interaction.py) on synthetic outcomes: it finds a real
interaction, and holds its size when both objectives are equally (in)sensitive, whatever their noise."""
from __future__ import annotations

import numpy as np
import pytest

from harness.stats import interaction

ALPHA = 0.05


def _arms(rng, shifts, sd, seeds):
    return {v: dict(enumerate(rng.normal(0.6 + shift, sd, seeds))) for v, shift in enumerate(shifts)}


def test_the_spread_subtracts_the_noise():
    """Three values without an effect, very noisy: the raw SD of the means is far from 0, the spread is near 0."""
    rng = np.random.default_rng(0)
    noisy = _arms(rng, (0.0, 0.0, 0.0), 0.2, 400)
    assert interaction.spread(noisy) < 0.01
    assert interaction.spread(_arms(rng, (0.0, 0.0, 0.15), 0.01, 400)) == pytest.approx(0.15 / np.sqrt(3), abs=0.005)


def test_a_real_interaction_is_found():
    """DPPO flat, GRPO's third value 0.1 (twice the SESOI) lower; 12 seeds, SD 0.05: found in ≥ 80%."""
    rng = np.random.default_rng(1)
    sims = 100
    found = sum(interaction.contrast(_arms(rng, (0, 0, 0), 0.05, 12), _arms(rng, (0, 0, -0.1), 0.05, 12), 0.05,
                                     ALPHA, seed=i, draws=500).shown for i in range(sims))
    assert found / sims >= 0.8, found / sims


@pytest.mark.parametrize("shifts,sd_less,sd_more", [((0, 0, 0), 0.05, 0.05), ((0, 0, 0), 0.02, 0.08),
                                                     ((0, 0.04, 0.08), 0.05, 0.05)])
def test_no_interaction_is_found_at_most_alpha_of_the_time(shifts, sd_less, sd_more):
    """Equal spreads (none, or the same real one), equal or unequal noise: D > 0 shown at most α of the time
    (+ 2.5 Monte-Carlo standard errors); a noisier GRPO does not look more sensitive."""
    rng = np.random.default_rng(int(sd_more * 100) + len(set(shifts)))
    sims = 300
    shown = sum(interaction.contrast(_arms(rng, shifts, sd_less, 12), _arms(rng, shifts, sd_more, 12), 0.05, ALPHA,
                                     seed=i, draws=500).shown for i in range(sims))
    assert shown / sims <= ALPHA + 2.5 * np.sqrt(ALPHA * (1 - ALPHA) / sims), shown / sims


def test_too_few_seeds_is_not_testable():
    rng = np.random.default_rng(2)
    assert interaction.contrast(_arms(rng, (0, 0), 0.05, 3), _arms(rng, (0, 0.1), 0.05, 12), 0.05, ALPHA) is None
