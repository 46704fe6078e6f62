"""The order a report page is read in: the answer first. A page's kind adds blocks in the order it computes
them; the HTML page shows

1. the answer: every verdict box (green "decided", grey "not decided") and what to run next when undecided
   (paragraphs of class `action`), under one heading, with whatever else the kind wrote in its own section
   headed "Verdict" (such as the runs a verdict counts as failed), in its order: a page has one Verdict;
2. what is missing (the page's notes, from `Page.write`);
3. how it was decided: the method paragraphs (class `method`), folded in a <details>;
4. the rest, in the kind's order, less the headings whose sections held only what moved up.

The Markdown summary keeps the kind's order (the findings document reads it line by line)."""
from __future__ import annotations

import html
from typing import Callable, List, Sequence, Tuple

ANSWER_HEADING = "Verdict"
HOW = "How this was decided"
METHOD = "Method"  # the fold's title on a page that decides nothing
LABELS = {"verdict": "decided", "verdict undecided": "not decided"}


def _cls(block: tuple) -> str:
    return block[2] if block[0] == "p" else ""


def is_answer(block: tuple) -> bool:
    return _cls(block) in LABELS or _cls(block) == "action"


def arrange(blocks: Sequence[tuple]) -> Tuple[List[tuple], List[tuple], List[tuple]]:
    """(answer, method, rest): the blocks that lead, the method paragraphs, and the others in their order;
    the blocks of a section headed ANSWER_HEADING lead too (the kind's own Verdict section joins the page's),
    and a heading is dropped when every block of its section moved up."""
    answer: List[tuple] = []
    method = [b for b in blocks if _cls(b) == "method"]
    rest: List[tuple] = []
    section: List[tuple] = []  # the current heading's blocks, as written
    for block in list(blocks) + [("h", None)]:
        if block[0] == "h":
            if section:
                is_verdict = section[0] == ("h", ANSWER_HEADING)
                kept = [b for b in section[1:] if not (is_answer(b) or _cls(b) == "method")]
                moved = len(section) - 1 - len(kept)
                if is_verdict:
                    answer += [b for b in section[1:] if _cls(b) != "method"]
                else:
                    answer += [b for b in section[1:] if is_answer(b)]
                    if section[0][0] != "h" or kept or not moved:  # a heading left with nothing goes
                        rest.append(section[0])
                    rest += kept
            section = [block]
        else:
            section = section or [("start",)]
            section.append(block)
    return answer, method, [b for b in rest if b[0] != "start"]


def verdict_box(text_html: str, cls: str) -> str:
    """A verdict's box with its label (`decided` / `not decided`) as text, so it is read, copied and found."""
    label = LABELS.get(cls, "decided")
    return f'<p class="{cls}"><span class="label">{label}</span> {text_html}</p>'


def answer_html(answer: Sequence[tuple], render: Callable[[tuple], str]) -> str:
    """The leading section: verdict boxes and actions as such, any other block as `render` writes it."""
    if not answer:
        return ""
    parts = []
    for block in answer:
        if is_answer(block):
            _, text, cls = block
            escaped = html.escape(text)
            parts.append(verdict_box(escaped, cls) if cls in LABELS else f'<p class="action">{escaped}</p>')
        else:
            parts.append(render(block))
    return f'<section class="answer"><h2>{ANSWER_HEADING}</h2>{"".join(parts)}</section>\n'


def method_html(method: Sequence[tuple], decides: bool) -> str:
    if not method:
        return ""
    paragraphs = "".join(f'<p class="method">{html.escape(_sentence(b[1]))}</p>' for b in method)
    return (f'<details class="how"><summary>{HOW if decides else METHOD}</summary>{paragraphs}</details>\n')


def _sentence(text: str) -> str:
    """A method paragraph as a sentence (some start with a shared clause such as `two-sided Student-t …`)."""
    return text[:1].upper() + text[1:]
