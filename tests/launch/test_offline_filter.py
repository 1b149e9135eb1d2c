"""launch/offline_filter.py: stage 0's parquet without ground truths in what verl holds, its dump keyed by problem id,
the filtered training parquet.

The dump lines are written by verl's own `_write_generations` (verl/trainer/ppo/v1/trainer_base.py), given what
`_validate` passes it: `gts` = each rollout's `reward_model.ground_truth`, and the reward's extra keys (`verdict`, and
with recipe/nouscoder/training/stage0_reward.py `problem_id`). Under the real Slurm chain with stage 0 it runs in
tests/launch/test_slurm_chain.py; here its edge cases and the bytes per generation with large tests, ~5 s.
"""

from __future__ import annotations

import json

import offline_filter
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from verl.trainer.ppo.v1.trainer_base import PPOTrainer

from recipe.nouscoder.configs import compose_experiment

SAMPLES = 8  # offline_filter.yaml's val_kwargs.n
TESTS_BYTES = 2_000_000  # per problem: DeepCoder's largest carry tens of MB


def write_parquet(path, rows: list[tuple[str, str]]) -> None:
    """(problem_id, ground truth) rows with the columns of a training parquet that stage 0 reads."""
    table = pa.table(
        {
            "prompt": [[{"role": "user", "content": f"solve {problem}"}] for problem, _ in rows],
            "data_source": ["deepcoder"] * len(rows),
            "reward_model": [{"style": "rule", "ground_truth": truth} for _, truth in rows],
            "extra_info": [{"problem_id": problem, "index": index} for index, (problem, _) in enumerate(rows)],
        }
    )
    pq.write_table(table, path)


def verl_dump(directory, parquet, verdicts: list[str], with_problem_id: bool) -> int:
    """verl's dump of SAMPLES generations per row of `parquet` (row k gets verdicts[k] for all of them); its size."""
    table = pq.read_table(parquet, columns=["reward_model", "extra_info"]).to_pylist()
    rows = [(row, verdict) for row, verdict in zip(table, verdicts, strict=True) for _ in range(SAMPLES)]
    extra = {"verdict": [verdict for _, verdict in rows], "uid": [f"u{index}" for index in range(len(rows))]}
    if with_problem_id:
        extra["problem_id"] = [row["extra_info"]["problem_id"] for row, _ in rows]
    PPOTrainer._write_generations(
        inputs=["### Question: ..." * 40] * len(rows),
        outputs=["```python\nprint(sum(map(int, input().split())))\n```"] * len(rows),
        gts=[row["reward_model"]["ground_truth"] for row, _ in rows],
        scores=[1.0 if verdict == "accepted" else -1.0 for _, verdict in rows],
        reward_extra_infos_dict=extra,
        dump_path=str(directory),
        global_steps=0,
    )
    return (directory / "0.jsonl").stat().st_size


def test_stage_zero_dumps_no_tests_and_filters_by_problem_id(tmp_path, capsys):
    tests = {problem: json.dumps({"tests": [{"input": "1 2\n", "output": problem * TESTS_BYTES}]}) for problem in "abc"}
    write_parquet(tmp_path / "train.parquet", list(tests.items()))
    assert offline_filter.prepare(tmp_path / "train.parquet", tmp_path / "problems.parquet") == 3
    prepared = pq.read_table(tmp_path / "problems.parquet").to_pylist()
    assert [row["reward_model"]["ground_truth"] for row in prepared] == ["", "", ""]
    assert [row["extra_info"]["ground_truth"] for row in prepared] == list(tests.values())
    assert [row["extra_info"]["problem_id"] for row in prepared] == list(tests) and prepared[1]["extra_info"][
        "index"
    ] == 1
    verdicts = ["accepted", "wrong_answer", "accepted"]
    before = verl_dump(tmp_path / "before", tmp_path / "train.parquet", verdicts, with_problem_id=False)
    after = verl_dump(tmp_path / "after", tmp_path / "problems.parquet", verdicts, with_problem_id=True)
    lines = 3 * SAMPLES
    with capsys.disabled():
        print(
            f"\nSTAGE 0 DUMP: {before / lines:,.0f} B per generation with the tests (verl's gts), {after / lines:,.0f} B without"
        )
    assert before / lines > TESTS_BYTES and after / lines < 2_000
    assert all(json.loads(line)["gts"] == "" for line in (tmp_path / "after" / "0.jsonl").open())
    out = tmp_path / "filtered.parquet"
    assert offline_filter.filter_generations(tmp_path / "after", tmp_path / "train.parquet", out) == 0
    kept = [row["problem_id"] for row in pq.read_table(out).column("extra_info").to_pylist()]
    assert kept == ["b"]  # a and c: every rollout accepted, dropped
    assert "24 generations of 3 of the 3 problems (generations per problem: {8: 3}" in capsys.readouterr().out
    # the run plan's figure for stage 0 (configs/offline_filter.yaml): G lines of prompt and response text per problem
    per_problem = offline_filter.bytes_per_problem(compose_experiment("offline_filter", ["data.val_files=x"]))
    assert 8 * 8_000 * 4 < per_problem < 8 * 10_000 * 4  # 8 x (700 + 8,192 tokens) x 4 B + keys


def test_a_dump_without_problem_ids_or_of_other_data_is_refused_naming_the_line(tmp_path):
    write_parquet(tmp_path / "train.parquet", [("a", "T1")])
    verl_dump(tmp_path / "gts_only", tmp_path / "train.parquet", ["accepted"], with_problem_id=False)
    with pytest.raises(ValueError, match=r"0.jsonl:1: a stage 0 generation line needs 'problem_id' .*stage0_reward"):
        offline_filter.rollout_lines(tmp_path / "gts_only", {"a"})
    write_parquet(tmp_path / "other.parquet", [("z", "T9")])
    verl_dump(tmp_path / "other", tmp_path / "other.parquet", ["accepted"], with_problem_id=True)
    with pytest.raises(ValueError, match="problem z is not in the training data"):
        offline_filter.rollout_lines(tmp_path / "other", {"a"})


def test_prepare_refuses_rows_without_a_problem_id_and_an_empty_dump_is_an_error(tmp_path):
    table = pa.table({"reward_model": [{"style": "rule", "ground_truth": "T"}], "extra_info": [{"index": 0}]})
    pq.write_table(table, tmp_path / "train.parquet")
    with pytest.raises(ValueError, match="row 0 has no extra_info.problem_id"):
        offline_filter.prepare(tmp_path / "train.parquet", tmp_path / "problems.parquet")
    assert not (tmp_path / "problems.parquet").exists()
    (tmp_path / "gen").mkdir()
    with pytest.raises(FileNotFoundError, match="dumped no generations"):
        offline_filter.rollout_lines(tmp_path / "gen", set())
