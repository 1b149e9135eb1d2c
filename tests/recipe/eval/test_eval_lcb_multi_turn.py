"""eval_lcb --turns: conversations with public-test feedback, single-turn and multi-turn pass@k from one run."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
import pytest

from recipe.nouscoder.eval import eval_lcb
from recipe.nouscoder.eval.cache import read_records
from recipe.nouscoder.eval.generate import Generation, GenerationSettings, Request, request_seed

PUBLIC = json.dumps({"tests": [{"input": "3\n", "output": "6\n", "testtype": "stdin"}]})
HIDDEN = json.dumps({"tests": [{"input": "5\n", "output": "10\n"}, {"input": "-4\n", "output": "-8\n"}]})
WRONG = "```python\nprint(int(input()) + 2)\n```"
RIGHT = "Fixed.\n```python\nprint(int(input()) * 2)\n```"
SQUARE = "```python\nprint(int(input()) ** 2)\n```"


def words(text: str) -> list[int]:
    """Fake token ids: one per word."""
    return [len(word) for word in text.split()]


class ScriptedEngine:
    """p_0: wrong, then right after feedback; p_1: right at once; p_2 (no public tests): wrong, single-turn."""

    requests: list[Request] = []

    def __init__(self, settings: GenerationSettings) -> None:
        self.settings = settings

    def prompt_ids(self, messages: Sequence[dict[str, str]]) -> list[int]:
        return [token for message in messages for token in [0, *words(message["content"]), 0]]

    def append_user_turn(self, token_ids, messages, content) -> list[int]:
        return [*token_ids, 0, *words(content), 0, 0]

    def generate(self, requests: Sequence[Request], settings: GenerationSettings) -> list[Generation]:
        ScriptedEngine.requests.extend(requests)
        texts = {"p_0": [WRONG, RIGHT], "p_1": [RIGHT], "p_2": [SQUARE]}
        out = []
        for request in requests:
            text = texts[request.problem_id][request.turn]
            prompt = len(request.prompt_token_ids)
            out.append(Generation(text, len(words(text)), "stop", prompt, tuple(words(text))))
        return out


def write_data(tmp_path):
    rows = [
        {
            "data_source": "livecodebench",
            "prompt": [{"role": "user", "content": f"double the number {i}"}],
            "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": HIDDEN},
            "extra_info": {
                "problem_id": f"p_{i}",
                "difficulty": "easy",
                "platform": "atcoder",
                "contest_date": "2024-09-01T00:00:00",
                "public_tests": PUBLIC if i < 2 else "",
            },
        }
        for i in range(3)
    ]
    data = tmp_path / "test.parquet"
    pd.DataFrame(rows).to_parquet(data)
    return data


def test_multi_turn_evaluation_reports_first_and_final_turns(tmp_path) -> None:
    data, out = write_data(tmp_path), tmp_path / "out"
    argv = [
        "--model",
        "fake",
        "--data",
        str(data),
        "--out",
        str(out),
        "--n",
        "2",
        "--turns",
        "3",
        "--max-tokens",
        "400",
        "--workers",
        "2",
        "--time-limit-s",
        "4",
        "--data-parallel-size",
        "1",
        "--min-turn-tokens",
        "8",
    ]
    ScriptedEngine.requests = []
    assert eval_lcb.main(argv, make_engine=ScriptedEngine) == 0
    requests = ScriptedEngine.requests
    assert sorted((r.problem_id, r.turn) for r in requests) == sorted(
        [("p_0", 0)] * 2 + [("p_0", 1)] * 2 + [("p_1", 0)] * 2 + [("p_2", 0)] * 2
    )
    revision = next(r for r in requests if r.turn == 1)
    assert [m["role"] for m in revision.messages] == ["user", "assistant", "user"]
    assert revision.messages[1]["content"] == WRONG
    feedback = revision.messages[2]["content"]
    assert feedback.startswith("Your program failed public test 1 of 1: wrong answer.")
    engine = ScriptedEngine(GenerationSettings(model="fake"))
    prompt = engine.prompt_ids(revision.messages[:1])
    assert list(revision.prompt_token_ids) == engine.append_user_turn(prompt + words(WRONG), [], feedback)
    used = len(revision.prompt_token_ids) - len(prompt)
    assert revision.max_tokens == 400 - used and all(r.max_tokens == 400 for r in requests if r.turn == 0)

    results = json.loads((out / "results.json").read_text())
    multi = results["summary"]["multi_turn"]
    assert multi["single_turn_pass_at_k"]["1"] == pytest.approx(1 / 3)
    assert multi["multi_turn_pass_at_k"]["1"] == pytest.approx(2 / 3) == results["summary"]["pass_at_k"]["1"]
    metrics = multi["metrics"]
    assert metrics["turns/mean"] == pytest.approx(4 / 3) and metrics["turns/hist_2"] == pytest.approx(1 / 3)
    assert metrics["public_pass_rate/turn_1"] == pytest.approx(0.5) and metrics["public_pass_rate/turn_2"] == 1.0
    assert metrics["feedback/given"] == 2 and metrics["feedback/fixed_rate"] == 1.0
    assert metrics["hidden_pass_rate/first_turn"] == pytest.approx(1 / 3)
    assert metrics["stop_reason/no_public_tests"] == 2 and metrics["stop_reason/public_passed"] == 4
    assert len(read_records([out / "graded_first_turn.jsonl"])) == 6
    report = (out / "report.md").read_text()
    assert "| first turn (single-turn) | 33.33% |" in report and "| final turn (multi-turn) | 66.67% |" in report

    ScriptedEngine.requests = []  # a rerun resumes from the caches: nothing generated again
    assert eval_lcb.main(argv, make_engine=ScriptedEngine) == 0 and ScriptedEngine.requests == []


def test_first_turn_seed_is_the_single_turn_seed_and_turns_reject_completions(tmp_path) -> None:
    assert request_seed(3, "p", 1, turn=0) == request_seed(3, "p", 1) != request_seed(3, "p", 1, turn=1)
    completions = tmp_path / "c.jsonl"
    completions.write_text(json.dumps({"problem_id": "p_0", "completion": RIGHT}) + "\n")
    with pytest.raises(SystemExit):
        eval_lcb.parse_args(["--completions", str(completions), "--data", str(write_data(tmp_path)), "--turns", "2"])
