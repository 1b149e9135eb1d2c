"""Grade the reference solutions the sources ship against the converted ground truth: the end-to-end check of
conversion + grader on real rows (DeepCoder cleaned its data this way offline).

    python -m data_prep.verify_solutions --local-dir ~/hf --out verify.jsonl           # local sandbox pool
    RAY_ADDRESS=... python -m data_prep.verify_solutions --local-dir ~/hf --out v.jsonl   # the Ray grading pool
    python -m data_prep.build_deepcoder_mix --local-dir ~/hf --verified verify.jsonl     # drop what fails

Rows are read exactly as ``build_deepcoder_mix`` reads them (same flags: ``--from``, ``--local-dir``,
``--train-sources``, ``--revision``, ...). Gold solutions: TACO ``solutions``, PrimeIntellect
``gold_standard_solution``, DeepCoder ``solutions`` (LiveCodeBench ships none; the bundled sample its
``reference.py``). Each is graded like a model response (a program outside a python fence is fenced first) by the
``reward_fns`` grader: the local fork-server pool (``reward_fns.sandbox.GraderPool``), or, when a Ray cluster is
there (``--grader ray`` / ``RAY_ADDRESS`` set), the Ray grading pool (``reward_fns.ray_pool``). A problem passes
when one of its first ``--max-solutions`` gold solutions is accepted; solutions are tried one round at a time, so a
problem whose first solution passes costs one grading.

When a call-based problem's gold solutions all get ``wrong_answer``, they are graded once more against the other
output-wrapping convention (every expected value wrapped in a one-element list, or one-element lists unwrapped):
``other_wrapping_passes`` says whether the conversion, not the data, was at fault (``reward_fns/layouts.py``).

Output: one JSON line per problem (``problem_id``, ``source_name``, ``ground_truth_sha256``, ``gold_solutions``,
``graded``, ``accepted`` (true / false / null: nothing to grade), ``verdict``, ``verdicts``, ``detail``,
``other_wrapping_passes``) and ``<out>.summary.json`` (counts per source and outcome, throughput).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from data_prep.build import check_local_copies, resolve_mode, source_problems
from data_prep.build_deepcoder_mix import add_source_arguments, source_settings
from data_prep.build_settings import BuildConfig, BuildStats
from data_prep.ground_truth import as_malformed, long_integers
from data_prep.loading import SourceUnavailable, sample_problems
from data_prep.problem import Problem
from data_prep.sources import lcb_release_files
from reward_fns.cli import DefaultsHelpFormatter, add_grader_arguments, grader_overrides
from reward_fns.extract import extract_code
from reward_fns.score import grader_config
from reward_fns.types import GraderConfig, GradeResult, Verdict
from reward_fns.types import Problem as GradedProblem

DEFAULT_MAX_SOLUTIONS = 3


@dataclasses.dataclass
class Verification:
    """What grading a problem's gold solutions found."""

    problem: Problem
    graded_problem: GradedProblem | None
    verdicts: list[str] = dataclasses.field(default_factory=list)
    detail: str = ""
    accepted: bool | None = None
    reason: str = ""
    """Why nothing was graded: ``no_gold``, ``not_python``, ``bad_ground_truth``."""
    other_wrapping_passes: bool | None = None

    def job(self, number: int) -> tuple[str, GradedProblem, str]:
        """Gold solution ``number`` as a grading job: (response, parsed problem, ground-truth JSON)."""
        return as_response(self.problem.solutions[number]), self.graded_problem, self.problem.ground_truth_json()

    def add(self, result: GradeResult) -> None:
        self.verdicts.append(str(result.verdict))
        self.accepted = result.verdict is Verdict.ACCEPTED
        if not self.accepted and not self.detail:
            self.detail = result.detail

    def record(self) -> dict[str, Any]:
        verdict = self.reason or ("accepted" if self.accepted else self.verdicts[0] if self.verdicts else "")
        return {
            "problem_id": self.problem.problem_id,
            "source_name": self.problem.source_name,
            "source": self.problem.source,
            "ground_truth_sha256": self.problem.ground_truth_sha256(),
            "functional": bool(self.problem.fn_name),
            "gold_solutions": len(self.problem.solutions),
            "graded": len(self.verdicts),
            "accepted": self.accepted,
            "verdict": verdict,
            "verdicts": self.verdicts,
            "detail": self.detail[:300],
            "other_wrapping_passes": self.other_wrapping_passes,
        }

    @property
    def outcome(self) -> str:
        if self.accepted is None:
            return self.reason
        return "accepted" if self.accepted else f"failed_{self.verdicts[0]}"


def as_response(solution: str) -> str:
    """A gold solution as a model response: raw programs are put in a python fence, fenced ones kept."""
    return solution if "```" in solution else f"```python\n{solution}\n```"


class LocalGrader:
    """The sandbox fork-server pool of this machine (``reward_fns.sandbox.GraderPool``)."""

    def __init__(self, workers: int | None, config: GraderConfig) -> None:
        from reward_fns.sandbox import GraderPool

        self.pool = GraderPool(workers, config)
        self.description = f"local sandbox pool, {self.pool.workers} workers"

    def grade_many(self, jobs: Iterable[tuple[str, GradedProblem, str]]) -> Iterator[GradeResult]:
        """(response, parsed problem, ground-truth JSON) -> results in input order."""
        decided: dict[int, GradeResult] = {}

        def runnable() -> Iterator[tuple[str, GradedProblem]]:
            for position, (response, problem, _) in enumerate(jobs):
                code = extract_code(response)
                if code is None:
                    decided[position] = GradeResult(Verdict.NO_CODE, total=len(problem.tests), detail="no python code")
                    continue
                yield code, problem

        results = self.pool.grade_many(runnable())
        position = 0
        for result in results:
            while position in decided:
                yield decided.pop(position)
                position += 1
            yield result
            position += 1
        while position in decided:
            yield decided.pop(position)
            position += 1

    def close(self) -> None:
        self.pool.close()


class RayGrader:
    """The Ray grading pool (``reward_fns.ray_pool``) of the cluster at ``address``: sandbox workers on every node."""

    def __init__(self, address: str, config: GraderConfig, window: int) -> None:
        import ray

        from reward_fns.ray_pool import pool_client, pool_config

        if not ray.is_initialized():
            ray.init(address=address, logging_level="WARNING", log_to_driver=False)
        self.config = config
        self.window = window
        self.client = pool_client(pool_config({"pool_name": "nouscoder_verify_solutions"}), config.isolation)
        ray.get(self.client.dispatcher.ready.remote())
        self.description = f"Ray grading pool at {address} ({int(ray.cluster_resources().get('CPU', 0))} CPUs)"

    def grade_many(self, jobs: Iterable[tuple[str, GradedProblem, str]]) -> Iterator[GradeResult]:
        """Results in input order; ``window`` completions in flight at a time."""
        batch: list[tuple[str, str]] = []
        for response, _, truth in jobs:
            batch.append((response, truth))
            if len(batch) >= self.window:
                yield from asyncio.run(self._grade(batch))
                batch = []
        if batch:
            yield from asyncio.run(self._grade(batch))

    async def _grade(self, batch: list[tuple[str, str]]) -> list[GradeResult]:
        outcomes = await asyncio.gather(*(self.client.grade(response, truth, self.config) for response, truth in batch))
        return [outcome.result for outcome, _ in outcomes]

    def close(self) -> None:
        from reward_fns.ray_pool import shutdown_pools

        shutdown_pools()


def prepare(problem: Problem) -> Verification:
    """A verification for the problem, decided at once when nothing can be graded."""
    if problem.language != "python":
        return Verification(problem, None, reason="not_python")
    if not problem.solutions:
        return Verification(problem, None, reason="no_gold")
    try:
        return Verification(problem, GradedProblem.from_ground_truth(problem.ground_truth_json()))
    except ValueError as exc:
        return Verification(problem, None, reason="bad_ground_truth", detail=str(exc))


def verify(problems: Iterable[Problem], grader: LocalGrader | RayGrader, max_solutions: int) -> Iterator[Verification]:
    """Every problem's verification. Round 0 streams every problem's first gold solution through the grader; round
    r grades solution r of the problems no earlier solution passed. Failures come last, after the wrapping check."""
    in_flight: collections.deque[Verification] = collections.deque()
    decided: list[Verification] = []

    def first_solutions() -> Iterator[tuple[str, GradedProblem, str]]:
        for problem in problems:
            verification = prepare(problem)
            if verification.graded_problem is None:
                decided.append(verification)
                continue
            in_flight.append(verification)
            yield verification.job(0)

    failing: list[Verification] = []
    for result in grader.grade_many(first_solutions()):
        yield from _drain(decided)
        verification = in_flight.popleft()
        verification.add(result)
        if verification.accepted:
            yield verification
        else:
            failing.append(verification)
    yield from _drain(decided)
    for number in range(1, max_solutions):
        retry = [v for v in failing if len(v.problem.solutions) > number]
        failing = [v for v in failing if len(v.problem.solutions) <= number]
        for verification, result in zip(retry, grader.grade_many(v.job(number) for v in retry), strict=True):
            verification.add(result)
            if verification.accepted:
                yield verification
            else:
                failing.append(verification)
    check_other_wrapping(failing, grader)
    yield from failing


def _drain(items: list[Verification]) -> Iterator[Verification]:
    yield from items
    items.clear()


def other_wrapping(problem: GradedProblem) -> list[tuple[GradedProblem, str]]:
    """The problem under the other output-wrapping conventions, each with its ground-truth JSON: every expected value
    wrapped in a one-element list; and, when every expected value is a one-element list, each unwrapped. Expected
    values are read with the build's integer limit (``ground_truth.long_integers``).

    Raises:
        ValueError: an expected value holds an integer longer than ``ground_truth.MAX_INTEGER_DIGITS``.
    """
    with long_integers():
        outputs = [json.loads(test.output) for test in problem.tests]
        variants = [[json.dumps([value]) for value in outputs]]
        if all(isinstance(value, list) and len(value) == 1 for value in outputs):
            variants.append([json.dumps(value[0]) for value in outputs])
    problems = [
        dataclasses.replace(
            problem,
            tests=tuple(
                dataclasses.replace(test, output=output) for test, output in zip(problem.tests, variant, strict=True)
            ),
        )
        for variant in variants
    ]
    return [
        (
            variant,
            json.dumps({"tests": [dataclasses.asdict(test) for test in variant.tests], "fn_name": variant.fn_name}),
        )
        for variant in problems
    ]


def check_other_wrapping(failed: list[Verification], grader: LocalGrader | RayGrader) -> None:
    """For call-based problems whose gold solutions all got wrong_answer: does the other convention accept one? A
    problem whose variants cannot be made keeps ``other_wrapping_passes`` None and says why in ``detail``."""
    jobs, owners = [], []
    for verification in failed:
        if verification.problem.fn_name and set(verification.verdicts) == {"wrong_answer"}:
            try:
                variants = other_wrapping(verification.graded_problem)
            except ValueError as exc:
                verification.detail = f"other wrapping not checked: {as_malformed(exc).detail}; {verification.detail}"
                continue
            verification.other_wrapping_passes = False
            for variant, truth in variants:
                jobs.append((as_response(verification.problem.solutions[0]), variant, truth))
                owners.append(verification)
    for verification, result in zip(owners, grader.grade_many(jobs), strict=True):
        verification.other_wrapping_passes |= result.verdict is Verdict.ACCEPTED


def problems_to_verify(config: BuildConfig, stats: BuildStats) -> Iterator[Problem]:
    """The train sources' problems as the build reads them (LiveCodeBench ships no solutions: skipped)."""
    mode = resolve_mode(config)
    if mode == "sample":
        yield from sample_problems()
        return
    names = [name for name in config.train_sources if name != "lcb"]
    lcb_files = lcb_release_files(config.lcb_version)
    if mode == "local":
        check_local_copies(names, config, lcb_files)
    for name in names:
        yield from source_problems(name, config, mode, lcb_files, stats)


def summarize(verifications: list[Verification], elapsed_s: float, grader: str, skipped: dict) -> dict[str, Any]:
    by_source: dict[str, Counter] = {}
    for verification in verifications:
        counts = by_source.setdefault(verification.problem.source_name, Counter())
        counts[verification.outcome] += 1
        if verification.other_wrapping_passes:
            counts["other_wrapping_passes"] += 1
    graded = [v for v in verifications if v.verdicts]
    solutions = sum(len(v.verdicts) for v in verifications)
    return {
        "grader": grader,
        "problems": len(verifications),
        "problems_graded": len(graded),
        "solutions_graded": solutions,
        "accepted": sum(1 for v in verifications if v.accepted),
        "failed": sum(1 for v in verifications if v.accepted is False),
        "by_source": {name: dict(sorted(counts.items())) for name, counts in sorted(by_source.items())},
        "malformed_rows": skipped,
        "wall_s": round(elapsed_s, 2),
        "problems_per_s": round(len(graded) / elapsed_s, 3) if elapsed_s else None,
        "solutions_per_s": round(solutions / elapsed_s, 3) if elapsed_s else None,
        "cpus": os.cpu_count(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m data_prep.verify_solutions",
        description="Grade the gold solutions the sources ship against the converted ground truth (reward_fns "
        "sandbox; the Ray grading pool when a cluster is there). Writes one JSON line per problem and a summary; "
        "pass the result to build_deepcoder_mix --verified to drop problems none of whose gold solutions pass.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--out", type=Path, required=True, help="JSONL written here; the summary beside it")
    add_source_arguments(parser)
    parser.add_argument(
        "--max-solutions", type=int, default=DEFAULT_MAX_SOLUTIONS, help="gold solutions tried per problem at most"
    )
    parser.add_argument(
        "--grader",
        choices=("auto", "local", "ray"),
        default="auto",
        help="auto: the Ray grading pool when RAY_ADDRESS (or --ray-address) names a cluster, else the local pool",
    )
    parser.add_argument("--ray-address", default=None, help="Ray cluster address (default: $RAY_ADDRESS)")
    parser.add_argument("--workers", type=int, default=None, help="local pool: sandbox workers (default: all cores)")
    parser.add_argument("--window", type=int, default=256, help="Ray pool: completions in flight at a time")
    add_grader_arguments(parser)
    args = parser.parse_args(argv)
    if args.max_solutions < 1:
        parser.error("--max-solutions must be at least 1")
    return args


def make_grader(args: argparse.Namespace, config: GraderConfig) -> LocalGrader | RayGrader:
    address = args.ray_address or os.environ.get("RAY_ADDRESS")
    if args.grader == "ray" or (args.grader == "auto" and address):
        return RayGrader(address or "auto", config, args.window)
    return LocalGrader(args.workers, config)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = BuildConfig(out_dir=args.out.parent, **source_settings(args))
    grading = grader_config(grader_overrides(args))
    stats = BuildStats()
    grader = make_grader(args, grading)
    print(f"verify_solutions: grading with the {grader.description}", file=sys.stderr)
    started = time.monotonic()
    verifications: list[Verification] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with args.out.open("w", encoding="utf-8") as out:
            for verification in tqdm(
                verify(problems_to_verify(config, stats), grader, args.max_solutions),
                desc="verify",
                unit=" problems",
                file=sys.stderr,
                mininterval=1.0,
            ):
                out.write(json.dumps(verification.record()) + "\n")
                verification.graded_problem = None  # the tests are not needed any more
                verifications.append(verification)
    except SourceUnavailable as exc:
        print(f"verify_solutions: error: {exc}", file=sys.stderr)
        return 2
    finally:
        grader.close()
    summary = summarize(verifications, time.monotonic() - started, grader.description, stats.skips.to_dict())
    summary_path = args.out.with_name(args.out.name + ".summary.json")
    summary_path.write_text(json.dumps(summary, indent=2) + "\n")
    print(
        json.dumps(
            {
                key: summary[key]
                for key in (
                    "problems",
                    "accepted",
                    "failed",
                    "by_source",
                    "wall_s",
                    "problems_per_s",
                    "solutions_per_s",
                )
            },
            indent=1,
        )
    )
    print(f"verify_solutions: wrote {args.out} and {summary_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
