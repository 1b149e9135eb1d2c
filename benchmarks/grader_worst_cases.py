"""Worst inputs found for the grader's text stages, timed at growing sizes: each must grow linearly.

Stages (all run in the grading process, holding the GIL, on text a hostile or degenerate completion controls):

* extraction (``reward_fns.extract.extract_code``): unclosed ``<think>`` tags (a regex ``<think>.*?</think>``
  rescans the rest of the text from each one), stray ``</think>``, fences, whitespace runs before two backticks,
  tags inside the answer's code, a line of stray ``</think>`` ending in one ``<think>``;
* stdin comparison (``reward_fns.compare.stdout_matches``): one digit run compared as a number, a huge exponent,
  equal numbers written differently, tokens the other side has in a different slice layout (long whitespace runs
  against single spaces: each long batch used to be copied once per short one);
* functional comparison and result parsing (``compare.functional_matches`` on the harness's JSON text): two
  different multi-million-digit integers (converted through ``Decimal`` before: quadratic, minutes), an expected
  integer past Python's 4,300-digit limit, one string of escaped quotes cut by every slice, deep nesting.

For each case: seconds at sizes n, 2n, 4n, ... up to ``--max-mb`` and the growth exponent between the last two sizes
(1.0: linear; 2.0: quadratic). ``--deadline-s`` stops a case whose next size would exceed it (the quadratic
versions reach hours at the default sizes).

    python benchmarks/grader_worst_cases.py                # up to 16 MB per input
    python benchmarks/grader_worst_cases.py --max-mb 64    # up to the output cap
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable

from reward_fns.compare import functional_matches, stdout_matches
from reward_fns.extract import extract_code
from reward_fns.types import GraderConfig

LCB = GraderConfig(compare_mode="lcb")
TOLERANT = GraderConfig(compare_mode="tolerant")
MB = 1 << 20


def _chunks(text: str, size: int = MB) -> Callable[[], list[str]]:
    """The text as the grader reads a program's output file: 1 MB pieces."""
    return lambda: [text[start : start + size] for start in range(0, len(text), size)]


def _unclosed_think(n: int) -> Callable[[], object]:
    text = "<think>" * (n // 7)
    return lambda: extract_code(text)


def _stray_close_think(n: int) -> Callable[[], object]:
    text = "</think>x" * (n // 9) + "\n```python\nprint(1)\n```"
    return lambda: extract_code(text)


def _think_then_fences(n: int) -> Callable[[], object]:
    text = "<think>```python\n" * (n // 34) + "</think>" + "```python\nx = 1\n```\n" * (n // 40)
    return lambda: extract_code(text)


def _think_tags_in_code(n: int) -> Callable[[], object]:
    text = "<think>r</think>\n```python\n" + 'print("<think></think>")\n' * (n // 25) + "```"
    return lambda: extract_code(text)


def _stray_closes_before_one_open(n: int) -> Callable[[], object]:
    """One line of stray ``</think>`` tags and an opening one at its end: the nearest tag is found once per tag."""
    text = "</think>" * (n // 8) + "<think>"
    return lambda: extract_code(text)


def _spaces_before_two_backticks(n: int) -> Callable[[], object]:
    text = (" " * 1000 + "``\n") * (n // 1003)
    return lambda: extract_code(text)


def _one_long_number(n: int) -> Callable[[], object]:
    actual, expected = "7" * n, "7" * (n - 1) + "8"
    return lambda: stdout_matches(_chunks(actual), expected, LCB)


def _one_long_number_tolerant(n: int) -> Callable[[], object]:
    actual, expected = "0." + "7" * n, "0." + "7" * (n - 1) + "8"
    return lambda: stdout_matches(_chunks(actual), expected, TOLERANT)


def _huge_exponents(n: int) -> Callable[[], object]:
    actual = "1e99999999999999999999 " * (n // 23)
    return lambda: stdout_matches(_chunks(actual), "1", LCB)


def _equal_numbers_written_differently(n: int) -> Callable[[], object]:
    actual, expected = "1.0 " * (n // 4), "1 " * (n // 4) + "2"
    return lambda: stdout_matches(_chunks(actual), expected, LCB)


def _misaligned_slices(n: int) -> Callable[[], object]:
    """Actual: one token per 256 KB slice; expected: the same tokens one space apart (one batch of all of them)."""
    count = max(1, n // (1 << 18))
    actual, expected = ("1" + " " * ((1 << 18) - 1)) * count, "1 " * count + "2"
    return lambda: stdout_matches(_chunks(actual), expected, LCB)


def _different_long_integers(n: int) -> Callable[[], object]:
    actual, expected = "[" + "9" * n + "]", "[" + "9" * (n - 1) + "8]"
    return lambda: functional_matches(_chunks(actual), expected, LCB)


def _long_integer_against_a_float(n: int) -> Callable[[], object]:
    actual = "[" + "9" * n + "]"
    return lambda: functional_matches(_chunks(actual), "[1.5]", TOLERANT)


def _expected_integer_past_the_limit(n: int) -> Callable[[], object]:
    expected = "[" + "9" * n + ", -0]"
    actual = "[" + "9" * n + ",1]"
    return lambda: functional_matches(actual, expected, LCB)


def _escaped_quotes_string(n: int) -> Callable[[], object]:
    body = '\\"' * (n // 2)
    actual, expected = f'["{body}"]', f'["{body}x"]'
    return lambda: functional_matches(_chunks(actual, 1 << 16), expected, LCB)


def _deep_nesting(n: int) -> Callable[[], object]:
    actual = "[" * (n // 2) + "]" * (n // 2)
    return lambda: functional_matches(_chunks(actual), "[[1]]", LCB)


CASES: dict[str, tuple[str, Callable[[int], Callable[[], object]]]] = {
    "unclosed <think> tags": ("extraction", _unclosed_think),
    "stray </think> tags": ("extraction", _stray_close_think),
    "fences inside an open <think>": ("extraction", _think_then_fences),
    "whitespace runs before two backticks": ("extraction", _spaces_before_two_backticks),
    "think tags inside the answer's code": ("extraction", _think_tags_in_code),
    "stray </think> tags before one <think>": ("extraction", _stray_closes_before_one_open),
    "one digit run, last digit differs": ("stdin", _one_long_number),
    "one long fraction, tolerant": ("stdin", _one_long_number_tolerant),
    "exponents past Decimal's range": ("stdin", _huge_exponents),
    "equal numbers written differently": ("stdin", _equal_numbers_written_differently),
    "same tokens, misaligned slices": ("stdin", _misaligned_slices),
    "two different long integers": ("functional", _different_long_integers),
    "long integer against a float, tolerant": ("functional", _long_integer_against_a_float),
    "expected integer past 4,300 digits": ("functional", _expected_integer_past_the_limit),
    "string of escaped quotes": ("functional", _escaped_quotes_string),
    "deep nesting": ("functional", _deep_nesting),
}
"""name -> (stage, builder): builder(n) returns the call to time on an input of about n characters."""


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def measure(builder: Callable[[int], Callable[[], object]], start: int, stop: int, deadline_s: float) -> list[tuple]:
    """(size, seconds) from ``start`` doubling to ``stop``; stops before a size the last growth says would pass
    ``deadline_s``."""
    rows: list[tuple[int, float]] = []
    size = start
    while size <= stop:
        rows.append((size, timed(builder(size))))
        if len(rows) >= 2:
            (small, t_small), (large, t_large) = rows[-2], rows[-1]
            growth = math.log2(max(t_large, 1e-6) / max(t_small, 1e-6)) / math.log2(large / small)
            if t_large * 2 ** max(growth, 1.0) > deadline_s:
                break
        size *= 2
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--min-mb", type=float, default=1.0, help="first input size in MB (default 1)")
    parser.add_argument("--max-mb", type=float, default=16.0, help="largest input size in MB (default 16)")
    parser.add_argument("--deadline-s", type=float, default=30.0, help="largest time for one run (default 30)")
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="only these cases (repeatable)")
    args = parser.parse_args(argv)
    sys.set_int_max_str_digits(4300)  # the interpreter's default: the grader must not depend on raising it
    start, stop = int(args.min_mb * MB), int(args.max_mb * MB)
    print(f"{'stage':11s} {'case':42s} {'sizes (MB): seconds':54s} growth")
    worst = 0.0
    for name in args.case or CASES:
        stage, builder = CASES[name]
        try:
            rows = measure(builder, start, stop, args.deadline_s)
        except Exception as exc:  # a grader that raises on hostile output (the point of some cases)
            print(f"{stage:11s} {name:42s} raised {type(exc).__name__}: {str(exc)[:60]}", flush=True)
            continue
        timings = "  ".join(f"{size / MB:g}: {seconds:.3f}" for size, seconds in rows)
        growth = float("nan")
        if len(rows) >= 2:
            (small, t_small), (large, t_large) = rows[-2], rows[-1]
            growth = math.log2(max(t_large, 1e-6) / max(t_small, 1e-6)) / math.log2(large / small)
            worst = max(worst, growth)
        print(f"{stage:11s} {name:42s} {timings:54s} {growth:.2f}", flush=True)
    print(f"largest growth exponent: {worst:.2f} (1: linear, 2: quadratic)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
