"""Real rows that used to stop the whole build, and whatever else one row can do.

1. A TACO-verified codewars kata expects a 56,130-digit integer: past CPython's 4,300-digit conversion limit, so
   ``json.loads`` raised a ``ValueError`` that neither the ground-truth parser nor the row loop caught. It must be
   read exactly (and graded); an integer past ``MAX_INTEGER_DIGITS`` makes only its own row malformed.
2. Any other fault of one row (deep nesting, text parquet cannot hold) is a malformed row with source, id and reason.
3. Interactive problems (Codeforces 1063C in TACO) are dropped with a counted reason.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from data_prep_raw_sources import (
    DEEPCODER,
    FACTORIAL_ARGUMENTS,
    FACTORIAL_GOLD,
    INTERACTIVE_INPUT_OUTPUT,
    INTERACTIVE_STATEMENT,
    LCB,
    TACO_VERIFIED,
    factorial_kata_input_output,
    factorial_kata_row,
    lcb_line,
    sample_by_id,
    taco_verified_row,
    with_statement,
    write_deepcoder,
    write_lcb,
)

from data_prep.build import build_mix
from data_prep.build_settings import BuildConfig
from data_prep.filters import QualityConfig, is_interactive
from data_prep.ground_truth import MAX_INTEGER_DIGITS
from data_prep.problem import Problem
from data_prep.statements import is_interactive_statement
from reward_fns import compute_score


def _root(tmp_path: Path, taco_verified: list[dict], deepcoder_taco: list[dict] | None = None) -> Path:
    root = tmp_path / "hf"
    write_lcb(root / LCB, {"test6.jsonl": [lcb_line(sample_by_id()["task_order"])]})
    (root / TACO_VERIFIED).mkdir(parents=True)
    (root / TACO_VERIFIED / "taco_verified.json").write_text(json.dumps(taco_verified))
    if deepcoder_taco is not None:
        write_deepcoder(root / DEEPCODER, {"taco": deepcoder_taco})
    return root


def _build(root: Path, out: Path, sources: tuple[str, ...] = ("taco_verified",)) -> dict:
    config = BuildConfig(
        out_dir=out, mode="local", local_dir=root, train_sources=sources, quality=QualityConfig(min_tests=3)
    )
    return build_mix(config, log=lambda line: None)


def _train_rows(out: Path) -> dict[str, dict]:
    return {row["extra_info"]["problem_id"]: row for row in pq.read_table(out / "train.parquet").to_pylist()}


def _digits(value: int) -> str:
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return str(value)
    finally:
        sys.set_int_max_str_digits(previous)


def test_a_56000_digit_expected_output_is_read_exactly_and_its_gold_solution_passes(tmp_path: Path) -> None:
    deepcoder = {"problem": "The factorial kata, from DeepCoder's copy.", "tests": factorial_kata_input_output()}
    deepcoder["solutions"] = [FACTORIAL_GOLD]
    root = _root(tmp_path, [factorial_kata_row()], deepcoder_taco=[deepcoder])
    manifest = _build(root, tmp_path / "out", ("taco_verified", "deepcoder_taco"))
    assert manifest["malformed_rows"]["total"] == 0
    assert manifest["counts"]["train"]["by_source"] == {"taco": 2}
    assert len(_digits(math.factorial(FACTORIAL_ARGUMENTS[-1]))) == 56_130
    for row in _train_rows(tmp_path / "out").values():
        truth = json.loads(row["reward_model"]["ground_truth"])
        assert truth["fn_name"] == "factorial"
        by_input = {test["input"]: test["output"] for test in truth["tests"]}  # codewars outputs are unwrapped
        assert by_input == {str(n): _digits(math.factorial(n)) for n in FACTORIAL_ARGUMENTS}
        graded = compute_score(
            row["data_source"], f"```python\n{FACTORIAL_GOLD}```", row["reward_model"]["ground_truth"]
        )
        assert graded["verdict"] == "accepted", graded


def test_an_integer_past_the_limit_and_a_deeply_nested_row_are_malformed_rows_and_the_build_goes_on(
    tmp_path: Path,
) -> None:
    too_long = factorial_kata_row(statement="The same kata with one expected output too long to read.")
    too_long["input_output"] = json.dumps({"fn_name": "f", "inputs": [[1]] * 3, "outputs": [[1], [2], [3]]}).replace(
        "[3]]", f"[{'9' * (MAX_INTEGER_DIGITS + 1)}]]"
    )
    nested = factorial_kata_row(statement="A row whose tests nest past the parser's recursion limit.")
    nested["input_output"] = "[" * 100_000 + "]" * 100_000
    kept = factorial_kata_row()
    manifest = _build(_root(tmp_path, [too_long, nested, kept]), tmp_path / "out")
    skipped = manifest["malformed_rows"]
    assert skipped["by_source_and_reason"] == {
        "taco_verified/integer_too_long": 1,
        "taco_verified/unexpected_error": 1,
    }
    named = {(row["source"], row["id"], row["reason"]) for row in skipped["rows"]}
    assert named == {
        ("taco_verified", "taco_verified/taco_verified.json:0", "integer_too_long"),
        ("taco_verified", "taco_verified/taco_verified.json:1", "unexpected_error"),
    }
    assert "RecursionError" in next(row["detail"] for row in skipped["rows"] if row["reason"] == "unexpected_error")
    assert manifest["counts"]["train"]["by_source"] == {"taco": 1}
    assert manifest["per_source"]["taco_verified"]["rows_read"] == 3
    assert manifest["per_source"]["taco_verified"]["malformed"] == 2


def test_text_parquet_cannot_hold_is_a_malformed_row_and_leaves_no_trace(tmp_path: Path) -> None:
    """A lone surrogate (JSON's ``\\ud800``) converts fine but cannot be written: reported at write time, its
    statement is not remembered by dedup, and the file holds the other rows."""
    sample = sample_by_id()
    broken = taco_verified_row(with_statement(sample["compress_runs"], "surrogate", "Compress \ud800 the runs."))
    same_words = taco_verified_row(with_statement(sample["compress_runs"], "clean", "Compress the runs."))
    manifest = _build(_root(tmp_path, [broken, same_words]), tmp_path / "out")
    assert manifest["malformed_rows"]["by_source_and_reason"] == {"taco_verified/not_utf8": 1}
    assert manifest["counts"]["train"]["by_source"] == {"taco": 1}  # not a duplicate of the refused row
    assert manifest["filters"]["train"] == {}
    assert manifest["per_source"]["taco_verified"]["rows_read"] == 2
    assert len(_train_rows(tmp_path / "out")) == 1


def test_interactive_problems_are_dropped_with_a_counted_reason(tmp_path: Path) -> None:
    sample = sample_by_id()
    by_statement = taco_verified_row(with_statement(sample["coin_purse"], "dwarves", INTERACTIVE_STATEMENT))
    by_statement["input_output"] = INTERACTIVE_INPUT_OUTPUT
    by_tag = taco_verified_row(with_statement(sample["task_order"], "guess", "Guess the hidden permutation."))
    by_tag["raw_tags"] = "['dfs and similar', 'interactive', 'math']"
    deepcoder = {"problem": INTERACTIVE_STATEMENT, "tests": INTERACTIVE_INPUT_OUTPUT}
    ordinary = taco_verified_row(sample["compress_runs"])
    root = _root(tmp_path, [by_statement, by_tag, ordinary], deepcoder_taco=[deepcoder])
    manifest = _build(root, tmp_path / "out", ("taco_verified", "deepcoder_taco"))
    assert manifest["filters"]["train"]["interactive"] == {"taco": 3}
    assert manifest["per_source"]["taco_verified"]["dropped"] == {"interactive": 2}
    assert manifest["per_source"]["deepcoder_taco"]["dropped"] == {"interactive": 1}
    assert manifest["counts"]["train"]["by_source"] == {"taco": 1}


@pytest.mark.parametrize(
    ("statement", "interactive"),
    [
        (INTERACTIVE_STATEMENT, True),
        ("Some text.\n\n-----Interaction-----\n\nPrint your queries as `? x`.", True),
        ("This is an interactive task. Print guesses until you get AC.", True),
        ("Build an interactive map of the city. Input: n. Output: the area.", False),
        ("The interaction between two particles is described below.\n\nOutput\n\nOne number.", False),
        ("Note that this is not an interactive problem: read all input at once.", False),
    ],
)
def test_interactive_statements_are_told_apart(statement: str, interactive: bool) -> None:
    assert is_interactive_statement(statement) is interactive
    problem = Problem("p", "taco", "fixture", statement, tests=[])
    assert is_interactive(problem) is interactive
