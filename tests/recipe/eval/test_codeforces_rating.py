"""The Codeforces rating by the CodeElo method as rLLM ran it, against a worked example computed by hand.

The method (rllm-org/rllm ``scripts/benchmark/cf_elo_calc.py``, QwenLM/CodeElo ``calc_rating.py``): the model's
rank r among the rated participants; its rating is the largest integer R in [0, max old rating + 100) with
``seed(R) = 1 + sum_i 1 / (1 + 10^((R - old_i) / 400)) >= r``; the overall rating is the mean over contests and the
percentile ``round(100 * #(ratings < R) / #ratings, 1)``.

Worked example (by hand):

- contest 1001, no points: 249 rated participants at 1500 and one at 2500 (max + 100 = 2600 bounds the search), an
  unrated "ghost" on top of the standings (left out: no rating change). Standings after it: 51 rows with 3 solved,
  then rows with 2 solved and penalty 30. The model solves A and C with its first sample: score 2, penalty 0, so
  rank = 51 (the first 2-solved row has a larger penalty). seed(R) = 51 means 249 / (1 + 10^x) = 50 - s2 with
  x = (R - 1500) / 400 and s2 = 1 / (1 + 10^((R - 2500) / 400)) ~ 0.9873 near R = 1744:
  1 + 10^x = 249 / 49.0127 = 5.0803, 10^x = 4.0803, x = 0.61070, R = 1744.28; so R = 1744.
- contest 1002, points: 300 rated participants at 1600. Problem A (500 points) solved by the first sample, B
  (1000) not: score 500. Standings: 100 rows with 1500 points, 51 with 500 (ties rank ahead of the model), then 0:
  rank = 151. seed(1600) = 1 + 300 / 2 = 151 exactly, and seed(1601) < 151: R = 1600.
- contest 1003: 200 rated participants: left out (the method needs more than 200).
- mean rating (1744 + 1600) / 2 = 1672. Human ratings [1000 x3, 1600 x4, 1800 x3]: 7 of 10 are below 1672 (and
  below 1744): percentile 70.0; 3 are below 1600: 30.0.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from recipe.nouscoder.eval import codeforces_contests
from recipe.nouscoder.eval.codeforces import (
    codeforces_rating,
    contest_rating,
    percentile,
    rating_band,
    read_contest_data,
    sorted_ratings,
)
from recipe.nouscoder.eval.metrics import GradedSample, ProblemResult

HUMANS = {"1000": 3, "1600": 4, "1800": 3}  # rLLM's ratings_2024.json layout: rating -> users


def icpc_contest() -> dict:
    handles = [f"h{i}" for i in range(250)]
    changes = [[handle, 1500] for handle in handles[:249]] + [[handles[249], 2500]]
    standings = [["ghost", 3, 0]] + [[h, 3, 100] for h in handles[:51]] + [[h, 2, 30] for h in handles[51:]]
    problems = [{"index": index, "points": None, "rating": 1500} for index in "ABC"]
    return {"name": "icpc", "problems": problems, "standings": standings, "rating_changes": changes}


def points_contest(participants: int = 300) -> dict:
    handles = [f"p{i}" for i in range(participants)]
    points = [1500.0] * 100 + [500.0] * 51 + [0.0] * (participants - 151)
    return {
        "name": "points",
        "problems": [{"index": "A", "points": 500.0, "rating": 800}, {"index": "B", "points": 1000.0, "rating": 1200}],
        "standings": [[h, p, 0] for h, p in zip(handles, points, strict=True)],
        "rating_changes": [[h, 1600] for h in handles],
    }


def brute_force_rating(old: list[float], rank: int) -> int:
    """An independent reference: the largest integer R below max + 100 whose expected rank is at least ``rank``."""
    best = 0
    for candidate in range(int(max(old)) + 100):
        if 1 + sum(1 / (1 + 10 ** ((candidate - rating) / 400)) for rating in old) >= rank:
            best = candidate
    return best


def test_contest_ratings_of_the_worked_example() -> None:
    icpc = contest_rating(1001, icpc_contest(), {"1001A": [True, False], "1001C": [True], "1001B": [False]})
    assert (icpc.rank, icpc.score, icpc.penalty, icpc.participants, icpc.rating) == (51, 2, 0, 250, 1744)
    assert icpc.rating == brute_force_rating([1500] * 249 + [2500], 51)
    points = contest_rating(1002, points_contest(), {"1002A": [True], "1002B": [False, True]}, pass_n=1)
    assert (points.rank, points.score, points.rating) == (151, 500.0, 1600)
    assert "200 rated participants" in contest_rating(1003, points_contest(200), {"1003A": [True]})


def test_later_submissions_cost_points_and_penalty() -> None:
    """Every sample a submission (the default, rLLM's --pass_n 8 on 8 samples): B accepted at the second is worth
    1000 - 50; C at the second adds 10 penalty minutes."""
    points = contest_rating(1002, points_contest(), {"1002A": [True], "1002B": [False, True]})
    assert points.score == 500 + 950
    icpc = contest_rating(1001, icpc_contest(), {"1001A": [True], "1001C": [False, True]})
    assert (icpc.score, icpc.penalty, icpc.rank) == (2, 10, 51)
    assert contest_rating(1001, icpc_contest(), {"1001A": [True], "1001C": [False, True]}, pass_n=1).score == 1


def test_percentile_and_the_two_distribution_layouts() -> None:
    humans = sorted_ratings(HUMANS)
    assert humans == sorted_ratings([1800, 1000, 1600, 1600, 1000, 1800, 1600, 1000, 1800, 1600])  # CodeElo's list
    assert (percentile(1672, humans), percentile(1744, humans), percentile(1600, humans)) == (70.0, 70.0, 30.0)


def results(problem_verdicts: dict[str, list[bool]]) -> list[ProblemResult]:
    problems = []
    for problem_id, verdicts in problem_verdicts.items():
        problem = ProblemResult(f"codeforces/{problem_id}", "1500", "codeforces", "")
        problem.samples.extend(
            GradedSample(problem.problem_id, i, "accepted" if ok else "wrong_answer", 10, False)
            for i, ok in enumerate(verdicts)
        )
        problems.append(problem)
    return problems


def test_overall_rating_is_the_mean_and_its_percentile() -> None:
    data = {
        "source": "test",
        "rating_distribution": {"source": "hand-made", "ratings": HUMANS},
        "contests": {"1001": icpc_contest(), "1002": points_contest(), "1003": points_contest(200)},
    }
    problems = results({"1001A": [True], "1001C": [True], "1002A": [True, False], "1003A": [True], "1004A": [True]})
    rating = codeforces_rating(problems, data)
    assert rating["rating"] == 1672 and rating["percentile"] == 70.0 and rating["contests_rated"] == 2
    assert [(row["contest"], row["rating"], row["percentile"]) for row in rating["contests"]] == [
        (1001, 1744, 70.0),
        (1002, 1600, 30.0),
    ]
    assert rating["skipped_contests"] == {
        "1003": "200 rated participants (the method needs more than 200)",
        "1004": "not in the contest file",
    }
    without = codeforces_rating(problems, None, data_hint="--data cf.parquet")
    assert without["rating"] is None and "codeforces_contests --data cf.parquet" in without["reason"]


def test_rating_bands() -> None:
    assert [rating_band(r) for r in ("800", "1199", "1200", "2399", "2400", "3500", "")] == [
        "800-1199",
        "800-1199",
        "1200-1599",
        "2000-2399",
        "2400+",
        "2400+",
        "unrated",
    ]


def api_standings(contest: int) -> dict:
    """``contest.standings``'s result in the API's own objects (https://codeforces.com/apiHelp/objects: Contest,
    Problem with optional points and rating, RanklistRow with party.members[].handle, points, penalty)."""
    source = icpc_contest()
    return {
        "contest": {"id": contest, "name": "Test Round", "type": "ICPC", "phase": "FINISHED"},
        "problems": [
            {"contestId": contest, "index": p["index"], "name": "x", "type": "PROGRAMMING", "rating": 1500, "tags": []}
            for p in source["problems"]
        ],
        "rows": [
            {
                "party": {"contestId": contest, "members": [{"handle": handle}], "participantType": "CONTESTANT"},
                "rank": position + 1,
                "points": points,
                "penalty": penalty,
                "successfulHackCount": 0,
                "unsuccessfulHackCount": 0,
                "problemResults": [],
            }
            for position, (handle, points, penalty) in enumerate(source["standings"])
        ],
    }


def test_fetch_writes_a_contest_file_the_rating_reads(tmp_path: Path) -> None:
    """The fetch command against a local stand-in of the Codeforces API (the two calls rLLM makes), then the rating."""
    calls = []

    class Api(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urlparse(self.path)
            query = {key: values[0] for key, values in parse_qs(url.query).items()}
            calls.append((url.path, query))
            if url.path == "/ratings.json":
                body = HUMANS
            elif url.path == "/api/contest.standings" and query == {"contestId": "1001", "showUnofficial": "false"}:
                body = {"status": "OK", "result": api_standings(1001)}
            elif url.path == "/api/contest.ratingChanges" and query["contestId"] == "1001":
                changes = icpc_contest()["rating_changes"]
                result = [
                    {"contestId": 1001, "handle": h, "rank": 1, "oldRating": r, "newRating": r} for h, r in changes
                ]
                body = {"status": "OK", "result": result}
            else:
                self.send_response(400)
                self.end_headers()
                self.wfile.write(json.dumps({"status": "FAILED", "comment": "contestId: Contest not found"}).encode())
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        data = codeforces_contests.fetch([1001, 1005], f"{base}/api", f"{base}/ratings.json", 0.0, log=lambda _: None)
    finally:
        server.shutdown()
    assert data["errors"] == {"1005": "RuntimeError: contestId: Contest not found"}
    assert data["contests"]["1001"]["standings"][0] == ["ghost", 3, 0]
    out = tmp_path / "contests.json"
    out.write_text(json.dumps(data))
    rating = codeforces_rating(results({"1001A": [True], "1001C": [True]}), read_contest_data(out))
    assert rating["rating"] == 1744 and rating["skipped_contests"] == {}
    with pytest.raises(ValueError, match="not a contest file"):
        read_contest_data(tmp_path / "missing.json")
