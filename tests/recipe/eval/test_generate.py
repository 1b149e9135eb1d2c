"""The generation path with a fake engine in place of vLLM: caching, resumption, settings, seeds, YaRN overrides."""

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from recipe.nouscoder.eval import eval_lcb
from recipe.nouscoder.eval.cache import AppendOnlyJsonl, read_records
from recipe.nouscoder.eval.data import EvalProblem
from recipe.nouscoder.eval.generate import (
    Generation,
    GenerationSettings,
    Request,
    generate_missing,
    keep_rope_theta,
    read_generations,
    request_seed,
    shard_by_problem,
    yarn_hf_overrides,
)

CORRECT = "Done.\n\n```python\nprint(int(input()) * 2)\n```\n"
WRONG = "Done.\n\n```python\nprint(0)\n```\n"


class FakeEngine:
    """Answers correctly for sample indices below the problem's number in its id; records every request."""

    calls: list[list[tuple[str, int]]] = []

    def __init__(self, settings: GenerationSettings) -> None:
        self.settings = settings

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Generation]:
        FakeEngine.calls.append([(request.problem_id, request.sample_index) for request in requests])
        out = []
        for request in requests:
            solved = request.sample_index < int(request.problem_id.rsplit("_", 1)[1])
            text = CORRECT if solved else WRONG
            out.append(Generation(text, 50 + request.sample_index, "stop" if solved else "length", 12))
        return out


def _problems(count: int) -> list[EvalProblem]:
    return [
        EvalProblem(f"p_{i}", "test", ({"role": "user", "content": f"q{i}"},), "easy", "atcoder", "2024-09-01")
        for i in range(count)
    ]


def test_generation_resumes_only_missing_samples(tmp_path: Path) -> None:
    settings = GenerationSettings(model="fake", n=3, chunk_size=2, data_parallel_size=1)
    FakeEngine.calls = []
    assert generate_missing(_problems(3), settings, tmp_path, FakeEngine) == 9
    assert sum(len(call) for call in FakeEngine.calls) == 9 and max(len(call) for call in FakeEngine.calls) == 2
    cache = tmp_path / "rank-0.jsonl"
    lines = cache.read_text().splitlines()
    cache.write_text("\n".join(lines[:4]) + "\n" + lines[4][:20])  # a kill mid-line after 4 samples
    FakeEngine.calls = []
    assert generate_missing(_problems(3), settings, tmp_path, FakeEngine) == 5
    assert sorted(key for call in FakeEngine.calls for key in call) == sorted(
        (f"p_{i}", j) for i in range(3) for j in range(3) if i * 3 + j >= 4
    )
    records = read_generations(tmp_path)
    assert len(records) == 9 and all(line.endswith("}") for line in cache.read_text().splitlines())
    assert records[("p_2", 1)]["completion"] == CORRECT and records[("p_1", 2)]["finish_reason"] == "length"
    assert generate_missing(_problems(3), settings, tmp_path, FakeEngine) == 0


def test_resuming_with_other_sampling_settings_is_refused(tmp_path: Path) -> None:
    generate_missing(_problems(1), GenerationSettings(model="fake", n=1, data_parallel_size=1), tmp_path, FakeEngine)
    with pytest.raises(ValueError, match="temperature"):
        generate_missing(
            _problems(1),
            GenerationSettings(model="fake", n=1, temperature=1.0, data_parallel_size=1),
            tmp_path,
            FakeEngine,
        )
    # more samples of the same distribution is a resumption, not a change
    more = GenerationSettings(model="fake", n=2, data_parallel_size=1)
    assert generate_missing(_problems(1), more, tmp_path, FakeEngine) == 1


def test_cli_model_path_generates_grades_and_reports(tmp_path: Path) -> None:
    import pandas as pd

    ground_truth = json.dumps(
        {
            "tests": [
                {"input": "3\n", "output": "6\n", "testtype": "stdin"},
                {"input": "5\n", "output": "10\n", "testtype": "stdin"},
            ]
        }
    )
    rows = [
        {
            "data_source": "livecodebench",
            "prompt": [{"role": "user", "content": f"double it {i}"}],
            "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": ground_truth},
            "extra_info": {
                "problem_id": f"p_{i}",
                "difficulty": "easy",
                "platform": "atcoder",
                "contest_date": "2024-09-01T00:00:00",
            },
        }
        for i in range(3)
    ]
    data = tmp_path / "test.parquet"
    pd.DataFrame(rows).to_parquet(data)
    out = tmp_path / "out"
    argv = [
        "--model",
        "fake",
        "--data",
        str(data),
        "--out",
        str(out),
        "--n",
        "4",
        "--yarn-factor",
        "2.5",
        "--workers",
        "2",
        "--time-limit-s",
        "4",
        "--data-parallel-size",
        "1",
    ]
    assert eval_lcb.main(argv, make_engine=FakeEngine) == 0
    results = json.loads((out / "results.json").read_text())
    assert [row["correct"] for row in results["problems"]] == [0, 1, 2]
    assert results["summary"]["pass_at_k"]["1"] == pytest.approx((0 + 1 / 4 + 2 / 4) / 3)
    assert results["summary"]["pass_at_k"]["2"] == pytest.approx((0 + (1 - 3 / 6) + (1 - 1 / 6)) / 3)
    assert results["settings"]["length_unit"] == "tokens"
    assert results["settings"]["effective_max_model_len"] == 81920
    assert results["settings"]["effective_hf_overrides"]["rope_scaling"]["factor"] == 2.5
    assert results["settings"]["yarn_factor"] == 2.5 and results["settings"]["context"] == "81920 (YaRN x2.5)"
    assert results["summary"]["overlong_ratio"] == pytest.approx(9 / 12)
    assert len(read_records([out / "graded.jsonl"])) == 12


def test_request_seeds_shards_and_yarn_overrides() -> None:
    assert request_seed(0, "p", 1) == request_seed(0, "p", 1)
    assert len({request_seed(0, "p", index) for index in range(100)}) == 100
    assert request_seed(1, "p", 1) != request_seed(0, "p", 1)
    requests = [Request(f"p{i}", j, ()) for i in range(5) for j in range(3)]
    shards = shard_by_problem(requests, 2)
    assert sorted(r.problem_id for r in shards[0]) == ["p0"] * 3 + ["p2"] * 3 + ["p4"] * 3
    assert sum(len(shard) for shard in shards) == 15
    assert yarn_hf_overrides(2.0, 40960) == {
        "rope_scaling": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 40960},
        "max_position_embeddings": 81920,
    }
    settings = GenerationSettings(model="m", yarn_factor=2.5, hf_overrides={"max_position_embeddings": 90000})
    assert settings.effective_max_model_len() == 81920  # 2.5 x Qwen3's 32,768 native positions (the default)
    assert settings.effective_hf_overrides()["max_position_embeddings"] == 90000
    with pytest.raises(ValueError, match="> 1"):
        yarn_hf_overrides(1.0, 40960)


def test_append_only_cache_repairs_a_cut_line(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    path.write_text('{"problem_id": "a", "sample_index": 0, "v": 1}\n{"problem_id": "a", "sampl')
    with AppendOnlyJsonl(path) as cache:
        cache.append({"problem_id": "a", "sample_index": 1, "v": 2})
    assert path.read_text().count("\n") == 2
    assert {key: record["v"] for key, record in read_records([path]).items()} == {("a", 0): 1, ("a", 1): 2}


SPAWNED_ENGINE = """
import os
from recipe.nouscoder.eval.generate import Generation


class EnvEngine:
    def __init__(self, settings):
        self.gpus = os.environ["CUDA_VISIBLE_DEVICES"]

    def generate(self, requests, settings):
        return [Generation(f"{self.gpus} pid {os.getpid()}", 1, "stop", 1) for _ in requests]
"""


def test_data_parallel_ranks_are_spawned_processes_with_their_own_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lcb_spawned_engine.py").write_text(SPAWNED_ENGINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5,6,7")
    from lcb_spawned_engine import EnvEngine

    settings = GenerationSettings(model="fake", n=2, tensor_parallel_size=2)  # 4 GPUs / 2 = 2 ranks
    assert generate_missing(_problems(4), settings, tmp_path / "cache", EnvEngine) == 8
    records = read_generations(tmp_path / "cache")
    assert sorted(path.name for path in (tmp_path / "cache").glob("rank-*.jsonl")) == ["rank-0.jsonl", "rank-1.jsonl"]
    by_problem = {pid: records[(pid, 0)]["completion"].split(" pid ") for pid in ("p_0", "p_1", "p_2", "p_3")}
    assert by_problem["p_0"][0] == by_problem["p_2"][0] == "3,5"
    assert by_problem["p_1"][0] == by_problem["p_3"][0] == "6,7"
    assert by_problem["p_0"][1] != by_problem["p_1"][1]  # two engine processes
    with pytest.raises(ValueError, match="needs more GPUs"):
        generate_missing(
            _problems(5),
            GenerationSettings(model="fake", n=2, data_parallel_size=3, tensor_parallel_size=2),
            tmp_path / "cache",
            EnvEngine,
        )


def test_yarn_override_keeps_the_models_rope_theta(tmp_path: Path) -> None:
    from transformers import AutoConfig, Qwen2Config

    Qwen2Config(rope_theta=1_000_000.0, max_position_embeddings=40960).save_pretrained(tmp_path)
    overrides = keep_rope_theta(yarn_hf_overrides(2.0, 40960), str(tmp_path))
    assert overrides["rope_scaling"]["rope_theta"] == 1_000_000.0
    config = AutoConfig.from_pretrained(tmp_path)
    config.update(overrides)  # what an hf_overrides dict does to the config
    assert config.rope_parameters["rope_type"] == "yarn" and config.rope_parameters["rope_theta"] == 1_000_000.0
