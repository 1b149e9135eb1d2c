"""Grade many completions on a ``GraderPool`` and get every result back in input order, streamed.

The library behind the grading CLI (``reward_fns.grade``) and the LiveCodeBench evaluation: a ``Completion`` is
runnable (a program and its problem) or already decided (no code, a bad line, a bad ground truth); only runnable
ones go to the pool, and ``grade_in_order`` yields each completion with its result in the order they came.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reward_fns.types import GradeResult, Problem

if TYPE_CHECKING:
    from reward_fns.sandbox.pool import GraderPool


@dataclass(slots=True)
class Completion:
    """One completion line and, when it cannot be run, its result decided without running anything."""

    line_number: int
    record: dict[str, Any]
    code: str = ""
    problem: Problem | None = None
    decided: GradeResult | None = None


def grade_in_order(completions: Iterable[Completion], pool: GraderPool) -> Iterator[tuple[Completion, GradeResult]]:
    """Every completion with its result, in input order; only runnable ones go to the pool, streamed.

    ``waiting`` holds the completions read but not yet yielded: those the pool has taken (at most its read-ahead)
    and the decided ones between them.
    """
    waiting: deque[Completion] = deque()

    def jobs() -> Iterator[tuple[str, Problem]]:
        for completion in completions:
            waiting.append(completion)
            if completion.decided is None:
                yield completion.code, completion.problem

    for result in pool.grade_many(jobs()):
        while waiting[0].decided is not None:
            decided = waiting.popleft()
            yield decided, decided.decided
        yield waiting.popleft(), result
    while waiting:
        decided = waiting.popleft()
        yield decided, decided.decided


OUTPUT_KEYS = (
    "problem_id",
    "score",
    "verdict",
    "passed",
    "total",
    "time_s",
    "max_test_time_s",
    "detail",
    "ground_truth_error",
)
"""The keys ``output_record`` adds to the passed-through ones (``ground_truth_error``: the problem's ground truth
could not be read, the data's fault)."""


def output_record(completion: Completion, result: GradeResult) -> dict[str, Any]:
    """Passed-through keys of the completion line (without the completion text), then the grading result
    (``OUTPUT_KEYS``)."""
    record = {key: value for key, value in completion.record.items() if key != "completion"}
    record.update(
        problem_id=completion.record.get("problem_id"),
        score=result.score,
        verdict=str(result.verdict),
        passed=result.passed,
        total=result.total,
        time_s=round(result.time_s, 6),
        max_test_time_s=round(result.max_test_time_s, 6),
        detail=result.detail,
        ground_truth_error=result.ground_truth_error,
    )
    return record
