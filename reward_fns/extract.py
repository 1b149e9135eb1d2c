"""Code extraction: the program is the last fenced Python block of the model's answer.

Rules (the LiveCodeBench prompt asks for the solution in a ```python block; NousCoder grades the last one):

1. Reasoning is not the answer: every ``<think> ... </think>`` section is removed first. When the first of the two
   tags in the text is a ``</think>`` (chat templates that put ``<think>`` in the prompt), everything before it was
   reasoning; so was everything before a later ``</think>`` that no ``<think>`` opened. An unterminated
   ``<think>`` means the model never reached its answer: no code.
2. A fence opens on a line that starts (after indentation) with three or more backticks; the first word of its
   info string is the language. It closes on a line holding only backticks, at least as many as the opening
   fence (CommonMark), so a ````python block may contain ``` lines.
3. Inside a fenced block of the answer the tags are code, not reasoning: a program that counts ``"<think>"`` in
   its input keeps its literal (LiveCodeBench's extractor takes the block whatever it holds). Inside reasoning,
   fences mean nothing (a draft cut off by ``</think>`` does not swallow the answer).
4. Python blocks are tagged ``python``, ``py``, ``python3`` or ``py3`` (any case) or carry no tag; a block
   tagged with another language (cpp, java, text, ...) is never taken.
5. The last Python block whose body is not blank wins (models often write a draft, then the final program).
   A fence still open at the end of the text (the answer was cut off) is not a block; an earlier complete
   block still counts.
6. No Python block: ``None`` (verdict ``no_code``).

Time: linear in the length of the text (a model can emit tens of thousands of unclosed ``<think>`` tags; a regex
``<think>.*?</think>`` would rescan the rest of the text from each one): each line of the answer is scanned once
for the nearest tag, and reasoning is skipped with one search for its closing tag.
"""

from __future__ import annotations

import re

_OPEN_THINK = "<think>"
_CLOSE_THINK = "</think>"
_TAG = re.compile("</?think>")
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


class _Fences:
    """Which fenced block the lines fed so far leave open (rule 2)."""

    def __init__(self) -> None:
        self.opening: tuple[int, str] | None = None
        """(backticks of the open fence, its lower-cased language tag), or None outside a block."""

    def feed(self, line: str) -> str:
        """Take the next line; returns ``open``, ``close`` (a fence line), ``body`` (inside a block) or ``text``."""
        fence = _FENCE.match(line)
        if self.opening is None:
            if not fence:
                return "text"
            info_words = fence.group(2).split()
            self.opening = (len(fence.group(1)), info_words[0].lower() if info_words else "")
            return "open"
        if fence and not fence.group(2).strip() and len(fence.group(1)) >= self.opening[0]:
            self.opening = None
            return "close"
        return "body"


def strip_reasoning(text: str) -> str | None:
    """``text`` without its reasoning (rules 1 and 3); None when a ``<think>`` outside code is never closed."""
    first_tag = _TAG.search(text)
    in_reasoning = first_tag is not None and first_tag.group() == _CLOSE_THINK
    lines: list[str] = []
    line: list[str] = []  # the answer's current line: pieces around reasoning sections that start or end in it
    fences = _Fences()
    position, newline = 0, -1
    while True:
        if in_reasoning:
            closing = text.find(_CLOSE_THINK, position)
            if closing < 0:
                return None
            position, in_reasoning = closing + len(_CLOSE_THINK), False
        if newline < position:  # searched once per line, not once per tag in it
            newline = text.find("\n", position)
            if newline < 0:
                newline = len(text)
        tag = None if fences.opening is not None else _TAG.search(text, position, newline)
        if tag is not None:
            if tag.group() == _OPEN_THINK:
                line.append(text[position : tag.start()])
                in_reasoning = True
            else:  # a </think> no <think> opened: everything before it was reasoning
                lines, line, fences = [], [], _Fences()
            position = tag.end()
            continue
        line.append(text[position:newline])
        lines.append("".join(line))
        if newline == len(text):
            return "\n".join(lines)
        fences.feed(lines[-1])
        line, position = [], newline + 1


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every closed fenced block as ``(lower-cased language tag, body)``, in order (rule 2)."""
    blocks = []
    fences = _Fences()
    body_lines: list[str] = []
    for line in text.split("\n"):
        opening = fences.opening
        kind = fences.feed(line)
        if kind == "open":
            body_lines = []
        elif kind == "close" and opening is not None:
            blocks.append((opening[1], "\n".join(body_lines)))
        elif kind == "body":
            body_lines.append(line)
    return blocks


def fenced_block(body: str, language: str = "python") -> str:
    """``body`` as a block that ``fenced_blocks`` reads back unchanged: its fence is longer than any backtick run in it."""
    fence = "`" * max([3] + [len(run) + 1 for run in _BACKTICK_RUN.findall(body)])
    return f"{fence}{language}\n{body}\n{fence}"
