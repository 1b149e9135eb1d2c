"""The text of a functional (call-based) test: its arguments and its expected result, as LiveCodeBench writes them.

* arguments: one JSON value per line, lines split on ``\\n`` only (U+2028 and U+0085 may sit inside a string
  argument), blank lines skipped (``lcb_runner/evaluation/testing_util.py``: the inputs are split on ``"\\n"`` and
  each line is ``json.loads``-ed); the sandbox harness parses them in the test child (``parse_arguments``);
* expected result: one JSON value, compared with the program's result by ``compare.functional_matches``.

The grader checks both when it reads a ground truth (``check_arguments``, ``check_result``), before any program
runs, so that a malformed test is the data's fault (``GroundTruthError``), never a -1 for the model: text that is
not JSON, a value nested deeper than ``MAX_DEPTH`` (the harness converts no deeper result, and JSON's parser would
hit the recursion limit), an expected NaN or infinity (no converted result can equal one).
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 200
"""Deepest nesting of a functional test's arguments, its expected result and a program's result (the harness refuses
to convert a deeper one)."""


def parse_arguments(text: str) -> list[Any]:
    """The argument values of a functional test, in order (integers of any length converted)."""
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def check_arguments(text: str) -> None:
    """Raises ValueError naming what makes ``text`` no functional test's arguments (module docstring)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            _check_value(_parse_unconverted(line, f"argument line {number}"), f"argument line {number}")


def check_result(text: str) -> None:
    """Raises ValueError naming what makes ``text`` no functional test's expected result (module docstring)."""
    _check_value(_parse_unconverted(text, "expected result", finite=True), "expected result")


def _parse_unconverted(text: str, what: str, finite: bool = False) -> Any:
    """``text`` as JSON, integers kept as their digits (converting a long one is quadratic); floats must be finite
    when ``finite``."""

    def number(digits: str) -> float:
        value = float(digits)
        if finite and not math.isfinite(value):
            raise ValueError(f"{what} holds {digits}, which no result converts to")
        return value

    def constant(name: str) -> None:
        raise ValueError(f"{what} holds {name}, which no result converts to")

    try:
        return json.loads(text, parse_int=str, parse_float=number, parse_constant=constant if finite else None)
    except RecursionError as exc:
        raise ValueError(f"{what} is nested deeper than {MAX_DEPTH} levels") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not JSON: {exc}") from exc


def _check_value(value: Any, what: str) -> None:
    if deeper_than(value, MAX_DEPTH):
        raise ValueError(f"{what} is nested deeper than {MAX_DEPTH} levels")


def deeper_than(value: Any, depth: int) -> bool:
    """Whether ``value`` holds anything deeper than ``depth`` (the value itself at depth 0, a container's items one
    deeper, as the harness counts), walked level by level without recursion."""
    level = [value] if isinstance(value, list | dict) else []
    for _ in range(depth):
        level = [
            item
            for container in level
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, list | dict)
        ]
        if not level:
            return False
    return any(level)
