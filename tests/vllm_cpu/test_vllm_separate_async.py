"""The separate-async trainer on verl's real vLLM rollout, on CPU: ``nouscoder_separate_async``: 1 trainer rank, 1
standalone vLLM replica (verl's vLLM server with abort/resume and the partial-rollout client), weights over
``cpu_gloo`` into vLLM; half known answers; 3 steps, the staged temperature changing at step 3. Resuming from a
checkpoint is the rehearsal's (tests/launch/test_rehearsal.py): nothing of it depends on the rollout engine. How it
runs: vllm_runs.py. Cost: about 2 minutes on an idle 2-core machine, vLLM's start-up included.
"""

from __future__ import annotations

import pytest

from tests.recipe.cpu_runs import metrics
from tests.vllm_cpu.vllm_runs import Invocations, steps_of

pytestmark = [pytest.mark.integration, pytest.mark.long(2), pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def async_run(sample_data_dir, tiny_model_dir, tmp_path_factory) -> Invocations:
    runs = Invocations(tmp_path_factory.mktemp("vllm_separate_async") / "run")
    runs.run(
        sample_data_dir, tiny_model_dir, 3, "cpu_layout=separate_async", "nouscoder.cpu.known_answers.fraction=0.5"
    )
    return runs


def test_separate_async_trainer_trains_on_vllm(async_run):
    steps = steps_of(metrics(async_run.run_dir / "metrics.jsonl"))
    assert sorted(steps) == [1, 2, 3]
    assert any(step["grading/verdict/accepted"] > 0 for step in steps.values())
    assert any(step["critic/score/min"] < 0 < step["critic/score/max"] for step in steps.values())
    assert all(step["actor/grad_norm"] > 0 for step in steps.values())
    assert all(step["grading/internal_errors"] == 0 for step in steps.values())
    assert all(step["nouscoder/known_answers/active"] == 1.0 for step in steps.values())
    assert all(0 < step["rollout_corr/rollout_is_mean"] <= 2.0 for step in steps.values())  # off-policy, capped
    assert all(step["cpu_gloo/weight_sync_mib"] > 0 for step in steps.values())
    assert (steps[1]["nouscoder/temperature"], steps[3]["nouscoder/temperature"]) == (1.0, 1.1)
    assert (async_run.run_dir / "global_step_2" / "actor").is_dir()
    print(f"separate_async on vLLM: wall {async_run.wall_s} s, steps {[s['timing_s/step'] for s in steps.values()]} s")


def test_nothing_of_the_run_is_left_behind(async_run):
    assert async_run.leftover_processes == []
    assert async_run.leftover_segments == set()
