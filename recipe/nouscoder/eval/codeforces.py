"""Codeforces results: pass@k per problem-rating band, and the Codeforces rating and percentile by the CodeElo method.

The rating is computed as rLLM computed DeepCoder's (rllm-org/rllm ``scripts/benchmark/cf_elo_calc.py``, a copy of
QwenLM/CodeElo ``calc_rating.py`` reading the same data from a file), per contest of the evaluated problems:

1. participants: the contest's official standings rows (``contest.standings``, ``showUnofficial=false``) whose
   first member's handle also has a rating change (``contest.ratingChanges``), both lists kept in their order; a
   contest with 200 such participants or fewer is left out.
2. the model's score and penalty: for each problem of the contest in standings order that was evaluated, the first
   ``pass_n`` samples (in sample order) are its submissions, by default all of them (rLLM evaluated DeepCoder on
   Codeforces with 8 samples and ran ``cf_elo_calc.py --pass_n 8``: rllm-org/rllm ``scripts/eval/README.md`` at
   commit 18e446c5; the script's own default is 1); at the first accepted one,
   the i-th (from 0), the problem adds ``max(0, points - 50 i)`` when the problem has points, else 1 to the score
   and ``10 i`` to the penalty. Problems not evaluated (interactive, not in the set) are unsolved.
3. its rank: the index (from 0) of the first standings row with fewer points, or as many points and a larger
   penalty; the number of rows when there is none (rows that tie come before the model).
4. its rating: the expected rank of rating r is ``seed(r) = 1 + sum_i 1 / (1 + 10^((r - old_i) / 400))`` over the
   participants' ratings before the contest (Elo's expected score against each); a binary search over integers,
   ``lo = 0, hi = max(old_i) + 100``, keeps ``hi = mid`` while ``seed(mid) < rank`` and ``lo = mid`` otherwise,
   until ``hi - lo = 1``; the contest rating is ``lo``.
5. the model's rating is the mean of its contest ratings; a rating's percentile is
   ``round(100 * #(human ratings < r) / #(human ratings), 1)`` (``bisect_left``) against a human rating
   distribution (rLLM: ``scripts/benchmark/codeforces/ratings_2024.json``, rating -> number of users; CodeElo:
   ``sorted_ratings.json``, the sorted list; both are read).

The contest data comes from a local file (``recipe.nouscoder.eval.codeforces_contests`` fetches it and documents its
layout); without it, the pass rates per band are still reported and the report says why there is no rating.

Bands: problem ratings (``extra_info.difficulty`` of the Codeforces parquet) grouped 800-1199, 1200-1599, 1600-1999,
2000-2399 and 2400+ (a choice of this project: Codeforces rates problems from 800 in steps of 100).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from data_prep.codeforces_metadata import contest_of
from recipe.nouscoder.eval.metrics import ProblemResult, breakdown

MIN_PARTICIPANTS = 200
"""A contest needs more rated participants than this (rLLM / CodeElo: ``len(rows) > 200``)."""
BAND_EDGES = (1200, 1600, 2000, 2400)


def rating_band(rating: str) -> str:
    """``800-1199`` ... ``2400+`` for a problem rating; ``unrated`` when there is none."""
    if not rating.isdigit():
        return "unrated"
    value = int(rating)
    low = 800
    for edge in BAND_EDGES:
        if value < edge:
            return f"{low}-{edge - 1}"
        low = edge
    return f"{low}+"


def band_breakdown(problems: Sequence[ProblemResult], ks: Sequence[int]) -> dict[str, dict[str, Any]]:
    """pass@k per rating band, bands in rating order."""
    groups = breakdown(problems, lambda problem: rating_band(problem.difficulty), ks)
    return {name: groups[name] for name in sorted(groups, key=_band_start)}


def _band_start(name: str) -> int:
    return int(name.split("-")[0].rstrip("+")) if name[0].isdigit() else 1 << 30


@dataclass(frozen=True)
class ContestRating:
    contest: int
    rating: int
    rank: int
    score: float
    penalty: int
    participants: int


def expected_rank(rating: float, old_ratings: np.ndarray) -> float:
    """``1 + sum_i 1 / (1 + 10^((rating - old_i) / 400))``."""
    return float(1.0 + np.sum(1.0 / (1.0 + np.power(10.0, (rating - old_ratings) / 400.0))))


def contest_rating(
    contest_id: int, contest: dict[str, Any], solved: dict[str, list[bool]], pass_n: int | None = None
) -> ContestRating | str:
    """The model's rating in one contest (steps 1-4 of the module docstring), or the reason there is none.

    ``contest``: the local file's entry (``problems``, ``standings`` as ``[handle, points, penalty]`` rows,
    ``rating_changes`` as ``[handle, old_rating]``); ``solved``: per problem id (``2013C``) the samples' verdicts in
    sample order (True = accepted).
    """
    changes = {str(handle) for handle, _ in contest["rating_changes"]}
    standings = [row for row in contest["standings"] if str(row[0]) in changes]
    rated = {str(row[0]) for row in standings}
    old = np.array([float(old) for handle, old in contest["rating_changes"] if str(handle) in rated])
    if len(standings) != len(old) or len(standings) <= MIN_PARTICIPANTS:
        return f"{len(standings)} rated participants (the method needs more than {MIN_PARTICIPANTS})"
    score, penalty = 0.0, 0
    for problem in contest["problems"]:
        verdicts = solved.get(f"{contest_id}{problem['index']}")
        for attempt, accepted in enumerate((verdicts or [])[:pass_n]):
            if accepted:
                if problem.get("points") is not None:
                    score += max(0.0, float(problem["points"]) - 50 * attempt)
                else:
                    score += 1
                    penalty += 10 * attempt
                break
    rank = next(
        (
            i
            for i, (_, points, row_penalty) in enumerate(standings)
            if points < score or (points == score and row_penalty > penalty)
        ),
        len(standings),
    )
    low, high = 0, int(old.max()) + 100
    while high - low > 1:
        middle = (low + high) // 2
        if expected_rank(middle, old) < rank:
            high = middle
        else:
            low = middle
    return ContestRating(contest_id, low, rank, score, penalty, len(standings))


def percentile(rating: float, sorted_ratings: Sequence[float]) -> float:
    """``round(100 * bisect_left(sorted_ratings, rating) / len(sorted_ratings), 1)``."""
    return round(bisect.bisect_left(sorted_ratings, float(rating)) / len(sorted_ratings) * 100, 1)


def sorted_ratings(distribution: Any) -> list[float]:
    """The human ratings, sorted, from rLLM's ``{rating: count}`` or CodeElo's sorted list."""
    if isinstance(distribution, dict):
        return sorted(float(rating) for rating, count in distribution.items() for _ in range(int(count)))
    if isinstance(distribution, list) and distribution:
        return sorted(float(rating) for rating in distribution)
    raise ValueError("the rating distribution must be {rating: count} (rLLM) or a list of ratings (CodeElo)")


def read_contest_data(path: Path) -> dict[str, Any]:
    """The local contest file (layout: ``recipe.nouscoder.eval.codeforces_contests``).

    Raises:
        ValueError: naming the file, when it is not one.
    """
    try:
        data = json.loads(path.read_text())
        if not isinstance(data["contests"], dict):
            raise TypeError("contests is not an object")
        sorted_ratings(data["rating_distribution"]["ratings"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"--codeforces-contests {path} is not a contest file written by `python -m "
            f"recipe.nouscoder.eval.codeforces_contests` ({exc!r})"
        ) from exc
    return data


def codeforces_rating(
    problems: Sequence[ProblemResult],
    contest_data: dict[str, Any] | None,
    pass_n: int | None = None,
    data_hint: str = "",
) -> dict[str, Any]:
    """The rating and percentile (module docstring), per contest and overall; without contest data, the reason."""
    solved: dict[int, dict[str, list[bool]]] = {}
    for problem in problems:
        contest = contest_of(problem.problem_id)
        if contest is not None:
            in_order = [sample.correct for sample in sorted(problem.samples, key=lambda s: s.sample_index)]
            solved.setdefault(contest, {})[problem.problem_id.rsplit("/", 1)[-1]] = in_order
    method = {
        "pass_n": pass_n or "all samples",
        "method": "CodeElo as rLLM used it (rllm-org/rllm scripts/benchmark/cf_elo_calc.py)",
    }
    if not solved:
        return {"rating": None, "reason": "no evaluated problem has a Codeforces id (contest + index)", **method}
    if contest_data is None:
        return {
            "rating": None,
            "reason": "no contest data: pass --codeforces-contests FILE, fetched with `python -m "
            f"recipe.nouscoder.eval.codeforces_contests {data_hint or '--data CODEFORCES.parquet'} --out FILE` on a "
            "machine that reaches codeforces.com",
            "contests_evaluated": len(solved),
            **method,
        }
    humans = sorted_ratings(contest_data["rating_distribution"]["ratings"])
    rows, skipped = [], {}
    for contest_id, verdicts in sorted(solved.items()):
        contest = contest_data["contests"].get(str(contest_id))
        result = "not in the contest file" if contest is None else contest_rating(contest_id, contest, verdicts, pass_n)
        if isinstance(result, str):
            skipped[str(contest_id)] = result
            continue
        rows.append(result.__dict__ | {"percentile": percentile(result.rating, humans)})
    if not rows:
        return {"rating": None, "reason": "no contest could be rated", "skipped_contests": skipped, **method}
    rating = sum(row["rating"] for row in rows) / len(rows)
    return {
        "rating": rating,
        "percentile": percentile(rating, humans),
        "contests_rated": len(rows),
        "contests": rows,
        "skipped_contests": skipped,
        "rating_distribution": contest_data["rating_distribution"].get("source", ""),
        "contest_data": contest_data.get("source", ""),
        **method,
    }
