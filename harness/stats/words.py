"""The words of a claim: the hypotheses a declared test may state, the verdicts, and the line that states a
verdict (`Verdict: <word> — <reason>`). Plain names, without scipy, for the readers of sweep files."""
HYPOTHESES = ("greater", "less", "noninferior", "equivalent")
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
NOT_TESTABLE = "not testable here"  # a failed precondition: the tests are not read
# a hypothesis that states a size (`size: true`: c ≥ SESOI) for which only c > 0 was shown
DIRECTION_ONLY = "direction reproduced, size not shown"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTABLE, DIRECTION_ONLY)
VERDICT_PREFIX = "Verdict: "
