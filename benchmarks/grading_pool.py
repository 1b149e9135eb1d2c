"""Ray grading pool: throughput, overlap with generation, and the three parallel granularities.

On a local Ray cluster (``--cpus``), through ``reward_fns.async_score.compute_score`` exactly as verl calls it:

1. throughput: completions/s with 1 and 2 sandbox workers on the bundled sample (fast verdicts: accepted, wrong
   answer, runtime error, no code, compile error), ratio 2 workers / 1 worker; and the per-test overhead of the
   pool (a trivial program on 200 tests) and per-completion overhead (a 1-test problem), the inputs of the
   paper estimate in ``reward_fns/RAY_POOL.md``;
2. overlap: a generator stand-in emits the sample completions on a timer (in place of vLLM); graded as they
   arrive vs as one batch after the last arrival; time from the last arrival to the last reward for both, and
   their ratio (target: overlapped within one completion's grading time);
3. granularity: ``--group`` rollouts of a problem with 200 tests, each costing ``--test-work-s`` of CPU, where
   the 150th test fails: latency of a lone rollout (per problem waits ``pool_group_window_s`` for the rest of its
   group), then wall time and tests executed for the group, as ratios against per rollout.

Pools are warmed (``ready``) before each timing. Figures are noisy on a shared machine.
Run from the repository root: ``python benchmarks/grading_pool.py`` or ``python -m benchmarks.grading_pool``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import ray
from tqdm import tqdm

from data_prep.sample import load_problems, load_solutions
from reward_fns.async_score import compute_score
from reward_fns.ray_pool import pool_client, pool_config, shutdown_pools

FAST_VERDICTS = ("accepted", "wrong_answer", "runtime_error", "no_code", "compile_error")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster (default 2)")
    parser.add_argument("--time-limit-s", type=float, default=4.0, help="per-test wall limit in seconds (default 4)")
    parser.add_argument(
        "--rounds", type=int, default=2, help="times the sample is graded in the throughput part (default 2)"
    )
    parser.add_argument("--arrivals", type=int, default=30, help="completions the generator emits (default 30)")
    parser.add_argument(
        "--arrival-interval",
        type=float,
        default=0.0,
        help="seconds between arrivals; 0 = 1.25 x the 2-worker time per completion (default 0)",
    )
    parser.add_argument("--group", type=int, default=4, help="rollouts of the 200-test problem (default 4)")
    parser.add_argument(
        "--test-work-s",
        type=float,
        default=0.01,
        help="CPU seconds each of the 200 tests costs the program (default 0.01)",
    )
    parser.add_argument("--chunk", type=int, default=10, help="tests per chunk in per_test mode (default 10)")
    parser.add_argument(
        "--parts",
        default="1,2,3",
        help="comma-separated parts to run: 1 throughput, 2 overlap, 3 granularity (default 1,2,3); "
        "part 2 without part 1 needs --arrival-interval",
    )
    return parser.parse_args(argv)


def settings(name: str, time_limit: float, **pool: Any) -> dict[str, Any]:
    """compute_score kwargs for a pool named ``name``; the pool is started and warmed here."""
    kwargs = {"time_limit_s": time_limit, "pool_name": name} | {f"pool_{key}": value for key, value in pool.items()}
    ray.get(pool_client(pool_config(kwargs), "auto").dispatcher.ready.remote())
    return kwargs


async def grade_concurrently(jobs: list[tuple[str, str]], kwargs: dict[str, Any], label: str) -> list[dict]:
    with tqdm(total=len(jobs), desc=label, leave=False) as bar:

        async def one(completion: str, truth: str) -> dict:
            result = await compute_score("bench", completion, truth, {}, **kwargs)
            bar.update()
            return result

        return await asyncio.gather(*(one(completion, truth) for completion, truth in jobs))


def sample_jobs() -> list[tuple[str, str, str]]:
    problems = {problem.problem_id: json.dumps(problem.ground_truth) for problem in load_problems(include_large=True)}
    return [
        (solution.completion, problems[solution.problem_id], solution.expected_verdict)
        for solution in load_solutions()
        if solution.expected_verdict in FAST_VERDICTS
    ]


def throughput(args: argparse.Namespace, jobs: list[tuple[str, str, str]]) -> float:
    """Part 1; returns the 2-worker seconds per completion."""
    print("== 1. throughput on the bundled sample")
    batch = [(completion, truth) for completion, truth, _ in jobs] * args.rounds
    seconds = {}
    for workers in (1, 2):
        kwargs = settings(f"bench_w{workers}", args.time_limit_s, workers=workers)
        started = time.perf_counter()
        results = asyncio.run(grade_concurrently(batch, kwargs, f"{workers} worker(s)"))
        seconds[workers] = time.perf_counter() - started
        wrong = sum(
            result["verdict"] != expected for result, (_, _, expected) in zip(results, jobs * args.rounds, strict=True)
        )
        print(
            f"{workers} worker(s): {len(batch)} completions in {seconds[workers]:.2f} s = "
            f"{len(batch) / seconds[workers]:.1f} completions/s ({wrong} unexpected verdicts)"
        )
        if workers == 1:
            overheads(kwargs)
        shutdown_pools()
    print(f"speed-up 2 workers / 1 worker: {seconds[1] / seconds[2]:.2f}x")
    return seconds[2] / len(batch)


def overheads(kwargs: dict[str, Any]) -> None:
    """Per-test and per-completion cost of the pool on one warm worker (sequential calls)."""
    echo = "```python\nprint(input())\n```"
    many = json.dumps({"tests": [{"input": f"{index}\n", "output": f"{index}\n"} for index in range(200)]})
    one = json.dumps({"tests": [{"input": "7\n", "output": "7\n"}]})

    async def sequential(truth: str, calls: int) -> float:
        started = time.perf_counter()
        for _ in range(calls):
            await compute_score("bench", echo, truth, {}, **kwargs)
        return (time.perf_counter() - started) / calls

    per_many = asyncio.run(sequential(many, 5))
    per_one = asyncio.run(sequential(one, 30))
    per_test = (per_many - per_one) / 199
    print(
        f"per-completion overhead (1 trivial test, call to reward): {per_one * 1e3:.1f} ms; "
        f"per-test overhead (trivial program, 200 tests): {per_test * 1e3:.2f} ms"
    )


def overlap(args: argparse.Namespace, jobs: list[tuple[str, str, str]], seconds_per_completion: float) -> None:
    print("== 2. overlap with generation")
    interval = args.arrival_interval or 1.25 * seconds_per_completion
    arrivals = [(completion, truth) for completion, truth, _ in (jobs * 4)[: args.arrivals]]
    kwargs = settings("bench_overlap", args.time_limit_s, workers=2)

    async def generate(on_arrival) -> float:
        tasks = []
        for completion, truth in arrivals:
            await asyncio.sleep(interval)
            tasks.append(on_arrival(completion, truth))
        last_arrival = time.perf_counter()
        return last_arrival, await asyncio.gather(*tasks)

    async def overlapped() -> tuple[float, list[dict]]:
        def submit(completion, truth):
            return asyncio.ensure_future(compute_score("bench", completion, truth, {}, **kwargs))

        last_arrival, results = await generate(submit)
        return time.perf_counter() - last_arrival, results

    async def after_last() -> tuple[float, list[dict]]:
        async def hold(completion, truth):
            return completion, truth

        last_arrival, held = await generate(hold)
        results = await asyncio.gather(*(compute_score("bench", c, t, {}, **kwargs) for c, t in held))
        return time.perf_counter() - last_arrival, results

    tail_overlapped, results = asyncio.run(overlapped())
    tail_batch, _ = asyncio.run(after_last())
    unqueued = [result["latency_s"] for result in results if result["queue_depth"] == 0] or [
        result["latency_s"] for result in results
    ]
    one_completion = statistics.median(unqueued)
    print(
        f"{len(arrivals)} completions, one every {interval:.2f} s; grading time of one completion (median call "
        f"latency without queueing) {one_completion:.3f} s, of which in the sandbox "
        f"{statistics.median(result['time_s'] for result in results):.3f} s"
    )
    own = results[-1]["latency_s"]
    print(
        f"last arrival -> last reward: overlapped {tail_overlapped:.3f} s, one batch after the last arrival "
        f"{tail_batch:.3f} s; batch / overlapped = {tail_batch / tail_overlapped:.1f}x; overlapped tail = "
        f"{tail_overlapped / one_completion:.2f} x the median completion's grading time, "
        f"{tail_overlapped / own:.2f} x the last completion's own call latency ({own:.3f} s)"
    )
    shutdown_pools()


def granularity(args: argparse.Namespace) -> None:
    print(
        f"== 3. granularity: {args.group} rollouts, 200 tests of {args.test_work_s * 1e3:.0f} ms CPU each, "
        f"test 150 fails"
    )
    outputs = [f"{index}\n" for index in range(200)]
    outputs[149] = "wrong\n"
    truth = json.dumps(
        {
            "tests": [
                {"input": f"{index:05d}\n", "output": output}  # equal lengths keep the order
                for index, output in enumerate(outputs)
            ]
        }
    )
    program = (
        f"import time\nstart = time.process_time()\nwhile time.process_time() - start < {args.test_work_s}:\n"
        f"    pass\nprint(int(input()))"
    )
    completion = f"```python\n{program}\n```"
    figures, lone = {}, {}
    for mode in ("per_rollout", "per_problem", "per_test"):
        kwargs = settings(
            f"bench_{mode}",
            args.time_limit_s,
            workers=2,
            granularity=mode,
            group_size=args.group,
            tests_per_chunk=args.chunk,
        )
        (alone,) = asyncio.run(grade_concurrently([(completion, truth)], kwargs, mode))
        lone[mode] = alone["latency_s"]
        started = time.perf_counter()
        results = asyncio.run(grade_concurrently([(completion, truth)] * args.group, kwargs, mode))
        wall = time.perf_counter() - started
        executed = sum(result["tests_executed"] for result in results)
        first = min(result["latency_s"] for result in results)
        figures[mode] = wall
        verdicts = sorted({result["verdict"] for result in results})
        print(
            f"{mode:12s} lone rollout {lone[mode]:6.2f} s | group: wall {wall:6.2f} s, first reward after "
            f"{first:6.2f} s, tests executed {executed} ({executed / args.group:.0f} per rollout), verdicts {verdicts}"
        )
        shutdown_pools()
    for mode in ("per_problem", "per_test"):
        print(
            f"{mode} / per_rollout: lone rollout {lone[mode] / lone['per_rollout']:.2f}, "
            f"group wall time {figures[mode] / figures['per_rollout']:.2f}"
        )


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    parts = {int(part) for part in args.parts.split(",")}
    if 2 in parts and 1 not in parts and not args.arrival_interval:
        raise SystemExit("--parts without 1 needs --arrival-interval (part 1 measures the default interval)")
    jobs = sample_jobs()
    seconds_per_completion = throughput(args, jobs) if 1 in parts else 0.0
    if 2 in parts:
        overlap(args, jobs, seconds_per_completion)
    if 3 in parts:
        granularity(args)
    ray.shutdown()


if __name__ == "__main__":
    main()
