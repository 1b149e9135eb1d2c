"""The CPU learning run's task family (recipe/nouscoder/cpu/task_family.py): parquet rows in the project's layout,
seeded draws, held-out statements never seen in training, and programs whose verdict is known: the correct one
passes every hidden test, any mistake fails one (in-process here; through the real sandboxed grader below)."""

import itertools
import json
import random

import pyarrow.parquet as pq
import pytest

from data_prep.parquet_writer import ROW_SCHEMA
from data_prep.sample.inprocess import run_stdin_program
from recipe.nouscoder.cpu.task_family import (
    KINDS,
    SOURCE,
    Mistakes,
    TaskFamilySpec,
    build_task_family,
    draw_split,
    is_built,
    kind_of_problem_id,
    response_text,
)
from reward_fns.compare import stdout_matches
from reward_fns.types import GraderConfig

SPEC = TaskFamilySpec(seed=3, train=24, val=16)


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    out = tmp_path_factory.mktemp("task_family")
    return out, build_task_family(out, SPEC)


def passes(program: str, tests: list[dict]) -> bool:
    config = GraderConfig(compare_mode="tolerant")
    for test in tests:
        try:
            output = run_stdin_program(program, test["input"])
        except Exception:
            return False
        if not stdout_matches(output, test["output"], config):
            return False
    return True


def test_rows_are_the_projects_parquet_rows_with_ground_truth_in_its_layout(family):
    out, manifest = family
    for split, count in (("train", SPEC.train), ("test", SPEC.val)):
        table = pq.read_table(out / manifest["splits"][split]["file"])
        assert table.schema.equals(ROW_SCHEMA) and table.num_rows == count
        for row in table.to_pylist():
            truth = json.loads(row["reward_model"]["ground_truth"])
            assert set(truth) == {"tests"} and len(truth["tests"]) == row["extra_info"]["num_tests"] >= 5
            assert all(test["testtype"] == "stdin" for test in truth["tests"])
            assert row["data_source"] == SOURCE and row["extra_info"]["split"] == split
            assert [message["role"] for message in row["prompt"]] == ["system", "user"]
            example = truth["tests"][0]["input"].strip()
            assert f"Example input:\n{example}\n" in row["prompt"][1]["content"]  # the statement shows test 0


def test_kinds_cycle_and_no_statement_is_shared_between_or_within_splits(family):
    out, _ = family
    rows = pq.read_table(out / "train.parquet").to_pylist() + pq.read_table(out / "test.parquet").to_pylist()
    statements = [row["prompt"][1]["content"] for row in rows]
    assert len(set(statements)) == len(statements)
    train_kinds = [kind_of_problem_id(row["extra_info"]["problem_id"]).name for row in rows[: SPEC.train]]
    assert train_kinds == [KINDS[index % len(KINDS)].name for index in range(SPEC.train)]


def test_the_same_seed_draws_the_same_family_and_another_seed_another(tmp_path, family):
    _, manifest = family
    again = build_task_family(tmp_path / "again", SPEC)
    other = build_task_family(tmp_path / "other", TaskFamilySpec(seed=4, train=SPEC.train, val=SPEC.val))
    assert again["splits"] == manifest["splits"]
    assert other["splits"]["train"]["sha256"] != manifest["splits"]["train"]["sha256"]
    assert is_built(tmp_path / "again", SPEC) and not is_built(tmp_path / "again", TaskFamilySpec(seed=4))


def test_the_correct_program_passes_and_every_mistake_fails_each_problem():
    for problem in draw_split("check", 16, seed=11, taken=set()):
        kind = kind_of_problem_id(problem.problem.problem_id)
        tests = problem.problem.tests
        assert passes(kind.program(), tests)
        for read, answer, label in itertools.product((False, True), range(3), (False, True)):
            mistakes = Mistakes(read=read, answer=answer, label=label)
            if mistakes.any:
                assert not passes(kind.program(mistakes), tests), (kind.name, mistakes)


def test_responses_are_fenced_unless_the_fence_is_the_mistake():
    rng = random.Random(0)
    for kind in KINDS:
        mistakes = Mistakes(read=rng.random() < 0.5, label=rng.random() < 0.5)
        assert response_text(kind, mistakes) == f"```python\n{kind.program(mistakes)}\n```"
        assert response_text(kind, Mistakes(fence=True)) == kind.program()


@pytest.mark.integration
def test_the_sandboxed_grader_agrees(family):
    """One problem of each kind through ``reward_fns.compute_score`` (fork servers, sandbox): ~5 s."""
    from reward_fns import compute_score

    out, _ = family
    rows = pq.read_table(out / "test.parquet").to_pylist()[: len(KINDS)]
    for row in rows:
        kind = kind_of_problem_id(row["extra_info"]["problem_id"])
        truth = row["reward_model"]["ground_truth"]

        def verdict(mistakes: Mistakes, kind=kind, truth=truth) -> str:
            return compute_score(SOURCE, response_text(kind, mistakes), truth, isolation="auto")["verdict"]

        assert verdict(Mistakes()) == "accepted"
        assert verdict(Mistakes(fence=True)) == "no_code"
        for mistakes in (Mistakes(read=True), Mistakes(answer=1), Mistakes(answer=2), Mistakes(label=True)):
            assert verdict(mistakes) in ("wrong_answer", "runtime_error"), (kind.name, mistakes)
