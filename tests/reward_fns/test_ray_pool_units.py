"""Pool pieces that need no Ray cluster: settings, worker placement, the problem cache, step metrics."""

import asyncio
import json
import math

import pytest
from ray.exceptions import ActorDiedError, ActorUnavailableError

from reward_fns.ray_pool import PoolConfig, dispatcher, grading_step_metrics, plan_workers, pool_config
from reward_fns.ray_pool.cache import ProblemCache, content_key, ground_truth_text
from reward_fns.ray_pool.metrics import columns_from_samples
from reward_fns.types import GroundTruthError


def node(node_id: str, cpus: float, gpus: float = 0, alive: bool = True) -> dict:
    resources = {"CPU": cpus} | ({"GPU": gpus} if gpus else {})
    return {"NodeID": node_id, "Alive": alive, "Resources": resources}


def test_pool_settings_from_kwargs_then_environment_then_defaults():
    config = pool_config(
        {"pool_granularity": "per_test", "pool_workers": "3", "time_limit_s": 9},
        environ={"REWARD_FNS_POOL_WORKERS": "7", "REWARD_FNS_POOL_GROUP_SIZE": "8"},
    )
    assert (config.granularity, config.workers, config.group_size) == ("per_test", 3, 8)
    assert config.call_deadline_s == PoolConfig().call_deadline_s


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pool_granularity": "per_token"}, "must be one of"),
        ({"pool_wokers": 2}, "unknown pool setting"),
        ({"pool_workers": "many"}, "pool_workers=.many. must be an integer"),
    ],
)
def test_bad_pool_settings_say_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pool_config(kwargs, environ={})


def test_workers_are_sized_from_each_nodes_cpus_minus_the_reserve():
    nodes = [node("gpu-a", 96, gpus=8), node("gpu-b", 96, gpus=8), node("dead", 96, alive=False), node("head", 0)]
    plan = plan_workers(PoolConfig(reserved_cpus_per_node=40), nodes)
    assert plan.count("gpu-a") == 56 and plan.count("gpu-b") == 56 and len(plan) == 112
    assert plan_workers(PoolConfig(reserved_cpus_per_node=40, worker_num_cpus=2.0), nodes).count("gpu-a") == 28


def test_fixed_worker_count_is_spread_round_robin_and_cpu_only_nodes_can_be_chosen():
    nodes = [node("gpu", 32, gpus=8), node("cpu-1", 64), node("cpu-2", 64)]
    assert plan_workers(PoolConfig(workers=5), nodes) == ["gpu", "cpu-1", "cpu-2", "gpu", "cpu-1"]
    assert set(plan_workers(PoolConfig(placement="cpu_only_nodes"), nodes)) == {"cpu-1", "cpu-2"}


def test_no_cpu_left_for_grading_is_an_error_naming_the_fix():
    with pytest.raises(ValueError, match="pool_reserved_cpus_per_node"):
        plan_workers(PoolConfig(reserved_cpus_per_node=8), [node("small", 8)])


def test_equal_ground_truths_share_a_key_whatever_their_form():
    as_dict = {"tests": [{"input": "1\n", "output": "1\n"}], "fn_name": None}
    reordered = {"fn_name": None, "tests": [{"output": "1\n", "input": "1\n"}]}
    assert content_key(ground_truth_text(as_dict)) == content_key(ground_truth_text(reordered))
    assert content_key("a") != content_key("b")


def test_problem_cache_fetches_once_and_evicts_least_recently_used():
    texts = {key: json.dumps({"tests": [{"input": key * 50, "output": "x"}]}) for key in "abc"}
    fetched: list[str] = []

    def loader(key):
        return lambda: fetched.append(key) or texts[key]

    cache = ProblemCache(max_chars=2 * len(texts["a"]))
    for key in "aab":
        cache.get(key, loader(key))
    cache.get("a", loader("a"))  # "b" is now the least recently used
    cache.get("c", loader("c"))
    cache.get("a", loader("a"))
    cache.get("b", loader("b"))
    assert fetched == ["a", "b", "c", "b"]
    assert (cache.hits, cache.misses, len(cache)) == (3, 4, 2)
    with pytest.raises(GroundTruthError):
        cache.get("bad", lambda: "{broken")
    assert len(cache) == 2


def test_step_metrics_against_explicit_counts_and_nearest_rank_percentiles():
    latencies = [0.5, 3.0, 1.0, 2.0, 9.0, 4.0, 0.1, 7.0, 6.0, 5.0]
    verdicts = ["accepted"] * 4 + ["wrong_answer"] * 3 + ["time_limit", "internal_error", "no_code"]
    samples = [
        {
            "verdict": verdict,
            "total": 10,
            "tests_executed": 10 if verdict == "accepted" else 2,
            "latency_s": latency,
            "queue_depth": index,
            "regraded": verdict == "internal_error",
            "internal_error": verdict == "internal_error",
            "worker_restarts": 1 if index > 5 else 0,
        }
        for index, (verdict, latency) in enumerate(zip(verdicts, latencies, strict=True))
    ]
    metrics = grading_step_metrics(columns_from_samples(samples))
    ordered = sorted(latencies)
    assert metrics["grading/latency_s/p50"] == ordered[4]  # ceil(0.5 * 10) = 5th smallest
    assert metrics["grading/latency_s/p95"] == ordered[9]  # ceil(0.95 * 10) = 10th smallest
    assert metrics["grading/latency_s/max"] == 9.0
    assert metrics["grading/verdict/accepted"] == 4 and metrics["grading/verdict/wrong_answer"] == 3
    assert metrics["grading/verdict/memory_limit"] == 0
    executed = 4 * 10 + 6 * 2
    assert metrics["grading/tests_executed/mean"] == executed / 10
    assert math.isclose(metrics["grading/tests_saved_frac"], 1 - executed / 100)
    assert metrics["grading/queue_depth/max"] == 9 and metrics["grading/queue_depth/mean"] == 4.5
    assert (metrics["grading/worker_restarts"], metrics["grading/internal_errors"], metrics["grading/regraded"]) == (
        1,
        1,
        1,
    )


class RestartingWorker:
    """An actor handle whose ``pid.remote()`` answers like Ray's for a worker it is restarting: the given errors
    first, then the pid."""

    def __init__(self, errors: list[Exception]) -> None:
        self.errors = errors
        self.calls = 0
        self.pid = self

    def remote(self):
        self.calls += 1

        async def answer() -> int:
            if self.errors:
                raise self.errors.pop(0)
            return 4242

        return answer()


def restarting() -> ActorUnavailableError:
    return ActorUnavailableError("The actor is temporarily unavailable: IOError: The actor is restarting.", None)


def test_a_worker_still_restarting_is_asked_again_and_a_dead_one_is_not(monkeypatch):
    monkeypatch.setattr(dispatcher, "RESTART_POLL_S", 0.01)
    worker = RestartingWorker([restarting(), restarting()])
    assert asyncio.run(dispatcher.pid_once_restarted(worker, 5.0)) == 4242
    assert worker.calls == 3
    dead = RestartingWorker([ActorDiedError()])
    with pytest.raises(ActorDiedError):
        asyncio.run(dispatcher.pid_once_restarted(dead, 5.0))
    assert dead.calls == 1
    never = RestartingWorker([restarting() for _ in range(1000)])
    with pytest.raises(ActorUnavailableError):
        asyncio.run(dispatcher.pid_once_restarted(never, 0.1))
    assert 2 <= never.calls < 20
