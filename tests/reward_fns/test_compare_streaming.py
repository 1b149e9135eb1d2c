"""The streaming comparison agrees with the rules read the plain way, however the output is cut into chunks.

The references below are written from the rules of ``reward_fns/compare.py``'s docstring (LiveCodeBench's
``get_stripped_lines`` + line / token comparison; structural JSON equality), holding everything in memory.
"""

import json
import math
import random
import re
from decimal import Decimal

import pytest

from reward_fns import compare
from reward_fns.compare import functional_matches, stdout_matches
from reward_fns.sandbox.harness import to_json_text
from reward_fns.types import GraderConfig

LCB = GraderConfig(compare_mode="lcb")
TOLERANT = GraderConfig(compare_mode="tolerant", float_rel_tol=1e-3, float_abs_tol=1e-3)
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
TOKENS = [
    "1",
    "1.0",
    "01",
    "-0",
    "0",
    "1e3",
    "1000",
    "0.5",
    "0.5004",
    "YES",
    "yes",
    "No",
    "a",
    "ab",
    "x1",
    "1_0",
    "\x00",
    "a\x00",
]
SPACES = [" ", "  ", "\t", "\x0c", "\u3000", "\xa0", "\u2028", "\x85", "\x1f", "\r"]
BREAKS = ["\n", "\r\n", " \n", "\n\n", "\n \n"]


def reference_stdout_matches(actual: str, expected: str, tolerant: bool) -> bool:
    actual_lines = [line.strip() for line in actual.strip().split("\n")]
    expected_lines = [line.strip() for line in expected.strip().split("\n")]
    if len(actual_lines) != len(expected_lines):
        return False
    for actual_line, expected_line in zip(actual_lines, expected_lines, strict=True):
        if actual_line == expected_line:
            continue
        actual_tokens, expected_tokens = actual_line.split(), expected_line.split()
        if len(actual_tokens) != len(expected_tokens):
            return False
        for a, e in zip(actual_tokens, expected_tokens, strict=True):
            if a == e or (tolerant and a.lower() == e.lower() and e.lower() in ("yes", "no")):
                continue
            if not (NUMBER.fullmatch(a) and NUMBER.fullmatch(e)):
                return False
            if Decimal(a) == Decimal(e):
                continue
            real = "." in e or "e" in e or "E" in e
            if not (tolerant and real and math.isclose(float(a), float(e), rel_tol=1e-3, abs_tol=1e-3)):
                return False
    return True


def random_text(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(0, 5)):
        tokens = [rng.choice(TOKENS) for _ in range(rng.randint(0, 4))]
        lines.append("".join(token + rng.choice(SPACES) * rng.randint(0, 1) for token in tokens))
    lead, tail = rng.choice(["", " ", "\n", "\n \n"]), rng.choice(["", "\n", " \n\n", "\u2028"])
    return lead + "".join(line + rng.choice(BREAKS) for line in lines) + tail


def variant(text: str, rng: random.Random) -> str:
    """The same text re-spaced, with some tokens swapped for equal or different ones, or a line added/removed."""
    out = []
    for piece in re.split(r"(\S+)", text):
        if piece and not piece.isspace() and rng.random() < 0.3:
            piece = rng.choice(TOKENS)
        elif piece.isspace() and "\n" not in piece and rng.random() < 0.5:
            piece = rng.choice(SPACES)
        out.append(piece)
    changed = "".join(out)
    if rng.random() < 0.1:
        changed += "\n1"
    return changed


def chunked(text: str, rng: random.Random):
    cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 6))))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return lambda: iter(pieces)


@pytest.mark.parametrize("config", [LCB, TOLERANT], ids=["lcb", "tolerant"])
def test_stdout_stream_agrees_with_the_rules_on_random_outputs(config, monkeypatch):
    monkeypatch.setattr(compare, "_SLICE_CHARS", 3)  # tokens and line breaks cut by every slice boundary
    rng = random.Random(1)
    agreed = {True: 0, False: 0}
    for _ in range(3000):
        expected = random_text(rng)
        actual = variant(expected, rng) if rng.random() < 0.8 else random_text(rng)
        want = reference_stdout_matches(actual, expected, config.compare_mode == "tolerant")
        assert stdout_matches(actual, expected, config) == want, (actual, expected)
        assert stdout_matches(chunked(actual, rng), expected, config) == want, (actual, expected)
        agreed[want] += 1
    assert min(agreed.values()) > 500, agreed  # both outcomes are well represented


def reference_values_match(actual, expected, tolerant: bool) -> bool:
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(reference_values_match(a, e, tolerant) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and set(actual) == set(expected)
            and all(reference_values_match(actual[key], expected[key], tolerant) for key in expected)
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, int | float):
        if type(actual) not in (int, float):
            return False
        if actual == expected:
            return True
        return (
            tolerant
            and isinstance(expected, float)
            and math.isclose(float(actual), expected, rel_tol=1e-3, abs_tol=1e-3)
        )
    return type(actual) is type(expected) and actual == expected


SCALARS = [0, 1, -1, 1.0, 0.5, 0.5004, 10**30, True, False, None, "", "a", "é", "1", "[", "\u2028", 'q"\\']


def random_value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 3 and roll < 0.4:
        return {rng.choice(["a", "b", "c", "", "é"]): random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return rng.choice(SCALARS)


def mutate(value, rng: random.Random):
    if rng.random() < 0.15:
        return random_value(rng)
    if isinstance(value, list):
        return tuple(mutate(item, rng) for item in value) if rng.random() < 0.5 else [mutate(i, rng) for i in value]
    if isinstance(value, dict):
        return {key: mutate(item, rng) for key, item in value.items()}
    return value


@pytest.mark.parametrize("config", [LCB, TOLERANT], ids=["lcb", "tolerant"])
def test_functional_stream_agrees_with_structural_equality_on_random_values(config, monkeypatch):
    monkeypatch.setattr(compare, "_JSON_SLICE_CHARS", 2)
    rng = random.Random(2)
    agreed = {True: 0, False: 0}
    for _ in range(2000):
        expected = random_value(rng)
        returned = mutate(expected, rng)
        actual_text = to_json_text(returned)  # the harness's own conversion, keys sorted
        want = reference_values_match(json.loads(actual_text), expected, config.compare_mode == "tolerant")
        expected_text = json.dumps(expected, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
        assert functional_matches(actual_text, expected_text, config) == want, (actual_text, expected_text)
        assert functional_matches(chunked(actual_text, rng), expected_text, config) == want
        agreed[want] += 1
    assert min(agreed.values()) > 300, agreed


def test_integers_beyond_the_conversion_limit_are_compared_exactly():
    """Python refuses int() of more than 4,300 digits; a problem whose answer is longer must still be gradable."""
    big = "9" * 10_000
    assert functional_matches(f"[{big}]", f"[{big}]", LCB)
    assert not functional_matches(f"[{big[:-1]}8]", f"[{big}]", LCB)
    assert not functional_matches(f"[{big}]", f'["{big}"]', LCB)
    assert stdout_matches(big, big + "\n", LCB)
    assert stdout_matches(f"{big}.000", big, LCB)
