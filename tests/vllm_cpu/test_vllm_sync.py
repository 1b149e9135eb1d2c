"""The synchronous trainer on verl's real vLLM rollout, on CPU: ``nouscoder_sync`` with the multi-turn loop
(``+multi_turn=debug_cpu``): 2 FSDP ranks, each hosting a vLLM replica (colocated, verl's ``naive`` weight sync into
vLLM through the project's reload extension), the Ray grading pool; half of the first answers scripted
(``by_turn: [failing, passing]``: a failing bundled program, public-test feedback, a passing revision), the others the
random model's. 2 steps, validation and a checkpoint at step 2. The checks of a synchronous run
(tests/recipe/cpu_runs.py: mixed rewards, gradients, on-policy TIS weights near 1, as vLLM's fp32 log-probs are the
learner's, the recipe's metrics) and of the multi-turn loop: two turns used, feedback given and masked out of the
trained batch, revisions passing the public and the hidden tests. How it runs: vllm_runs.py. Cost: about 3 minutes on
an idle 2-core machine, vLLM's start-up included.
"""

from __future__ import annotations

import pytest

from data_prep.build_deepcoder_mix import main as build_data
from tests.recipe.cpu_runs import assert_trained_on_policy_with_the_recipes_parts, metrics
from tests.vllm_cpu.vllm_runs import Invocations

pytestmark = [pytest.mark.integration, pytest.mark.long(1), pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def sync_run(tiny_model_dir, tmp_path_factory) -> Invocations:
    runs = Invocations(tmp_path_factory.mktemp("vllm_sync") / "run")
    data_dir = runs.run_dir.parent / "sample_data_public1"  # the multi-turn overlay's data: one public test each
    assert build_data(["--from", "sample", "--out", str(data_dir), "--public-tests", "1"]) == 0
    runs.run(data_dir, tiny_model_dir, 2, "+multi_turn=debug_cpu", "trainer.test_freq=2")
    return runs


def test_sync_trainer_trains_on_policy_on_vllm(sync_run):
    records = metrics(sync_run.run_dir / "metrics.jsonl")
    train = [record["data"] for record in records if "actor/grad_norm" in record["data"]]
    assert len(train) == 2
    assert_trained_on_policy_with_the_recipes_parts(train)
    assert (sync_run.run_dir / "global_step_2" / "actor").is_dir()
    assert "vLLM on CPU: reloaded" in sync_run.log  # the weight sync went through the project's extension
    print(f"sync on vLLM: wall {sync_run.wall_s} s, steps {[step['timing_s/step'] for step in train]} s")


def test_multi_turn_feedback_on_vllm(sync_run):
    records = [record["data"] for record in metrics(sync_run.run_dir / "metrics.jsonl")]
    train = [step for step in records if "multi_turn/turns/mean" in step]
    assert len(train) == 2
    for step in train:
        assert step["multi_turn/turns/max"] == 2 and step["multi_turn/feedback/given"] > 0
        assert step["multi_turn/feedback_tokens/mean"] > 0
        assert step["multi_turn/mask_mismatch"] == 0  # on the trained batch: feedback masked, model tokens kept
        assert step["multi_turn/public_pass_rate/turn_2"] > 0 and step["multi_turn/stop_reason/public_passed"] > 0
        assert step["multi_turn/hidden_pass_rate/last_turn"] > step["multi_turn/hidden_pass_rate/first_turn"]
        assert step["multi_turn/public_tests_errors"] == 0
    assert any(key.startswith("val-core/") for step in records for key in step)  # validation ran the same loop


def test_nothing_of_the_run_is_left_behind(sync_run):
    assert sync_run.leftover_processes == []
    assert sync_run.leftover_segments == set()
