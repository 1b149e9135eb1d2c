"""Every source's tests in our ground-truth layout, through the converters ``reward_fns`` grades foreign layouts with.

Target layout, one dict per test: ``{"input": str, "output": str, "testtype": "stdin"|"functional"}``.
Functional tests hold one JSON value per line in ``input`` (the positional arguments) and one JSON value in
``output`` (the return value); the problem's ``fn_name`` names the function. The conversions and the output-wrapping
rule live in ``reward_fns.layouts`` (one implementation for the build and the reward); this module adds what only
raw rows need: LiveCodeBench's compressed private tests, and the mapping of conversion errors to counted reasons.
Every format fact is cited in ``data_prep/README.md`` ("Format facts").

- LiveCodeBench ``code_generation_lite``: ``public_test_cases`` is a JSON list of ``{"input", "output", "testtype"}``;
  ``private_test_cases`` is either the same JSON or ``base64(zlib(pickle(<that JSON string>)))``; ``metadata`` is
  JSON with ``func_name`` for functional problems.
- TACO / TACO-verified ``input_output``: JSON ``{"inputs": [...], "outputs": [...], "fn_name"?: str}``; call-based
  outputs are wrapped in a one-element list on codewars, not on leetcode/hackerrank (the row's ``source``).
- PrimeIntellect ``verification_info``: JSON ``{"language": str, "test_cases": [{"type": "stdin_stdout" |
  "function_call", "input", "output", "fn_name"?}]}``; function calls take an argument list and a wrapped result.
- DeepCoder-Preview ``tests``: the TACO dict for ``taco``, the PrimeIntellect list for ``primeintellect`` and
  ``codeforces``, the LiveCodeBench list for ``lcbv5`` with ``func_name`` in the row's ``metadata``.

Long integers: real call-based outputs exceed CPython's 4,300-digit limit on int <-> decimal-string conversion
(``sys.set_int_max_str_digits``, CVE-2020-10735; a TACO-verified codewars kata expects a ~56,000-digit factorial),
which ``json.loads`` and ``json.dumps`` enforce with a ``ValueError``. Rows are converted inside
:func:`long_integers`, which raises the limit to ``MAX_INTEGER_DIGITS``; a longer integer makes the row malformed
(``integer_too_long``), since the conversion time grows with the square of the digits (Python 3.11).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from data_prep.problem import MalformedRow, TestDict
from reward_fns import layouts

_REASONS = {"missing_fn_name": "missing_field", "bad_json": "bad_json"}

MAX_INTEGER_DIGITS = 200_000
"""Longest integer a row's tests may hold (decimal digits): 3.5x the longest seen in a real row (~56,000, a
TACO-verified codewars factorial kata); converting 200,000 digits to ``int`` and back takes ~3 s on Python 3.11."""
_INT_LIMIT_MESSAGE = "integer string conversion"
"""Part of CPython's message for an integer past the conversion limit (``Objects/longobject.c``)."""


@contextmanager
def long_integers() -> Iterator[None]:
    """Raise CPython's int <-> decimal-string limit to ``MAX_INTEGER_DIGITS`` for the block (never lower it)."""
    previous = sys.get_int_max_str_digits()
    if previous == 0 or previous >= MAX_INTEGER_DIGITS:
        yield
        return
    sys.set_int_max_str_digits(MAX_INTEGER_DIGITS)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(previous)


def as_malformed(error: Exception) -> MalformedRow:
    """Any fault met while reading one row, as that row's :class:`MalformedRow`: ``integer_too_long`` for an integer
    past ``MAX_INTEGER_DIGITS``, ``not_utf8`` for text that cannot be written (a lone surrogate), else
    ``unexpected_error`` naming the exception (a row the loaders do not foresee is reported, never a crash)."""
    if isinstance(error, MalformedRow):
        return error
    if isinstance(error, ValueError) and _INT_LIMIT_MESSAGE in str(error):
        return MalformedRow("integer_too_long", f"a test holds an integer of more than {MAX_INTEGER_DIGITS:,} digits")
    if isinstance(error, UnicodeEncodeError):
        return MalformedRow("not_utf8", f"text that UTF-8 cannot encode ({error.reason} at {error.start})")
    return MalformedRow("unexpected_error", f"{type(error).__name__}: {error}")


def loads_json(text: Any, what: str) -> Any:
    """``json.loads`` that raises :class:`MalformedRow` (reason ``bad_json``, or ``integer_too_long``) naming the
    field."""
    if not isinstance(text, str | bytes):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedRow("bad_json", f"{what} is not valid JSON ({exc.msg} at char {exc.pos})") from exc
    except UnicodeDecodeError as exc:
        raise MalformedRow("bad_json", f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except ValueError as exc:
        raise as_malformed(exc) from exc


class _StringOnlyUnpickler(pickle.Unpickler):
    """LiveCodeBench pickles a plain ``str``; refuse every class so a hostile pickle cannot run code."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: only a pickled str is expected")


def decode_lcb_private_tests(field: str) -> list[dict[str, Any]]:
    """Decode LiveCodeBench ``private_test_cases``: plain JSON, or base64 -> zlib -> pickle -> JSON string."""
    if field.lstrip().startswith("["):
        return loads_json(field, "private_test_cases")
    try:
        payload = _StringOnlyUnpickler(io.BytesIO(zlib.decompress(base64.b64decode(field, validate=True)))).load()
    except (binascii.Error, zlib.error, pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise MalformedRow("undecodable_private_tests", f"base64/zlib/pickle decoding failed: {exc}") from exc
    if not isinstance(payload, str | bytes):
        raise MalformedRow("undecodable_private_tests", f"pickle holds {type(payload).__name__}, expected str")
    return loads_json(payload, "decoded private_test_cases")


def encode_lcb_private_tests(tests: list[dict[str, Any]]) -> str:
    """Inverse of :func:`decode_lcb_private_tests` (the compressed form), for fixtures and benchmarks."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode("ascii")


@contextmanager
def _as_malformed_row() -> Iterator[None]:
    """Turn a ``reward_fns.layouts.LayoutError`` into a counted ``MalformedRow``."""
    try:
        yield
    except layouts.LayoutError as exc:
        raise MalformedRow(_REASONS.get(exc.reason, "bad_test_format"), str(exc)) from exc


def lcb_tests(tests: list[Any], fn_name: str | None) -> list[TestDict]:
    """LiveCodeBench test dicts (already our layout) -> validated tests; functional ones need ``fn_name``."""
    with _as_malformed_row():
        return layouts.test_list_tests(_require_list(tests, "tests"), fn_name)[0]


def taco_tests(input_output: Any, platform: str | None = None) -> tuple[list[TestDict], str | None]:
    """TACO ``input_output`` dict -> (tests, fn_name); ``platform`` is the row's ``source`` (wrapping convention)."""
    if not isinstance(input_output, dict):
        raise MalformedRow("bad_test_format", f"input_output is a {type(input_output).__name__}, expected an object")
    if not isinstance(input_output.get("inputs"), list) or not isinstance(input_output.get("outputs"), list):
        raise MalformedRow("missing_field", "input_output needs 'inputs' and 'outputs' lists")
    with _as_malformed_row():
        return layouts.taco_tests(input_output, platform)


def primeintellect_tests(test_cases: Any) -> tuple[list[TestDict], str | None]:
    """PrimeIntellect ``test_cases`` (also DeepCoder ``primeintellect``/``codeforces``) -> (tests, fn_name)."""
    with _as_malformed_row():
        return layouts.test_list_tests(_require_list(test_cases, "test_cases"))


def deepcoder_tests(tests: Any, row_fn_name: str | None = None) -> tuple[list[TestDict], str | None]:
    """DeepCoder-Preview ``tests`` (parsed): the TACO dict, or a list (``lcbv5``: ``func_name`` from the row)."""
    if isinstance(tests, dict):
        return taco_tests(tests)
    with _as_malformed_row():
        return layouts.test_list_tests(_require_list(tests, "tests"), row_fn_name)


def loads_list(value: Any, what: str) -> list[Any]:
    """A list column stored natively (parquet list) or as JSON text (e.g. BAAI/TACO ``solutions``); None -> []."""
    value = loads_json(value, what) if value is not None else []
    return value if isinstance(value, list) else [value]


def _require_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise MalformedRow("bad_test_format", f"{what} is a {type(value).__name__}, expected a list")
    return value
