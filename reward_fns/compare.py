"""Output comparison: does a program's output match the expected one?

Two modes, chosen by ``GraderConfig.compare_mode``.

``lcb`` (default) -- the LiveCodeBench rule (``lcb_runner/evaluation/testing_util.py``, ``grade_stdio``):

1. Strip the whole output, split it into lines (``\\n``), strip each line (so CRLF, trailing spaces and
   leading/trailing blank lines never matter). Different line counts never match.
2. Two lines match when they are identical, or when both split into the same number of whitespace tokens and
   every token pair matches: identical text, or both numeric and equal as ``decimal.Decimal`` ("1.0" == "1",
   "1e3" == "1000"; "1e-9" != "0"). LiveCodeBench needs *every* token of a line to be numeric for the token
   path; we also allow text tokens that are identical, so "a  b" matches "a b" (only whitespace differs).
3. A numeric token is plain decimal notation (``[+-]digits[.digits][e[+-]digits]``, ASCII digits). Unlike the
   ``Decimal`` constructor used by LiveCodeBench we reject "NaN", "Infinity" and "1_000", so "inf" never
   equals "Infinity" and digit-group underscores are not numbers. A token whose exponent ``Decimal`` cannot
   hold ("1e99999999999999999999") equals only itself, as in LiveCodeBench (its ``Decimal`` raises: wrong answer).

``tolerant`` -- the fallbacks of MicroCoder-Evaluator (MicroCoder paper, section 4 "Infrastructure": whitespace
normalisation, multi-line splitting, approximate numeric comparison), kept only where they cannot accept a
wrong answer. Everything ``lcb`` accepts is accepted, plus, per token pair:

4. Yes/no in any case: "YES" == "yes" == "Yes" (only these two words; "Possible" != "possible").
5. Float tolerance: when the *expected* token is a real number (written with "." or an exponent), the actual
   numeric token matches if ``math.isclose(actual, expected, rel_tol=float_rel_tol, abs_tol=float_abs_tol)``.
   An expected integer token is compared exactly (rule 2): integer answers are counts and indices, so
   "1e-9" never matches "0" and "3.0000001" never matches "3".

Rejected in both modes (the false positives of the public evaluators this replaces):

6. No order-insensitive or set comparison: permuted lines or tokens do not match.
7. No prefix matching: a truncated output (fewer lines or tokens) does not match; extra lines do not match.
8. An empty output never matches a non-empty expected output.

Functional tests (``functional_matches``) compare JSON values produced by the harness outside the program's
control (tuples are already lists, so tuples and lists compare equal at every depth; object keys in sorted order):

9. Same JSON type at every depth: lists element-wise with equal length, objects with equal key sets, strings
   exactly, ``null`` only to ``null``. Booleans only equal booleans (``true`` != ``1``, unlike Python's
   ``True == 1`` in LiveCodeBench's ``==``), numbers compare by value (``1`` == ``1.0``).
10. ``tolerant`` adds rule 5 for every number inside nested lists/objects (expected float: ``math.isclose``;
    expected integer: exact). Strings are not case-folded: a function returns a value, not a judge's message.
11. Text that is not JSON, or an object whose keys are not in sorted order (only a program writing its own
    result file could produce either), matches nothing. Integers of any length are compared exactly, as digit
    strings past ``_SHORT_INT_DIGITS`` (no conversion: Python's is quadratic in the digits, minutes for a few
    million); such an integer is beyond the float range, so it equals no float either.

Time: every step is linear in the lengths of the two texts (each slice is scanned a bounded number of times, no
number is converted from more than ``_SHORT_INT_DIGITS`` digits but through ``Decimal``, which is linear);
``benchmarks/grader_worst_cases.py`` measures the worst inputs found.

Both comparisons stream: the program's output (up to the output cap) is read in slices and never held whole,
split into one list of lines or parsed into one Python value, so the grader's memory does not grow with it
(``tests/reward_fns/test_compare_memory.py``). Output that equals the expected text up to trailing whitespace is
accepted after one pass of plain string comparison.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

from reward_fns.types import GraderConfig, GroundTruthError

TextSource = str | Callable[[], Iterable[str]]
"""A program's output: the text itself, or a function that returns its text in chunks, afresh on every call."""

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_JSON_PLAIN_TOKEN = re.compile(r'[\[\]{}:,]|[^\[\]{}:,"\s]+')
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_JSON_LITERALS = {"true": True, "false": False, "null": None}
_JSON_PUNCTUATION = "[]{}:,"
_YES_NO = frozenset({"yes", "no"})
_COMPARE_MODES = ("lcb", "tolerant")
_LARGEST_FLOAT_INT = int(1.7976931348623157e308)
_SLICE_CHARS = 1 << 18
"""Characters tokenised at a time (a few MB of token objects at most)."""
_JSON_SLICE_CHARS = 1 << 18
"""Characters of JSON text tokenised at a time."""
_LINE_BREAK = "\0"
_SCAN_STEP = 64
_NO_MATCH = object()
_SHORT_INT_DIGITS = 400
"""JSON integers up to this many characters become Python ints (microseconds); longer ones stay text
(``_LongInt``): their magnitude is at least 10**398, past every float (1.8e308) and every shorter integer."""


def stdout_matches(actual: TextSource, expected: str, config: GraderConfig) -> bool:
    """Whether a stdin test's output matches the expected output (rules 1-8 of the module docstring)."""
    tolerant = _is_tolerant(config)
    chunks = (lambda: (actual,)) if isinstance(actual, str) else actual
    if _same_text(chunks(), expected):
        return True
    return _streams_match(
        _events(chunks()),
        _events((expected,)),
        lambda actual, wanted: _tokens_match(actual, wanted, tolerant, config),
        line_breaks=True,
    )


def functional_matches(actual_json: TextSource, expected_json: str, config: GraderConfig) -> bool:
    """Whether a functional test's returned value (JSON text) matches the expected JSON value (rules 9-11).

    Raises:
        GroundTruthError: ``expected_json`` is not valid JSON (fix the problem's ground truth).
    """
    tolerant = _is_tolerant(config)
    expected = _canonical_expected(expected_json)
    if expected is None:
        return False
    chunks = (lambda: (actual_json,)) if isinstance(actual_json, str) else actual_json
    if _same_text(chunks(), expected):
        return True
    return _streams_match(
        _json_token_batches(_slices(chunks(), _JSON_SLICE_CHARS)),
        _json_token_batches(_slices((expected,), _JSON_SLICE_CHARS)),
        lambda actual, wanted: _json_tokens_match(actual, wanted, tolerant, config),
        line_breaks=False,
    )


def _is_tolerant(config: GraderConfig) -> bool:
    if config.compare_mode not in _COMPARE_MODES:
        raise ValueError(f"unknown compare_mode {config.compare_mode!r}; use one of {_COMPARE_MODES}")
    return config.compare_mode == "tolerant"


# ---- stdin tests ----


def _same_text(chunks: Iterable[str], expected: str) -> bool:
    """``actual == expected`` up to trailing whitespace on either side, read chunk by chunk (rule 1's common case)."""
    position = 0
    for chunk in chunks:
        if position >= len(expected):
            if chunk and not chunk.isspace():
                return False
            continue
        segment = expected[position : position + len(chunk)]
        if segment != chunk and not (chunk.startswith(segment) and chunk[len(segment) :].isspace()):
            return False
        position += len(segment)
    return position >= len(expected) or expected[position:].isspace()


def _slices(chunks: Iterable[str], size: int | None = None) -> Iterator[str]:
    """The text of ``chunks`` in pieces of at most ``size`` (default ``_SLICE_CHARS``) characters."""
    size = size or _SLICE_CHARS
    for chunk in chunks:
        for start in range(0, len(chunk), size):
            yield chunk[start : start + size]


def _events(chunks: Iterable[str]) -> Iterator[list[str]]:
    """Batches of the text's events: each whitespace-separated token (as ``str.split`` cuts them), and
    ``_LINE_BREAK`` for each ``\\n``; the lines of rule 1 are the runs of tokens between line breaks.

    Each piece is cut by two C passes: ``\\n`` becomes a ``\\0`` token of its own, ``\\0`` already in the text
    becomes ``\\0\\0`` (both sides alike, so equal tokens stay equal and none equals a line break). A token cut by
    a slice boundary is joined before it is emitted.
    """
    partial: list[str] = []
    for piece in _slices(chunks):
        text = piece.replace(_LINE_BREAK, _LINE_BREAK * 2) if _LINE_BREAK in piece else piece
        events = text.replace("\n", f" {_LINE_BREAK} ").split()
        if partial and not piece[0].isspace():
            partial.append(events[0])
            if len(events) == 1 and not piece[-1].isspace():
                continue
            events[0] = "".join(partial)
            partial = []
        elif partial:
            yield ["".join(partial)]
            partial = []
        if not piece[-1].isspace():
            partial = [events.pop()]
        if events:
            yield events
    if partial:
        yield ["".join(partial)]


class _EventReader:
    """Events of one output, consumed in runs: ``batch`` from index ``position`` on is the unread part of the
    current batch (never copied: a long batch facing many short ones would be copied once per short one)."""

    def __init__(self, batches: Iterator[list[str]]) -> None:
        self.batches = batches
        self.batch: list[str] = []
        self.position = 0

    def available(self) -> int:
        """Unread events in the current batch, after moving to the next non-empty one (0: the output ended)."""
        while self.position >= len(self.batch):
            batch = next(self.batches, None)
            if batch is None:
                return 0
            self.batch, self.position = batch, 0
        return len(self.batch) - self.position

    def skip_line_breaks(self) -> None:
        while self.available() and self.batch[self.position] == _LINE_BREAK:
            self.position += 1

    def only_line_breaks_left(self) -> bool:
        self.skip_line_breaks()
        return not self.available()


def _streams_match(
    actual_batches: Iterator[list[str]],
    expected_batches: Iterator[list[str]],
    tokens_match: Callable[[str, str], bool],
    line_breaks: bool,
) -> bool:
    """Two event streams match when every event faces one that ``tokens_match`` (a line break only a line break)
    and, with ``line_breaks``, leading and trailing line breaks aside; identical runs are skipped by list
    comparison (C speed)."""
    actual, expected = _EventReader(actual_batches), _EventReader(expected_batches)
    if line_breaks:
        actual.skip_line_breaks()
        expected.skip_line_breaks()
    while (actual_left := actual.available()) and (expected_left := expected.available()):
        count = min(actual_left, expected_left)
        offset = 0
        while (offset := _first_difference(actual, expected, offset, count)) < count:
            actual_event = actual.batch[actual.position + offset]
            expected_event = expected.batch[expected.position + offset]
            if _LINE_BREAK in (actual_event, expected_event) or not tokens_match(actual_event, expected_event):
                return False
            offset += 1
        actual.position += count
        expected.position += count
    if line_breaks:
        return actual.only_line_breaks_left() and expected.only_line_breaks_left()
    return not actual.available() and not expected.available()


def _first_difference(actual: _EventReader, expected: _EventReader, start: int, stop: int) -> int:
    """The first offset in ``[start, stop)`` from both readers' positions where their events differ (``stop`` if
    none), ``_SCAN_STEP`` at a time."""
    a, e = actual.batch, expected.batch
    a_base, e_base = actual.position, expected.position
    if start < stop and a[a_base + start] != e[e_base + start]:  # the next event of a run of differing ones
        return start
    while start < stop:
        end = min(start + _SCAN_STEP, stop)
        if a[a_base + start : a_base + end] != e[e_base + start : e_base + end]:
            return next(offset for offset in range(start, end) if a[a_base + offset] != e[e_base + offset])
        start = end
    return stop


def _tokens_match(actual: str, expected: str, tolerant: bool, config: GraderConfig) -> bool:
    if actual == expected:
        return True
    if tolerant and actual.lower() == expected.lower() and expected.lower() in _YES_NO:
        return True
    if not (_NUMBER.fullmatch(actual) and _NUMBER.fullmatch(expected)):
        return False
    try:
        if Decimal(actual) == Decimal(expected):
            return True
    except InvalidOperation:  # an exponent past Decimal's range (rule 3)
        return False
    return tolerant and _is_real_token(expected) and _floats_close(float(actual), float(expected), config)


def _is_real_token(token: str) -> bool:
    return any(marker in token for marker in ".eE")


def _floats_close(actual: float, expected: float, config: GraderConfig) -> bool:
    return math.isclose(actual, expected, rel_tol=config.float_rel_tol, abs_tol=config.float_abs_tol)


# ---- functional tests ----


class _LongInt(str):
    """A JSON integer token longer than ``_SHORT_INT_DIGITS``, kept as its text (rule 11)."""


class _IntegerText(str):
    """An integer of an expected value, kept as its JSON text (``_canonical_expected``: a long one)."""


_CONVERTIBLE_DIGITS = 640
"""Integers of at most this many characters convert under any conversion limit: CPython's lowest allowed
``sys.set_int_max_str_digits`` (docs "Integer string conversion length limitation"). The limit is process-wide, and
a caller's thread may change it while another thread compares (data_prep raises it while it converts a dataset): a
longer integer is never converted here, whatever the limit is at that moment."""


def _canonical_expected(text: str) -> str | None:
    """The text the harness would write for the expected JSON value ``text`` (sorted keys, no spaces, ASCII,
    ``repr`` of numbers), or None when it holds NaN or an infinity, which no returned value can equal. Integers
    longer than ``_CONVERTIBLE_DIGITS`` are kept as their digits (``_IntegerText``), never converted.

    Raises:
        GroundTruthError: ``text`` is not valid JSON.
    """
    long_integers: list[_IntegerText] = []

    def integer(digits: str) -> int | _IntegerText:
        if len(digits) <= _CONVERTIBLE_DIGITS:
            return int(digits)
        long_integers.append(_IntegerText(digits))
        return long_integers[-1]

    try:
        value = json.loads(text, parse_int=integer)
    except json.JSONDecodeError as exc:
        raise GroundTruthError(f"expected output of a functional test is not valid JSON: {exc}") from exc
    if long_integers:
        return _canonical_json_of_integer_texts(value)
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a non-finite float
        return None


def _canonical_json_of_integer_texts(value: Any) -> str | None:
    """The canonical text of a value whose integers are ``_IntegerText``: written iteratively, the integers as
    their digits ("-0" as "0"), so no digit string is ever converted."""
    pieces: list[str] = []
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, _Text):
            pieces.append(item)
        elif isinstance(item, _IntegerText):
            pieces.append("0" if item == "-0" else str.__str__(item))
        elif isinstance(item, list):
            pending.append(_Text("]"))
            for index in range(len(item) - 1, -1, -1):
                pending += [item[index], _Text(",")] if index else [item[index]]
            pending.append(_Text("["))
        elif isinstance(item, dict):
            pending.append(_Text("}"))
            keys = sorted(item, reverse=True)
            for index, key in enumerate(keys):
                pending += [item[key], _Text(json.dumps(key) + ":")]
                if index < len(keys) - 1:
                    pending.append(_Text(","))
            pending.append(_Text("{"))
        elif isinstance(item, float) and not math.isfinite(item):
            return None
        else:
            pieces.append(json.dumps(item))
    return "".join(pieces)


class _Text(str):
    """Text of the canonical JSON (punctuation, a key) on ``_canonical_json_of_integer_texts``'s stack."""


def _json_token_batches(pieces: Iterable[str]) -> Iterator[list[str]]:
    """Batches of JSON tokens (punctuation, whole strings, literals) of the text in ``pieces``.

    A token reaching the end of the text read so far waits for more; while one token stays unfinished, the text
    is scanned again only once it has doubled (a 50 MB string costs two scans, not one per piece). A string
    left open at the end of the text becomes ``""``, which matches nothing.
    """
    pending: list[str] = []
    pending_chars = rescan_at = 0
    for piece in pieces:
        pending.append(piece)
        pending_chars += len(piece)
        if pending_chars < rescan_at:
            continue
        buffer = "".join(pending)
        tokens, position = _scan_json(buffer, final=False)
        if tokens:
            yield tokens
        rest = buffer[position:]
        pending, pending_chars, rescan_at = [rest], len(rest), 2 * len(rest)
    tokens, _ = _scan_json("".join(pending), final=True)
    if tokens:
        yield tokens


def _scan_json(text: str, final: bool) -> tuple[list[str], int]:
    """(tokens of ``text``, where the unread rest starts): runs without strings are split by one ``findall``."""
    tokens: list[str] = []
    position = 0
    while position < len(text):
        quote = text.find('"', position)
        plain_end = len(text) if quote < 0 else quote
        tokens += _JSON_PLAIN_TOKEN.findall(text, position, plain_end)
        if quote < 0:
            if not final and tokens and not text[-1].isspace() and text[-1] not in _JSON_PUNCTUATION:
                return tokens[:-1], len(text) - len(tokens[-1])  # a literal that may go on in the next piece
            return tokens, len(text)
        end = _json_string_end(text, quote)
        if end is None:
            return (tokens + [""], len(text)) if final else (tokens, quote)
        tokens.append(text[quote:end])
        position = end
    return tokens, position


def _json_string_end(text: str, start: int) -> int | None:
    """The end of the JSON string opening at ``start``: after the first quote not escaped by a backslash (one
    regex pass, in C)."""
    match = _JSON_STRING.match(text, start)
    return match.end() if match else None


def _json_tokens_match(actual: str, expected: str, tolerant: bool, config: GraderConfig) -> bool:
    """Two tokens at the same place of the canonical texts: punctuation identical, scalars equal as values."""
    if actual == expected:
        return True
    actual_value, expected_value = _json_scalar(actual), _json_scalar(expected)
    if actual_value is _NO_MATCH or expected_value is _NO_MATCH:
        return False
    return _scalars_match(actual_value, expected_value, tolerant, config)


def _json_scalar(token: str) -> Any:
    """The value of a string, number or literal token; ``_NO_MATCH`` for punctuation and anything else."""
    if token.startswith('"'):
        try:
            return json.loads(token)
        except json.JSONDecodeError:
            return _NO_MATCH
    if token in _JSON_LITERALS:
        return _JSON_LITERALS[token]
    match = _JSON_NUMBER.fullmatch(token)
    if match is None:
        return _NO_MATCH
    if match.group(1) or match.group(2):
        return float(token)
    return int(token) if len(token) <= _SHORT_INT_DIGITS else _LongInt(token)


def _to_float(number: int | float) -> float:
    """``float(number)``, but an int beyond the float range becomes +-inf instead of raising OverflowError."""
    if isinstance(number, int) and abs(number) > _LARGEST_FLOAT_INT:
        return math.inf if number > 0 else -math.inf
    return float(number)


def _scalars_match(actual: Any, expected: Any, tolerant: bool, config: GraderConfig) -> bool:
    """Two scalars whose tokens differ as text."""
    if isinstance(actual, _LongInt) or isinstance(expected, _LongInt):  # nothing but its own text equals it, and
        return False  # no finite float is within a relative tolerance below 1 of it
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, int | float):
        if not isinstance(actual, int | float):
            return False
        if actual == expected:
            return True
        return tolerant and isinstance(expected, float) and _floats_close(_to_float(actual), expected, config)
    return type(actual) is type(expected) and actual == expected
