"""The data tools refuse bad input at once: a non-zero exit, one message naming the input and the fix,
and nothing written. Each case ran with exit 0 (or a raw traceback) before."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from data_prep_raw_sources import fixture_problems

from data_prep import filter_by_pass_rate, verl_check
from data_prep.build_deepcoder_mix import main as build_main
from data_prep.parquet_writer import SplitWriter, verl_row
from data_prep.problem import Problem


def _data(path: Path, ids: list[str]) -> Path:
    template = fixture_problems()["pi_stdin"]
    writer = SplitWriter(path)
    for index, problem_id in enumerate(ids):
        problem = Problem(problem_id, "taco", "test", template.statement, template.ground_truth["tests"])
        writer.add(verl_row(problem, "train", index, "nouscoder"))
    writer.close()
    return path


def _rollouts(path: Path, ids: list[str]) -> Path:
    lines = [{"problem_id": pid, "verdict": verdict} for pid in ids for verdict in ("accepted", "wrong_answer")]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The last line on stderr: the error message (argparse prints its usage above it)."""
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--test-start", "yesterday"], "--test-start 'yesterday' is not a date: write YYYY-MM-DD"),
        (["--test-start", "2024-13-01"], "--test-start '2024-13-01' is not a date"),
        (["--train-before", "2024-02-30"], "--train-before '2024-02-30' is not a date"),
        (["--test-start", "2025-05-01", "--test-end", "2024-08-01"], "the test window [--test-start 2025-05-01"),
    ],
)
def test_build_refuses_dates_that_select_nothing(tmp_path: Path, capsys, flags: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as stop:
        build_main(["--from", "sample", "--out", str(tmp_path / "out"), *flags])
    assert stop.value.code == 2
    assert message in _error(capsys)
    assert not (tmp_path / "out").exists()


def test_verl_check_names_a_missing_file_a_non_parquet_and_missing_columns(tmp_path: Path, capsys) -> None:
    assert verl_check.main([str(tmp_path / "nope.parquet")]) == 2
    assert _error(capsys).startswith(
        f"python -m data_prep.verl_check: error: {tmp_path / 'nope.parquet'} does not exist"
    )
    (tmp_path / "text.parquet").write_text("not parquet")
    assert verl_check.main([str(tmp_path / "text.parquet")]) == 2
    assert "is not a parquet file" in _error(capsys)
    rows = pq.read_table(_data(tmp_path / "train.parquet", ["a", "b"]))
    pq.write_table(rows.drop(["prompt"]), tmp_path / "no_prompt.parquet")
    assert verl_check.main([str(tmp_path / "no_prompt.parquet")]) == 2
    assert "no_prompt.parquet lacks prompt" in _error(capsys)
    pq.write_table(rows.drop(["reward_model"]), tmp_path / "no_reward.parquet")
    assert verl_check.main([str(tmp_path / "no_reward.parquet")]) == 2
    assert "no_reward.parquet lacks reward_model" in _error(capsys)


def test_verl_check_names_rows_whose_ground_truth_does_not_parse(tmp_path: Path, capsys) -> None:
    table = pq.read_table(_data(tmp_path / "train.parquet", ["a", "b", "c"]))
    rows = table.to_pylist()
    rows[1]["reward_model"]["ground_truth"] = "{not json"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), tmp_path / "bad.parquet")
    assert verl_check.main([str(tmp_path / "bad.parquet")]) == 1
    error = _error(capsys)
    assert "cannot parse the ground truth of 1 of its 3 rows: row 1 (b): ground truth is not valid JSON" in error


def test_filter_refuses_rollouts_of_other_problems_and_writes_nothing(tmp_path: Path, capsys) -> None:
    data = _data(tmp_path / "train.parquet", ["a", "b"])
    rollouts = _rollouts(tmp_path / "r.jsonl", ["x", "y"])
    out = tmp_path / "out" / "filtered.parquet"
    assert filter_by_pass_rate.main(["--rollouts", str(rollouts), "--data", str(data), "--out", str(out)]) == 2
    assert f"none of the 2 problem ids of --rollouts {rollouts} (e.g. 'x', 'y') is in --data {data}" in _error(capsys)
    assert not (tmp_path / "out").exists()


def test_filter_warns_when_only_some_rollouts_are_of_the_data(tmp_path: Path, capsys) -> None:
    data = _data(tmp_path / "train.parquet", ["a", "b"])
    rollouts = _rollouts(tmp_path / "r.jsonl", ["a", "x"])
    out = tmp_path / "filtered.parquet"
    assert filter_by_pass_rate.main(["--rollouts", str(rollouts), "--data", str(data), "--out", str(out)]) == 0
    assert "warning: 1 of the 2 problems of" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("case", ["missing", "not_parquet", "no_reward_model", "no_rollouts_file"])
def test_filter_refuses_data_that_is_not_a_built_parquet(tmp_path: Path, capsys, case: str) -> None:
    data = _data(tmp_path / "train.parquet", ["a", "b"])
    rollouts = _rollouts(tmp_path / "r.jsonl", ["a"])
    if case == "missing":
        data, expected = tmp_path / "nope.parquet", "does not exist"
    elif case == "not_parquet":
        (tmp_path / "text.parquet").write_text("x")
        data, expected = tmp_path / "text.parquet", "is not a parquet file"
    elif case == "no_reward_model":
        pq.write_table(pq.read_table(data).drop(["reward_model"]), tmp_path / "bare.parquet")
        data, expected = tmp_path / "bare.parquet", "has no reward_model/extra_info columns"
    else:
        rollouts, expected = tmp_path / "none.jsonl", "--rollouts"
    out = tmp_path / "out" / "filtered.parquet"
    assert filter_by_pass_rate.main(["--rollouts", str(rollouts), "--data", str(data), "--out", str(out)]) == 2
    error = _error(capsys)
    assert error.startswith("filter_by_pass_rate: error: ") and expected in error
    assert "build_deepcoder_mix" in error or "reward_fns.grade" in error
    assert not (tmp_path / "out").exists()
