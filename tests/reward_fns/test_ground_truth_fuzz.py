"""Ground truths of random shapes, depths, types and sizes: the parser decides before any program runs.

Every generated ground truth (parsed or as text, in each layout ``reward_fns.layouts`` reads, mutated field by field,
nested up to 6,000 levels, as bytes that are not UTF-8) must satisfy:

1. ``Problem.from_ground_truth`` returns a ``Problem`` or raises ``GroundTruthError``, nothing else;
2. an accepted problem is one the sandbox can run: at least one test, string inputs and outputs, inputs that are
   UTF-8 text, tests longest input first, a known testtype; functional tests have an identifier ``fn_name``,
   arguments the harness parses as it does in the test child, and an expected result the comparison reads;
   evalplus tests, calls the harness can make and expected values the grader's check reads;
3. ``score.grade_response`` (what ``compute_score`` calls) never raises: ``no_code`` for an accepted problem, else
   ``internal_error`` with ``ground_truth_error``;
4. ``ray_pool.cache.ground_truth_text`` (what the pool ships) returns text or raises ``GroundTruthError``, and its
   text is accepted exactly when the parsed ground truth is.
"""

from __future__ import annotations

import json
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reward_fns import call_format, compare, evalplus
from reward_fns.ray_pool.cache import ground_truth_text
from reward_fns.score import grade_response
from reward_fns.types import GraderConfig, GroundTruthError, Problem, Verdict

FUZZ_CASES = 1_500
"""Ground truths generated per run (``derandomize``: the same ones every run)."""

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=16,
)
names = st.sampled_from(["f", "maxArea", "Solution", "my-func", "1abc", "", "a b", "print"]) | values


def as_text(value: object) -> str:
    """The JSON text of ``value``; too deep for ``json.dumps``: unclosed brackets, as deep."""
    try:
        return json.dumps(value)
    except (RecursionError, ValueError):
        return "[" * 5_000


def nested(depth: int, inner: object = 1) -> object:
    for _ in range(depth):
        inner = [inner]
    return inner


depths = st.integers(0, 6_000)
deep_values = st.builds(nested, depths, scalars)
deep_texts = depths.map(lambda depth: "[" * depth + "1" + "]" * depth)
argument_texts = st.lists(
    st.one_of(values.map(lambda value: json.dumps(value)), st.text(max_size=10), deep_texts), max_size=4
).map("\n".join)
fields = st.one_of(st.text(max_size=20), argument_texts, values, deep_values)
testtypes = (
    st.sampled_from(["stdin", "functional", "evalplus", "stdin_stdout", "function_call", "FUNCTIONAL", "other"])
    | values
)


@st.composite
def case_dicts(draw: st.DrawFn, type_key: str) -> dict:
    test = {"input": draw(fields), "output": draw(fields)}
    if draw(st.booleans()):
        test[type_key] = draw(testtypes)
    if draw(st.booleans()):
        test["fn_name" if draw(st.booleans()) else "metadata"] = draw(names | st.builds(dict, func_name=names))
    for key in draw(st.lists(st.sampled_from(["input", "output"]), max_size=1)):
        del test[key]
    return test


def _taco(inputs: list, outputs: list, fn_name: object) -> dict:
    return {"inputs": inputs, "outputs": outputs} | ({} if fn_name is None else {"fn_name": fn_name})


taco = st.builds(_taco, st.lists(fields, max_size=3), st.lists(fields, max_size=3), st.none() | names)
layouts = st.one_of(
    st.builds(
        lambda tests, fn_name: {"tests": tests, "fn_name": fn_name}, st.lists(case_dicts("testtype"), max_size=4), names
    ),
    taco,
    st.builds(lambda inner: {"input_output": inner}, taco | taco.map(as_text) | st.text(max_size=20)),
    st.builds(
        lambda cases, language: {"test_cases": cases, "language": language},
        st.lists(case_dicts("type"), max_size=4),
        st.sampled_from(["python", "Python", "cpp"]) | values,
    ),
    st.lists(case_dicts("testtype") | case_dicts("type"), max_size=4),
    values,
    deep_values,
)
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
json_lines = st.lists(values.map(as_text), min_size=1, max_size=3).map("\n".join)


@st.composite
def evalplus_suite(draw: st.DrawFn) -> dict:
    """One suite of an EvalPlus task in our layout (``layouts.evalplus_tests``): calls with their limits, expected
    values as Python literals."""
    calls = draw(st.lists(st.lists(values, max_size=3), min_size=1, max_size=3))
    limits = [4.0] * len(calls)
    expected = [repr(draw(scalars)) for _ in calls]
    spec = {"entry_point": "f", "atol": draw(st.sampled_from([0, 1e-6])), "expected": expected, "time_limits_s": limits}
    return {
        "input": as_text({"calls": calls, "time_limits_s": limits}),
        "output": as_text(spec),
        "testtype": "evalplus",
        "time_limit_s": 17.0,
    }


evalplus_tests = evalplus_suite()


@st.composite
def near_valid(draw: st.DrawFn) -> dict:
    """A runnable problem in our layout (functional or stdin), then each field replaced with some probability by
    something of another shape: the parser must tell every broken field from a good one."""
    kind = draw(st.sampled_from(["stdin", "functional", "evalplus"]))
    tests = []
    for _ in range(draw(st.integers(1, 3))):
        if kind == "functional":
            test = {"input": draw(json_lines), "output": draw(values.map(as_text)), "testtype": "functional"}
        elif kind == "evalplus":
            test = draw(evalplus_tests)
        else:
            test = {"input": draw(st.text(max_size=30)), "output": draw(st.text(max_size=30))}
        for key in ("input", "output", "testtype", "time_limit_s"):
            if draw(st.integers(0, 9)) == 0:
                test[key] = draw(fields | testtypes)
        tests.append(test)
    truth = {"tests": tests, "fn_name": draw(identifiers)}
    if draw(st.integers(0, 4)) == 0:
        truth["fn_name"] = draw(names)
    return truth


ground_truths = st.one_of(
    near_valid(),
    near_valid(),
    near_valid().map(as_text),
    layouts,
    layouts.map(as_text),
    deep_texts,
    st.text(max_size=40),
    st.binary(max_size=40),
)


def _check_runnable(problem: Problem) -> None:
    """Invariant 2: what the sandbox and the comparison will do with the problem cannot fail."""
    assert problem.tests
    assert [len(test.input) for test in problem.tests] == sorted(
        (len(test.input) for test in problem.tests), reverse=True
    )
    for test in problem.tests:
        assert isinstance(test.input, str) and isinstance(test.output, str)
        test.input.encode("utf-8")  # what ForkServer writes into the test's input file
        assert test.testtype in ("stdin", "functional", "evalplus")
        assert test.time_limit_s is None or test.time_limit_s > 0
        if test.testtype != "stdin":
            assert isinstance(problem.fn_name, str) and problem.fn_name.isidentifier()
        if test.testtype == "functional":
            previous = sys.get_int_max_str_digits()
            sys.set_int_max_str_digits(0)  # as the harness parses them in the test child
            try:
                call_format.parse_arguments(test.input)
            finally:
                sys.set_int_max_str_digits(previous)
            assert isinstance(compare._canonical_expected(test.output), str)
        if test.testtype == "evalplus":  # as the harness reads its input and the grader its expected values
            request, spec = json.loads(test.input), json.loads(test.output)
            assert len(request["calls"]) == len(request["time_limits_s"]) == len(spec["expected"])
            assert all(isinstance(call, list) for call in request["calls"])
            for literal in spec["expected"]:
                evalplus.parse_literal(literal)
            float(spec["atol"])


@settings(
    max_examples=FUZZ_CASES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(ground_truths)
def test_any_ground_truth_is_a_problem_or_a_ground_truth_error(ground_truth):
    try:
        problem = Problem.from_ground_truth(ground_truth)
    except GroundTruthError:
        problem = None
    if problem is not None:
        _check_runnable(problem)
    result = grade_response("no program here", ground_truth, GraderConfig())
    if problem is None:
        assert result.verdict is Verdict.INTERNAL_ERROR and result.ground_truth_error, result
    else:
        assert result.verdict is Verdict.NO_CODE and result.total == len(problem.tests), result
    if isinstance(ground_truth, str | bytes):
        return
    try:
        text = ground_truth_text(ground_truth)
    except GroundTruthError:
        return
    try:
        Problem.from_ground_truth(text)
        accepted_as_text = True
    except GroundTruthError:
        accepted_as_text = False
    assert accepted_as_text == (problem is not None), text[:300]
