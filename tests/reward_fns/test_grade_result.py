"""GradeResult's derived values: the reward and the number of tests that ran (grading stops at the first failure)."""

import pytest

from reward_fns.types import GradeResult, Verdict


@pytest.mark.parametrize(
    ("verdict", "passed", "total", "executed"),
    [
        (Verdict.ACCEPTED, 7, 7, 7),
        (Verdict.WRONG_ANSWER, 3, 7, 4),  # three passed, the fourth failed, the rest never ran
        (Verdict.TIME_LIMIT, 0, 7, 1),
        (Verdict.RUNTIME_ERROR, 6, 7, 7),
        (Verdict.NO_CODE, 0, 7, 0),
        (Verdict.COMPILE_ERROR, 0, 7, 0),
        (Verdict.INTERNAL_ERROR, 0, 0, 0),  # bad ground truth: no test known
        (Verdict.INTERNAL_ERROR, 2, 7, 3),  # the grader failed on the third test
    ],
)
def test_tests_executed_counts_the_passed_tests_and_the_failing_one(verdict, passed, total, executed):
    result = GradeResult(verdict, passed=passed, total=total)
    assert result.tests_executed == executed
    assert result.score == (1.0 if verdict is Verdict.ACCEPTED else -1.0)
