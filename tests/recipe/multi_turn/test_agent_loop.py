"""The public-test feedback agent loop with scripted turns, on CPU: real tokenizer and chat template, real grader.

The rollout server is replaced by a script (each call returns the next answer's tokens); everything else is the
code that runs in training: verl's continuous-token merges, the sandboxed grader on the public tests, the feedback
message, verl's own ``AgentLoopWorkerTQ._agent_loop_postprocess`` turning the output into the TransferQueue row the
trainer reads, and ``reward_fns.compute_score`` on that row.
"""

from __future__ import annotations

import asyncio
import json

import pytest
import transfer_queue
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import DictConfigWrap
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder
from verl.workers.rollout.replica import TokenOutput

from recipe.nouscoder.cpu.tiny_model import sample_program_texts, train_tokenizer
from recipe.nouscoder.eval.multi_turn import continue_with_user_turn
from recipe.nouscoder.multi_turn.agent_loop import PublicTestFeedbackAgentLoop, check_reward_manager
from recipe.nouscoder.multi_turn.options import MultiTurnOptions
from recipe.nouscoder.multi_turn.public_tests import public_grader_for
from reward_fns.score import compute_score

STATEMENT = "Read two integers a and b on one line and print a + b.\n\n## Example\n\nInput: 1 2\nOutput: 3\n"
PUBLIC = {"tests": [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]}
HIDDEN = {
    "tests": [
        {"input": "918273 645546\n", "output": "1563819\n", "testtype": "stdin"},
        {"input": "-777001 3\n", "output": "-776998\n", "testtype": "stdin"},
    ]
}
WRONG = "```python\na, b = map(int, input().split())\nprint(a - b)\n```"
RIGHT = "I fixed the sign.\n```python\na, b = map(int, input().split())\nprint(a + b)\n```"
EXPECTED_FEEDBACK = (
    "Your program failed public test 1 of 1: wrong answer.\n\n"
    "Input:\n```text\n1 2\n```\n\n"
    "Expected output:\n```text\n3\n```\n\n"
    "Your output:\n```text\n-1\n```\n\n"
    "Fix the program and reply with the complete corrected program in a ```python code block."
)
"""The feedback after WRONG, written out by hand."""


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer([STATEMENT, WRONG, RIGHT, EXPECTED_FEEDBACK, *sample_program_texts()], vocab_size=1024)


class ScriptedServer:
    """Stands in for verl's LLM server client: each ``generate`` returns the next scripted answer's tokens + EOS."""

    def __init__(self, tokenizer, answers: list[str]):
        self.tokenizer = tokenizer
        self.answers = list(answers)
        self.calls: list[dict] = []
        self.answer_tokens: list[list[int]] = []

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        self.calls.append({"request_id": request_id, "prompt_ids": list(prompt_ids), **sampling_params})
        tokens = self.tokenizer(self.answers.pop(0), add_special_tokens=False)["input_ids"] + [
            self.tokenizer.eos_token_id
        ]
        self.answer_tokens.append(tokens)
        return TokenOutput(token_ids=tokens, log_probs=[-0.25] * len(tokens), extra_fields={"global_steps": 7})


class GradingSpy:
    """The real local public grader, recording every ground truth it was asked to grade on."""

    def __init__(self, grader):
        self.grader = grader
        self.config = grader.config
        self.truths: list[str] = []

    async def grade(self, response, ground_truth):
        self.truths.append(ground_truth)
        return await self.grader.grade(response, ground_truth)


def trainer_config(response_length: int = 400, **multi_turn):
    rollout = {"prompt_length": 256, "response_length": response_length, "full_determinism": False}
    return OmegaConf.create(
        {
            "actor_rollout_ref": {"rollout": rollout},
            "nouscoder": {"multi_turn": {"max_turns": 2, "min_turn_tokens": 8, **multi_turn}},
            "reward": {
                "custom_reward_function": {
                    "path": "pkg://reward_fns.verl_reward",
                    "reward_kwargs": {"time_limit_s": 5.0},
                }
            },
        }
    )


def run_loop(tokenizer, answers: list[str], response_length: int = 400, **multi_turn):
    """One trajectory; returns (output, server, grading spy, the row's kwargs)."""
    config = trainer_config(response_length, **multi_turn)
    server = ScriptedServer(tokenizer, answers)
    spy = GradingSpy(public_grader_for(config, "local"))
    row = {
        "raw_prompt": [{"role": "user", "content": STATEMENT}],
        "extra_info": {"problem_id": "add_two", "public_tests": json.dumps(PUBLIC)},
        "reward_model": {"style": "rule", "ground_truth": json.dumps(HIDDEN)},
        "data_source": "test",
    }

    async def main():
        loop = PublicTestFeedbackAgentLoop(
            trainer_config=DictConfigWrap(config),
            server_manager=server,
            tokenizer=tokenizer,
            processor=None,
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(OmegaConf.create({})),
            hf_model_type="qwen2",
        )
        loop.grader = spy
        return await loop.run({"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}, **row)

    return asyncio.run(main()), server, spy, row


def segments(mask: list[int]) -> list[tuple[int, int, int]]:
    """(value, start, end) runs of a 0/1 mask."""
    runs, start = [], 0
    for position in range(1, len(mask) + 1):
        if position == len(mask) or mask[position] != mask[start]:
            runs.append((mask[start], start, position))
            start = position
    return runs


def test_wrong_then_right_feedback_text_masks_and_stop(tokenizer):
    output, server, spy, _ = run_loop(tokenizer, [WRONG, RIGHT])
    record = output.extra_fields["multi_turn"]
    assert len(server.calls) == 2 and record["turns"] == 2 and record["stop_reason"] == "public_passed"
    assert record["public_passed"] == [False, True] and record["public_verdicts"] == ["wrong_answer", "accepted"]
    assert record["final_program"] == "a, b = map(int, input().split())\nprint(a + b)"
    assert record["first_turn_hidden_accepted"] is False
    # the public checks graded the public test only; the one hidden grading is the first turn's (metric)
    assert [json.loads(truth) for truth in spy.truths] == [PUBLIC, HIDDEN, PUBLIC]
    # model tokens trained (mask 1, the server's log-probs), feedback tokens not (mask 0, log-prob 0)
    runs = segments(output.response_mask)
    assert [value for value, _, _ in runs] == [1, 0, 1]
    (_, a0, a1), (_, f0, f1), (_, b0, b1) = runs
    assert output.response_ids[a0:a1] == server.answer_tokens[0]
    assert output.response_ids[b0:b1] == server.answer_tokens[1]
    assert output.response_logprobs[a0:a1] == [-0.25] * (a1 - a0) and set(output.response_logprobs[f0:f1]) == {0.0}
    feedback = tokenizer.decode(output.response_ids[f0:f1])
    assert feedback == f"\n<|im_start|>user\n{EXPECTED_FEEDBACK}<|im_end|>\n<|im_start|>assistant\n"
    assert record["feedback_tokens"] == f1 - f0 and record["turn_tokens"] == [a1 - a0, b1 - b0]
    # the second request is the whole conversation so far, within what is left of the trajectory budget
    assert server.calls[1]["prompt_ids"] == output.prompt_ids + output.response_ids[:f1]
    assert server.calls[0]["max_tokens"] == 400 and server.calls[1]["max_tokens"] == 400 - f1
    assert server.calls[0]["request_id"] == server.calls[1]["request_id"]
    assert output.num_turns == 4 and output.extra_fields["global_steps"] == 7


def test_the_evaluation_continues_a_conversation_with_the_tokens_of_training(tokenizer):
    """eval_lcb --turns builds a revision's prompt with the same continuous-token merge as the agent loop."""
    output, server, _, row = run_loop(tokenizer, [WRONG, RIGHT])
    builder = create_continuous_token_builder(tokenizer, hf_model_type="qwen2")
    so_far = server.calls[0]["prompt_ids"] + server.answer_tokens[0]
    messages = [*row["raw_prompt"], {"role": "assistant", "content": WRONG}]
    assert continue_with_user_turn(builder, so_far, messages, EXPECTED_FEEDBACK) == server.calls[1]["prompt_ids"]


def test_trainer_row_masks_feedback_and_reward_grades_final_program_on_hidden_tests(tokenizer, monkeypatch):
    output, _, _, row = run_loop(tokenizer, [WRONG, RIGHT])
    stored = []

    async def put(keys, fields, tags, partition_id):
        stored.append((keys, fields))

    monkeypatch.setattr(transfer_queue, "async_kv_batch_put", put)
    worker = object.__new__(AgentLoopWorkerTQ.__ray_actor_class__)
    worker.__dict__.update(reward_loop_worker_handles=None, distillation_enabled=False, processor=None)
    kwargs = {**row, "uid": "u0", "session_id": 0, "global_steps": 1}
    asyncio.run(worker._agent_loop_postprocess(output, False, **kwargs))
    ((keys, fields),) = stored
    assert keys == ["u0_0_0"]
    loss_mask = fields["loss_mask"][0].tolist()
    responses = fields["responses"][0].tolist()
    assert loss_mask == output.response_mask and responses == output.response_ids
    trained = "".join(tokenizer.decode([token]) for token, keep in zip(responses, loss_mask, strict=True) if keep)
    assert "Your program failed" not in trained and "print(a + b)" in trained and "print(a - b)" in trained

    extra_info = {**row["extra_info"], **fields["extra_fields"][0]}  # as verl's naive reward manager merges them
    decoded = tokenizer.decode(responses, skip_special_tokens=True)
    scores = compute_score("test", decoded, row["reward_model"]["ground_truth"], extra_info, time_limit_s=5.0)
    assert scores["score"] == 1.0 and scores["passed"] == scores["total"] == 2


def test_reward_is_the_hidden_tests_of_the_final_program_only(tokenizer):
    # fails the public test on purpose, right on every hidden test: feedback twice, then graded +1 on hidden tests
    special_cased = "```python\na, b = map(int, input().split())\nprint(4 if (a, b) == (1, 2) else a + b)\n```"
    output, server, _, row = run_loop(tokenizer, [special_cased, special_cased])
    record = output.extra_fields["multi_turn"]
    assert record["stop_reason"] == "max_turns" and record["public_passed"] == [False, False]
    assert record["first_turn_hidden_accepted"] is True
    extra_info = {**row["extra_info"], **output.extra_fields}
    assert compute_score("test", "", row["reward_model"]["ground_truth"], extra_info)["score"] == 1.0
    # passes the public test, wrong on the hidden ones: stops at once, -1
    hardcoded = "```python\nprint(3)\n```"
    output, server, _, row = run_loop(tokenizer, [hardcoded])
    assert len(server.calls) == 1 and output.extra_fields["multi_turn"]["stop_reason"] == "public_passed"
    extra_info = {**row["extra_info"], **output.extra_fields}
    decoded_right = RIGHT  # the text a reward without the record would grade: the record decides
    assert compute_score("test", decoded_right, row["reward_model"]["ground_truth"], extra_info)["score"] == -1.0


def test_no_code_then_done_keeps_the_last_program_and_turn_penalty(tokenizer):
    output, server, _, row = run_loop(
        tokenizer, [RIGHT.replace("a + b", "a * b"), "I am confident.\nDONE"], allow_done=True, turn_penalty=0.25
    )
    record = output.extra_fields["multi_turn"]
    assert record["stop_reason"] == "done" and record["turns"] == 2
    assert record["final_program"].endswith("print(a * b)")
    feedback = tokenizer.decode(
        output.response_ids[segments(output.response_mask)[1][1] : segments(output.response_mask)[1][2]]
    )
    assert "reply with DONE alone instead" in feedback
    output, _, _, row = run_loop(tokenizer, ["no code here", RIGHT], turn_penalty=0.25)
    record = output.extra_fields["multi_turn"]
    assert record["public_verdicts"] == ["no_code", "accepted"]
    scores = compute_score(
        "test", "", row["reward_model"]["ground_truth"], {**row["extra_info"], **output.extra_fields}
    )
    assert scores["acc"] and scores["score"] == pytest.approx(1.0 - 0.25)


def test_token_budget_ends_the_trajectory_before_a_turn_that_cannot_fit(tokenizer):
    output, server, _, _ = run_loop(tokenizer, [WRONG, RIGHT], max_response_tokens=60, min_turn_tokens=40)
    record = output.extra_fields["multi_turn"]
    assert len(server.calls) == 1 and record["stop_reason"] == "token_budget" and record["feedback_tokens"] == 0
    assert set(output.response_mask) == {1}


def test_rows_without_public_tests_run_single_turn_and_bad_ones_are_counted(tokenizer):
    config = trainer_config()
    for public_tests, error in (("", False), ("{not json", True)):
        server = ScriptedServer(tokenizer, [WRONG])

        async def main(public_tests=public_tests, server=server):
            loop = PublicTestFeedbackAgentLoop(
                trainer_config=DictConfigWrap(config),
                server_manager=server,
                tokenizer=tokenizer,
                processor=None,
                dataset_cls=RLHFDataset,
                data_config=DictConfigWrap(OmegaConf.create({})),
                hf_model_type="qwen2",
            )
            return await loop.run(
                {"logprobs": False},
                raw_prompt=[{"role": "user", "content": STATEMENT}],
                extra_info={"problem_id": "p", "public_tests": public_tests},
                reward_model={"ground_truth": json.dumps(HIDDEN)},
            )

        record = asyncio.run(main()).extra_fields["multi_turn"]
        assert record["stop_reason"] == "no_public_tests" and record["turns"] == 1
        assert record["public_tests_error"] is error


def test_reward_managers_that_drop_extra_fields_are_refused():
    check_reward_manager(OmegaConf.create({"reward": {"reward_manager": {"name": "naive"}}}))
    with pytest.raises(ValueError, match="reward.reward_manager.name='dapo'"):
        check_reward_manager(OmegaConf.create({"reward": {"reward_manager": {"name": "dapo"}}}))


def test_options_are_checked():
    with pytest.raises(ValueError, match="turn_penalty"):
        MultiTurnOptions.from_mapping({"turn_penalty": 1.0, "max_turns": 3})
    with pytest.raises(ValueError, match="unknown option"):
        MultiTurnOptions.from_mapping({"max_turn": 3})
    with pytest.raises(ValueError, match="exceeds actor_rollout_ref.rollout.response_length"):
        MultiTurnOptions(max_response_tokens=500).token_budget(400)


SNOOP = (
    "import os, sys, time\n"
    "time.sleep(0.3)\n"
    "seen = [sys.stdin.read(), repr(dict(os.environ))]\n"
    "for top in ('.', '..', '/tmp', '/dev/shm', os.path.expanduser('~')):\n"
    "    for root, dirs, files in os.walk(top):\n"
    "        for name in files[:50]:\n"
    "            try:\n"
    "                seen.append(open(os.path.join(root, name), errors='replace').read(2000))\n"
    "            except Exception:\n"
    "                pass\n"
    "print('\\n'.join(seen))\n"
)
"""A program that prints everything it can reach while the same grader runs the hidden tests next to it."""


def test_no_hidden_test_content_in_any_feedback_while_hidden_grading_runs_alongside(tokenizer):
    snoop = f"```python\n{SNOOP}```"
    output, _, spy, _ = run_loop(
        tokenizer, [snoop, snoop, snoop], response_length=30000, max_turns=3, feedback_field_chars=100000
    )
    record = output.extra_fields["multi_turn"]
    assert record["turns"] == 3 and record["first_turn_hidden_accepted"] is False
    assert any("918273" in truth for truth in spy.truths)  # the hidden grading did run, in the same grader
    feedback = [
        tokenizer.decode(output.response_ids[start:end])
        for keep, start, end in segments(output.response_mask)
        if not keep
    ]
    assert len(feedback) == 2 and all("Your output:" in text for text in feedback)
    for text in feedback:
        for test in HIDDEN["tests"]:
            assert test["input"].strip() not in text and test["output"].strip() not in text
        assert "918273" not in text and "777001" not in text
