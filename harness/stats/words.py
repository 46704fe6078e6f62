"""The words of a claim: the hypotheses a declared test may state, the verdicts, and the line that states a
verdict (`Verdict: <word> — <reason>`). Plain names, without scipy, for the readers of sweep files."""
HYPOTHESES = ("greater", "less", "noninferior", "equivalent")
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
NOT_TESTABLE = "not testable here"  # a failed precondition: the tests are not read
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTABLE)
VERDICT_PREFIX = "Verdict: "
