"""Grader throughput: the sandboxed fork-server pool against one fresh ``python3`` process per test.

Workloads (both graders in the same run, same stop-at-first-failure rule, same output comparison):

* synthetic: many problems with ~7 quick stdin tests each, half of the completions wrong (wrong answer on a
  random test, or a crash);
* per-test overhead: one trivial program graded repeatedly on one warm server, sequentially, with full isolation,
  without the seccomp filter and without namespaces (``NOUSCODER_SANDBOX_DISABLE``), against a fresh ``python3``;
* what the per-test mechanisms of the sandbox cost, each timed on its own code path: the nameless test files,
  the program's source file, a new scratch tmpfs (and the directory reset used without one), the program's
  globals with LiveCodeBench's names, one memory count of a multi-process run (its cheap bound and its exact count),
  the streamed comparison; the per-test overhead also with the memory counted where a memory cgroup is in force;
* the bundled sample (``data_prep.sample``), when present: the pool grades every solution (verdicts checked
  against the expected ones); then both graders grade the stdin solutions whose verdict is accepted, wrong
  answer or runtime error (hostile, memory- or output-hungry programs have no business running without a
  sandbox, and a time-limit program costs the full limit in any grader, which says nothing about the grader).

Prints tests/second for each grader, their ratio (target: 15x with full isolation; never below the 9-11x of the
first sandbox on a 2-core machine), whether the verdicts are identical, and the per-test overhead in ms.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable

import psutil
from tqdm import tqdm

from data_prep.sample import load_problems, load_solutions
from reward_fns.compare import stdout_matches
from reward_fns.sandbox import GraderPool, harness, isolation, probe_isolation
from reward_fns.sandbox.forkserver import ForkServer, RunFiles
from reward_fns.sandbox.grading import compile_program, run_limits
from reward_fns.sandbox.harness import write_source
from reward_fns.sandbox.isolation import DISABLE_ENV
from reward_fns.sandbox.memory import kernel_buffers, run_memory
from reward_fns.sandbox.scratch import reset_directory
from reward_fns.types import GraderConfig, GradeResult, Problem, TestCase, Verdict


def synthetic_workload(problems: int, tests_per_problem: int, seed: int) -> list[tuple[str, Problem]]:
    """Problem k: print a + b + k for each test line; half the completions are wrong (WA or crash)."""
    rng = random.Random(seed)
    jobs = []
    for index in range(problems):
        tests = []
        for _ in range(tests_per_problem):
            a, b = rng.randint(-(10**6), 10**6), rng.randint(-(10**6), 10**6)
            tests.append(TestCase(f"{a} {b}\n", f"{a + b + index}\n"))
        tests.sort(key=lambda test: len(test.input), reverse=True)
        code = f"a, b = map(int, input().split())\nprint(a + b + {index})\n"
        if index % 2 == 1:
            bad_test = rng.randrange(tests_per_problem)
            bad_input = tests[bad_test].input.strip()
            failure = (
                "raise ValueError('bug')" if rng.random() < 0.2 else f"print(a + b + {index} + 1)\nraise SystemExit"
            )
            code = (
                f"import sys\nline = sys.stdin.readline()\na, b = map(int, line.split())\n"
                f"if line.strip() == {bad_input!r}:\n    {failure.replace(chr(10), chr(10) + '    ')}\n"
                f"print(a + b + {index})\n"
            )
        jobs.append((code, Problem(tests=tuple(tests))))
    return jobs


def tests_run(result: GradeResult) -> int:
    """Tests executed before stopping (the failing one included)."""
    if result.verdict in (Verdict.COMPILE_ERROR, Verdict.NO_CODE):
        return 0
    return result.passed + (0 if result.verdict is Verdict.ACCEPTED else 1)


def grade_with_pool(
    jobs: list[tuple[str, Problem]], workers: int, config: GraderConfig, label: str
) -> tuple[list[GradeResult], float]:
    started = time.perf_counter()
    with GraderPool(workers=workers, config=config) as pool:
        results = list(tqdm(pool.grade_many(jobs), total=len(jobs), desc=f"{label}: sandbox pool", leave=False))
    return results, time.perf_counter() - started


LCB_PRELUDE_LINES = (
    "".join(f"from {name} import *\n" for name in harness.LCB_PRELUDE_MODULES)
    + "".join(f"import {name}\n" for name in harness.LCB_PRELUDE_MODULES if name not in ("builtins", "typing"))
    + f"sys.setrecursionlimit({harness.LCB_RECURSION_LIMIT})\n"
)
"""LiveCodeBench's prelude as the lines its judge prepends: the baseline gives programs the sandbox's environment."""


def baseline_grade(code: str, problem: Problem, config: GraderConfig) -> GradeResult:
    """One fresh interpreter per test (what most public graders do), stop at the first failure, no isolation; the
    program after LiveCodeBench's prelude, as in the sandbox."""
    started = time.perf_counter()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(LCB_PRELUDE_LINES + code)
    try:
        for index, test in enumerate(problem.tests):
            try:
                completed = subprocess.run(
                    [sys.executable, handle.name],
                    input=test.input.encode(),
                    capture_output=True,
                    timeout=config.time_limit_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return GradeResult(Verdict.TIME_LIMIT, index, len(problem.tests), time.perf_counter() - started)
            if completed.returncode != 0:
                return GradeResult(Verdict.RUNTIME_ERROR, index, len(problem.tests), time.perf_counter() - started)
            if not stdout_matches(completed.stdout.decode(errors="replace"), test.output, config):
                return GradeResult(Verdict.WRONG_ANSWER, index, len(problem.tests), time.perf_counter() - started)
        return GradeResult(Verdict.ACCEPTED, len(problem.tests), len(problem.tests), time.perf_counter() - started)
    finally:
        os.unlink(handle.name)


def grade_with_baseline(
    jobs: list[tuple[str, Problem]], threads: int, config: GraderConfig, label: str
) -> tuple[list[GradeResult], float]:
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as executor:
        results = list(
            tqdm(
                executor.map(lambda job: baseline_grade(*job, config), jobs),
                total=len(jobs),
                desc=f"{label}: python3 per test",
                leave=False,
            )
        )
    return results, time.perf_counter() - started


def compare_interleaved(
    jobs: list[tuple[str, Problem]], workers: int, threads: int, config: GraderConfig, label: str, chunks: int
) -> None:
    """Grade ``jobs`` chunk by chunk, pool then baseline, so both see the same load on a shared machine.

    The pool's servers are started (and timed) before the measured chunks.
    """
    pool_results: list[GradeResult] = []
    base_results: list[GradeResult] = []
    pool_s = base_s = 0.0
    started = time.perf_counter()
    with GraderPool(workers=workers, config=config) as pool:
        list(pool.grade_many([("print(1)", Problem(tests=(TestCase("", "1"),)))] * workers))
        startup_s = time.perf_counter() - started
        size = -(-len(jobs) // chunks)
        for first in tqdm(range(0, len(jobs), size), desc=label, leave=False):
            chunk = jobs[first : first + size]
            clock = time.perf_counter()
            pool_results += pool.grade_many(chunk)
            pool_s += time.perf_counter() - clock
            chunk_results, chunk_s = grade_with_baseline(chunk, threads, config, label)
            base_results += chunk_results
            base_s += chunk_s
    report_pair(label, (pool_results, pool_s), (base_results, base_s))
    print(f"  ({workers} fork servers started in {startup_s:.2f} s before the measurement)")


def report_pair(label: str, pool: tuple[list[GradeResult], float], baseline: tuple[list[GradeResult], float]) -> None:
    (pool_results, pool_s), (base_results, base_s) = pool, baseline
    pool_rate = sum(map(tests_run, pool_results)) / pool_s
    base_rate = sum(map(tests_run, base_results)) / base_s
    same = [p.verdict for p in pool_results] == [b.verdict for b in base_results]
    print(f"{label}: {len(pool_results)} completions, {sum(map(tests_run, pool_results))} tests run")
    print(f"  sandbox pool      {pool_rate:9.1f} tests/s  ({pool_s:.1f} s)")
    print(f"  python3 per test  {base_rate:9.1f} tests/s  ({base_s:.1f} s)")
    print(f"  ratio             {pool_rate / base_rate:9.1f}x   (target 15x)   identical verdicts: {same}")


def _server_cpu_s(server: ForkServer) -> float:
    """CPU seconds of a fork server's processes and of the test children they reaped."""
    launcher = psutil.Process(server.process.pid)
    total = 0.0
    for process in (launcher, *launcher.children(recursive=True)):
        times = process.cpu_times()
        total += times.user + times.system + times.children_user + times.children_system
    return total


def server_overhead_ms(repeats: int, disable: str = "", new_completions: bool = False) -> tuple[float, float]:
    """(wall, CPU) ms per test of a trivial program on one warm server, ``disable``: mechanisms switched off;
    the tests of one completion, or (``new_completions``) each a completion of its own (the server renews its
    scratch tmpfs, pid counter and, if sockets are left, network namespace before each).

    CPU is summed over every process involved (grader, server, child), which a loaded machine distorts much less
    than wall time.
    """
    config = GraderConfig()
    previous = os.environ.pop(DISABLE_ENV, None)
    if disable:
        os.environ[DISABLE_ENV] = disable
    try:
        server_process = ForkServer()
    finally:
        os.environ.pop(DISABLE_ENV, None)
        if previous is not None:
            os.environ[DISABLE_ENV] = previous
    try:
        code = compile_program("print(input())")
        limits = run_limits(config, 128)
        server_process.run(code, "1\n", "stdin", None, limits, 10.0)
        wall, grader_cpu, server_cpu = time.perf_counter(), time.process_time(), _server_cpu_s(server_process)
        for _ in range(repeats):
            server_process.run(code, "1\n", "stdin", None, limits, 10.0, new_completion=new_completions)
            stdout_matches(server_process.stdout_chunks, "1", config)
        cpu = time.process_time() - grader_cpu + _server_cpu_s(server_process) - server_cpu
        return (time.perf_counter() - wall) / repeats * 1000, cpu / repeats * 1000
    finally:
        server_process.close()


def python3_overhead_ms(repeats: int) -> tuple[float, float]:
    """(wall, CPU) ms of a fresh ``python3 -c 'print(input())'`` (what a process-per-test grader pays)."""
    wall, grader_cpu = time.perf_counter(), time.process_time()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(repeats):
        subprocess.run([sys.executable, "-c", "print(input())"], input=b"1\n", capture_output=True, check=True)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    children_cpu = (
        children_after.ru_utime + children_after.ru_stime - children_before.ru_utime - children_before.ru_stime
    )
    return (time.perf_counter() - wall) / repeats * 1000, (
        time.process_time() - grader_cpu + children_cpu
    ) / repeats * 1000


def _microseconds(action, repeats: int) -> float:
    """CPU microseconds of this thread per call of ``action`` (less distorted by other jobs than wall time)."""
    started = time.thread_time()
    for _ in range(repeats):
        action()
    return (time.thread_time() - started) / repeats * 1e6


def mechanism_costs_us(repeats: int) -> dict[str, float]:
    """CPU microseconds per test of each per-test mechanism, timed on its own code path in this process."""
    costs = {}

    def test_files() -> None:
        files = RunFiles("1\n")
        "".join(files.text_chunks(files.stdout))
        files.close()

    costs["nameless test files (4 memfds, input written and sealed, stdout read back; grader)"] = _microseconds(
        test_files, repeats
    )
    scratch = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:

        def source_and_reset() -> None:
            os.chdir(scratch)
            write_source(b"print(input())\n")
            os.chdir("/")
            reset_directory(scratch, 0o1777, owner=None)

        costs["source file written by the child + scratch emptied and its metadata reset (server)"] = _microseconds(
            source_and_reset, repeats
        )
    finally:
        os.chdir("/")
        os.rmdir(scratch)
    costs |= scratch_renewal_us(repeats)
    costs["the program's module, on the builtins that hold LiveCodeBench's prelude names (child)"] = _microseconds(
        lambda: harness._program_namespace("solution"), repeats
    )
    sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    try:  # the benchmark's own process tree stands in for a run with several processes
        buffers = kernel_buffers(network_namespace=False, private_proc=False)
        costs["one memory count of a run with 3 processes, under its limit: the bound from status (server)"] = (
            _microseconds(lambda: run_memory(buffers, 1 << 40), max(1, repeats // 10))
        )
        costs["... over the bound: proportional set sizes, mappings counted (server, every 50 ms while over)"] = (
            _microseconds(lambda: run_memory(buffers, 0), max(1, repeats // 10))
        )
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    expected = "\n".join(str(number) for number in range(1000))
    costs["streamed comparison of a 1,000-line output (grader)"] = _microseconds(
        lambda: stdout_matches(expected + "\n", expected, GraderConfig()), repeats
    )
    costs["... the same output with one different line at the end"] = _microseconds(
        lambda: stdout_matches(expected + "0", expected, GraderConfig()), repeats
    )
    return costs


def scratch_renewal_us(repeats: int) -> dict[str, float]:
    """Microseconds of the launcher's renewal of a scratch tmpfs before a completion, timed in a child process in
    mount namespaces of its own: moving the old one out and mounting a new one (CPU: the server waits for it), and
    unmounting the old one (CPU and wall: the launcher's background thread waits for an RCU grace period). Empty
    where namespaces are not allowed."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        result = b""
        try:
            result = repr(_renew_scratch_in_own_namespace(repeats)).encode()
        except OSError as exc:
            print(f"  (no scratch tmpfs timing: {exc})", file=sys.stderr)
        finally:
            os.write(write_end, result)
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        answer = reader.read()
    os.waitpid(pid, 0)
    return eval(answer) if answer else {}  # a dict literal written by our own child


def _renew_scratch_in_own_namespace(repeats: int) -> dict[str, float]:
    uid, gid = os.getuid(), os.getgid()
    isolation.unshare(isolation.CLONE_NEWNS | (0 if uid == 0 else isolation.CLONE_NEWUSER))
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    isolation._mount(None, "/", None, 0x4000 | 0x40000)  # MS_REC | MS_PRIVATE: nothing propagates to the host
    scratch, held = tempfile.mkdtemp(), tempfile.mkdtemp()
    isolation.mount_scratch(scratch)
    renew_cpu = unmount_cpu = unmount_wall = 0.0
    for _ in range(repeats):
        started = time.thread_time()
        isolation.move_mount(scratch, held)
        isolation.mount_scratch(scratch)
        renew_cpu += time.thread_time() - started
        started, wall = time.thread_time(), time.perf_counter()
        isolation.detach_mount(held)
        unmount_cpu += time.thread_time() - started
        unmount_wall += time.perf_counter() - wall
    return {
        "a new scratch tmpfs before a completion: old one moved out, new one mounted (launcher; the server waits)": (
            renew_cpu / repeats * 1e6
        ),
        "... the old one unmounted, CPU (launcher, after it answered)": unmount_cpu / repeats * 1e6,
        "... the old one unmounted, wall: an RCU grace period (launcher, after it answered)": unmount_wall
        / repeats
        * 1e6,
    }


def report_overheads(repeats: int) -> None:
    print("per-test overhead of a trivial program (sequential, warm server; wall / CPU of every process involved):")
    for label, disable, new_completions in (
        ("full isolation", "", False),
        ("full isolation, each test a completion", "", True),
        ("full isolation, memory counted (no memory cgroup)", "memory_cgroup", False),
        ("without the seccomp filter", "seccomp", False),
        ("without namespaces (isolation=none)", "namespaces", False),
    ):
        wall_ms, cpu_ms = server_overhead_ms(repeats, disable, new_completions)
        print(f"  {label:40s} {wall_ms:6.2f} ms wall  {cpu_ms:6.2f} ms CPU")
    wall_ms, cpu_ms = python3_overhead_ms(max(5, repeats // 20))
    print(f"  {'fresh python3 per test':40s} {wall_ms:6.2f} ms wall  {cpu_ms:6.2f} ms CPU")
    print("what each per-test mechanism costs (its own code path, timed alone; CPU time):")
    for label, microseconds in mechanism_costs_us(repeats).items():
        print(f"  {microseconds:8.1f} us  {label}")


_BASELINE_VERDICTS = (Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.RUNTIME_ERROR)
"""Sample solutions the unsandboxed, unlimited baseline may run (no memory/output hogs, no time-limit waits)."""


def sample_jobs() -> tuple[list[tuple[str, Problem]], list[str], list[bool]]:
    """(code, problem) of every bundled solution with code, expected verdicts, and which are baseline-safe."""
    problems = {sample.problem_id: Problem.from_ground_truth(sample.ground_truth) for sample in load_problems()}
    jobs, expected, baseline_safe = [], [], []
    for solution in load_solutions():
        if solution.code is None:
            continue
        problem = problems[solution.problem_id]
        jobs.append((solution.code, problem))
        expected.append(solution.expected_verdict)
        baseline_safe.append(
            not solution.kind.startswith("hostile")
            and not problem.is_functional
            and solution.expected_verdict in _BASELINE_VERDICTS
        )
    return jobs, expected, baseline_safe


def run_sample(workers: int, threads: int, chunks: int) -> None:
    jobs, expected, baseline_safe = sample_jobs()
    config = GraderConfig()
    pool_results, pool_s = grade_with_pool(jobs, workers, config, "sample")
    agree = sum(result.verdict == want for result, want in zip(pool_results, expected, strict=True))
    print(
        f"bundled sample: {len(jobs)} solutions, {sum(map(tests_run, pool_results))} tests run in {pool_s:.1f} s;"
        f" verdict as expected for {agree}/{len(jobs)}"
    )
    for result, want in zip(pool_results, expected, strict=True):
        if result.verdict != want:
            print(f"  expected {want}, got {result.verdict}: {result.detail[:120]!r}")
    safe_jobs = [job for job, safe in zip(jobs, baseline_safe, strict=True) if safe]
    compare_interleaved(
        safe_jobs,
        workers,
        threads,
        config,
        "bundled sample, stdin solutions accepted / wrong / crashing (the baseline has no sandbox)",
        chunks,
    )


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=120, help="synthetic problems (default 120)")
    parser.add_argument("--tests", type=int, default=7, help="stdin tests per synthetic problem (default 7)")
    parser.add_argument("--workers", type=int, default=os.cpu_count(), help="fork servers (default: all cores)")
    parser.add_argument("--baseline-threads", type=int, default=8, help="threads of the baseline (default 8)")
    parser.add_argument("--overhead-repeats", type=int, default=300, help="runs of the trivial program")
    parser.add_argument("--no-sample", action="store_true", help="skip the bundled sample")
    parser.add_argument(
        "--chunks",
        type=int,
        default=6,
        help="alternate pool and baseline over this many chunks of each workload (default 6)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic workload")
    args = parser.parse_args(list(argv) if argv is not None else None)
    print(probe_isolation().summary())
    print(f"workers={args.workers} baseline threads={args.baseline_threads} cores={os.cpu_count()}")
    jobs = synthetic_workload(args.problems, args.tests, args.seed)
    config = GraderConfig()
    compare_interleaved(
        jobs,
        args.workers,
        args.baseline_threads,
        config,
        f"synthetic ({args.problems} problems x {args.tests} tests, half wrong)",
        args.chunks,
    )
    report_overheads(args.overhead_repeats)
    if not args.no_sample:
        run_sample(args.workers, args.baseline_threads, args.chunks)


if __name__ == "__main__":
    main()
