"""HumanEval+ tasks from EvalPlus's release file, with the ground truth EvalPlus computes before grading.

The release (``HumanEvalPlus.jsonl.gz``, version v0.1.10, downloaded by EvalPlus from
``https://github.com/evalplus/humanevalplus_release/releases/download/v0.1.10/HumanEvalPlus.jsonl.gz``:
evalplus/evalplus ``evalplus/data/humaneval.py`` and ``evalplus/data/utils.py`` ``get_dataset_metadata``) holds one
task a line: ``task_id``, ``prompt`` (signature and docstring), ``entry_point``, ``canonical_solution`` (the body
that completes the prompt), ``base_input`` (HumanEval's test inputs), ``plus_input`` (EvalPlus's), ``atol`` and
``contract`` (``get_human_eval_plus``'s docstring). Each input is the list of positional arguments.

EvalPlus grades against the canonical solution's outputs, computed by running it (trusted) on every input and
timing each call (``evaluate.py`` ``get_groundtruth`` with ``evalplus/gen/util`` ``trusted_exec``: a deep copy of
the input, ``fn(*inp)``). ``task_ground_truth`` does the same in this process, at build time, and writes the task in
the grader's ``evalplus`` layout (``reward_fns.layouts``): the outputs as Python literals, the seconds per input
from which EvalPlus's time limits follow (``reward_fns.evalplus``).
"""

from __future__ import annotations

import copy
import time
from typing import Any

from data_prep import ground_truth
from data_prep.problem import MalformedRow, Problem
from reward_fns import evalplus
from reward_fns.layouts import LayoutError, evalplus_tests
from reward_fns.sandbox.harness import UnconvertibleResult, to_literal_text

RELEASE_VERSION = "v0.1.10"
RELEASE_URL = (
    f"https://github.com/evalplus/humanevalplus_release/releases/download/{RELEASE_VERSION}/HumanEvalPlus.jsonl.gz"
)
RELEASE_FILE = "HumanEvalPlus.jsonl.gz"
TASK_COUNT = 164
"""HumanEval's 164 tasks, all in HumanEval+ (EvalPlus README: "HumanEval+: 80x more tests than the original
HumanEval"; ``completeness_check`` in ``evalplus/data/utils.py`` requires every task). rLLM's DeepCoder evaluation
left out HumanEval/32 (``find_zero``, whose check is EvalPlus's polynomial oracle: rllm-org/rllm
``rllm/data/preprocess/code/humanevalplus.ipynb``, "a broken test case"), so its figure is over 163."""


def signature_lines(prompt: str) -> str:
    """The prompt's lines before its docstring (imports, helpers' signatures, the ``def`` line), blank lines left
    out: EvalPlus's own shortened prompt (``tools/humaneval/to_original_fmt.py``), the starter code to complete."""
    lines = []
    for line in prompt.split("\n"):
        if not line:
            continue
        if '"""' in line or "'''" in line:
            break
        lines.append(line)
    return "\n".join(lines)


def task_ground_truth(task: dict[str, Any]) -> dict[str, Any]:
    """The task in the ``evalplus`` layout: the canonical solution's output (a Python literal) and seconds for each
    base and plus input.

    Raises:
        MalformedRow: a field is missing, the canonical solution does not run, or an output is not plain data.
    """
    for name in ("task_id", "prompt", "entry_point", "canonical_solution", "base_input", "plus_input"):
        if task.get(name) is None:
            raise MalformedRow("missing_field", name)
    namespace: dict[str, Any] = {"__name__": "canonical"}
    try:
        exec(compile(task["prompt"] + task["canonical_solution"], task["task_id"], "exec"), namespace)
        function = namespace[task["entry_point"]]
    except Exception as exc:  # noqa: BLE001 - the dataset's own solution failing is that row's fault
        raise MalformedRow("canonical_failed", f"{type(exc).__name__}: {exc}") from exc
    truth: dict[str, Any] = {
        "task_id": task["task_id"],
        "entry_point": task["entry_point"],
        "atol": task.get("atol") or 0,
    }
    for suite, (inputs_key, outputs_key, times_key) in evalplus.SUITE_KEYS.items():
        inputs = task[inputs_key]
        if not isinstance(inputs, list) or not all(isinstance(call, list) for call in inputs):
            raise MalformedRow("bad_test_format", f"{inputs_key} must be a list of argument lists")
        outputs, seconds = [], []
        for position, call in enumerate(inputs):
            started = time.perf_counter()
            try:
                value = function(*copy.deepcopy(call))
            except Exception as exc:  # noqa: BLE001
                raise MalformedRow(
                    "canonical_failed", f"{suite} input {position}: {type(exc).__name__}: {exc}"
                ) from exc
            seconds.append(time.perf_counter() - started)
            try:
                outputs.append(to_literal_text(value))
            except UnconvertibleResult as exc:
                raise MalformedRow("bad_test_format", f"{suite} output {position}: {exc}") from exc
        truth.update({inputs_key: inputs, outputs_key: outputs, times_key: seconds})
    return truth


def convert_humanevalplus_row(row: dict[str, Any], row_id: str) -> Problem:
    """One EvalPlus release line as a problem: the prompt is the statement, its signature the starter code, the
    ground truth the ``evalplus`` layout (both suites; the evaluation also grades the base suite alone)."""
    with ground_truth.long_integers():
        truth = task_ground_truth(row)
    try:
        tests = evalplus_tests(truth)
    except LayoutError as exc:
        raise MalformedRow("bad_test_format", str(exc)) from exc
    return Problem(
        problem_id=f"humanevalplus/{row['task_id']}",
        source="humanevalplus",
        origin=f"evalplus/humanevalplus_release {RELEASE_VERSION}",
        statement=row["prompt"],
        tests=tests,
        fn_name=row["entry_point"],
        starter_code=signature_lines(row["prompt"]),
        platform="humaneval",
        source_name="humanevalplus",
        layout_ground_truth=truth,
    )
