"""Every bundled sample problem, written in the raw layout of each source, built, and graded by reward_fns."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from data_prep_raw_sources import (
    DEEPCODER,
    LCB,
    PRIMEINTELLECT,
    TACO_VERIFIED,
    deepcoder_row,
    lcb_line,
    primeintellect_row,
    taco_verified_row,
    write_deepcoder,
    write_lcb,
    write_parquet,
)

from data_prep.build import build_mix
from data_prep.build_deepcoder_mix import main as cli_main
from data_prep.build_settings import BuildConfig
from data_prep.sample import DATA_SOURCE, load_problems, load_solutions

SOURCES = ("lcb", "deepcoder_taco", "deepcoder_primeintellect", "taco_verified", "primeintellect")
FAMILY = {
    "lcb": "livecodebench",
    "deepcoder_taco": "taco",
    "deepcoder_primeintellect": "primeintellect",
    "taco_verified": "taco",
    "primeintellect": "primeintellect",
}


@pytest.fixture(scope="module")
def sample_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """All sample problems, round-robin over the five sources; returns (out dir, problem id -> source name)."""
    root = tmp_path_factory.mktemp("sample_sources")
    assigned: dict[str, list] = {name: [] for name in SOURCES}
    source_of = {}
    for position, problem in enumerate(load_problems(include_large=False)):
        name = SOURCES[position % len(SOURCES)]
        assigned[name].append(problem)
        source_of[problem.problem_id] = name
    write_lcb(root / LCB, {"test6.jsonl": [lcb_line(problem) for problem in assigned["lcb"]]})
    write_deepcoder(
        root / DEEPCODER,
        {
            "taco": [deepcoder_row(problem, "taco") for problem in assigned["deepcoder_taco"]],
            "primeintellect": [deepcoder_row(p, "primeintellect") for p in assigned["deepcoder_primeintellect"]],
        },
    )
    (root / TACO_VERIFIED).mkdir(parents=True)
    (root / TACO_VERIFIED / "taco_verified.json").write_text(
        json.dumps([taco_verified_row(problem) for problem in assigned["taco_verified"]])
    )
    write_parquet(
        root / PRIMEINTELLECT / "data" / "train-00000-of-00001.parquet",
        [primeintellect_row(problem) for problem in assigned["primeintellect"]],
    )
    out = root / "out"
    build_mix(BuildConfig(out_dir=out, mode="local", local_dir=root, train_sources=SOURCES), log=lambda line: None)
    return out, source_of


def _expected_counts(source_of: dict[str, str]) -> dict[str, dict[str, int]]:
    expected: dict[str, dict[str, int]] = {"train": {}, "test": {}}
    for problem in load_problems(include_large=False):
        name = source_of[problem.problem_id]
        day = problem.contest_date[:10]
        if name != "lcb" or day < "2024-08-01":
            split = "train"
        elif day < "2025-05-01":
            split = "test"
        else:
            continue
        family = FAMILY[name]
        expected[split][family] = expected[split].get(family, 0) + 1
    return expected


def test_row_counts_per_source_and_split(sample_build: tuple[Path, dict[str, str]]) -> None:
    out, source_of = sample_build
    manifest = json.loads((out / "manifest.json").read_text())
    expected = _expected_counts(source_of)
    assert manifest["counts"]["train"]["by_source"] == dict(sorted(expected["train"].items()))
    assert manifest["counts"]["test"]["by_source"] == dict(sorted(expected["test"].items()))
    assert manifest["filters"]["train"] == {} and manifest["malformed_rows"]["total"] == 0


def test_every_reference_solution_is_accepted_on_its_converted_ground_truth(
    sample_build: tuple[Path, dict[str, str]],
) -> None:
    from reward_fns import compute_score

    out, _ = sample_build
    by_statement = {problem.statement.strip(): problem.problem_id for problem in load_problems(include_large=False)}
    references = {solution.problem_id: solution for solution in load_solutions(kinds=["reference"])}
    graded = {}
    for split in ("train", "test"):
        for row in pq.read_table(out / f"{split}.parquet").to_pylist():
            statement = row["prompt"][1]["content"].split("### Question:\n", 1)[1].split("\n\n### Format:", 1)[0]
            problem_id = by_statement[statement.strip()]
            result = compute_score(
                row["data_source"],
                references[problem_id].completion,
                row["reward_model"]["ground_truth"],
                row["extra_info"],
            )
            graded[problem_id] = result["verdict"]
    assert len(graded) == len(references)
    assert {problem_id: verdict for problem_id, verdict in graded.items() if verdict != "accepted"} == {}


def test_no_arguments_offline_is_an_error_naming_the_downloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """An offline node must not train on the 44-problem sample by accident: --from auto stops, nothing is written."""
    monkeypatch.setattr("data_prep.build.hub_reachable", lambda: False)
    monkeypatch.chdir(tmp_path)
    assert cli_main([]) == 2
    error = capsys.readouterr().err
    for repo in (LCB, DEEPCODER):
        assert f"hf download {repo} --repo-type dataset --local-dir ROOT/{repo}" in error
    assert "--local-dir ROOT" in error and "--from sample" in error and error.count("\n") == 1
    assert not (tmp_path / "data").exists()


def test_from_sample_builds_the_bundled_sample(tmp_path: Path) -> None:
    out = tmp_path / "sample_mix"
    assert cli_main(["--from", "sample", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    problems = load_problems(include_large=False)
    in_test = sum(1 for p in problems if "2024-08-01" <= p.contest_date[:10] < "2025-05-01")
    assert manifest["mode"] == "sample"
    assert manifest["counts"]["test"]["by_source"] == {DATA_SOURCE: in_test}
    assert manifest["counts"]["train"]["by_source"] == {DATA_SOURCE: len(problems) - in_test}
    rows = pq.read_table(out / "test.parquet").to_pylist()
    assert {row["extra_info"]["problem_id"] for row in rows} == {
        p.problem_id for p in problems if "2024-08-01" <= p.contest_date[:10] < "2025-05-01"
    }
