"""Public tests in the rows: LiveCodeBench keeps its own, other sources give their first K (which leave the hidden set)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from data_prep_raw_sources import FixtureProblem, lcb_line

from data_prep.build import build_mix
from data_prep.build_deepcoder_mix import parse_args
from data_prep.build_settings import BuildConfig
from data_prep.problem import Problem
from data_prep.sample import load_problems
from data_prep.sources import convert_lcb_row


def test_livecodebench_rows_keep_their_public_test_cases(problems: dict[str, FixtureProblem]) -> None:
    fixture = problems["lcb_test_functional"]
    problem = convert_lcb_row(json.loads(lcb_line(fixture)), "lcb/x")
    assert problem.tests == fixture.ground_truth["tests"]  # the hidden set is unchanged: public + private
    assert problem.public_tests == fixture.ground_truth["tests"][:2]  # the fixture's public_test_cases
    assert json.loads(problem.public_tests_json()) == {"tests": problem.public_tests, "fn_name": fixture.fn_name}
    assert problem.with_public_tests(3) is problem  # native public tests are never replaced


def test_first_k_tests_become_public_and_leave_the_hidden_set() -> None:
    tests = [{"input": str(i), "output": str(i), "testtype": "stdin"} for i in range(4)]
    problem = Problem("p", "taco", "o", "statement", tests)
    moved = problem.with_public_tests(2)
    assert moved.public_tests == tests[:2] and moved.tests == tests[2:] and problem.tests == tests
    assert problem.with_public_tests(9).tests == tests[3:]  # one hidden test always stays
    assert Problem("q", "taco", "o", "s", tests[:1]).with_public_tests(2).public_tests == []
    assert problem.with_public_tests(0) is problem and problem.public_tests_json() == ""


def test_build_writes_public_tests_and_counts_them(tmp_path: Path) -> None:
    by_id = {problem.problem_id: problem.ground_truth["tests"] for problem in load_problems()}
    plain = build_mix(BuildConfig(out_dir=tmp_path / "plain", mode="sample"), log=lambda line: None)
    moved = build_mix(BuildConfig(out_dir=tmp_path / "moved", mode="sample", public_tests=1), log=lambda line: None)
    assert plain["public_tests"]["train"] == {"none": 28} and moved["public_tests"]["train"] == {"from_hidden": 28}
    for name, manifest in (("plain", plain), ("moved", moved)):
        for row in pq.read_table(tmp_path / name / "train.parquet").to_pylist():
            original = by_id[row["extra_info"]["problem_id"].removeprefix("sample/")]
            hidden = json.loads(row["reward_model"]["ground_truth"])["tests"]
            public = row["extra_info"]["public_tests"]
            if name == "plain":
                assert public == "" and hidden == original
            else:
                assert json.loads(public)["tests"] == original[:1] and hidden == original[1:]
            assert row["extra_info"]["num_tests"] == len(hidden)
        assert manifest["settings"]["public_tests_from_hidden"] == (0 if name == "plain" else 1)
    assert parse_args(["--public-tests", "2"]).public_tests == 2
