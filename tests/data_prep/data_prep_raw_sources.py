"""Raw-format fixture writers, laid out the way each public dataset repository stores its rows.

The fixture problems are the bundled sample's problems (``data_prep.sample``); the writers turn them into each
source's own layout. Every layout choice below follows public code that reads the real rows (the full table with
repository and path is ``data_prep/README.md``, "Format facts"):

- LiveCodeBench ``code_generation_lite`` JSON Lines: string columns, ``public_test_cases`` JSON,
  ``private_test_cases`` base64(zlib(pickle(JSON))), ``metadata`` JSON with ``func_name``, ISO ``contest_date``
  (LiveCodeBench/LiveCodeBench ``lcb_runner/benchmarks/code_generation.py``).
- DeepCoder-Preview parquet: ``tests`` a JSON string; ``lcbv5`` tests are LiveCodeBench dicts *without* a per-test
  ``metadata`` and the row's ``metadata`` is a dict holding ``func_name`` (rllm-org/rllm
  ``cookbooks/deepcoder/prepare_deepcoder_data.py`` attaches it to each test itself; prime-environments' deepcoder
  loader reads ``example["metadata"]["func_name"]``); ``taco`` tests are the TACO dict; ``primeintellect`` tests are
  ``{type, fn_name, input, output}`` with native argument lists and one-element output lists (a NeMo-RL
  ``deepcoder_preview.py`` joins ``test_case["input"]`` and reads ``test_case["output"][0]``); ``solutions`` a list of
  strings, PrimeIntellect's fenced in ```python (LLM360/Reasoning360 ``data_preprocess/codegen/primeintellect.py``).
  The rllm notebooks keep only problem/tests/solutions for ``taco`` and ``primeintellect``: no starter code.
- TACO-verified one JSON array: ``input_output`` a JSON string, ``solutions`` a native list, ``source`` the platform;
  call-based outputs wrapped in a one-element list for ``codewars`` only (Reasoning360
  ``data_preprocess/codegen/taco.py`` checks ``f(*i) == o[0]`` for codewars and ``f(*i) == o`` for leetcode and
  hackerrank against the row's own solution).
- PrimeIntellect ``verifiable-coding-problems`` parquet: ``verification_info`` and ``metadata`` JSON strings, the
  statement wrapped in "Solve the following coding problem using the programming language python: ... Now solve the
  problem and return the code." (the wrapper Reasoning360 strips), ``gold_standard_solution`` fenced.

The encoders here are written independently of ``data_prep``.
"""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from data_prep.sample import SampleProblem, load_problems, load_solutions

LCB = "livecodebench/code_generation_lite"
DEEPCODER = "agentica-org/DeepCoder-Preview-Dataset"
TACO_VERIFIED = "likaixin/TACO-verified"
PRIMEINTELLECT = "PrimeIntellect/verifiable-coding-problems"

WRAPPING_PLATFORMS = frozenset({"codewars"})
"""TACO platforms whose call-based outputs are wrapped in a one-element list (Reasoning360 taco.py)."""
PI_PREAMBLE = "Solve the following coding problem using the programming language python:\n\n"
PI_STDIN_NOTE = "\n\nThe input will be stdin and you should print your solution to stdout\n\n"
PI_TRAILER = "\n\nNow solve the problem and return the code."


FixtureProblem = SampleProblem
"""The bundled sample's problem type; fixtures are sample problems, some with edited fields."""


def sample_by_id() -> dict[str, SampleProblem]:
    return {problem.problem_id: problem for problem in load_problems(include_large=False)}


def reference_code() -> dict[str, str]:
    """The bundled reference program of every sample problem (the fixtures' gold solutions)."""
    return {solution.problem_id: solution.code or "" for solution in load_solutions(kinds=["reference"])}


def fixture_problems() -> dict[str, SampleProblem]:
    """Named roles played by bundled sample problems (dates as in the sample unless a role needs another)."""
    sample = sample_by_id()
    return {
        "lcb_train": sample["supply_knapsack"],  # 2024-07-31: the last train day
        "lcb_test_boundary": sample["task_order"],  # 2024-08-01: the first test day
        "lcb_test_functional": sample["count_hills"],
        "lcb_after_window": replace(sample["tree_trail"], contest_date="2025-06-01T00:00:00"),
        "taco_stdin": sample["average_rainfall"],
        "taco_functional": sample["compress_runs"],
        "pi_stdin": sample["coin_purse"],
        "pi_functional": sample["mirror_word"],
    }


def with_statement(problem: SampleProblem, problem_id: str, statement: str) -> SampleProblem:
    return replace(problem, problem_id=problem_id, statement=statement)


def with_tests(problem: SampleProblem, tests: list[dict[str, Any]]) -> SampleProblem:
    return replace(problem, ground_truth=dict(problem.ground_truth, tests=tests))


# ---- independent encoders of each source's raw format -------------------------------------------------------


def compress_lcb(tests: list[dict[str, Any]]) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()


def lcb_line(problem: FixtureProblem, private: str | None = None) -> str:
    tests = problem.ground_truth["tests"]
    row = {
        "question_title": problem.title,
        "question_content": problem.statement,
        "platform": problem.platform,
        "question_id": problem.problem_id,
        "contest_id": "c" + problem.problem_id,
        "contest_date": problem.contest_date,
        "starter_code": problem.starter_code,
        "difficulty": problem.difficulty,
        "public_test_cases": json.dumps(tests[:2]),
        "private_test_cases": private if private is not None else compress_lcb(tests[2:]),
        "metadata": json.dumps({"func_name": problem.fn_name} if problem.fn_name else {}),
    }
    return json.dumps(row) + "\n"


def _arguments(test: dict[str, Any]) -> list[Any]:
    return [json.loads(line) for line in test["input"].split("\n")]


def taco_input_output(problem: FixtureProblem, platform: str = "codewars") -> dict[str, Any]:
    """TACO layout: call-based inputs are argument lists; outputs wrapped in a one-element list on codewars only."""
    tests = problem.ground_truth["tests"]
    if problem.fn_name:
        wrap = platform in WRAPPING_PLATFORMS
        return {
            "inputs": [_arguments(test) for test in tests],
            "outputs": [[json.loads(test["output"])] if wrap else json.loads(test["output"]) for test in tests],
            "fn_name": problem.fn_name,
        }
    return {"inputs": [test["input"] for test in tests], "outputs": [test["output"] for test in tests]}


def primeintellect_cases(problem: FixtureProblem, native: bool = False) -> list[dict[str, Any]]:
    """PrimeIntellect test cases: function calls with an argument list and a one-element output list, as JSON text
    (raw ``verification_info``) or as native lists (``native``: DeepCoder's ``primeintellect`` config)."""
    tests = problem.ground_truth["tests"]
    if problem.fn_name:
        encode = (lambda value: value) if native else json.dumps
        return [
            {
                "type": "function_call",
                "fn_name": problem.fn_name,
                "input": encode(_arguments(test)),
                "output": encode([json.loads(test["output"])]),
            }
            for test in tests
        ]
    return [{"type": "stdin_stdout", "input": test["input"], "output": test["output"]} for test in tests]


def primeintellect_statement(problem: FixtureProblem) -> str:
    """The statement inside PrimeIntellect's prompt wrapper (the stdin note only for stdin problems)."""
    note = "" if problem.fn_name else PI_STDIN_NOTE.rstrip("\n")
    return PI_PREAMBLE + problem.statement + note + PI_TRAILER


def deepcoder_tests(problem: FixtureProblem, config: str, platform: str = "codewars") -> str:
    if config == "taco":
        return json.dumps(taco_input_output(problem, platform))
    if config == "primeintellect":
        return json.dumps(primeintellect_cases(problem, native=True))
    return json.dumps(problem.ground_truth["tests"])


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def write_lcb(repo: Path, files: dict[str, list[str]]) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (repo / name).write_text("".join(lines))


def deepcoder_row(
    problem: FixtureProblem, config: str, tests: str | None = None, platform: str = "codewars"
) -> dict[str, Any]:
    """One DeepCoder-Preview row of ``config``: lcbv5 keeps starter code and a metadata dict; taco and
    primeintellect carry problem, tests and solutions only (PrimeIntellect's statement keeps its wrapper)."""
    tests = tests if tests is not None else deepcoder_tests(problem, config, platform)
    code = reference_code().get(problem.problem_id, "")
    if config == "lcbv5":
        metadata = {"func_name": problem.fn_name, "difficulty": problem.difficulty}
        return {
            "problem": problem.statement,
            "tests": tests,
            "starter_code": problem.starter_code,
            "metadata": metadata,
        }
    if config == "primeintellect":
        return {"problem": primeintellect_statement(problem), "tests": tests, "solutions": [f"```python\n{code}```"]}
    return {"problem": problem.statement, "tests": tests, "solutions": [code] if code else []}


def write_deepcoder(repo: Path, configs: dict[str, list[dict[str, Any]]]) -> None:
    for config, rows in configs.items():
        write_parquet(repo / config / "train-00000-of-00001.parquet", rows)


def taco_verified_row(
    problem: FixtureProblem, input_output: str | None = None, platform: str = "codewars"
) -> dict[str, Any]:
    code = reference_code().get(problem.problem_id, "")
    return {
        "question": problem.statement,
        "solutions": [code] if code else [],
        "starter_code": problem.starter_code,
        "input_output": input_output if input_output is not None else json.dumps(taco_input_output(problem, platform)),
        "difficulty": problem.difficulty.upper(),
        "raw_tags": "[]",
        "name": problem.title,
        "source": platform,
        "tags": "[]",
        "skill_types": "[]",
        "url": "",
        "Expected Auxiliary Space": None,
        "time_limit": "1 second",
        "date": problem.contest_date[:10] or None,
        "picture_num": "0",
        "memory_limit": "256 megabytes",
        "Expected Time Complexity": None,
    }


def primeintellect_row(problem: FixtureProblem, language: str = "python", drop: str | None = None) -> dict[str, Any]:
    code = reference_code().get(problem.problem_id, "")
    row = {
        "problem_id": problem.problem_id,
        "source": problem.platform,
        "task_type": "verifiable_code",
        "in_source_id": problem.problem_id,
        "prompt": primeintellect_statement(problem),
        "gold_standard_solution": f"```python\n{code}```" if code else None,
        "verification_info": json.dumps({"language": language, "test_cases": primeintellect_cases(problem)}),
        "metadata": json.dumps({"difficulty": problem.difficulty}),
    }
    if drop:
        row[drop] = None
    return row


FACTORIAL_ARGUMENTS = (0, 1, 5, 20, 15_000)
"""The codewars factorial kata of TACO-verified: call-based, its largest expected output 15000! has
56,130 digits, past CPython's 4,300-digit int <-> str limit that ``json.loads`` enforces."""
FACTORIAL_GOLD = "import math\n\ndef factorial(n):\n    return math.factorial(n)\n"


def factorial_kata_input_output() -> str:
    """The kata's ``input_output`` as TACO stores it: JSON text, codewars outputs wrapped in one-element lists."""
    import math
    import sys

    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # writing the fixture itself needs the digits
    try:
        outputs = [[math.factorial(n)] for n in FACTORIAL_ARGUMENTS]
        return json.dumps({"fn_name": "factorial", "inputs": [[n] for n in FACTORIAL_ARGUMENTS], "outputs": outputs})
    finally:
        sys.set_int_max_str_digits(previous)


def factorial_kata_row(statement: str = "", solutions: list[str] | None = None) -> dict[str, Any]:
    """A TACO-verified row of the kata (TACO's columns, ``source`` codewars)."""
    return {
        "question": statement or "Write a function factorial(n) that returns n! for 0 <= n <= 15000.",
        "solutions": [FACTORIAL_GOLD] if solutions is None else solutions,
        "starter_code": "def factorial(n):\n\t",
        "input_output": factorial_kata_input_output(),
        "difficulty": "EASY",
        "raw_tags": "['Mathematics', 'Fundamentals']",
        "name": "factorial",
        "source": "codewars",
        "tags": "['Mathematics']",
        "skill_types": "[]",
        "url": "",
        "Expected Auxiliary Space": None,
        "time_limit": None,
        "date": None,
        "picture_num": None,
        "memory_limit": None,
        "Expected Time Complexity": None,
    }


INTERACTIVE_STATEMENT = (
    "This is an interactive problem.\n\nYou are asked to successively name n different integer points on the plane. "
    "After naming each new point you will be given its color, black or white.\n\nInteraction\n\nThe first line of "
    "the standard input stream contains an integer n (1 <= n <= 30).\n\nHacks\n\nTo hack a solution use the format: "
    "the word hack, then n, then the colors."
)
"""Codeforces 1063C as TACO holds it, shortened: rllm-org/rllm ``rllm/data/preprocess/code/taco.ipynb`` prints the row
(statement opening "This is an interactive problem.", an "Interaction" section, and judge settings as inputs)."""
INTERACTIVE_INPUT_OUTPUT = json.dumps(
    {
        "inputs": ["hack\n30\n1 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n", "random\n22\n2\n"]
        + [f"random\n{n}\n1\n" for n in range(3, 8)],
        "outputs": ["0 1\n0 0 1000000000 2\n"] * 7,
    }
)
