"""Throughput of ``python -m data_prep.verify_solutions`` against the bare grader, and the estimate for the mix.

Workload: the bundled sample's 44 problems with their reference solutions (343 committed tests plus the generated
large ones), written as raw DeepCoder-Preview ``taco`` rows and read back the way the build reads them. Both runs in
this invocation, same workers:

* verify: ``data_prep.verify_solutions.verify`` (read parquet rows, convert, parse, grade, record);
* baseline: the same (program, parsed problem) jobs straight into ``reward_fns.sandbox.GraderPool``.

Prints problems/s and tests/s of each, their ratio (the tool's overhead over the grader), and the time the 24k-problem
mix would take on one node for several mean test counts, from the measured per-worker test rate (it scales with
workers as long as each worker has a core; real gold solutions run longer on real large tests than the sample's).

    python benchmarks/verify_solutions.py --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "data_prep"))

from data_prep_raw_sources import DEEPCODER, deepcoder_row, write_deepcoder  # noqa: E402

from data_prep.build import source_problems  # noqa: E402
from data_prep.build_settings import BuildConfig, BuildStats  # noqa: E402
from data_prep.sample import load_problems  # noqa: E402
from data_prep.verify_solutions import LocalGrader, as_response, verify  # noqa: E402
from reward_fns.extract import extract_code  # noqa: E402
from reward_fns.types import GraderConfig  # noqa: E402
from reward_fns.types import Problem as GradedProblem  # noqa: E402


def write_rows(root: Path) -> None:
    problems = load_problems(include_large=True)
    write_deepcoder(root / DEEPCODER, {"taco": [deepcoder_row(problem, "taco") for problem in problems]})


def run_verify(root: Path, workers: int) -> tuple[float, int, int]:
    config = BuildConfig(out_dir=root, mode="local", local_dir=root, train_sources=("deepcoder_taco",))
    grader = LocalGrader(workers, GraderConfig())
    started = time.monotonic()
    results = list(verify(source_problems("deepcoder_taco", config, "local", (), BuildStats()), grader, 3))
    elapsed = time.monotonic() - started
    grader.close()
    assert all(result.accepted for result in results), [r.record() for r in results if not r.accepted]
    return elapsed, len(results), sum(len(result.graded_problem.tests) for result in results)


def run_baseline(root: Path, workers: int) -> float:
    config = BuildConfig(out_dir=root, mode="local", local_dir=root, train_sources=("deepcoder_taco",))
    jobs = [
        (extract_code(as_response(problem.solutions[0])), GradedProblem.from_ground_truth(problem.ground_truth_json()))
        for problem in source_problems("deepcoder_taco", config, "local", (), BuildStats())
    ]
    grader = LocalGrader(workers, GraderConfig())
    started = time.monotonic()
    verdicts = [str(result.verdict) for result in grader.pool.grade_many(jobs)]
    elapsed = time.monotonic() - started
    grader.close()
    assert set(verdicts) == {"accepted"}, verdicts
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--node-cpus", type=int, default=8, help="CPUs of the node in the 24k estimate")
    parser.add_argument("--problems", type=int, default=24_000, help="problems in the estimate")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_rows(root)
        baseline_s = run_baseline(root, args.workers)
        verify_s, problems, tests = run_verify(root, args.workers)
    load = [round(value, 2) for value in os.getloadavg()]
    per_worker_tests_s = tests / verify_s / args.workers
    figures = {
        "workers": args.workers,
        "load_average_after": load,
        "problems": problems,
        "tests": tests,
        "verify_s": round(verify_s, 2),
        "baseline_s": round(baseline_s, 2),
        "verify_problems_per_s": round(problems / verify_s, 2),
        "baseline_problems_per_s": round(problems / baseline_s, 2),
        "verify_tests_per_s": round(tests / verify_s, 1),
        "ratio_verify_over_baseline_throughput": round(baseline_s / verify_s, 3),
        "estimate_minutes_for_mix": {
            f"{mean_tests} tests/problem": round(
                args.problems * mean_tests / (per_worker_tests_s * args.node_cpus) / 60, 1
            )
            for mean_tests in (10, 30, 100)
        },
        "estimate_node_cpus": args.node_cpus,
    }
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
