"""Shared value types of the grader: problems, tests, limits, verdicts, results.

Our ground-truth layout (LiveCodeBench's):
``{"tests": [{"input": str, "output": str, "testtype": "stdin"|"functional"}, ...], "fn_name": str}``.
The layouts of other code datasets (TACO / verl ``prime_code``, LiveCodeBench lists, PrimeIntellect, rLLM) are
converted by ``reward_fns.layouts``; anything else is a ``GroundTruthError``, logged once per layout per process.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from reward_fns.layouts import LayoutError, describe, to_our_layout

TestType = Literal["stdin", "functional", "evalplus"]
TEST_TYPES = ("stdin", "functional", "evalplus")
"""``evalplus``: one suite of an EvalPlus task (``reward_fns.evalplus``), written by the ``evalplus`` layout only."""
BAD_GROUND_TRUTH = "bad ground truth: "
"""Prefix of the ``detail`` of a result whose ground truth could not be read."""

logger = logging.getLogger(__name__)
_logged_layouts: set[str] = set()

POOL_SETTING_PREFIX = "pool_"
"""``reward_kwargs`` keys with this prefix configure the Ray grading pool (``reward_fns/ray_pool/config.py``), not
the grader: the recipe's configs give both reward paths one ``reward_kwargs``."""


class Verdict(StrEnum):
    """Outcome of grading one completion (docs/DESIGN.md "Reward")."""

    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    RUNTIME_ERROR = "runtime_error"
    OUTPUT_LIMIT = "output_limit"
    NO_CODE = "no_code"
    COMPILE_ERROR = "compile_error"
    INTERNAL_ERROR = "internal_error"


class GroundTruthError(ValueError):
    """The ground truth of a problem is malformed or in no known layout (not the model's fault)."""


@dataclass(frozen=True, slots=True)
class TestCase:
    """One hidden test. Functional tests: ``input`` is one JSON value per line, ``output`` one JSON value. evalplus
    tests: ``input`` the calls and their limits, ``output`` the expected values (``reward_fns.layouts``)."""

    input: str
    output: str
    testtype: TestType = "stdin"
    time_limit_s: float | None = None
    """The test's own wall-clock limit (an EvalPlus suite's); None: ``GraderConfig.time_limit_s``."""


@dataclass(frozen=True, slots=True)
class Problem:
    """A problem's tests, already ordered most expensive (longest input) first."""

    tests: tuple[TestCase, ...]
    fn_name: str | None = None

    @property
    def is_functional(self) -> bool:
        return any(test.testtype == "functional" for test in self.tests)

    @classmethod
    def from_ground_truth(cls, ground_truth: Any) -> Problem:
        """Parse and validate a ground truth (JSON string or parsed) in any layout of ``reward_fns.layouts``;
        tests sorted by decreasing input size.

        Raises:
            GroundTruthError: naming what is wrong (bad JSON, a layout no dataset uses, no tests, a test without
                input/output, an unknown testtype, a functional test without ``fn_name``). The first occurrence of
                each unrecognised layout in a process is also logged, with how to convert it.
        """
        try:
            ground_truth, _ = to_our_layout(ground_truth)
        except LayoutError as exc:
            if exc.unrecognised:
                _log_first(str(exc))
            raise GroundTruthError(str(exc)) from exc
        raw_tests = ground_truth["tests"]
        if not raw_tests:
            raise GroundTruthError("ground truth has no tests")
        tests = []
        for position, raw in enumerate(raw_tests):
            if (
                not isinstance(raw, dict)
                or not isinstance(raw.get("input"), str)
                or not isinstance(raw.get("output"), str)
            ):
                raise GroundTruthError(f"test {position} must have string 'input' and 'output' (got {describe(raw)})")
            testtype = raw.get("testtype", "stdin")
            if testtype not in TEST_TYPES:
                raise GroundTruthError(f"test {position} has unknown testtype {testtype!r}")
            limit = raw.get("time_limit_s")
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | float) or limit <= 0):
                raise GroundTruthError(f"test {position} has time_limit_s {limit!r}; expected a positive number")
            tests.append(TestCase(raw["input"], raw["output"], testtype, limit))
        fn_name = ground_truth.get("fn_name") or None
        if fn_name is None and any(test.testtype != "stdin" for test in tests):
            raise GroundTruthError("functional and evalplus tests need 'fn_name' in the ground truth")
        tests.sort(key=lambda test: len(test.input), reverse=True)
        return cls(tests=tuple(tests), fn_name=fn_name)


def _log_first(message: str) -> None:
    """Log an unrecognised layout the first time this process sees it (then only the counts show it)."""
    if message not in _logged_layouts:
        _logged_layouts.add(message)
        logger.error(
            "%s. Every sample with this layout is graded internal_error (grading/ground_truth_errors).", message
        )


GRADER_ENV_PREFIX = "REWARD_FNS_"
"""``GraderConfig`` fields not given as arguments are read from ``REWARD_FNS_<FIELD>`` (``reward_fns.score``)."""


@dataclass(frozen=True, slots=True)
class GraderConfig:
    """Limits and comparison rules. Defaults come from the NousCoder blog ("RL Environment")."""

    time_limit_s: float = 15.0
    """Wall-clock limit per test (NousCoder: 15 s)."""
    cpu_time_limit_s: float | None = None
    """CPU-time limit per test (RLIMIT_CPU); None means the wall limit + 1 s."""
    memory_limit_mb: int = 4096
    """Address-space / cgroup memory limit per test (NousCoder: 4 GB)."""
    output_limit_mb: int = 64
    """Cap on a test's stdout; more is ``output_limit``."""
    total_time_budget_s: float = 300.0
    """Wall-clock budget for all tests of one completion; past it the verdict is ``time_limit``."""
    compare_mode: Literal["lcb", "tolerant"] = "lcb"
    """Output comparison rule: ``lcb`` (LiveCodeBench) or ``tolerant`` (MicroCoder-style fallbacks)."""
    float_rel_tol: float = 1e-6
    """Relative float tolerance of the ``tolerant`` mode."""
    float_abs_tol: float = 1e-6
    """Absolute float tolerance of the ``tolerant`` mode."""
    isolation: Literal["auto", "strict", "none"] = "auto"
    """``auto``: every mechanism the host allows, loud warning for each missing one; ``strict``: refuse to
    run if any is missing; ``none``: rlimits only (trusted code, debugging)."""

    @property
    def effective_cpu_time_limit_s(self) -> float:
        return self.cpu_time_limit_s if self.cpu_time_limit_s is not None else self.time_limit_s + 1.0


@dataclass(slots=True)
class GradeResult:
    """Result of grading one completion against all tests of its problem (stops at the first failure)."""

    verdict: Verdict
    passed: int = 0
    total: int = 0
    time_s: float = 0.0
    """Wall time spent grading this completion."""
    max_test_time_s: float = 0.0
    detail: str = ""
    """Short human-readable reason (first failing test index, stderr tail, internal error message)."""
    extra: dict[str, Any] = field(default_factory=dict)
    ground_truth_error: bool = False
    """The problem's ground truth could not be read (``internal_error``): the data's fault, not the grader's."""

    @classmethod
    def bad_ground_truth(cls, error: GroundTruthError, time_s: float = 0.0) -> GradeResult:
        """``internal_error`` for a ground truth that cannot be read, flagged so the step metrics count it."""
        return cls(Verdict.INTERNAL_ERROR, time_s=time_s, detail=f"{BAD_GROUND_TRUTH}{error}", ground_truth_error=True)

    @classmethod
    def no_code(cls, problem: Problem, time_s: float = 0.0) -> GradeResult:
        """``no_code`` for a response without a fenced python block: nothing ran, every test counts as not passed."""
        return cls(Verdict.NO_CODE, total=len(problem.tests), time_s=time_s, detail="no fenced python block")

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED

    @property
    def score(self) -> float:
        """+1.0 when every test passed, -1.0 otherwise (NousCoder reward)."""
        return 1.0 if self.accepted else -1.0

    @property
    def tests_executed(self) -> int:
        """Tests that ran: every passed test, plus the failing one (grading stops at the first failure). None failed
        after ``accepted``, ``no_code``, ``compile_error`` or an ``internal_error`` before any test."""
        nothing_failed = self.verdict in _NO_FAILING_TEST or (
            self.verdict is Verdict.INTERNAL_ERROR and self.total == 0
        )
        return self.passed if nothing_failed else self.passed + 1


_NO_FAILING_TEST = frozenset({Verdict.ACCEPTED, Verdict.NO_CODE, Verdict.COMPILE_ERROR})
