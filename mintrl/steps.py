"""Split a response into steps: at blank lines ("\\n\\n") and at code-fence boundaries.

This is the unit the judge reviews and the oracle grades (docs/design.md §1.1). Steps are
character spans, so that a cut "at the start of step k" is ``text[:steps[k].start]`` and
keeps the separator that ended step k-1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A run of two or more newlines separates steps.
_BLANK = re.compile(r"\n{2,}")
_FENCE = re.compile(r"^```", re.MULTILINE)


@dataclass(frozen=True)
class Step:
    start: int  # offset of the step's first character in the text
    end: int  # offset one past its last character (separator excluded)


def _boundaries(text: str) -> list[tuple[int, int]]:
    """Separator spans (start, end): blank-line runs, and the newline before an opening
    fence and after a closing fence (fence lines stay with the code they delimit)."""
    seps = [(m.start(), m.end()) for m in _BLANK.finditer(text)]
    fences = [m.start() for m in _FENCE.finditer(text)]
    for i, pos in enumerate(fences):
        if i % 2 == 0:  # opening fence: a new step starts at the fence line
            if pos > 0 and text[pos - 1] == "\n":
                seps.append((pos - 1, pos))
        else:  # closing fence: a new step starts after the fence line
            nl = text.find("\n", pos)
            if nl != -1:
                seps.append((nl, nl + 1))
    # Merge overlapping/adjacent separators so that no empty step appears.
    merged: list[tuple[int, int]] = []
    for s, e in sorted(seps):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def split_steps(text: str) -> list[Step]:
    """Return the steps of ``text`` in order; empty text has no steps.

    >>> [("a\\n\\nb\\n\\nc"[s.start:s.end]) for s in split_steps("a\\n\\nb\\n\\nc")]
    ['a', 'b', 'c']
    """
    steps, pos = [], 0
    for s, e in _boundaries(text):
        if s > pos:
            steps.append(Step(pos, s))
        pos = e
    if pos < len(text):
        steps.append(Step(pos, len(text)))
    return steps


def step_texts(text: str) -> list[str]:
    """The text of each step (separators removed)."""
    return [text[s.start : s.end] for s in split_steps(text)]

