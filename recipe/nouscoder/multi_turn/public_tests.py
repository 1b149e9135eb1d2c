"""A row's public tests, and a program graded on them with the training grader, in statement order.

Where they live: ``extra_info["public_tests"]`` of a parquet row, a JSON string in the ground-truth layout
(``{"tests": [{"input", "output", "testtype"}, ...], "fn_name": ...}``, README "Data"), "" when the problem has none.
The hidden tests stay in ``reward_model.ground_truth``, which the feedback never reads.

Grading: each public test is graded as its own one-test problem, in the order the row lists them (the statement's
order), stopping at the first failure, so the feedback can name "example 2 of 3" and show exactly that test. Two
backends with the reward's own ``GraderConfig``: ``LocalPublicGrader`` (``reward_fns.score.grade_response`` in a
thread of this process, warm fork servers) and ``PoolPublicGrader`` (the Ray grading pool of
``reward_fns.async_score``).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from omegaconf import DictConfig, OmegaConf

from reward_fns.types import GraderConfig, GradeResult, GroundTruthError, Problem, TestCase, Verdict

PUBLIC_TESTS_KEY = "public_tests"
"""``extra_info`` key of a row's public tests."""
POOL_REWARD_MODULE = "reward_fns.async_score"
VERL_EXTRA_KWARGS = frozenset({"reward_router_address", "reward_model_tokenizer"})


@dataclass(frozen=True)
class PublicTests:
    """A problem's public tests in statement order; ``one_test_truths[i]`` grades test i alone."""

    tests: tuple[TestCase, ...]
    fn_name: str | None
    one_test_truths: tuple[str, ...]

    @classmethod
    def from_ground_truth(cls, ground_truth: str | Mapping[str, Any]) -> PublicTests:
        """Parse the layout above (validated by ``reward_fns.types.Problem``).

        Raises:
            GroundTruthError: naming what is wrong with the public tests.
        """
        parsed = json.loads(ground_truth) if isinstance(ground_truth, str) else dict(ground_truth)
        if not isinstance(parsed, dict) or not isinstance(parsed.get("tests"), list):
            raise GroundTruthError('public tests must be an object with a "tests" list')
        fn_name = parsed.get("fn_name") or None
        truths, tests = [], []
        for raw in parsed["tests"]:
            truth = json.dumps({"tests": [raw], **({"fn_name": fn_name} if fn_name else {})})
            tests.append(Problem.from_ground_truth(truth).tests[0])
            truths.append(truth)
        if not tests:
            raise GroundTruthError("public tests list is empty")
        return cls(tuple(tests), fn_name, tuple(truths))


def public_tests_of(extra_info: Mapping[str, Any] | None) -> PublicTests | None:
    """The row's public tests, or None when it has none ("" or absent).

    Raises:
        GroundTruthError: the row's public tests are malformed.
    """
    raw = (extra_info or {}).get(PUBLIC_TESTS_KEY)
    if raw is None or raw == "":
        return None
    try:
        return PublicTests.from_ground_truth(raw)
    except (json.JSONDecodeError, TypeError) as exc:
        raise GroundTruthError(f"extra_info.{PUBLIC_TESTS_KEY} is not valid JSON: {exc}") from exc


@dataclass(frozen=True)
class PublicCheck:
    """A program's result on the public tests (statement order, stopped at the first failure)."""

    verdict: Verdict
    """``accepted`` when every public test passed; else the first failure's verdict."""
    passed: int
    """Public tests passed before the first failure."""
    total: int
    failed_test: TestCase | None = None
    """The first failing public test (None when all passed, or when no test ran: no code, compile error)."""
    actual_output: str | None = None
    """What the program printed (or returned) on it, for a wrong answer."""
    stderr_tail: str | None = None
    """The end of its stderr, for a runtime error or memory limit."""
    detail: str = ""
    """The grader's reason (the compile error message, the limit that was hit)."""

    @property
    def all_passed(self) -> bool:
        return self.verdict is Verdict.ACCEPTED


class PublicGrader(Protocol):
    """Grades one response (its last python block) on one ground truth with the reward's grader settings."""

    config: GraderConfig

    async def grade(self, response: str, ground_truth: str) -> GradeResult: ...


async def check_public(grader: PublicGrader, response: str, public: PublicTests) -> PublicCheck:
    """Grade ``response``'s program on each public test in order; stop at the first failure."""
    for index, (test, truth) in enumerate(zip(public.tests, public.one_test_truths, strict=True)):
        result = await grader.grade(response, truth)
        if result.accepted:
            continue
        ran = result.verdict not in (Verdict.NO_CODE, Verdict.COMPILE_ERROR, Verdict.INTERNAL_ERROR)
        return PublicCheck(
            verdict=result.verdict,
            passed=index,
            total=len(public.tests),
            failed_test=test if ran else None,
            actual_output=result.extra.get("actual_output"),
            stderr_tail=result.extra.get("stderr_tail"),
            detail=result.detail,
        )
    return PublicCheck(Verdict.ACCEPTED, len(public.tests), len(public.tests))


class LocalPublicGrader:
    """``reward_fns.score.grade_response`` in a worker thread of this process (thread-safe, warm fork servers)."""

    def __init__(self, settings: Mapping[str, Any]):
        self.config = grader_settings(settings)

    async def grade(self, response: str, ground_truth: str) -> GradeResult:
        from reward_fns.score import grade_response

        return await asyncio.to_thread(grade_response, response, ground_truth, self.config)


class PoolPublicGrader:
    """The Ray grading pool of ``reward_fns.async_score`` (same pool, same settings as the reward)."""

    def __init__(self, settings: Mapping[str, Any]):
        from reward_fns.ray_pool.config import pool_config

        self.pool = pool_config(settings)
        self.config = grader_settings(settings)

    async def grade(self, response: str, ground_truth: str) -> GradeResult:
        from reward_fns.ray_pool.client import pool_client

        outcome, _ = await pool_client(self.pool, self.config.isolation).grade(response, ground_truth, self.config)
        return outcome.result


def grader_settings(settings: Mapping[str, Any]) -> GraderConfig:
    """The ``GraderConfig`` of reward settings (their ``pool_*`` keys configure the pool, not the grader)."""
    from reward_fns.ray_pool.config import pool_keys
    from reward_fns.score import grader_config

    return grader_config({key: value for key, value in settings.items() if key not in pool_keys(settings)})


def reward_settings(config: DictConfig) -> dict[str, Any]:
    """``reward.custom_reward_function.reward_kwargs`` of the run (the grader settings of the reward)."""
    kwargs = OmegaConf.select(config, "reward.custom_reward_function.reward_kwargs")
    values = OmegaConf.to_container(kwargs, resolve=True) if kwargs is not None else {}
    return {key: value for key, value in (values or {}).items() if key not in VERL_EXTRA_KWARGS}


def reward_uses_pool(config: DictConfig) -> bool:
    """True when the run's reward is ``reward_fns.async_score`` (``pkg://`` path or the module's file)."""
    path = str(OmegaConf.select(config, "reward.custom_reward_function.path") or "")
    return path.replace("/", ".").removesuffix(".py").endswith(POOL_REWARD_MODULE)


def public_grader_for(config: DictConfig, mode: str) -> PublicGrader:
    """The public-test grader of a run: ``mode`` local / pool / auto (the pool when the reward uses it).

    One grader per process and settings (it holds warm fork servers or a pool client).
    """
    use_pool = mode == "pool" or (mode == "auto" and reward_uses_pool(config))
    return _grader(use_pool, json.dumps(reward_settings(config), sort_keys=True))


@functools.lru_cache(maxsize=4)
def _grader(use_pool: bool, settings_json: str) -> PublicGrader:
    settings = json.loads(settings_json)
    return PoolPublicGrader(settings) if use_pool else LocalPublicGrader(settings)
