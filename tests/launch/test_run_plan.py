"""The run plan (launch/run_plan.py), recomputed here from the assumptions configs/README.md "Run plan" states.

The arithmetic below is written from the README's text, not from run_plan.py: Qwen3-14B (14.8e9 parameters, 40
layers, attention width 5,120, 160 KiB of KV per token), H100s (989 TFLOP/s, 80 GB, 3.0 TB/s effective), MFU 0.35 and
5 forward passes per trained token, vLLM's 4 GB of activations, mean response half the budget plus 700 prompt tokens,
30% of groups regenerated, 30 s weight sync, checkpoints of 12 B per parameter per copy (2 copies) written at 5 GB/s, 600 s to load a validation-only run, at most
an hour lost on a kill, validation at most 8% of the time, 24,000 training and 454 LiveCodeBench problems, the 32k
stage 60% of the training budget. It pins the steps, cadences and GPU-days of the default budget, the configs that
carry them (configs/plan/*.yaml) and the README's table.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import run_plan
from omegaconf import OmegaConf

from recipe.nouscoder.configs import compose_experiment

REPO = Path(__file__).resolve().parents[2]
P, LAYERS, WIDTH, KV = 14.8e9, 40, 5120, 2 * 40 * 8 * 128 * 2
PEAK, HBM, MEMORY = 989e12, 3.0e12, 80e9
BUDGET_GPU_HOURS = 4 * 24 * 48  # NousCoder: "48 B200s over the course of four days"


def tokens_per_s(replica_gpus: int, utilisation: float, max_seqs: int, mean_tokens: float) -> float:
    kv_tokens = replica_gpus * (utilisation * MEMORY - 2 * P / replica_gpus - 4e9) / KV
    seqs = min(max_seqs, kv_tokens / mean_tokens)
    step = (2 * P / replica_gpus + seqs * mean_tokens * KV / replica_gpus) / HBM
    return seqs / step


def generation_s(sequences: float, budget: int, replicas: int, max_seqs: int, batches: int = 1) -> float:
    mean = budget / 2
    rate = replicas * tokens_per_s(2, 0.85, max_seqs, 700 + mean)
    return sequences * mean / rate + batches * budget * (2 * P / 2) / HBM


def stage(budget: int, max_seqs: int) -> dict:
    """One NousCoder training stage on 16 trainer + 32 rollout GPUs (16 TP-2 replicas), 1,024 sequences a step."""
    length = 700 + budget / 2
    trainer = 1024 * 5 * (2 * P * length + 2 * LAYERS * length**2 * WIDTH) / (16 * PEAK * 0.35)
    rollout = generation_s(1024 / 0.7, budget, 16, max_seqs)
    step = max(trainer, rollout) + 30
    save_freq = int(3600 // step)
    validation = generation_s(454 * 4, budget, 16, max_seqs)
    test_freq = save_freq * math.ceil(validation / (0.08 * step * save_freq))
    return {
        "trainer": trainer,
        "step": step,
        "save": 2 * P * 12 / 5e9,  # 12 B per parameter, saved by both FSDP-within-a-node copies, at 5 GB/s
        "validation": validation,
        "save_freq": save_freq,
        "test_freq": test_freq,
        "tokens": 1024 * length,
    }


def wall(cost: dict, steps: int, first: bool) -> float:
    validations = math.ceil(steps / cost["test_freq"]) + int(first)
    return steps * cost["step"] + math.ceil(steps / cost["save_freq"]) * cost["save"] + validations * cost["validation"]


def expected_plan() -> tuple[dict, dict, dict]:
    costs = {"dapo_32k": stage(32_768, 64), "dapo_40k": stage(38_912, 56)}
    fixed = {
        "re-scoring": 3 * (600 + generation_s(454 * 8, 38_912, 24, 56)),
        "final evaluation": 600 + generation_s(454 * 8, 79_872, 24, 32),
        "offline filter": 600 + generation_s(24_000 * 8, 16_384, 24, 128, batches=math.ceil(24_000 / 2048)),
    }
    training = BUDGET_GPU_HOURS * 3600 / 48 - sum(fixed.values())
    steps = {}
    for (name, cost), share in zip(costs.items(), (0.6, 0.4), strict=True):
        count = int(share * training // cost["step"])
        while wall(cost, count, name == "dapo_32k") > share * training:
            count -= 1
        steps[name] = count
    return costs, fixed, steps


@pytest.fixture(scope="module")
def planned() -> run_plan.Plan:
    return run_plan.default_chain()


def test_the_plan_is_the_stated_arithmetic(planned):
    costs, fixed, steps = expected_plan()
    for cost in planned.stages:
        mine = costs[cost.name]
        assert cost.trainer_s == pytest.approx(mine["trainer"], rel=1e-9)
        assert cost.step_s == pytest.approx(mine["step"], rel=1e-9)
        assert cost.validation_s == pytest.approx(mine["validation"], rel=1e-9)
        assert (cost.save_freq, cost.test_freq) == (mine["save_freq"], mine["test_freq"])
        assert cost.tokens_per_step == pytest.approx(mine["tokens"])
    assert planned.fixed_s == pytest.approx(fixed, rel=1e-9)
    assert dict(zip((c.name for c in planned.stages), planned.steps, strict=True)) == steps
    # the whole chain, stage 0 to the final evaluation, fits the budget and uses most of it
    assert 0.97 * BUDGET_GPU_HOURS < planned.total_gpu_hours <= BUDGET_GPU_HOURS


def test_the_numbers_of_the_default_budget(planned):
    """The figures configs/README.md quotes: 150 + 73 steps of ~18 and ~25 minutes, ~95 hours on 48 GPUs."""
    assert planned.steps == (150, 73)
    assert [round(cost.step_s / 60, 1) for cost in planned.stages] == [18.3, 24.9]
    assert [(cost.save_freq, cost.test_freq) for cost in planned.stages] == [(3, 15), (2, 16)]
    assert round(planned.total_gpu_hours / 48, 1) == 95.6


@pytest.mark.parametrize(("config", "stage"), [("dapo_32k", 0), ("gspo_plus_32k", 0), ("dapo_40k", 1), ("gspo_40k", 1)])
def test_the_configs_carry_the_plan(planned, config, stage):
    trainer = compose_experiment(config, []).trainer
    cost, steps = planned.stages[stage], planned.steps[stage]
    assert (trainer.total_training_steps, trainer.save_freq, trainer.test_freq) == (
        steps,
        cost.save_freq,
        cost.test_freq,
    )
    assert trainer.test_freq % trainer.save_freq == 0  # every validated step has its checkpoint


def test_the_readme_table_is_the_plan(planned):
    assert run_plan.table(planned) in (REPO / "configs" / "README.md").read_text()


def test_a_smaller_budget_trains_fewer_steps_and_one_below_the_fixed_costs_is_refused():
    smaller = run_plan.default_chain(2000)
    assert smaller.steps < (150, 73) and smaller.total_gpu_hours <= 2000
    with pytest.raises(ValueError, match=r"a budget of 300 GPU-hours on 48 GPUs does not cover the fixed costs"):
        run_plan.default_chain(300)


def test_in_run_validation_uses_4_samples_and_the_evaluations_8():
    for name in ("dapo_32k", "dapo_40k"):
        assert compose_experiment(name, []).actor_rollout_ref.rollout.val_kwargs.n == 4
    for name in ("eval_lcb_40k", "eval_lcb_80k"):
        assert compose_experiment(name, []).actor_rollout_ref.rollout.val_kwargs.n == 8


def test_the_plan_files_hold_only_what_the_plan_derives():
    for path in (REPO / "configs" / "plan").glob("*.yaml"):
        keys = OmegaConf.to_container(OmegaConf.load(path))
        assert keys == {
            "trainer": {
                "total_training_steps": keys["trainer"]["total_training_steps"],
                "save_freq": keys["trainer"]["save_freq"],
                "test_freq": keys["trainer"]["test_freq"],
            },
            "actor_rollout_ref": {"rollout": {"val_kwargs": {"n": 4}}},
        }, path
        assert re.search(r"launch/run_plan\.py", path.read_text())
