"""Functional tests: results are converted to JSON outside the program's reach; nothing can fake a pass."""

from __future__ import annotations

import pytest

from reward_fns.sandbox.harness import UnconvertibleResult, to_json_text
from reward_fns.types import Verdict

EXPECTED = "[1, 2, 3]"
ARGS = "3"

FAKERS = {
    "eq_always_true": "class Anything:\n    def __eq__(self, other):\n        return True\n"
    "class Solution:\n    def build(self, n):\n        return Anything()",
    "list_subclass_with_eq": "class Sneaky(list):\n    def __eq__(self, other):\n        return True\n"
    "class Solution:\n    def build(self, n):\n        return Sneaky()",
    "int_subclass_repr": "class Fake(int):\n    def __repr__(self):\n        return '[1, 2, 3]'\n"
    "    __str__ = __repr__\nclass Solution:\n    def build(self, n):\n        return Fake(0)",
    "str_subclass": "class Fake(str):\n    pass\nclass Solution:\n    def build(self, n):\n        return Fake('[1, 2, 3]')",
    "monkeypatched_json": "import json\njson.dumps = lambda *a, **k: '[1, 2, 3]'\n"
    "json.encoder.encode_basestring_ascii = lambda s: '[1, 2, 3]'\n"
    "class Solution:\n    def build(self, n):\n        return 'nope'",
    "monkeypatched_builtins": "import builtins\nbuiltins.type = lambda x: list\nbuiltins.isinstance = lambda *a: True\n"
    "builtins.repr = lambda x: '[1, 2, 3]'\nclass Solution:\n    def build(self, n):\n        return object()",
    "nan_result": "class Solution:\n    def build(self, n):\n        return [1, 2, float('nan')]",
    "returns_string_of_expected": "class Solution:\n    def build(self, n):\n        return '[1, 2, 3]'",
}


@pytest.mark.parametrize("name", sorted(FAKERS))
def test_program_cannot_fake_a_functional_pass(grade_functional, name):
    result = grade_functional(FAKERS[name], "build", [(ARGS, EXPECTED)])
    assert result.verdict is Verdict.WRONG_ANSWER, result.detail


def test_honest_program_after_the_same_monkeypatching_still_passes(grade_functional):
    code = "import builtins, json\njson.dumps = None\nbuiltins.repr = None\n"
    code += "class Solution:\n    def build(self, n):\n        return tuple(range(1, n + 1))"
    result = grade_functional(code, "build", [(ARGS, EXPECTED)])
    assert result.verdict is Verdict.ACCEPTED, result.detail


def test_missing_function_and_early_exit_are_runtime_errors(grade_functional):
    for code in ("class Solution:\n    pass", "def other(n):\n    return n", "import sys\nsys.exit(0)"):
        result = grade_functional(code, "build", [(ARGS, EXPECTED)])
        assert result.verdict is Verdict.RUNTIME_ERROR, (code, result.detail)


def test_converter_exact_types_tuples_and_rejections():
    assert to_json_text((1, (2.5, "é"), [True, None], {"k": (1,)})) == '[1,[2.5,"\\u00e9"],[true,null],{"k":[1]}]'
    assert to_json_text({1: 2}) == '{"1":2}'
    assert to_json_text(10**5000).startswith("1000")
    for bad in (float("inf"), [float("nan")], {(1, 2): 3}, object(), type("Sub", (int,), {})(3)):
        with pytest.raises(UnconvertibleResult):
            to_json_text(bad)
    nested: list = []
    nested.append(nested)
    with pytest.raises(UnconvertibleResult):
        to_json_text(nested)
