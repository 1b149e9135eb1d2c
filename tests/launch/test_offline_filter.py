"""launch/offline_filter.py: verl's dump of graded generations -> rollouts keyed by problem id -> the filtered parquet.

The dump lines carry the keys of verl's `_write_generations` (`gts` = the row's ground truth, the reward's `verdict`).
Under the real Slurm chain with stage 0 it runs in tests/launch/test_slurm_chain.py; here its edge cases, ~3 s.
"""

from __future__ import annotations

import json

import offline_filter
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def write_parquet(path, rows: list[tuple[str, str]]) -> None:
    """(problem_id, ground truth) rows with the two columns offline_filter reads."""
    table = pa.table(
        {
            "reward_model": [{"style": "rule", "ground_truth": truth} for _, truth in rows],
            "extra_info": [{"problem_id": problem} for problem, _ in rows],
        }
    )
    pq.write_table(table, path)


def dump(path, lines: list[tuple[str, str]]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    text = "".join(
        json.dumps({"input": "", "output": "", "gts": gts, "score": 0, "verdict": v}) + "\n" for gts, v in lines
    )
    (path / "0.jsonl").write_text(text)


def test_rows_sharing_a_ground_truth_share_its_rollouts_and_are_counted(tmp_path):
    write_parquet(tmp_path / "train.parquet", [("a", "T1"), ("b", "T2"), ("c", "T2")])
    dump(tmp_path / "gen", [("T1", "accepted"), ("T1", "accepted"), ("T2", "accepted"), ("T2", "wrong_answer")])
    lines, counts = offline_filter.rollout_lines(
        tmp_path / "gen", offline_filter.problem_ids_by_ground_truth(tmp_path / "train.parquet")
    )
    assert counts == {"generations": 4, "unmatched": 0, "shared_ground_truth": 2}
    assert [line["problem_id"] for line in lines] == ["a", "a", "b", "c", "b", "c"]


def test_generations_of_other_data_fail_naming_the_count(tmp_path):
    write_parquet(tmp_path / "train.parquet", [("a", "T1")])
    dump(tmp_path / "gen", [("T1", "accepted"), ("OTHER", "accepted")])
    out = tmp_path / "filtered.parquet"
    with pytest.raises(SystemExit, match=r"1 of 2 generations .* have a ground truth that no row of .* has"):
        offline_filter.main(
            ["--generations", str(tmp_path / "gen"), "--data", str(tmp_path / "train.parquet"), "--out", str(out)]
        )
    assert not out.exists()


def test_an_empty_dump_directory_is_an_error(tmp_path):
    (tmp_path / "gen").mkdir()
    with pytest.raises(FileNotFoundError, match="dumped no generations"):
        offline_filter.rollout_lines(tmp_path / "gen", {})
