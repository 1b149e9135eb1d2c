"""Conversion of every source's test format to the ground-truth layout of docs/DESIGN.md."""

from __future__ import annotations

import base64
import json
import os
import pickle
import zlib

import pytest

from data_prep.ground_truth import (
    decode_lcb_private_tests,
    deepcoder_tests,
    encode_lcb_private_tests,
    lcb_tests,
    primeintellect_tests,
    taco_tests,
)
from data_prep.problem import MalformedRow

PRIVATE = [
    {"input": "3\n1 2 3\n", "output": "6\n", "testtype": "stdin"},
    {"input": "1\n9\n", "output": "9\n", "testtype": "stdin"},
]


def test_compressed_private_tests_decode() -> None:
    field = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(PRIVATE)))).decode()
    assert decode_lcb_private_tests(field) == PRIVATE
    assert decode_lcb_private_tests(encode_lcb_private_tests(PRIVATE)) == PRIVATE


def test_plain_json_private_tests_decode() -> None:
    assert decode_lcb_private_tests(json.dumps(PRIVATE)) == PRIVATE


@pytest.mark.parametrize(
    "field",
    [
        "!!not-base64!!",
        base64.b64encode(b"not zlib").decode(),
        base64.b64encode(zlib.compress(b"not a pickle")).decode(),
        base64.b64encode(zlib.compress(pickle.dumps(["a list, not a str"]))).decode(),
        base64.b64encode(zlib.compress(pickle.dumps("not json"))).decode(),
    ],
)
def test_undecodable_private_tests_are_malformed(field: str) -> None:
    with pytest.raises(MalformedRow) as error:
        decode_lcb_private_tests(field)
    assert error.value.reason in ("undecodable_private_tests", "bad_json")


def test_hostile_pickle_is_refused_without_running(tmp_path) -> None:
    marker = tmp_path / "ran"

    class Hostile:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    field = base64.b64encode(zlib.compress(pickle.dumps(Hostile()))).decode()
    with pytest.raises(MalformedRow) as error:
        decode_lcb_private_tests(field)
    assert error.value.reason == "undecodable_private_tests"
    assert not marker.exists()


def test_lcb_functional_tests_need_func_name() -> None:
    tests = [{"input": "[1, 2]\n3", "output": "4", "testtype": "functional"}]
    assert lcb_tests(tests, "f") == tests
    with pytest.raises(MalformedRow) as error:
        lcb_tests(tests, None)
    assert error.value.reason == "missing_field"


def test_taco_call_based_outputs_are_unwrapped_and_arguments_one_per_line() -> None:
    converted, fn_name = taco_tests(
        {"fn_name": "pairs", "inputs": [[[1, 2], "ab"], [[], ""]], "outputs": [[[2, 1]], [7]]}
    )
    assert fn_name == "pairs"
    assert converted[0] == {"input": '[1, 2]\n"ab"', "output": "[2, 1]", "testtype": "functional"}
    assert converted[1] == {"input": '[]\n""', "output": "7", "testtype": "functional"}


def test_taco_stdin_tests_join_line_lists() -> None:
    converted, fn_name = taco_tests({"inputs": ["1 2\n", ["3", "4"]], "outputs": ["3\n", ["7", "8"]]})
    assert fn_name is None
    assert converted == [
        {"input": "1 2\n", "output": "3\n", "testtype": "stdin"},
        {"input": "3\n4", "output": "7\n8", "testtype": "stdin"},
    ]


def test_taco_mismatched_lengths_are_malformed() -> None:
    with pytest.raises(MalformedRow):
        taco_tests({"inputs": ["1"], "outputs": []})


def test_primeintellect_function_call_and_stdin() -> None:
    calls = [
        {"type": "function_call", "fn_name": "add", "input": "[1, 2]", "output": "[3]"},
        {"type": "function_call", "fn_name": "add", "input": [[4], "x"], "output": [[5, 6]]},
    ]
    assert primeintellect_tests(calls) == (
        [
            {"input": "1\n2", "output": "3", "testtype": "functional"},
            {"input": '[4]\n"x"', "output": "[5, 6]", "testtype": "functional"},
        ],
        "add",
    )
    assert primeintellect_tests([{"type": "stdin_stdout", "input": "5\n", "output": "5\n"}]) == (
        [{"input": "5\n", "output": "5\n", "testtype": "stdin"}],
        None,
    )
    with pytest.raises(MalformedRow) as error:
        primeintellect_tests([calls[0], {"type": "stdin_stdout", "input": "5\n", "output": "5\n"}])
    assert error.value.reason == "bad_test_format"


def test_deepcoder_dispatches_on_each_config_shape() -> None:
    lcb_style = [{"input": "[1]", "output": "1", "testtype": "functional", "metadata": {"func_name": "g"}}]
    assert deepcoder_tests(lcb_style) == ([{"input": "[1]", "output": "1", "testtype": "functional"}], "g")
    assert deepcoder_tests({"inputs": ["1\n"], "outputs": ["1\n"]})[0][0]["testtype"] == "stdin"
    codeforces_style = [{"input": "2\n", "output": "4\n"}]
    assert deepcoder_tests(codeforces_style) == ([{"input": "2\n", "output": "4\n", "testtype": "stdin"}], None)
