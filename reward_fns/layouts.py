"""Ground-truth layouts of other code datasets, converted to ours: ``{"tests": [...], "fn_name": ...}``.

``to_our_layout`` detects the layout by its shape (each shape below belongs to exactly one layout) and returns our
layout with the layout's name; ``data_prep`` uses the same converters on raw dataset rows, so there is one
conversion for both. Functional tests come out as one JSON value per line (the positional arguments) and one JSON
value (the return value), the way LiveCodeBench grades them (``lcb_runner/evaluation/testing_util.py``).

==================  ======================================================  =====================================
layout              shape                                                   written / read by
==================  ======================================================  =====================================
``nouscoder``       ``{"tests": [{input, output, testtype}], "fn_name"?}``  ``data_prep`` (extra keys ignored)
``taco``            ``{"inputs": [...], "outputs": [...], "fn_name"?}``     TACO / APPS ``input_output``; verl
                                                                            ``prime_code`` (string inputs)
``input_output``    ``{"input_output": <taco, JSON or object>}``            LiveCodeBench ``get_evaluation_sample``
                                                                            (``lcb_runner/benchmarks/
                                                                            code_generation.py``), rLLM
                                                                            ``postprocess_lcb_sample``
``primeintellect``  ``{"language"?, "test_cases": [{type, input, output,    PrimeIntellect ``verification_info``
                    fn_name?}]}``                                           (genesys ``code_test_verifier.py``)
``test_list``       ``[{"input", "output", ...}, ...]``                     LiveCodeBench test lists (``testtype``,
                                                                            ``metadata.func_name`` per test: rLLM
                                                                            DeepCoder); PrimeIntellect / DeepCoder
                                                                            test cases (``type``, ``fn_name``);
                                                                            DeepCoder ``codeforces``
``evalplus``        ``{"entry_point", "atol", "base_input", "plus_input",   an EvalPlus task (HumanEvalPlus.jsonl:
                    "base", "plus", "base_time", "plus_time"}``             ``evalplus/data/humaneval.py``) with its
                                                                            ground truth (``evaluate.py``
                                                                            ``get_groundtruth``); written by
                                                                            ``data_prep``
==================  ======================================================  =====================================

An ``evalplus`` task becomes one test per suite (base, then plus when it has inputs), ``testtype: "evalplus"``: its
``input`` the JSON ``{"calls": [argument lists], "time_limits_s": [...]}`` the test program reads, its ``output`` the
JSON ``{"entry_point", "atol", "expected": [Python literals], "time_limits_s"}`` the grader checks against, its
``time_limit_s`` EvalPlus's suite limit (``reward_fns.evalplus``). ``base`` / ``plus`` hold the canonical solution's
return values as Python literals (``reward_fns.sandbox.harness.to_literal_text``: a tuple stays a tuple), and
``base_time`` / ``plus_time`` its seconds per input, from which the limits are computed.

Any of them may arrive as a JSON string. Function-call conventions:

- TACO/APPS arguments are a list (``f(*inputs[i])``); verl ``prime_code`` stores them as a string of one JSON value
  per line (``prime_code/testing_util.py``: ``[json.loads(line) for line in inputs.split("\\n")]``), and so does
  LiveCodeBench (``testtype == "functional"``). PrimeIntellect's ``input`` is the argument list, as a JSON string
  in ``verification_info`` or a native list in DeepCoder's ``primeintellect`` config (both handled).
- Outputs: codewars rows of TACO/APPS and PrimeIntellect function calls wrap the return value in a one-element list;
  TACO's leetcode and hackerrank rows do not (LLM360/Reasoning360 ``data_preprocess/codegen/taco.py`` checks
  ``f(*i) == o[0]`` for codewars and ``f(*i) == o`` for leetcode/hackerrank against each row's own solution). APPS'
  grader, copied into verl ``prime_code``, accepts either (``output == expected or output == expected[0]``). Our
  ground truth has one expected value, so the wrapping is decided per problem (:func:`outputs_are_wrapped`): never
  for a platform known not to wrap, else only when *every* output is a one-element list (a wrapped problem always
  is; a list-returning problem with results of other lengths is not).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from reward_fns import evalplus

TestDict = dict[str, str]
"""One test in our layout: ``{"input": str, "output": str, "testtype": "stdin"|"functional"}``."""

UNWRAPPED_PLATFORMS = frozenset({"leetcode", "hackerrank"})
"""TACO platforms whose call-based outputs are the return value itself (Reasoning360 ``taco.py``)."""
STDIN_MARKERS = frozenset({"stdin", "stdin_stdout"})
"""Per-test type values of stdin/stdout tests: LiveCodeBench ``testtype``, PrimeIntellect ``type`` (rLLM's cookbook
also writes ``testtype: "stdin_stdout"``)."""
LAYOUTS = ("nouscoder", "taco", "input_output", "primeintellect", "test_list", "evalplus")
CONVERT_HINT = (
    'convert it to {"tests": [{"input": str, "output": str, "testtype": "stdin"|"functional"}], "fn_name": str} '
    "(python -m data_prep.build_deepcoder_mix writes this layout; the accepted layouts are listed in "
    'reward_fns/README.md, "Ground-truth layouts")'
)


class LayoutError(ValueError):
    """A ground truth that cannot be converted. ``reason``: ``unrecognised`` (its shape matches no layout, or two),
    ``bad_json``, ``missing_fn_name`` or ``bad_test_format`` (a known layout with bad content)."""

    def __init__(self, message: str, reason: str = "bad_test_format") -> None:
        super().__init__(message)
        self.reason = reason

    @property
    def unrecognised(self) -> bool:
        return self.reason == "unrecognised"


def to_our_layout(ground_truth: Any) -> tuple[dict[str, Any], str]:
    """``(ground truth in our layout, name of the layout it came in)``; JSON strings are parsed first.

    Raises:
        LayoutError: bad JSON, a shape no layout has (``unrecognised``), or a recognised layout with bad content.
    """
    if isinstance(ground_truth, str | bytes):
        try:
            ground_truth = json.loads(ground_truth)
        except json.JSONDecodeError as exc:
            raise LayoutError(f"ground truth is not valid JSON: {exc}", "bad_json") from exc
    layout = detect_layout(ground_truth)
    if layout == "nouscoder":
        return ground_truth, layout
    if layout == "input_output":
        inner = ground_truth["input_output"]
        inner = json.loads(inner) if isinstance(inner, str | bytes) else inner
        if detect_layout(inner) != "taco":
            raise LayoutError(f"input_output holds {describe(inner)}, expected a TACO object {{inputs, outputs}}")
        ground_truth = inner
    if layout == "evalplus":
        return {"tests": evalplus_tests(ground_truth), "fn_name": str(ground_truth["entry_point"])}, layout
    if layout in ("taco", "input_output"):
        tests, fn_name = taco_tests(ground_truth)
    elif layout == "primeintellect":
        language = str(ground_truth.get("language") or "python").lower()
        if language != "python":
            raise LayoutError(f"verification_info is for {language!r}; only python programs are graded")
        tests, fn_name = test_list_tests(ground_truth["test_cases"])
    else:
        tests, fn_name = test_list_tests(ground_truth)
    return ({"tests": tests, "fn_name": fn_name} if fn_name else {"tests": tests}), layout


def detect_layout(value: Any) -> str:
    """The name of ``value``'s layout (parsed JSON). Raises ``LayoutError`` (``unrecognised``) for none or two."""
    if isinstance(value, Mapping):
        matches = [
            name
            for name, keys in (
                ("nouscoder", ("tests",)),
                ("taco", ("inputs", "outputs")),
                ("input_output", ("input_output",)),
                ("primeintellect", ("test_cases",)),
                ("evalplus", ("entry_point", *evalplus.SUITE_KEYS["base"])),
            )
            if all(key in value for key in keys)
        ]
        if len(matches) == 1 and _list_fields_ok(value, matches[0]):
            return matches[0]
    elif (
        isinstance(value, list)
        and value
        and all(isinstance(t, Mapping) and "input" in t and "output" in t for t in value)
    ):
        return "test_list"
    raise LayoutError(f"unrecognised ground-truth layout: {describe(value)}; {CONVERT_HINT}", "unrecognised")


def _list_fields_ok(value: Mapping[str, Any], layout: str) -> bool:
    fields = {"nouscoder": ("tests",), "taco": ("inputs", "outputs"), "primeintellect": ("test_cases",)}.get(layout, ())
    return all(isinstance(value[field], list) for field in fields)


def describe(value: Any) -> str:
    """A short description of a value's shape for messages: type, keys, element keys."""
    if isinstance(value, Mapping):
        return f"a JSON object with keys {sorted(map(str, value))[:12]}"
    if isinstance(value, list):
        kinds = sorted({type(item).__name__ for item in value})
        keys = sorted({str(key) for item in value[:50] if isinstance(item, Mapping) for key in item})[:12]
        return f"a list of {kinds}" + (f" with keys {keys}" if keys else "")
    kind = {bool: "boolean", int: "number", float: "number", str: "string", type(None): "null"}.get(type(value))
    return f"a JSON {kind}" if kind else f"a {type(value).__name__}"


def evalplus_tests(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An EvalPlus task with its ground truth (layout ``evalplus``) -> one ``evalplus`` test per non-empty suite."""
    entry_point, atol = task.get("entry_point"), task.get("atol", 0)
    if not isinstance(entry_point, str) or not entry_point:
        raise LayoutError("an EvalPlus task needs its entry_point (the function name)", "missing_fn_name")
    if isinstance(atol, bool) or not isinstance(atol, int | float):
        raise LayoutError(f"an EvalPlus task's atol must be a number, got {describe(atol)}")
    tests = []
    for suite, (inputs_key, outputs_key, times_key) in evalplus.SUITE_KEYS.items():
        inputs, outputs, times = task.get(inputs_key), task.get(outputs_key), task.get(times_key)
        if not (isinstance(inputs, list) and isinstance(outputs, list) and isinstance(times, list)):
            raise LayoutError(f"an EvalPlus task needs the lists {inputs_key}, {outputs_key} and {times_key}")
        if not len(inputs) == len(outputs) == len(times):
            raise LayoutError(f"{suite}: {len(inputs)} inputs, {len(outputs)} outputs, {len(times)} times")
        if suite == "base" and not inputs:
            raise LayoutError("an EvalPlus task without base inputs")
        if not inputs:
            continue
        if not all(isinstance(call, list) for call in inputs) or not all(isinstance(out, str) for out in outputs):
            raise LayoutError(f"{suite}: each input must be an argument list and each output a Python literal")
        limits = evalplus.time_limits(times)
        spec = {"entry_point": entry_point, "atol": atol, "expected": outputs, "time_limits_s": limits}
        tests.append(
            {
                "input": json.dumps({"calls": inputs, "time_limits_s": limits}),
                "output": json.dumps(spec),
                "testtype": "evalplus",
                "time_limit_s": evalplus.suite_timeout(limits),
            }
        )
    return tests


def taco_tests(input_output: Mapping[str, Any], platform: str | None = None) -> tuple[list[TestDict], str | None]:
    """TACO/APPS ``{inputs, outputs, fn_name?}`` (also verl ``prime_code``) -> (our tests, fn_name)."""
    inputs, outputs = input_output.get("inputs"), input_output.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise LayoutError("a TACO object needs 'inputs' and 'outputs' lists")
    if len(inputs) != len(outputs):
        raise LayoutError(f"{len(inputs)} inputs but {len(outputs)} outputs")
    fn_name = input_output.get("fn_name") or None
    if not fn_name:
        return [stdin_test(given, expected) for given, expected in zip(inputs, outputs, strict=True)], None
    arguments = [_taco_arguments(given) for given in inputs]
    results = [
        _maybe_json(result) if isinstance(given, str) else result for given, result in zip(inputs, outputs, strict=True)
    ]
    return functional_tests(arguments, results, platform), str(fn_name)


def test_list_tests(
    tests: Sequence[Any], fn_name: str | None = None, platform: str | None = None
) -> tuple[list[TestDict], str | None]:
    """A list of ``{input, output, testtype|type?, fn_name?, metadata?}`` -> (our tests, fn_name).

    ``fn_name`` comes from the argument (a row-level field, e.g. DeepCoder ``lcbv5`` ``metadata.func_name``), else
    from a test's ``fn_name`` (PrimeIntellect) or ``metadata.func_name`` (rLLM's DeepCoder lists). A test is
    functional when its ``testtype``/``type`` says so; LiveCodeBench functional inputs are JSON lines already,
    PrimeIntellect ``function_call`` inputs are argument lists.
    """
    if not isinstance(tests, list) or not tests:
        raise LayoutError("the test list is empty or not a list")
    kinds = [_test_kind(test, position) for position, test in enumerate(tests)]
    if "functional" not in kinds and "function_call" not in kinds:
        return [stdin_test(test["input"], test["output"]) for test in tests], None
    fn_name = fn_name or _test_fn_name(tests)
    if not fn_name:
        raise LayoutError("functional tests without a function name (fn_name or metadata.func_name)", "missing_fn_name")
    if set(kinds) != {kinds[0]}:
        raise LayoutError(f"a problem mixes test types {sorted(set(kinds))}")
    if kinds[0] == "functional":
        return [
            {"input": _text(test["input"]), "output": _text(test["output"]), "testtype": "functional"} for test in tests
        ], fn_name
    arguments = [_call_arguments(test["input"]) for test in tests]
    return functional_tests(arguments, [_maybe_json(test["output"]) for test in tests], platform), fn_name


def _test_kind(test: Any, position: int) -> str:
    """``stdin``, ``functional`` (LiveCodeBench ``testtype``: arguments as JSON lines) or ``function_call``
    (PrimeIntellect ``type``: arguments as a list)."""
    if not isinstance(test, Mapping) or "input" not in test or "output" not in test:
        raise LayoutError(f"test {position} is not an object with 'input' and 'output'")
    field, functional = ("testtype", "functional") if "testtype" in test else ("type", "function_call")
    marker = str(test.get(field) or "stdin").lower()
    if marker in STDIN_MARKERS:
        return "stdin"
    if marker == functional:
        return functional
    raise LayoutError(f"test {position} has unknown {field} {marker!r}")


def _test_fn_name(tests: Sequence[Mapping[str, Any]]) -> str | None:
    for test in tests:
        metadata = test.get("metadata")
        name = test.get("fn_name") or (metadata.get("func_name") if isinstance(metadata, Mapping) else None)
        if name:
            return str(name)
    return None


def outputs_are_wrapped(outputs: Sequence[Any], platform: str | None = None) -> bool:
    """True when a problem's call-based outputs wrap the return value in a one-element list (module docstring)."""
    if platform and platform.lower() in UNWRAPPED_PLATFORMS:
        return False
    return bool(outputs) and all(isinstance(output, list) and len(output) == 1 for output in outputs)


def functional_tests(
    arguments: Sequence[list[Any]], results: Sequence[Any], platform: str | None = None
) -> list[TestDict]:
    """Call-based tests from argument lists and (possibly wrapped) results; the wrapping is decided per problem."""
    if outputs_are_wrapped(results, platform):
        results = [result[0] for result in results]
    return [
        {
            "input": "\n".join(json.dumps(argument, ensure_ascii=False) for argument in call),
            "output": json.dumps(result, ensure_ascii=False),
            "testtype": "functional",
        }
        for call, result in zip(arguments, results, strict=True)
    ]


def stdin_test(given: Any, expected: Any) -> TestDict:
    """A stdin/stdout test; list-valued inputs or outputs (one string per line in APPS/TACO) are joined."""
    return {"input": _lines(given), "output": _lines(expected), "testtype": "stdin"}


def _taco_arguments(given: Any) -> list[Any]:
    """TACO arguments: a list (``f(*given)``), or verl ``prime_code``'s string of one JSON value per line."""
    if isinstance(given, str):
        try:
            return [json.loads(line) for line in given.split("\n")]
        except json.JSONDecodeError as exc:
            raise LayoutError(f"call-based input is not one JSON value per line: {exc}") from exc
    return given if isinstance(given, list) else [given]


def _call_arguments(given: Any) -> list[Any]:
    """PrimeIntellect ``function_call`` input: the argument list, native or as JSON text."""
    given = _maybe_json(given)
    return given if isinstance(given, list) else [given]


def _lines(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(line) for line in value)
    return _text(value)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        raise LayoutError("a test input or output is null")
    return json.dumps(value, ensure_ascii=False)


def _maybe_json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
