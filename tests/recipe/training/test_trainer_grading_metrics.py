"""grading/* metrics of a training step: the nouscoder_sync trainer's real ``step`` reads the trained rollouts from
TransferQueue (rows laid out by verl's own ``AgentLoopOutput.as_dict``, reward dicts in
``extra_fields["reward_extra_info"]`` as verl's agent loop stores them) and logs the grading metrics of the Ray
pool path (``reward_fns.async_score``) and of the synchronous path (``reward_fns.score``); expected values are
computed by hand in the comments."""

import pytest
import torch
import verl
from omegaconf import OmegaConf
from tensordict import NonTensorData
from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput
from verl.trainer.ppo.v1 import PPOTrainerSync

from recipe.nouscoder.extra_fields import reward_infos_from_extra_fields
from recipe.nouscoder.training.trainer import NousCoderSyncTrainer

VERL_CONFIG = f"{verl.__path__[0]}/trainer/config/_generated_ppo_trainer.yaml"
VERDICTS = [
    "accepted",
    "wrong_answer",
    "time_limit",
    "memory_limit",
    "runtime_error",
    "output_limit",
    "no_code",
    "compile_error",
    "internal_error",
]
POOL_ONLY = ["latency_s/p50", "latency_s/p95", "latency_s/max", "queue_depth/mean", "queue_depth/max"]
POOL_ONLY += ["worker_restarts", "regraded"]


def make_trainer(tmp_path) -> NousCoderSyncTrainer:
    config = OmegaConf.merge(
        OmegaConf.load(VERL_CONFIG), {"nouscoder": OmegaConf.load("configs/nouscoder/extensions.yaml")}
    )
    config.trainer.v1.trainer_mode = "nouscoder_sync"
    config.trainer.default_local_dir = str(tmp_path / "ckpt")
    config.actor_rollout_ref.actor.ppo_mini_batch_size = 2
    config.actor_rollout_ref.rollout.response_length = 8
    config.algorithm.adv_estimator = "grpo"
    OmegaConf.set_struct(config, True)
    trainer = NousCoderSyncTrainer(config)
    trainer.global_steps = 1  # as verl's fit sets it before the first step
    return trainer


def agent_loop_row(uid: str, session: int, response: list[int], score: float, reward_info: dict | None) -> dict:
    """One TransferQueue row as verl's ``AgentLoopWorkerTQ._agent_loop_postprocess`` writes it (plus advantages)."""
    extra_fields = {"turn_scores": [], "tool_rewards": []}
    if reward_info is not None:
        extra_fields["reward_extra_info"] = reward_info
    output = AgentLoopOutput(
        prompt_ids=[1, 2, 3],
        response_ids=response,
        response_mask=[1] * len(response),
        reward_score=score,
        num_turns=2,
        metrics=AgentLoopMetrics(),
        extra_fields=extra_fields,
    )
    row = output.as_dict()
    row.update(uid=uid, session_id=session, extra_info={"problem_id": f"problem-{uid}"}, global_steps=1)
    row["advantages"] = torch.zeros(len(response))
    return row


def pool_info(verdict, passed, total, executed, latency, depth, regraded, restarts) -> dict:
    """The dict ``reward_fns.async_score.compute_score`` returns (score_dict keys + pool keys)."""
    return {
        "score": 1.0 if verdict == "accepted" else -1.0,
        "acc": verdict == "accepted",
        "verdict": verdict,
        "passed": passed,
        "total": total,
        "time_s": 0.1,
        "max_test_time_s": 0.01,
        "internal_error": verdict == "internal_error",
        "tests_executed": executed,
        "latency_s": latency,
        "queue_depth": depth,
        "regraded": regraded,
        "worker_restarts": restarts,
    }


def sync_info(verdict, passed, total) -> dict:
    """The dict ``reward_fns.score.compute_score`` returns (no pool keys, no tests_executed)."""
    return {
        "score": 1.0 if verdict == "accepted" else -1.0,
        "acc": verdict == "accepted",
        "verdict": verdict,
        "passed": passed,
        "total": total,
        "time_s": 0.2,
        "max_test_time_s": 0.02,
        "internal_error": verdict == "internal_error",
    }


def run_step(trainer, tq_store, monkeypatch, rows: dict[str, dict], padding: set[str] = frozenset()) -> dict:
    """verl's step stubbed to return the meta of ``rows``; the nouscoder ``step`` then observes them."""
    meta = tq_store.put_rows("train", rows, tags={key: {"is_padding": True} for key in padding})
    monkeypatch.setattr(PPOTrainerSync, "step", lambda self, metrics, timing_raw: meta)
    metrics = {}
    assert trainer.step(metrics, {}) is meta
    return metrics


def test_pool_path_logs_every_grading_metric_from_extra_fields(tmp_path, tq_store, monkeypatch):
    trainer = make_trainer(tmp_path)
    rows = {
        "a_0_0": agent_loop_row("a", 0, [5, 6, 7], 1.0, pool_info("accepted", 10, 10, 10, 0.5, 0, False, 0)),
        "a_1_0": agent_loop_row("a", 1, [5, 6], -1.0, pool_info("wrong_answer", 3, 10, 4, 2.0, 3, False, 1)),
        "a_2_0": agent_loop_row("a", 2, [8], -1.0, pool_info("time_limit", 0, 10, 1, 9.0, 5, True, 1)),
        "b_0_0": agent_loop_row("b", 0, [9, 9], -1.0, pool_info("no_code", 0, 4, 0, 0.1, 0, False, 1)),
        "b_1_0": agent_loop_row("b", 1, [4], -1.0, pool_info("internal_error", 0, 4, 0, 30.0, -1, True, 2)),
        "b_2_0": agent_loop_row("b", 2, [4, 4, 4], -1.0, None),  # no reward info: left out of grading/*
        "pad_0": agent_loop_row("a", 0, [5, 6, 7], 1.0, pool_info("accepted", 10, 10, 10, 99.0, 9, True, 7)),
    }
    metrics = run_step(trainer, tq_store, monkeypatch, rows, padding={"pad_0"})

    # one TransferQueue read for the whole observation, extra_fields included, padding row left out
    assert len(tq_store.get_calls) == 1
    keys, fields = tq_store.get_calls[0]
    assert "pad_0" not in keys and "extra_fields" in fields

    counts = {verdict: metrics[f"grading/verdict/{verdict}"] for verdict in VERDICTS}
    assert counts == {verdict: 0.0 for verdict in VERDICTS} | {
        "accepted": 1.0,
        "wrong_answer": 1.0,
        "time_limit": 1.0,
        "no_code": 1.0,
        "internal_error": 1.0,
    }
    assert metrics["grading/tests_executed/mean"] == pytest.approx((10 + 4 + 1 + 0 + 0) / 5)  # 3.0
    assert metrics["grading/tests_total/mean"] == pytest.approx((10 + 10 + 10 + 4 + 4) / 5)  # 7.6
    assert metrics["grading/tests_saved_frac"] == pytest.approx(1 - 15 / 38)
    # latencies sorted 0.1 0.5 2.0 9.0 30.0: nearest rank p50 = 3rd, p95 = ceil(4.75) = 5th
    assert metrics["grading/latency_s/p50"] == 2.0
    assert metrics["grading/latency_s/p95"] == 30.0
    assert metrics["grading/latency_s/max"] == 30.0
    assert metrics["grading/queue_depth/mean"] == pytest.approx((0 + 3 + 5 + 0) / 4)  # -1 = unknown, left out
    assert metrics["grading/queue_depth/max"] == 5.0
    assert metrics["grading/worker_restarts"] == 2.0  # cumulative counter: the latest (largest) value
    assert metrics["grading/internal_errors"] == 1.0
    assert metrics["grading/regraded"] == 2.0
    # the step's other metrics are still there
    assert metrics["nouscoder/pass_rate"] == pytest.approx(1 / 6)
    assert metrics["nouscoder/groups/total"] == 2.0


def test_sync_grader_path_derives_tests_executed_and_logs_no_pool_counters(tmp_path, tq_store, monkeypatch):
    trainer = make_trainer(tmp_path)
    rows = {
        "a_0_0": agent_loop_row("a", 0, [5, 6], 1.0, sync_info("accepted", 5, 5)),  # 5 run
        "a_1_0": agent_loop_row("a", 1, [5], -1.0, sync_info("wrong_answer", 2, 5)),  # 2 passed + the failing one
        "a_2_0": agent_loop_row("a", 2, [7], -1.0, sync_info("runtime_error", 0, 5)),  # the failing first test
        "b_0_0": agent_loop_row("b", 0, [7], -1.0, sync_info("compile_error", 0, 5)),  # no test ran
        "b_1_0": agent_loop_row("b", 1, [7], -1.0, sync_info("internal_error", 0, 0)),  # bad ground truth
    }
    metrics = run_step(trainer, tq_store, monkeypatch, rows)

    assert metrics["grading/verdict/accepted"] == 1.0
    assert metrics["grading/verdict/wrong_answer"] == 1.0
    assert metrics["grading/verdict/runtime_error"] == 1.0
    assert metrics["grading/verdict/compile_error"] == 1.0
    assert metrics["grading/verdict/internal_error"] == 1.0
    assert metrics["grading/verdict/time_limit"] == 0.0
    assert metrics["grading/tests_executed/mean"] == pytest.approx((5 + 3 + 1 + 0 + 0) / 5)  # 1.8
    assert metrics["grading/tests_total/mean"] == pytest.approx((5 + 5 + 5 + 5 + 0) / 5)  # 4.0
    assert metrics["grading/tests_saved_frac"] == pytest.approx(1 - 9 / 20)
    assert metrics["grading/internal_errors"] == 1.0
    assert not [name for name in POOL_ONLY if f"grading/{name}" in metrics]


def test_steps_without_grader_info_log_no_grading_metrics(tmp_path, tq_store, monkeypatch):
    trainer = make_trainer(tmp_path)
    rows = {
        # a reward function returning a bare float: verl's naive manager stores {"acc": score}
        "a_0_0": agent_loop_row("a", 0, [5, 6], 1.0, {"acc": 1.0}),
        "a_1_0": agent_loop_row("a", 1, [5], -1.0, None),
    }
    metrics = run_step(trainer, tq_store, monkeypatch, rows)
    assert not [name for name in metrics if name.startswith("grading/")]
    assert metrics["nouscoder/pass_rate"] == 0.5

    # rows stored without any extra_fields (older TransferQueue rows): the step still logs its other metrics
    bare = {key: {name: value for name, value in row.items() if name != "extra_fields"} for key, row in rows.items()}
    trainer = make_trainer(tmp_path)
    metrics = run_step(trainer, tq_store, monkeypatch, {f"bare_{key}": row for key, row in bare.items()})
    assert not [name for name in metrics if name.startswith("grading/")]
    assert metrics["nouscoder/groups/total"] == 1.0


def test_reward_infos_unwrap_transfer_queue_elements():
    infos = reward_infos_from_extra_fields(
        [
            NonTensorData({"reward_extra_info": {"verdict": "accepted"}}),
            {"reward_extra_info": {"verdict": "no_code"}},
            {"turn_scores": []},
            None,
        ]
    )
    assert infos == [{"verdict": "accepted"}, {"verdict": "no_code"}, {}, {}]
