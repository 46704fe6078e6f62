"""Rule-based verification of math answers (pure python, no dependencies).

  extract_answer(response)  the final answer of a model response: its last \\boxed{...}, else the last
                            "Answer: ..." line; None when it gives none
  reference_answer(text)    the answer of a dataset row: a bare answer, or the last \\boxed{} of a solution
  is_equivalent(a, b)       same after LaTeX normalisation, or the same number (integers, decimals,
                            fractions, \\frac, thousands separators, percent/degree signs)
  score(response, truth)    1.0 when the extracted answer is equivalent to the reference, else 0.0

Deliberately conservative: expressions that differ only algebraically (x+1 vs 1+x) count as different.
AIME and DAPO-Math answers are integers, where this is exact.
"""
from __future__ import annotations

import re
from fractions import Fraction
from typing import Optional

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*")
_ANSWER_LINE = re.compile(r"(?im)\banswer\**\s*[:：]\s*\**\s*(.+?)\s*$")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_FRAC = re.compile(r"^([-+]?)\\frac\{([^{}]+)\}\{([^{}]+)\}$")
_REMOVE = ("\\left", "\\right", "\\!", "\\,", "\\;", "\\:", "\\displaystyle", "$", "^\\circ", "^{\\circ}",
           "\\circ", "\\%", "%", "°")


def _braced(text: str, start: int) -> Optional[str]:
    """The content of the brace group opening at text[start] == '{' (nested braces allowed)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    return None


def last_boxed(text: str) -> Optional[str]:
    """The content of the last \\boxed{...} (or \\boxed x) in `text`."""
    for match in reversed(list(_BOXED.finditer(text))):
        end = match.end()
        if end < len(text) and text[end] == "{":
            content = _braced(text, end)
            if content is not None:
                return content.strip()
        else:
            token = re.match(r"[^\s$]+", text[end:])
            if token:
                return token.group(0)
    return None


def extract_answer(response: str) -> Optional[str]:
    boxed = last_boxed(response)
    if boxed is not None:
        return boxed
    lines = _ANSWER_LINE.findall(response)
    return lines[-1].strip().rstrip(".") if lines else None


def reference_answer(text: str) -> str:
    boxed = last_boxed(str(text))
    return boxed if boxed is not None else str(text).strip()


def normalize(answer: str) -> str:
    s = str(answer).strip()
    s = re.sub(r"\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}", r"\1", s)
    for token in _REMOVE:
        s = s.replace(token, "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"^[a-zA-Z]\s*=\s*", "", s)  # "x = 5" -> "5"
    s = re.sub(r"\s+", "", s)
    s = s.rstrip(".")
    if s.startswith("{") and s.endswith("}") and _braced(s, 0) == s[1:-1]:
        s = s[1:-1]
    return s


def to_number(answer: str) -> Optional[Fraction]:
    """The exact value of a plain numeric answer, None if it is not one."""
    s = normalize(answer)
    if _THOUSANDS.fullmatch(s):
        s = s.replace(",", "")
    try:
        if _NUMBER.fullmatch(s):
            return Fraction(s)
        m = re.fullmatch(r"([-+]?\d+)/(\d+)", s)
        if m:
            return Fraction(int(m.group(1)), int(m.group(2)))
        m = _FRAC.match(s)
        if m:
            num, den = Fraction(m.group(2)), Fraction(m.group(3))
            return (-1 if m.group(1) == "-" else 1) * num / den
    except (ValueError, ZeroDivisionError):
        return None
    return None


def is_equivalent(prediction: Optional[str], reference: str) -> bool:
    if prediction is None:
        return False
    a, b = normalize(prediction), normalize(reference)
    if a == b and a != "":
        return True
    x, y = to_number(prediction), to_number(reference)
    return x is not None and y is not None and x == y


def score(response: str, ground_truth: str) -> float:
    return 1.0 if is_equivalent(extract_answer(response), reference_answer(ground_truth)) else 0.0
