"""Quality filters for training problems; each rejection has a named reason that the manifest counts."""

from __future__ import annotations

from dataclasses import dataclass

from data_prep.problem import Problem
from data_prep.statements import is_interactive_statement, statement_tags

INTERACTIVE_TAG = "interactive"
"""Codeforces' tag of interactive problems (the platform's problem tags, which TACO keeps in ``raw_tags``)."""


@dataclass(frozen=True)
class QualityConfig:
    min_tests: int = 5
    """Fewer tests than this make a weak verifier (DeepCoder keeps problems with at least 5 tests)."""
    max_test_chars: int = 64_000_000
    """Cap on the total characters of all tests of one problem."""
    max_chars_per_test: int = 16_000_000
    """Cap on the characters of one test (input + output): one huge test is fed whole to every rollout's program."""
    drop_empty_outputs: bool = True
    """Drop problems where a test expects empty output (an empty answer would pass it)."""


def quality_reason(problem: Problem, config: QualityConfig) -> str | None:
    """The first failed filter's reason (``not_python``, ``interactive``, ``too_few_tests``, ``empty_output``,
    ``test_too_large`` (one test over ``max_chars_per_test``), ``tests_too_large`` (all tests over
    ``max_test_chars``))."""
    if problem.language != "python":
        return "not_python"
    if is_interactive(problem):
        return "interactive"
    if len(problem.tests) < config.min_tests:
        return "too_few_tests"
    if config.drop_empty_outputs and any(not test["output"].strip() for test in problem.tests):
        return "empty_output"
    if any(len(test["input"]) + len(test["output"]) > config.max_chars_per_test for test in problem.tests):
        return "test_too_large"
    if problem.test_bytes() > config.max_test_chars:
        return "tests_too_large"
    return None


def is_interactive(problem: Problem) -> bool:
    """An interactive problem: its tests are settings of a judge program that answers the solution's queries (TACO's
    Codeforces 1063C has inputs like ``"random\\n22\\n2\\n"``), not stdin/stdout pairs, so no program passes them
    here and every rollout would score -1. Known by the platform's ``interactive`` tag (the source's tag column, or
    a ``Tags:`` line of the statement: ``data_prep.statements.statement_tags``) or by the statement's wording
    (``data_prep.statements.is_interactive_statement``): a statement whose protocol section was left out (rLLM's
    Codeforces template keeps no "Interaction" section) is known by its tags alone."""
    return interactive_reason(problem) is not None


def interactive_reason(problem: Problem) -> str | None:
    """How a problem is known to be interactive: ``tag``, ``statement_tags``, ``statement``; None when it is not."""
    if INTERACTIVE_TAG in problem.tags:
        return "tag"
    if INTERACTIVE_TAG in statement_tags(problem.statement):
        return "statement_tags"
    if is_interactive_statement(problem.statement):
        return "statement"
    return None
