"""Code extraction: the program is the last fenced Python block of the model's answer.

Rules (the LiveCodeBench prompt asks for the solution in a ```python block; NousCoder grades the last one):

1. Reasoning is not the answer: every ``<think> ... </think>`` section is removed first. A ``</think>`` without
   an opening tag (chat templates that put ``<think>`` in the prompt) means everything before it was reasoning.
   An unterminated ``<think>`` means the model never reached its answer: no code.
2. A fence opens on a line that starts (after indentation) with three or more backticks; the first word of its
   info string is the language. It closes on a line holding only backticks, at least as many as the opening
   fence (CommonMark), so a ````python block may contain ``` lines.
3. Python blocks are tagged ``python``, ``py``, ``python3`` or ``py3`` (any case) or carry no tag; a block
   tagged with another language (cpp, java, text, ...) is never taken.
4. The last Python block whose body is not blank wins (models often write a draft, then the final program).
   A fence still open at the end of the text (the answer was cut off) is not a block; an earlier complete
   block still counts.
5. No Python block: ``None`` (verdict ``no_code``).

Time: linear in the length of the text (a model can emit tens of thousands of unclosed ``<think>`` tags; a regex
``<think>.*?</think>`` would rescan the rest of the text from each of them).
"""

from __future__ import annotations

import re

_OPEN_THINK = "<think>"
_CLOSE_THINK = "</think>"
_FENCE = re.compile(r"^\s*(`{3,})(.*)$")
_PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})
_BACKTICK_RUN = re.compile(r"`+")


def extract_code(text: str) -> str | None:
    """The last fenced Python block of ``text`` outside ``<think>`` sections, or None (rules in the module doc)."""
    answer = strip_reasoning(text)
    if answer is None:
        return None
    python_blocks = [body for tag, body in fenced_blocks(answer) if tag in _PYTHON_TAGS and body.strip()]
    return python_blocks[-1] if python_blocks else None


def strip_reasoning(text: str) -> str | None:
    """``text`` without its ``<think>`` sections (rule 1); None when a ``<think>`` is never closed."""
    without_sections = _remove_think_sections(text)
    if _CLOSE_THINK in without_sections:
        without_sections = without_sections.rsplit(_CLOSE_THINK, 1)[1]
    if _OPEN_THINK in without_sections:
        return None
    return without_sections


def _remove_think_sections(text: str) -> str:
    """``text`` without each ``<think>`` and everything up to the first ``</think>`` after it, left to right; from
    a ``<think>`` that no ``</think>`` follows on, the text is kept as it is (so is every later one)."""
    kept = []
    position = 0
    while (start := text.find(_OPEN_THINK, position)) >= 0:
        end = text.find(_CLOSE_THINK, start + len(_OPEN_THINK))
        if end < 0:
            break
        kept.append(text[position:start])
        position = end + len(_CLOSE_THINK)
    kept.append(text[position:])
    return "".join(kept)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every closed fenced block as ``(lower-cased language tag, body)``, in order (rule 2)."""
    blocks = []
    opening: tuple[int, str] | None = None
    body_lines: list[str] = []
    for line in text.split("\n"):
        fence = _FENCE.match(line)
        if opening is None:
            if fence:
                info_words = fence.group(2).split()
                opening = (len(fence.group(1)), info_words[0].lower() if info_words else "")
                body_lines = []
        elif fence and not fence.group(2).strip() and len(fence.group(1)) >= opening[0]:
            blocks.append((opening[1], "\n".join(body_lines)))
            opening = None
        else:
            body_lines.append(line)
    return blocks


def fenced_block(body: str, language: str = "python") -> str:
    """``body`` as a block that ``fenced_blocks`` reads back unchanged: its fence is longer than any backtick run in it."""
    fence = "`" * max([3] + [len(run) + 1 for run in _BACKTICK_RUN.findall(body)])
    return f"{fence}{language}\n{body}\n{fence}"
