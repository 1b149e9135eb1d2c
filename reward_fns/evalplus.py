"""EvalPlus's checks (HumanEval+), as the grader applies them to what the sandboxed test program returns.

An ``evalplus`` test (``reward_fns.layouts``, layout ``evalplus``) is one suite of a task, base or plus: the test
program (``reward_fns.sandbox.harness.run_evalplus``) imports the completion, calls ``entry_point`` on each input
and writes one line per call (``OK <cpu seconds> <the value as a Python literal>``; ``BAD <cpu seconds> <why>`` for a
value that is not plain data; ``ERR <exception>`` or ``TIMEOUT``, which end the run); the
expected values never enter the sandboxed process, and the assertion below runs here, in the grader.

From github.com/evalplus/evalplus (commit 26d6d00):

- time limits (``evalplus/eval/__init__.py`` ``untrusted_check``, ``evalplus/config.py``): input i may take
  ``max(DEFAULT_MIN_TIME_LIMIT, DEFAULT_GT_TIME_LIMIT_FACTOR * t_i)`` with t_i the canonical solution's time on it
  (``evaluate.py`` ``get_groundtruth``), both constants 4.0; the whole suite ``min(60, sum of the limits) + 1``
  (``EVALPLUS_TIMEOUT_PER_TASK`` defaults to 60). EvalPlus measures wall time; here a call's limit is on its CPU
  time, with a wall-clock stop at ``LOAD_STRETCH`` times the limit, so a loaded machine does not fail a solution
  (docs/DESIGN.md "The sandbox").
- the assertion (``unsafe_execute``): ``out == exp``; else, when ``atol`` is nonzero (it is set to 1e-6 when the
  expected value is a float or a list/tuple of floats, ``is_floats``), the types must be equal, sequences of equal
  length, and ``np.allclose(out, exp, rtol=1e-07, atol=atol)`` must hold.
- the special oracle of HumanEval/32 (``find_zero``): ``abs(_poly(*inp, out)) <= atol`` with ``_poly(xs, x) =
  sum(c * x**i)`` (``evalplus/eval/_special_oracle.py``).
- a suite passes when every input passes; ``fast_check`` (the default) stops at the first failure; a task passes
  "plus" when its base and plus suites both pass (``evaluate.py``, ``base_status == plus_status == PASS``).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

DEFAULT_MIN_TIME_LIMIT = 4.0
DEFAULT_GT_TIME_LIMIT_FACTOR = 4.0
TIMEOUT_PER_TASK = 60.0
FLOAT_ATOL = 1e-6
RTOL = 1e-07
FIND_ZERO = "find_zero"
"""The entry point whose output is checked by EvalPlus's polynomial oracle instead of equality."""
SUITE_KEYS = {"base": ("base_input", "base", "base_time"), "plus": ("plus_input", "plus", "plus_time")}
"""Per suite, the task's keys of its inputs (EvalPlus ``base_input`` / ``plus_input``), expected values and the
canonical solution's seconds per input (EvalPlus ``get_groundtruth``'s ``base`` / ``base_time``, ...)."""
MAX_LITERAL_CHARS = 16 << 20
"""A returned value's literal longer than this is not parsed (wrong answer): ``ast.literal_eval`` holds it whole."""


def base_only(task: dict[str, Any]) -> dict[str, Any]:
    """The task with its plus suite emptied: what EvalPlus's "base" pass@1 grades."""
    return {**task, **{key: [] for key in SUITE_KEYS["plus"]}}


def time_limits(reference_times: Sequence[float]) -> list[float]:
    """EvalPlus's limit of each input: ``max(4.0, 4.0 * t_i)`` seconds."""
    return [max(DEFAULT_MIN_TIME_LIMIT, DEFAULT_GT_TIME_LIMIT_FACTOR * float(t)) for t in reference_times]


def suite_timeout(limits: Sequence[float]) -> float:
    """EvalPlus's limit of a whole suite: ``min(60, sum of the input limits) + 1`` seconds."""
    return min(TIMEOUT_PER_TASK, sum(limits)) + 1.0


def parse_literal(text: str) -> Any:
    """A value written as a Python literal (``harness.to_literal_text``); raises ValueError when it is not one."""
    if len(text) > MAX_LITERAL_CHARS:
        raise ValueError(f"a literal of {len(text)} characters is over the {MAX_LITERAL_CHARS} limit")
    try:
        return ast.literal_eval(text)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(f"not a Python literal: {text[:80]!r}") from exc


def is_floats(value: Any) -> bool:
    """EvalPlus ``is_floats``: a float, or a non-empty list/tuple of floats."""
    if isinstance(value, float):
        return True
    return isinstance(value, list | tuple) and bool(value) and all(isinstance(item, float) for item in value)


def _numbers(value: Any) -> list[float] | None:
    """The numbers of a (nested, rectangular) number or sequence of numbers, flattened; None when something is not
    a number (numpy's allclose raises there, so EvalPlus's assertion fails)."""
    if isinstance(value, bool | int | float):
        return [float(value)]
    if isinstance(value, list | tuple):
        flat: list[float] = []
        for item in value:
            numbers = _numbers(item)
            if numbers is None:
                return None
            flat += numbers
        return flat
    return None


def _shape(value: Any) -> tuple[int, ...]:
    if isinstance(value, list | tuple):
        inner = {_shape(item) for item in value}
        if len(inner) > 1:
            return (-1,)
        return (len(value), *(inner.pop() if inner else ()))
    return ()


def allclose(actual: Any, expected: Any, atol: float, rtol: float = RTOL) -> bool:
    """numpy's ``allclose`` for numbers and equal-shaped sequences of numbers: ``|a - e| <= atol + rtol * |e|``
    everywhere (equal infinities are close, NaN is close to nothing)."""
    shape = _shape(expected)
    if -1 in shape or _shape(actual) != shape:
        return False
    got, want = _numbers(actual), _numbers(expected)
    if got is None or want is None:
        return False
    for a, e in zip(got, want, strict=True):
        if math.isinf(a) or math.isinf(e):
            if a != e:
                return False
        elif not abs(a - e) <= atol + rtol * abs(e):
            return False
    return True


def polynomial(coefficients: Sequence[float], x: float) -> float:
    """EvalPlus ``_poly``: ``sum(c_i * x**i)``."""
    return sum(coefficient * math.pow(x, power) for power, coefficient in enumerate(coefficients))


def output_passes(actual: Any, expected: Any, atol: float, arguments: Sequence[Any], entry_point: str) -> bool:
    """EvalPlus's assertion for one input (module docstring)."""
    try:
        if entry_point == FIND_ZERO:
            return abs(polynomial(arguments[0], actual)) <= atol
        exact = actual == expected
        if atol == 0 and is_floats(expected):
            atol = FLOAT_ATOL
        if not exact and atol != 0:
            if type(actual) is not type(expected):
                return False
            if isinstance(expected, list | tuple) and len(actual) != len(expected):
                return False
            return allclose(actual, expected, atol)
        return bool(exact)
    except (TypeError, ValueError, OverflowError, IndexError, RecursionError):
        return False


def check_suite(lines: Iterable[str], spec: dict[str, Any], calls: Sequence[Sequence[Any]] | None) -> tuple[str, str]:
    """``(verdict, detail)`` of one suite from the test program's result lines, stopping at the first failing
    input: ``accepted``, ``wrong_answer``, ``time_limit`` or ``runtime_error`` (a call raised, or the program ended
    before every call returned). ``spec`` is the test's ``output`` (``expected`` literals, ``time_limits_s``,
    ``atol``, ``entry_point``); ``calls`` its inputs, needed by the ``find_zero`` oracle only."""
    expected, limits = spec["expected"], spec["time_limits_s"]
    atol, entry_point = float(spec["atol"]), str(spec["entry_point"])
    checked = 0
    for index, line in enumerate(lines):
        if index >= len(expected):
            return "runtime_error", f"more results than the {len(expected)} inputs"
        status, _, rest = line.rstrip("\n").partition(" ")
        if status == "TIMEOUT":
            return "time_limit", f"input {index}: over its limit of {limits[index]:.2f} s"
        if status not in ("OK", "BAD"):
            return "runtime_error", f"input {index}: {rest[:300] or line[:300] or 'no result'}"
        seconds, _, literal = rest.partition(" ")
        try:
            cpu_s = float(seconds)
        except ValueError:
            return "runtime_error", f"input {index}: a malformed result line"
        if cpu_s >= limits[index]:
            return "time_limit", f"input {index}: {cpu_s:.2f} s of CPU, over its limit of {limits[index]:.2f} s"
        if status == "BAD":
            return "wrong_answer", f"input {index}: {literal[:300]}"
        try:
            actual = parse_literal(literal)
        except ValueError as exc:
            return "wrong_answer", f"input {index}: {exc}"
        arguments = calls[index] if calls is not None else ()
        if not output_passes(actual, parse_literal(expected[index]), atol, arguments, entry_point):
            return "wrong_answer", f"input {index}: the returned value differs from the expected one"
        checked = index + 1
    if checked < len(expected):
        return "runtime_error", f"the program ended after {checked} of {len(expected)} inputs"
    return "accepted", ""


def result_lines(chunks: Iterable[str]) -> Iterator[str]:
    """The lines of a streamed result file (the last one may lack its newline)."""
    pending = ""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split("\n")
        yield from complete
    if pending:
        yield pending
