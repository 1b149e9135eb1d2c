"""Output comparison rules of reward_fns.compare: each rule, and each false positive it must reject."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reward_fns.compare import functional_matches, stdout_matches
from reward_fns.types import GraderConfig, GroundTruthError

LCB = GraderConfig(compare_mode="lcb")
TOLERANT = GraderConfig(compare_mode="tolerant")
BOTH = [LCB, TOLERANT]


# ---- stdin, both modes: whitespace and decimals (rules 1-3) ----


@pytest.mark.parametrize("config", BOTH, ids=["lcb", "tolerant"])
@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("3\n1 2 3\n", "3\n1 2 3"),  # trailing newline
        ("3  \n1 2 3   \n\n\n", "3\n1 2 3\n"),  # trailing spaces, blank trailing lines
        ("3\r\n1 2 3\r\n", "3\n1 2 3\n"),  # CRLF
        ("\n\n  3\n1 2 3", "3\n1 2 3"),  # leading blank lines and spaces
        ("a  b\tc", "a b c"),  # only whitespace between tokens differs
        ("1.0", "1"),  # equal as decimals
        ("1.000 2", "1 2.0"),
        ("1e3", "1000"),
        ("-0", "0"),
        ("", ""),
        ("\n", ""),
    ],
)
def test_stdout_accepts_equivalent_output(actual, expected, config):
    assert stdout_matches(actual, expected, config)


@pytest.mark.parametrize("config", BOTH, ids=["lcb", "tolerant"])
@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("1 2", "1 2 3"),  # truncated output: no prefix matching
        ("1\n2", "1\n2\n3"),  # truncated by lines
        ("1\n2\n3\n4", "1\n2\n3"),  # extra line
        ("1 2 3 4", "1 2 3"),  # extra token
        ("3\n2\n1", "1\n2\n3"),  # permuted lines: no set comparison
        ("3 2 1", "1 2 3"),  # permuted tokens
        ("", "0"),  # empty output never matches a non-empty answer
        ("   \n\n", "NO"),
        ("1\n\n2", "1\n2"),  # an inner blank line is a line
        ("12", "1 2"),  # token boundaries matter
        ("inf", "Infinity"),  # only plain decimal notation is numeric
        ("nan", "nan2"),
        ("1_000", "1000"),
        ("0.5", "0.50001"),
        ("abc", "ABC"),
    ],
)
def test_stdout_rejects_wrong_output(actual, expected, config):
    assert not stdout_matches(actual, expected, config)


# ---- lcb is exact beyond decimal equality ----


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("0.3333333", "0.33333333"),  # close but not equal as decimals
        ("1e-9", "0"),
        ("YES", "Yes"),
        ("yes", "YES"),
    ],
)
def test_lcb_has_no_tolerance(actual, expected):
    assert not stdout_matches(actual, expected, LCB)


# ---- tolerant: yes/no in any case (rule 4), float tolerance (rule 5) ----


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("YES", "Yes"),
        ("no\nyEs", "NO\nYES"),
        ("0.3333333", "0.33333333"),  # relative error 1e-7 < 1e-6
        ("2.0000001 7", "2.0 7"),
        ("1e-9", "0.0"),  # expected is a real: absolute tolerance applies
        ("123456.7891", "123456.789"),  # relative tolerance at large magnitude
    ],
)
def test_tolerant_accepts_close_output(actual, expected):
    assert stdout_matches(actual, expected, TOLERANT)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("1e-9", "0"),  # expected integer: compared exactly
        ("3.0000001", "3"),
        ("0.334", "0.333"),  # outside the tolerance
        ("Possible", "POSSIBLE"),  # only yes/no are case-insensitive
        ("yes", "no"),
        ("YESS", "YES"),
        ("3\n2\n1", "1\n2\n3"),
        ("1 2", "1 2 3"),
    ],
)
def test_tolerant_rejects_wrong_output(actual, expected):
    assert not stdout_matches(actual, expected, TOLERANT)


def test_tolerance_follows_config():
    strict = GraderConfig(compare_mode="tolerant", float_rel_tol=1e-9, float_abs_tol=1e-9)
    loose = GraderConfig(compare_mode="tolerant", float_rel_tol=1e-2, float_abs_tol=1e-2)
    assert not stdout_matches("0.334", "0.333", strict)
    assert stdout_matches("0.334", "0.333", loose)


def test_large_outputs_compare_line_by_line():
    expected = "\n".join(str(value) for value in range(200_000))
    assert stdout_matches(expected + "\n", expected, LCB)
    assert not stdout_matches(expected[: len(expected) // 2], expected, TOLERANT)


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="compare_mode"):
        stdout_matches("1", "1", GraderConfig(compare_mode="fuzzy"))


# ---- functional (rules 9-10) ----


def nest(value, depth, container):
    for _ in range(depth):
        value = container([value, 1])
    return value


@pytest.mark.parametrize("config", BOTH, ids=["lcb", "tolerant"])
@pytest.mark.parametrize("depth", [0, 1, 2, 5])
def test_functional_tuples_equal_lists_at_every_depth(depth, config):
    returned = json.dumps(nest((1, 2), depth, tuple))  # the harness turns tuples into lists
    expected = json.dumps(nest([1, 2], depth, list))
    assert functional_matches(returned, expected, config)


@pytest.mark.parametrize("config", BOTH, ids=["lcb", "tolerant"])
@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("1", "1.0"),
        ("[1, [2.0, 3]]", "[1.0, [2, 3]]"),
        ('{"a": [1, 2], "b": null}', '{"b": null, "a": [1, 2]}'),
        ("true", "true"),
        ('"abc"', ' "abc" \n'),
        ("[]", "[]"),
    ],
)
def test_functional_accepts_equal_values(actual, expected, config):
    assert functional_matches(actual, expected, config)


@pytest.mark.parametrize("config", BOTH, ids=["lcb", "tolerant"])
@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ("true", "1"),  # bool is not int
        ("1", "true"),
        ("false", "0"),
        ("[true, 2]", "[1, 2]"),
        ("0", "null"),
        ('"1"', "1"),
        ("[1, 2]", "[1, 2, 3]"),  # truncated list
        ("[3, 2, 1]", "[1, 2, 3]"),  # no order-insensitive comparison
        ("[[1, 2]]", "[1, 2]"),
        ('{"a": 1}', '{"a": 1, "b": 2}'),
        ('"Yes"', '"yes"'),
        ("[1e-9]", "[0]"),
        ("null", "[]"),
    ],
)
def test_functional_rejects_different_values(actual, expected, config):
    assert not functional_matches(actual, expected, config)


def test_functional_float_tolerance_only_in_tolerant_mode():
    actual, expected = "[[0.30000000000000004, 2], 5.0000001]", "[[0.3, 2], 5.0]"
    assert functional_matches(actual, expected, TOLERANT)
    assert not functional_matches(actual, expected, LCB)
    assert not functional_matches("[[0.31, 2], 5.0]", expected, TOLERANT)


def test_functional_expected_integer_is_exact_under_tolerance():
    assert not functional_matches("3.0000001", "3", TOLERANT)
    assert not functional_matches(str(10**400), "1.0", TOLERANT)  # beyond float range: no overflow
    assert functional_matches(str(10**400), str(10**400), TOLERANT)


def test_functional_bad_expected_json_is_a_ground_truth_error():
    with pytest.raises(GroundTruthError, match="not valid JSON"):
        functional_matches("1", "[1, 2", LCB)


@pytest.mark.parametrize(
    "actual", ["<object at 0x1>", "[1, 2", "\x00 1", "1 \x00", '{"b": 2, "a": 1}', '{"a": 1, "a": 1}', "1 1", '"1']
)
def test_functional_text_that_is_not_the_harness_json_matches_nothing(actual):
    """Only a program writing its own result file produces such text: never a match, never a grader error."""
    assert not functional_matches(actual, '{"a": 1, "b": 2}' if "b" in actual else "1", LCB)


# ---- time: no quadratic step on hostile outputs ----


@pytest.fixture
def default_int_digit_limit():
    """Python's own limit on int <-> str conversions (4,300 digits): the comparison must never need more."""
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    yield
    sys.set_int_max_str_digits(previous)


@pytest.mark.usefixtures("default_int_digit_limit")
@pytest.mark.parametrize("config", BOTH, ids=["lcb", "tolerant"])
def test_long_integers_are_compared_as_digits_never_converted(config):
    """A converted multi-million-digit integer held the GIL for minutes (quadratic); past 400 digits the digits
    are compared as text, so no conversion (limited to 4,300 digits here) is ever made."""
    digits = "9" * 1_000_000
    assert functional_matches(f"[{digits},1]", f"[{digits}, 1]", config)
    assert not functional_matches(f"[{digits},1]", f"[{digits[:-1]}8, 1]", config)
    assert not functional_matches(f"[{digits},1]", f"[-{digits}, 1]", config)
    assert not functional_matches(f"[{digits}]", "[1.5]", config)
    assert not functional_matches("[1.5]", f"[{digits}]", config)
    assert not functional_matches(f"[{digits[:401]}]", f"[{digits[:400]}]", config)
    assert functional_matches("[1" + "0" * 22 + "]", "[1e22]", config)  # short integers are still values
    assert functional_matches("[1" + "0" * 299 + "]", "[1e299]", config) == (config is TOLERANT)


@pytest.mark.usefixtures("default_int_digit_limit")
def test_expected_integers_past_the_conversion_limit_are_kept_as_digits():
    digits = "7" * 200_000
    assert functional_matches(f'{{"a":[{digits},0]}}', f'{{"a": [{digits}, -0]}}', LCB)
    assert not functional_matches(f'{{"a":[{digits},1]}}', f'{{"a": [{digits}, -0]}}', LCB)


@pytest.mark.parametrize("config", BOTH, ids=["lcb", "tolerant"])
def test_exponents_past_decimals_range_are_wrong_answers_not_grader_errors(config):
    """``Decimal("1e99999999999999999999")`` raises; LiveCodeBench's judge calls that a wrong answer too."""
    assert not stdout_matches("1e99999999999999999999", "1", config)
    assert not stdout_matches("1", "1e-99999999999999999999", config)
    assert stdout_matches("1e99999999999999999999", "1e99999999999999999999", config)


@pytest.mark.integration  # a subprocess timing every worst case once at 2 MB: ~5 s (the quadratic versions: hours)
def test_every_worst_case_finishes_at_two_megabytes():
    """The benchmark's worst inputs (extraction, stdin and functional comparison, result parsing) at 2 MB each.
    Linear code takes seconds in all; the quadratic versions replaced here took hours at this size (a 40,000-tag
    text took 39 s to extract, 14 times fewer tags than here), so the generous deadline cannot be a machine's speed."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "grader_worst_cases.py"
    completed = subprocess.run(
        [sys.executable, str(script), "--min-mb", "2", "--max-mb", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.count("\n") >= 15, completed.stdout


def test_a_long_expected_integer_compares_whatever_another_thread_does_to_the_conversion_limit(monkeypatch):
    """The conversion limit is process-wide: data_prep raises it while it converts a dataset, in the thread beside
    the grading pool's. An expected 56,130-digit factorial (a TACO codewars kata) parsed while it was raised and
    written after it was restored was `wrong_answer` for the right result (seen under load in verify_solutions)."""
    import math

    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # the other thread has raised the limit
    try:
        digits = str(math.factorial(15000))
        expected, actual = f"[{digits}]", f"[{digits}]"
        real_loads = json.loads

        def parsed_then_limit_restored(*args, **kwargs):
            value = real_loads(*args, **kwargs)
            sys.set_int_max_str_digits(4300)  # ... and restores it between the parse and the writing
            return value

        monkeypatch.setattr(json, "loads", parsed_then_limit_restored)
        assert functional_matches(actual, expected, GraderConfig())
        assert not functional_matches(f"[{digits[:-1]}1]", expected, GraderConfig())
    finally:
        monkeypatch.undo()
        sys.set_int_max_str_digits(previous)
