"""recipe.nouscoder.eval.grading without running programs: what is decided before the sandbox."""

from recipe.nouscoder.eval.grading import prepare
from recipe.nouscoder.eval.samples import Sample
from reward_fns.types import GroundTruthError, Problem, TestCase


def test_samples_of_a_problem_with_a_bad_ground_truth_are_flagged_internal_errors():
    completion = prepare(Sample("p1", 0, "```python\nprint(1)\n```"), GroundTruthError("ground truth has no tests"))
    assert completion.decided is not None and completion.decided.verdict == "internal_error"
    assert completion.decided.ground_truth_error and "ground truth has no tests" in completion.decided.detail


def test_a_sample_without_a_code_block_is_no_code_and_a_program_is_runnable():
    problem = Problem(tests=(TestCase("1", "1"), TestCase("2", "2")))
    no_code = prepare(Sample("p1", 0, "I give up."), problem)
    assert no_code.decided is not None and (no_code.decided.verdict, no_code.decided.total) == ("no_code", 2)
    runnable = prepare(Sample("p1", 1, "```python\nprint(input())\n```"), problem)
    assert runnable.decided is None and runnable.code == "print(input())" and runnable.problem is problem
