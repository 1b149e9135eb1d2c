"""Offline difficulty filter on grader output."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from data_prep_raw_sources import fixture_problems

from data_prep.filter_by_pass_rate import main
from data_prep.parquet_writer import SplitWriter, verl_row
from data_prep.problem import Problem


def _data(path: Path, ids: list[str]) -> None:
    template = fixture_problems()["pi_stdin"]
    writer = SplitWriter(path, max_group_rows=2)
    for index, problem_id in enumerate(ids):
        problem = Problem(problem_id, "taco", "test", template.statement, template.ground_truth["tests"])
        writer.add(verl_row(problem, "train", index, "nouscoder"))
    writer.close()


def _rollouts(path: Path, verdicts: dict[str, list[str]]) -> None:
    lines = []
    for problem_id, outcomes in verdicts.items():
        for outcome in outcomes:
            lines.append(
                {
                    "problem_id": problem_id,
                    "verdict": outcome,
                    "score": 1.0 if outcome == "accepted" else -1.0,
                    "passed": 1,
                    "total": 1,
                }
            )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


VERDICTS = {
    "always": ["accepted"] * 4,
    "never": ["wrong_answer"] * 4,
    "half": ["accepted", "wrong_answer", "accepted", "time_limit"],
    "once": ["accepted", "wrong_answer", "wrong_answer", "wrong_answer"],
}


def _ids(path: Path) -> list[str]:
    return [row["extra_info"]["problem_id"] for row in pq.read_table(path).to_pylist()]


def test_drops_always_solved_and_keeps_the_rest(tmp_path: Path) -> None:
    _data(tmp_path / "train.parquet", ["always", "never", "half", "once", "unseen"])
    _rollouts(tmp_path / "r.jsonl", VERDICTS)
    assert (
        main(
            [
                "--rollouts",
                str(tmp_path / "r.jsonl"),
                "--data",
                str(tmp_path / "train.parquet"),
                "--out",
                str(tmp_path / "f.parquet"),
            ]
        )
        == 0
    )
    assert _ids(tmp_path / "f.parquet") == ["never", "half", "once", "unseen"]
    report = json.loads((tmp_path / "f.report.json").read_text())
    assert report["categories"] == {"all_fail": 1, "all_pass": 1, "mixed": 2, "no_rollouts": 1}
    assert report["rollouts_per_problem"] == {"4": 4}


def test_drop_all_fail_and_debug_subset(tmp_path: Path) -> None:
    _data(tmp_path / "train.parquet", ["always", "never", "half", "once", "unseen"])
    _rollouts(tmp_path / "r.jsonl", VERDICTS)
    args = [
        "--rollouts",
        str(tmp_path / "r.jsonl"),
        "--data",
        str(tmp_path / "train.parquet"),
        "--out",
        str(tmp_path / "f.parquet"),
        "--drop-all-fail",
        "--debug-subset",
        "1",
    ]
    assert main(args) == 0
    assert _ids(tmp_path / "f.parquet") == ["half", "once", "unseen"]
    debug = _ids(tmp_path / "f.debug1.parquet")
    assert len(debug) == 1 and debug[0] in ("half", "once")
    assert main(args) == 0
    assert _ids(tmp_path / "f.debug1.parquet") == debug


def test_bad_rollout_line_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _data(tmp_path / "train.parquet", ["half"])
    (tmp_path / "r.jsonl").write_text('{"problem_id": "half", "verdict": "accepted"}\n{"verdict": "accepted"}\n')
    assert (
        main(
            [
                "--rollouts",
                str(tmp_path / "r.jsonl"),
                "--data",
                str(tmp_path / "train.parquet"),
                "--out",
                str(tmp_path / "f.parquet"),
            ]
        )
        == 2
    )
    assert "r.jsonl:2" in capsys.readouterr().err


def test_debug_subset_is_drawn_from_the_data_and_reported_as_written(tmp_path: Path) -> None:
    """Mixed problems that are only in the rollouts are neither chosen nor reported."""
    _data(tmp_path / "train.parquet", ["always", "half"])
    _rollouts(tmp_path / "r.jsonl", VERDICTS | {"ghost_1": VERDICTS["half"], "ghost_2": VERDICTS["once"]})
    out = tmp_path / "f.parquet"
    args = ["--rollouts", str(tmp_path / "r.jsonl"), "--data", str(tmp_path / "train.parquet"), "--out", str(out)]
    assert main([*args, "--debug-subset", "2"]) == 0
    report = json.loads((tmp_path / "f.report.json").read_text())
    assert _ids(tmp_path / "f.debug2.parquet") == report["debug_ids"] == ["half"]
    assert report["problems_in_rollouts_not_in_data"] == 4  # never, once and the two ghosts
