"""Fetch the contest data the Codeforces rating needs into one local file (run where codeforces.com is reachable).

    python -m recipe.nouscoder.eval.codeforces_contests --data data/benchmarks/codeforces.parquet \\
        --out data/benchmarks/codeforces_contests.json

For each contest of the parquet's problem ids (``codeforces/<contest><index>``) it calls the Codeforces API
(https://codeforces.com/apiHelp/methods), one call per ``--interval`` seconds (the API allows one every 2 s):
``contest.standings?contestId=C&showUnofficial=false`` and ``contest.ratingChanges?contestId=C``, the two calls of
rLLM's and CodeElo's rating scripts; and it downloads the human rating distribution (``--ratings-url``, default rLLM's
``ratings_2024.json``, the one DeepCoder's percentile used). The file keeps only what the method reads
(https://codeforces.com/apiHelp/objects: ``RanklistRow`` party.members[0].handle, points, penalty; ``RatingChange``
handle, oldRating; ``Problem`` index, points, rating):

    {"source": "...", "fetched": "YYYY-MM-DD",
     "rating_distribution": {"source": URL, "ratings": {"1500": 123, ...} or [ratings]},
     "contests": {"2013": {"name": str, "problems": [{"index": "A", "points": 500.0 | null, "rating": 800 | null}],
                           "standings": [[handle, points, penalty], ...], "rating_changes": [[handle, oldRating], ...]}}}

A contest the API refuses (e.g. not rated) is recorded with its error and left out of the rating.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from data_prep.codeforces_metadata import contest_of
from recipe.nouscoder.eval.data import load_eval_problems
from reward_fns.cli import DefaultsHelpFormatter

API = "https://codeforces.com/api"
RATINGS_URL = "https://raw.githubusercontent.com/rllm-org/rllm/main/scripts/benchmark/codeforces/ratings_2024.json"
USER_AGENT = "nouscoder-verl codeforces_contests"


def trim_contest(standings: dict[str, Any], rating_changes: list[dict[str, Any]]) -> dict[str, Any]:
    """The parts of ``contest.standings``'s and ``contest.ratingChanges``'s ``result`` the rating reads."""
    return {
        "name": standings.get("contest", {}).get("name", ""),
        "problems": [
            {"index": problem["index"], "points": problem.get("points"), "rating": problem.get("rating")}
            for problem in standings["problems"]
        ],
        "standings": [
            [row["party"]["members"][0]["handle"], row["points"], row["penalty"]]
            for row in standings["rows"]
            if row["party"].get("members")
        ],
        "rating_changes": [[change["handle"], change["oldRating"]] for change in rating_changes],
    }


def get_json(url: str, retries: int = 3, pause_s: float = 4.0) -> Any:
    """GET ``url`` as JSON, retried on network errors; a Codeforces ``FAILED`` answer raises RuntimeError at once."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    for attempt in range(retries):
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")
            if exc.code == 400 and "FAILED" in body:
                raise RuntimeError(json.loads(body).get("comment", body)) from exc
            if attempt == retries - 1:
                raise
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError):
            if attempt == retries - 1:
                raise
        else:
            if isinstance(answer, dict) and answer.get("status") == "FAILED":
                raise RuntimeError(answer.get("comment", "FAILED"))
            return answer
        time.sleep(pause_s)
    raise AssertionError("unreachable")


def fetch(
    contests: list[int], api: str, ratings_url: str, interval_s: float, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """The contest file's content for ``contests``."""
    data: dict[str, Any] = {
        "source": f"Codeforces API {api}: contest.standings (showUnofficial=false), contest.ratingChanges",
        "fetched": datetime.date.today().isoformat(),
        "rating_distribution": {"source": ratings_url, "ratings": get_json(ratings_url)},
        "contests": {},
        "errors": {},
    }
    for position, contest in enumerate(contests, start=1):
        try:
            standings = get_json(
                f"{api}/contest.standings?" + urllib.parse.urlencode({"contestId": contest, "showUnofficial": "false"})
            )
            time.sleep(interval_s)
            changes = get_json(f"{api}/contest.ratingChanges?contestId={contest}")
            time.sleep(interval_s)
        except (RuntimeError, urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            data["errors"][str(contest)] = f"{type(exc).__name__}: {exc}"
            log(f"codeforces_contests: contest {contest} ({position}/{len(contests)}): {exc}")
            continue
        data["contests"][str(contest)] = trim_contest(standings["result"], changes["result"])
        log(
            f"codeforces_contests: contest {contest} ({position}/{len(contests)}): "
            f"{len(data['contests'][str(contest)]['standings'])} standings rows"
        )
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recipe.nouscoder.eval.codeforces_contests",
        description="Fetch the Codeforces contest data (standings, rating changes) of the problems of a Codeforces "
        "evaluation parquet and a human rating distribution into one file for `eval_lcb --codeforces-contests`. Needs "
        "codeforces.com and raw.githubusercontent.com.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--data", type=Path, required=True, help="the Codeforces parquet of data_prep.build_benchmarks")
    parser.add_argument("--out", type=Path, required=True, help="the contest file to write (JSON)")
    parser.add_argument("--api", default=API, help="Codeforces API base URL")
    parser.add_argument("--ratings-url", default=RATINGS_URL, help="human rating distribution (JSON)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between API calls (the API's limit)")
    args = parser.parse_args(argv)
    contests = sorted({c for p in load_eval_problems(args.data) if (c := contest_of(p.problem_id)) is not None})
    if not contests:
        print(f"codeforces_contests: error: no problem of {args.data} has a Codeforces id", file=sys.stderr)
        return 2
    print(f"codeforces_contests: {len(contests)} contests, about {2 * len(contests) * args.interval:.0f} s", flush=True)
    try:
        data = fetch(contests, args.api.rstrip("/"), args.ratings_url, args.interval)
    except (RuntimeError, urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
        print(f"codeforces_contests: error: the rating distribution {args.ratings_url}: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_text(json.dumps(data))
    partial.replace(args.out)
    print(f"codeforces_contests: wrote {args.out}: {len(data['contests'])} contests, {len(data['errors'])} errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
