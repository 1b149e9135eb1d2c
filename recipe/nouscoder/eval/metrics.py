"""LiveCodeBench metrics from graded samples: unbiased pass@k, breakdowns, verdicts, lengths, overlong ratio.

pass@k of one problem with n samples of which c are correct (Chen et al. 2021, "Evaluating Large Language
Models Trained on Code", eq. 1): ``pass@k = 1 - C(n - c, k) / C(n, k)``, defined for 1 <= k <= n; the
benchmark's pass@k is the mean over problems. pass@1 is c / n, the NousCoder "Pass@1" (mean over the G
samples); pass@G with k = n = G is the blog's "Pass@G" (at least one of the G samples correct).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k = 1 - C(n-c, k) / C(n, k) of one problem (n samples, c correct).

    Raises:
        ValueError: k < 1, k > n (pass@k needs at least k samples: sample more with ``--n``), or c outside [0, n].
    """
    if not 0 <= c <= n:
        raise ValueError(f"correct samples c={c} must lie in [0, n={n}]")
    if k < 1 or k > n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n, but the problem has n={n} samples; use k <= {n} or more samples")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass(frozen=True, slots=True)
class GradedSample:
    """One graded sample of a problem (a line of the graded cache)."""

    problem_id: str
    sample_index: int
    verdict: str
    length: int
    """Response length in ``length_unit`` of the run (tokens from vLLM, else characters)."""
    truncated: bool
    """The generation hit the token limit (vLLM ``finish_reason == "length"``): overlong."""

    @property
    def correct(self) -> bool:
        return self.verdict == "accepted"


@dataclass(slots=True)
class ProblemResult:
    """All samples of one problem with its metadata (``extra_info`` of the parquet row)."""

    problem_id: str
    difficulty: str
    platform: str
    contest_date: str
    samples: list[GradedSample] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def correct(self) -> int:
        return sum(sample.correct for sample in self.samples)

    @property
    def contest_month(self) -> str:
        """``YYYY-MM`` of the contest date (``unknown`` when there is none)."""
        return self.contest_date[:7] if len(self.contest_date) >= 7 else "unknown"

    def pass_at(self, k: int) -> float:
        return pass_at_k(self.n, self.correct, k)


def mean_pass_at_k(problems: Sequence[ProblemResult], k: int) -> float:
    """Benchmark pass@k: mean of the problems' unbiased pass@k (raises when a problem has fewer than k samples)."""
    return sum(problem.pass_at(k) for problem in problems) / len(problems)


def pass_at_ks(problems: Sequence[ProblemResult], ks: Iterable[int]) -> dict[str, float]:
    """``{"1": pass@1, "8": pass@8, ...}`` over ``problems``."""
    return {str(k): mean_pass_at_k(problems, k) for k in ks}


def default_ks(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n itself (the pass@k curve's points)."""
    ks = [1]
    while ks[-1] * 2 <= n:
        ks.append(ks[-1] * 2)
    if ks[-1] != n:
        ks.append(n)
    return ks


DIFFICULTY_ORDER = ("easy", "medium", "hard")


def group_order(name: str) -> tuple[int, str]:
    """Difficulties easy, medium, hard first, then any other name alphabetically (platforms, months)."""
    return (DIFFICULTY_ORDER.index(name), "") if name in DIFFICULTY_ORDER else (len(DIFFICULTY_ORDER), name)


def breakdown(
    problems: Sequence[ProblemResult], key: Callable[[ProblemResult], str], ks: Sequence[int]
) -> dict[str, dict[str, Any]]:
    """Per group (difficulty, platform, month): problem count, samples, and pass@k for each k."""
    groups: dict[str, list[ProblemResult]] = defaultdict(list)
    for problem in problems:
        groups[key(problem)].append(problem)
    return {
        name: {"problems": len(members), "samples": sum(p.n for p in members), "pass_at_k": pass_at_ks(members, ks)}
        for name, members in sorted(groups.items(), key=lambda item: group_order(item[0]))
    }


def verdict_counts(problems: Sequence[ProblemResult]) -> dict[str, int]:
    """Samples per verdict, most frequent first."""
    counts = Counter(sample.verdict for problem in problems for sample in problem.samples)
    return dict(counts.most_common())


def overlong_ratio(problems: Sequence[ProblemResult]) -> float:
    """Fraction of samples truncated at the token limit."""
    samples = [sample for problem in problems for sample in problem.samples]
    return sum(sample.truncated for sample in samples) / len(samples) if samples else 0.0


def length_stats(problems: Sequence[ProblemResult]) -> dict[str, float | int | None]:
    """Count and mean length of correct and incorrect samples (NousCoder figure 5's length bias)."""
    stats: dict[str, float | int | None] = {}
    for name, wanted in (("correct", True), ("incorrect", False)):
        lengths = [s.length for p in problems for s in p.samples if s.correct is wanted]
        stats[f"{name}_count"] = len(lengths)
        stats[f"{name}_mean"] = sum(lengths) / len(lengths) if lengths else None
    return stats


def bootstrap_mean_ci(
    values: Sequence[float], resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (Efron & Tibshirani 1993, ch. 13), problems
    resampled with replacement ``resamples`` times from a seeded generator."""
    array = np.asarray(values, dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, len(array), size=(resamples, len(array)))
    means = array[draws].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def summarize(problems: Sequence[ProblemResult], ks: Sequence[int]) -> dict[str, Any]:
    """The ``results.json`` metrics: overall, by difficulty, platform and contest month."""
    return {
        "problems": len(problems),
        "samples": sum(problem.n for problem in problems),
        "samples_per_problem": {"min": min(p.n for p in problems), "max": max(p.n for p in problems)},
        "pass_at_k": pass_at_ks(problems, ks),
        "pass_at_1_ci95": bootstrap_mean_ci([problem.pass_at(1) for problem in problems]),
        "overlong_ratio": overlong_ratio(problems),
        "verdicts": verdict_counts(problems),
        "length": length_stats(problems),
        "by_difficulty": breakdown(problems, lambda problem: problem.difficulty, ks),
        "by_platform": breakdown(problems, lambda problem: problem.platform, ks),
        "by_contest_month": breakdown(problems, lambda problem: problem.contest_month, ks),
    }
