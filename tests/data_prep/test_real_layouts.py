"""The four conversions the real hub layouts broke, each on rows laid out as the public readers show them.

1. DeepCoder ``lcbv5`` functional rows keep ``func_name`` in the row's ``metadata`` dict, not in each test.
2. TACO wraps call-based outputs in a one-element list on codewars only; leetcode/hackerrank outputs are the value.
3. DeepCoder's and PrimeIntellect's statements carry PrimeIntellect's prompt wrapper; the same problem from TACO is a
   duplicate across sources.
4. Function-call problems without starter code are told the function's name and signature, not "read stdin".

Every converted problem is graded with its bundled reference solution through ``reward_fns.compute_score``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from data_prep_raw_sources import (
    DEEPCODER,
    LCB,
    TACO_VERIFIED,
    deepcoder_row,
    lcb_line,
    reference_code,
    sample_by_id,
    taco_verified_row,
    with_statement,
    with_tests,
    write_deepcoder,
    write_lcb,
)

from data_prep.build import build_mix
from data_prep.build_settings import BuildConfig
from data_prep.filters import QualityConfig
from reward_fns import compute_score


def _build(root: Path, out: Path, sources: tuple[str, ...], **settings) -> dict:
    config = BuildConfig(
        out_dir=out, mode="local", local_dir=root, train_sources=sources, quality=QualityConfig(min_tests=3), **settings
    )
    return build_mix(config, log=lambda line: None)


def _train_rows(out: Path) -> dict[str, dict]:
    return {row["extra_info"]["problem_id"]: row for row in pq.read_table(out / "train.parquet").to_pylist()}


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def _lcb_root(root: Path) -> None:
    sample = sample_by_id()
    write_lcb(root / LCB, {"test6.jsonl": [lcb_line(sample["task_order"])]})


def _grade(row: dict, code: str) -> str:
    return compute_score(row["data_source"], _fenced(code), row["reward_model"]["ground_truth"])["verdict"]


def test_lcbv5_functional_rows_take_func_name_from_the_row_metadata(tmp_path: Path) -> None:
    sample, references = sample_by_id(), reference_code()
    functional = [sample[name] for name in ("count_hills", "merge_bookings", "top_words")]
    _lcb_root(tmp_path / "hf")
    write_deepcoder(tmp_path / "hf" / DEEPCODER, {"lcbv5": [deepcoder_row(p, "lcbv5") for p in functional]})
    manifest = _build(tmp_path / "hf", tmp_path / "out", ("deepcoder_lcbv5",))
    assert manifest["malformed_rows"]["total"] == 0
    assert manifest["counts"]["train"]["by_source"] == {"livecodebench": 3}
    rows = list(_train_rows(tmp_path / "out").values())
    for row, problem in zip(rows, functional, strict=True):
        assert json.loads(row["reward_model"]["ground_truth"])["fn_name"] == problem.fn_name
        assert _grade(row, references[problem.problem_id]) == "accepted"


def test_taco_unwraps_one_element_outputs_only_where_the_platform_wraps(tmp_path: Path) -> None:
    sample, references = sample_by_id(), reference_code()
    merge, top_words, compress = sample["merge_bookings"], sample["top_words"], sample["compress_runs"]
    single_only = with_tests(  # a leetcode problem whose every result is a one-element list: still not unwrapped
        with_statement(merge, "merge-single", "Merge only these bookings. " + merge.statement[::-1]),
        [test for test in merge.ground_truth["tests"] if len(json.loads(test["output"])) == 1],
    )
    rows = [
        taco_verified_row(merge, platform="leetcode"),
        taco_verified_row(top_words, platform="hackerrank"),
        taco_verified_row(compress, platform="codewars"),
        taco_verified_row(single_only, platform="leetcode"),
    ]
    _lcb_root(tmp_path / "hf")
    (tmp_path / "hf" / TACO_VERIFIED).mkdir(parents=True)
    (tmp_path / "hf" / TACO_VERIFIED / "taco_verified.json").write_text(json.dumps(rows))
    manifest = _build(tmp_path / "hf", tmp_path / "out", ("taco_verified",))
    assert manifest["counts"]["train"]["by_source"] == {"taco": 4}
    graded = [
        _grade(row, references[problem.problem_id])
        for row, problem in zip(
            _train_rows(tmp_path / "out").values(), (merge, top_words, compress, merge), strict=True
        )
    ]
    assert graded == ["accepted"] * 4
    truth = json.loads(next(iter(_train_rows(tmp_path / "out").values()))["reward_model"]["ground_truth"])
    assert [json.loads(test["output"]) for test in truth["tests"]] == [
        json.loads(test["output"]) for test in merge.ground_truth["tests"]
    ]


def test_deepcoder_taco_without_platform_keeps_mixed_list_outputs(tmp_path: Path) -> None:
    sample, references = sample_by_id(), reference_code()
    merge, compress = sample["merge_bookings"], sample["compress_runs"]
    rows = [deepcoder_row(merge, "taco", platform="leetcode"), deepcoder_row(compress, "taco", platform="codewars")]
    _lcb_root(tmp_path / "hf")
    write_deepcoder(tmp_path / "hf" / DEEPCODER, {"taco": rows})
    _build(tmp_path / "hf", tmp_path / "out", ("deepcoder_taco",))
    graded = [
        _grade(row, references[p.problem_id])
        for row, p in zip(_train_rows(tmp_path / "out").values(), (merge, compress), strict=True)
    ]
    assert graded == ["accepted", "accepted"]


def test_primeintellect_wrapper_text_does_not_hide_a_cross_source_duplicate(tmp_path: Path) -> None:
    sample = sample_by_id()
    stdin, functional = sample["coin_purse"], sample["mirror_word"]
    _lcb_root(tmp_path / "hf")
    write_deepcoder(
        tmp_path / "hf" / DEEPCODER,
        {
            "taco": [deepcoder_row(stdin, "taco"), deepcoder_row(functional, "taco")],
            "primeintellect": [deepcoder_row(stdin, "primeintellect"), deepcoder_row(functional, "primeintellect")],
        },
    )
    manifest = _build(tmp_path / "hf", tmp_path / "out", ("deepcoder_taco", "deepcoder_primeintellect"))
    assert manifest["counts"]["train"]["by_source"] == {"taco": 2}
    assert manifest["filters"]["train"]["duplicate_exact"] == {"primeintellect": 2}
    assert manifest["duplicates"]["by_source_pair"] == {"deepcoder_primeintellect -> deepcoder_taco": {"exact": 2}}


@pytest.mark.parametrize("variant", ["nouscoder", "deepcoder"])
def test_function_call_problems_without_starter_code_are_shown_the_signature(tmp_path: Path, variant: str) -> None:
    sample, references = sample_by_id(), reference_code()
    functional, stdin = sample["min_edit_steps"], sample["coin_purse"]
    _lcb_root(tmp_path / "hf")
    write_deepcoder(
        tmp_path / "hf" / DEEPCODER,
        {"primeintellect": [deepcoder_row(functional, "primeintellect"), deepcoder_row(stdin, "primeintellect")]},
    )
    _build(tmp_path / "hf", tmp_path / "out", ("deepcoder_primeintellect",), prompt_variant=variant)
    rows = list(_train_rows(tmp_path / "out").values())
    prompt = rows[0]["prompt"][-1]["content"]
    assert "```python\ndef minEditSteps(arg1, arg2):\n    \n```" in prompt
    assert "You will use the following starter code" in prompt
    assert "Read the inputs from stdin" not in prompt and "Solve the following coding problem" not in prompt
    assert "Now solve the problem and return the code" not in prompt
    assert _grade(rows[0], references[functional.problem_id]) == "accepted"
    stdin_prompt = rows[1]["prompt"][-1]["content"]
    assert "Read the inputs from stdin" in stdin_prompt and "# YOUR CODE HERE" in stdin_prompt
