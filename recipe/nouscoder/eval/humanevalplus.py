"""HumanEval+ pass@k on EvalPlus's base tests and on base + plus tests.

EvalPlus reports a task passed on "base" when its base suite passes and on "plus" (HumanEval+, the number the seeds'
tables give) when both suites pass (evalplus/evalplus ``evalplus/evaluate.py``: ``base_status == plus_status ==
PASS``). The parquet's ground truth holds both suites (``reward_fns.layouts`` layout ``evalplus``), so grading it
whole gives "plus"; ``base_suite`` is the view of it that grades the base suite alone.
"""

from __future__ import annotations

import json

from reward_fns.evalplus import base_only


def base_suite(ground_truth: str) -> str:
    """The ground truth of an EvalPlus task with its plus suite emptied."""
    return json.dumps(base_only(json.loads(ground_truth)))
