"""The bundled sample: counts and mix, valid ground truth, reproducible build, references that really pass.

References are checked by running them here in plain subprocesses (``python reference.py < input``, or a small
functional driver), independent of the project's grader and of the in-process runner used by the build.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest

from data_prep.sample import SAMPLE_DIR, load_problems, load_solutions
from data_prep.sample import large_tests as large_tests_module
from data_prep.sample.build_sample import build_problem
from data_prep.sample.export import main as export_main
from reward_fns.sandbox.harness import LCB_RECURSION_LIMIT
from reward_fns.types import Problem, Verdict

BOUNDARY = datetime(2024, 8, 1)
VERDICT_KINDS = {
    "wrong_answer",
    "time_limit",
    "memory_limit",
    "runtime_error",
    "output_limit",
    "compile_error",
    "no_code",
}
FUNCTIONAL_DRIVER = r"""
import json, sys
path, fn_name = sys.argv[1], sys.argv[2]
namespace = {"__name__": "reference"}
exec(compile(open(path).read(), path, "exec"), namespace)
results = []
for arguments_text in json.load(sys.stdin):
    arguments = [json.loads(line) for line in arguments_text.split("\n")]
    target = getattr(namespace["Solution"](), fn_name) if "Solution" in namespace else namespace[fn_name]
    results.append(target(*arguments))
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def small_problems():
    return load_problems(include_large=False)


@pytest.fixture(scope="module")
def solutions():
    return load_solutions()


@pytest.fixture(scope="module")
def large_cache(tmp_path_factory):
    """Large tests generated into a fresh cache folder (not the user's cache)."""
    cache_root = tmp_path_factory.mktemp("nouscoder_cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NOUSCODER_CACHE", str(cache_root))
        large_tests_module._cached_large_tests.cache_clear()
        yield cache_root
        large_tests_module._cached_large_tests.cache_clear()


def test_counts_and_mix(small_problems):
    assert len(small_problems) >= 40
    assert [problem.problem_id for problem in small_problems] == sorted(p.problem_id for p in small_problems)
    functional = [problem for problem in small_problems if problem.fn_name is not None]
    assert len(functional) >= 12 and len(small_problems) - len(functional) >= 25
    difficulties = Counter(problem.difficulty for problem in small_problems)
    assert set(difficulties) == {"easy", "medium", "hard"} and min(difficulties.values()) >= 12
    dates = [datetime.fromisoformat(problem.contest_date) for problem in small_problems]
    assert sum(date < BOUNDARY for date in dates) >= 10 and sum(date >= BOUNDARY for date in dates) >= 10
    assert "2024-07-31T00:00:00" in {p.contest_date for p in small_problems}
    assert "2024-08-01T00:00:00" in {p.contest_date for p in small_problems}
    assert min(dates) >= datetime(2023, 5, 1) and max(dates) < datetime(2025, 5, 1)
    assert all(len(problem.ground_truth["tests"]) >= 5 for problem in small_problems)
    assert {problem.source for problem in small_problems} == {"nous-sample"}


def test_metadata_matches_problem_kind(small_problems):
    for problem in small_problems:
        testtypes = {test["testtype"] for test in problem.ground_truth["tests"]}
        assert problem.ground_truth["fn_name"] == problem.fn_name
        if problem.fn_name is None:
            assert (
                testtypes == {"stdin"} and problem.starter_code == "" and problem.platform in ("atcoder", "codeforces")
            )
            assert all(section in problem.statement for section in ("## Input", "## Output", "## Constraints"))
        else:
            assert testtypes == {"functional"} and problem.platform == "leetcode"
            assert problem.starter_code.startswith(f"class Solution:\n    def {problem.fn_name}(self")
            assert problem.starter_code.endswith(":\n        ")
        assert "## Example" in problem.statement


def test_every_ground_truth_parses(small_problems):
    for problem in small_problems:
        parsed = Problem.from_ground_truth(problem.ground_truth_json())
        assert len(parsed.tests) == len(problem.ground_truth["tests"])
        assert parsed.fn_name == problem.fn_name
        if problem.fn_name is not None:
            for test in parsed.tests:
                json.loads(test.output)
                assert all(json.loads(line) is not None for line in test.input.split("\n"))


def test_outputs_exercise_comparison_rules(small_problems):
    outputs = [test["output"] for problem in small_problems for test in problem.ground_truth["tests"]]
    assert any(output.strip() in ("Yes", "No") for output in outputs)
    assert any(output.strip().count("\n") >= 3 for output in outputs)
    assert any("." in output and output.replace(".", "").replace("\n", "").isdigit() for output in outputs)
    values = [json.loads(t["output"]) for p in small_problems if p.fn_name for t in p.ground_truth["tests"]]
    assert any(isinstance(value, bool) for value in values) and any(isinstance(value, str) for value in values)
    assert any(isinstance(value, list) and value and isinstance(value[0], list) for value in values)


def test_committed_sample_is_small():
    committed = [path for path in SAMPLE_DIR.rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    assert sum(path.stat().st_size for path in committed) < 1_600_000


@pytest.mark.parametrize("problem_id", ["garden_height_range", "courier_routes", "merge_bookings", "tree_trail"])
def test_rebuild_reproduces_committed_files(problem_id):
    folder = SAMPLE_DIR / "problems" / problem_id
    for filename, text in build_problem(folder).items():
        assert (folder / filename).read_text() == text, f"{folder / filename} differs from a rebuild"


JUDGE_RECURSION_LIMIT = (
    f"import runpy, sys; sys.setrecursionlimit({LCB_RECURSION_LIMIT}); sys.argv = sys.argv[1:];"
    " runpy.run_path(sys.argv[0], run_name='__main__')"
)


def python_command(program: Path) -> list[str]:
    """References use only the standard library, so they skip ``site`` (-S) and start twice as fast; the accepted
    variants keep it (``quit()`` is defined by ``site``) and run with the recursion limit LiveCodeBench's judge sets
    before every program (two recurse 5000 deep without raising it)."""
    if program.name == "reference.py":
        return [sys.executable, "-S", str(program)]
    return [sys.executable, "-c", JUDGE_RECURSION_LIMIT, str(program)]


def run_stdin_program(program: Path, test: dict[str, str], cwd: Path) -> tuple[str, str]:
    """``python program < input`` in a plain subprocess; returns (stdout, expected output)."""
    completed = subprocess.run(
        python_command(program), input=test["input"], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    assert completed.returncode == 0, f"{program}: {completed.stderr}"
    return completed.stdout, test["output"]


def check_functional_program(program: Path, problem, cwd: Path) -> None:
    """All tests of a functional problem through the driver in one subprocess; results compared as JSON."""
    tests = problem.ground_truth["tests"]
    completed = subprocess.run(
        [sys.executable, "-c", FUNCTIONAL_DRIVER, str(program), problem.fn_name],
        input=json.dumps([test["input"] for test in tests]),
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    assert completed.returncode == 0, f"{program}: {completed.stderr}"
    assert json.loads(completed.stdout) == [json.loads(test["output"]) for test in tests], str(program)


def check_programs_reproduce_outputs(problems, program_names: dict[str, list[str]], cwd: Path) -> None:
    """Run each named program of each problem on every committed test, two at a time."""
    stdin_jobs, functional_jobs = [], []
    for problem in problems:
        for name in program_names.get(problem.problem_id, []):
            program = SAMPLE_DIR / "problems" / problem.problem_id / name
            if problem.fn_name is None:
                stdin_jobs += [(program, test) for test in problem.ground_truth["tests"]]
            else:
                functional_jobs.append((program, problem))
    with ThreadPoolExecutor(max_workers=2) as pool:
        stdin_results = list(pool.map(lambda job: run_stdin_program(*job, cwd), stdin_jobs))
        list(pool.map(lambda job: check_functional_program(*job, cwd), functional_jobs))
    for (program, _), (actual, expected) in zip(stdin_jobs, stdin_results, strict=True):
        assert actual == expected, f"{program} printed something else than the committed output"


def test_references_reproduce_expected_outputs_in_subprocesses(small_problems, tmp_path):
    check_programs_reproduce_outputs(small_problems, {p.problem_id: ["reference.py"] for p in small_problems}, tmp_path)


def test_accepted_variants_reproduce_expected_outputs_in_subprocesses(small_problems, tmp_path):
    variants: dict[str, list[str]] = {}
    for path in sorted((SAMPLE_DIR / "problems").glob("*/accepted_*.py")):
        variants.setdefault(path.parent.name, []).append(path.name)
    assert sum(map(len, variants.values())) >= 10
    check_programs_reproduce_outputs(small_problems, variants, tmp_path)


def test_large_tests_are_big_and_added(large_cache):
    with_large = {problem.problem_id: problem for problem in load_problems(include_large=True)}
    small = {problem.problem_id: problem for problem in load_problems(include_large=False)}
    big = [
        problem_id
        for problem_id, problem in with_large.items()
        if sum(len(t["input"]) for t in problem.ground_truth["tests"][len(small[problem_id].ground_truth["tests"]) :])
        > 1_000_000
    ]
    assert len(big) >= 2
    assert any(path.suffix == ".json" for path in large_cache.rglob("*"))
    for problem_id in big:
        Problem.from_ground_truth(with_large[problem_id].ground_truth_json())
    cached = large_tests_module.large_tests("courier_routes")
    assert cached == large_tests_module.build_large_tests("courier_routes")
    assert not any(path.is_file() for path in (SAMPLE_DIR / "problems").rglob("*large*"))


def test_unwritable_cache_still_gives_large_tests(tmp_path, monkeypatch, caplog):
    not_a_folder = tmp_path / "occupied"
    not_a_folder.write_text("a file where the cache folder should be")
    monkeypatch.setenv("NOUSCODER_CACHE", str(not_a_folder))
    large_tests_module._cached_large_tests.cache_clear()
    try:
        tests = large_tests_module.large_tests("courier_routes")
    finally:
        large_tests_module._cached_large_tests.cache_clear()
    assert len(tests) == 1 and len(tests[0]["input"]) > 1_000_000
    assert "cannot cache large tests" in caplog.text


def test_large_courier_test_checks_its_stated_purpose(large_cache):
    """The INF = 10**9 wrong solution is right on committed tests only: large distances exceed 10^9."""
    committed = load_problems(include_large=False)
    courier = next(problem for problem in committed if problem.problem_id == "courier_routes")
    small_max = max(int(v) for t in courier.ground_truth["tests"] for v in t["output"].split())
    large_max = max(int(v) for t in large_tests_module.large_tests("courier_routes") for v in t["output"].split())
    assert small_max < 10**9 < large_max


def test_solutions_cover_every_kind(solutions):
    kinds = Counter(solution.kind for solution in solutions)
    for kind in VERDICT_KINDS:
        assert kinds[kind] >= 2, kind
    assert kinds["wrong_answer"] >= 8 and kinds["time_limit"] >= 3 and kinds["runtime_error"] >= 4
    hostile = {kind for kind in kinds if kind.startswith("hostile_")}
    assert {
        "hostile_write_outside_cwd",
        "hostile_tcp_connect",
        "hostile_print_environ",
        "hostile_read_shadow",
        "hostile_detached_child",
        "hostile_fork_bomb",
        "hostile_kill_parent",
        "hostile_always_equal",
        "hostile_monkeypatch_json",
    } <= hostile
    accepted = {kind for kind in kinds if kind.startswith("accepted_")}
    assert len(accepted) >= 10
    assert kinds["reference"] == len({solution.problem_id for solution in solutions})


def test_solution_metadata_is_consistent(solutions):
    verdicts = {verdict.value for verdict in Verdict}
    first_of_problem = {}
    for solution in solutions:
        first_of_problem.setdefault(solution.problem_id, solution.kind)
        assert solution.expected_verdict in verdicts
        if solution.kind in VERDICT_KINDS:
            assert solution.expected_verdict == solution.kind, solution.name
        elif solution.kind.startswith("hostile_"):
            assert solution.expected_verdict in ("wrong_answer", "runtime_error") and solution.note
        else:
            assert solution.expected_verdict == "accepted", solution.name
        assert solution.completion.startswith("<think>\n")
        if solution.kind == "no_code":
            assert solution.code is None and "```" not in solution.completion
        else:
            assert solution.completion.count("```python\n") == 1
            assert solution.completion.rstrip().endswith("```")
    assert set(first_of_problem.values()) == {"reference"}


def test_compile_errors_are_the_only_uncompilable_programs(solutions):
    for solution in solutions:
        if solution.code is None:
            continue
        if solution.kind == "compile_error":
            with pytest.raises(SyntaxError):
                compile(solution.code, solution.name, "exec")
        else:
            compile(solution.code, solution.name, "exec")


def test_kind_filter_selects_exact_kinds_and_families():
    hostile = load_solutions(kinds=["hostile"])
    assert hostile and all(solution.kind.startswith("hostile_") for solution in hostile)
    references = load_solutions(kinds=["reference"])
    assert {solution.kind for solution in references} == {"reference"} and len(references) >= 40


def test_export_writes_the_grading_cli_inputs(tmp_path, large_cache):
    out = tmp_path / "export"
    assert export_main(["--out", str(out), "--no-include-large", "--kinds", "reference", "wrong_answer"]) == 0
    problems = [json.loads(line) for line in (out / "problems.jsonl").read_text().splitlines()]
    completions = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    assert len(problems) >= 40
    assert all(
        row["data_source"] == "nous_sample" and set(row) == {"problem_id", "data_source", "ground_truth"}
        for row in problems
    )
    assert all(Problem.from_ground_truth(row["ground_truth"]).tests for row in problems)
    assert {row["kind"] for row in completions} == {"reference", "wrong_answer"}
    assert not any(row["needs_large_tests"] for row in completions)
    assert {"problem_id", "completion", "kind", "expected_verdict"} <= set(completions[0])
    known = {row["problem_id"] for row in problems}
    assert all(row["problem_id"] in known for row in completions)


def test_export_help_documents_every_flag():
    completed = subprocess.run(
        [sys.executable, "-m", "data_prep.sample.export", "--help"], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0
    assert all(flag in completed.stdout for flag in ("--out", "--include-large", "--no-include-large", "--kinds"))


def test_export_with_large_tests_keeps_large_only_solutions(tmp_path, large_cache):
    out = tmp_path / "export_large"
    assert export_main(["--out", str(out), "--kinds", "wrong_answer"]) == 0
    completions = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    assert any(row["needs_large_tests"] for row in completions)
    assert (out / "problems.jsonl").stat().st_size > 3_000_000
