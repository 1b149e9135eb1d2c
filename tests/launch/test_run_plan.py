"""The run plan (launch/run_plan.py), recomputed here from the assumptions configs/README.md "Run plan" states.

The arithmetic below is written from the README's text, not from run_plan.py: Qwen3-14B (14,768,307,200 parameters
from its config.json, 40 layers, attention width 5,120, 160 KiB of KV per token), H100s (989 TFLOP/s, 80 GB, 3.35 TB/s
of which a decode step reaches 90%), MFU 0.35 and 5 forward passes per trained token, vLLM's 4 GB of activations,
mean response half the budget plus 700 prompt tokens, 30% of groups regenerated, 30 s weight sync, checkpoints of 12 B
per parameter per copy (2 copies) written at 5 GB/s, 600 s to load a validation-only run, at most an hour lost on a
kill, validation at most 8% of the time, 24,000 training and 454 LiveCodeBench problems, the 32k stage 60% of the
training budget. It pins the steps, cadences and GPU-days of the default budget, the configs that carry them
(configs/plan/*.yaml) and the README's table; then the plan of the other seed chains (DeepCoder on 4 x 8, MicroCoder's
300 steps on 1 x 8), another cluster and model (2 x 8 H100s, Qwen3-8B), and the re-plan from measurements.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import run_plan
from chain import Chain, compose, compose_chain
from gpu_spec import GPUS
from model_spec import resolve_model
from omegaconf import OmegaConf
from rehearsal_report import FORMAT

REPO = Path(__file__).resolve().parents[2]
P, LAYERS, WIDTH, KV = 14_768_307_200, 40, 5120, 2 * 40 * 8 * 128 * 2
PEAK, HBM, MEMORY = 989e12, 0.9 * 3.35e12, 80e9
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
    assert planned.steps == (150, 74)
    assert [round(cost.step_s / 60, 1) for cost in planned.stages] == [18.2, 24.8]
    assert [(cost.save_freq, cost.test_freq) for cost in planned.stages] == [(3, 15), (2, 16)]
    assert round(planned.total_gpu_hours / 48, 1) == 95.5


@pytest.mark.parametrize(("config", "stage"), [("dapo_32k", 0), ("gspo_plus_32k", 0), ("dapo_40k", 1), ("gspo_40k", 1)])
def test_the_configs_carry_the_plan(planned, config, stage):
    trainer = compose(config, []).trainer
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
    assert smaller.steps < (150, 74) and smaller.total_gpu_hours <= 2000
    with pytest.raises(ValueError, match=r"a budget of 300 GPU-hours on 48 GPUs does not cover the fixed costs"):
        run_plan.default_chain(300)


def test_in_run_validation_uses_4_samples_and_the_evaluations_8():
    for name in ("dapo_32k", "dapo_40k"):
        assert compose(name, []).actor_rollout_ref.rollout.val_kwargs.n == 4
    for name in ("eval_lcb_40k", "eval_lcb_80k"):
        assert compose(name, []).actor_rollout_ref.rollout.val_kwargs.n == 8


def test_the_plan_files_hold_only_what_the_plan_derives():
    for path in (REPO / "configs" / "plan").glob("*.yaml"):
        keys = OmegaConf.to_container(OmegaConf.load(path))
        trainer = {key: keys["trainer"][key] for key in ("total_training_steps", "save_freq", "test_freq")}
        nouscoder = path.stem in ("32k", "40k")  # the NousCoder stages also validate with 4 samples in-run
        assert keys == {
            "trainer": trainer,
            **({"actor_rollout_ref": {"rollout": {"val_kwargs": {"n": 4}}}} if nouscoder else {}),
        }, path
        assert re.search(r"launch/run_plan\.py", path.read_text())


# --- the other seed chains, and another cluster and model --------------------------------------------------------
QWEN3_8B_CONFIG = Path(__file__).parent / "data" / "qwen3_8b" / "config.json"
# The worked example of launch/README.md "Another cluster and model": 2 x 8 H100s, Qwen3-8B, 16k then 24k, 48 hours.
EXAMPLE_OVERRIDES = ["trainer.nnodes=1", "actor_rollout_ref.rollout.nnodes=1"]
EXAMPLE_CONFIG_OVERRIDES = {
    "dapo_32k": ["context=16k", "actor_rollout_ref.rollout.max_num_seqs=168"],
    "dapo_40k": ["context=24k"],
    "eval_lcb_40k": ["context=24k"],
}


def chain_plan(chain: Chain, nodes: int, model: str, budget: float = BUDGET_GPU_HOURS, model_config=None):
    _, fitted = compose_chain(chain, nodes, 8)
    basis = run_plan.Basis(resolve_model(model, model_config), GPUS["h100"])
    return fitted, run_plan.plan_chain(chain, fitted, basis, nodes * 8, budget, rescore_top_k=3)


def sync_step_s(model_params, layers, kv_bytes, gpus, budget, max_seqs, utilisation=0.6) -> float:
    """A synchronous colocated step (configs/README.md "Run plan"): generation on every GPU (TP-2 replicas), then
    the trainer on every GPU, then the 30 s weight hand-over; no dynamic sampling (DeepCoder, MicroCoder)."""
    length = 700 + budget / 2
    trainer = 1024 * 5 * (2 * model_params * length + 2 * layers * length**2 * WIDTH) / (gpus * PEAK * 0.35)
    kv_tokens = 2 * (utilisation * MEMORY - model_params - 4e9) / kv_bytes
    seqs = min(max_seqs, kv_tokens / length)
    rate = seqs / ((model_params + seqs * length * kv_bytes / 2) / HBM)
    rollout = 1024 * (budget / 2) / (gpus // 2 * rate) + budget * model_params / HBM
    return trainer + rollout + 30


def test_deepcoder_stages_carry_their_plan_on_4_x_8_gpus():
    """DeepSeek-R1-Distill-Qwen-14B (14,770,033,664 parameters, 48 layers, 192 KiB of KV per token), 64 prompts x 16,
    the default budget on 32 GPUs, 60 / 40 between 16k and 32k, the final evaluation the only fixed cost."""
    chain = Chain(stages=["deepcoder_16k", "deepcoder_32k"], eval_config="eval_lcb_v5_64k")  # the wrapper's
    fitted, result = chain_plan(chain, 4, "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B")
    expected = sync_step_s(14_770_033_664, 48, 2 * 48 * 8 * 128 * 2, 32, 16_384, 64)
    assert result.stages[0].step_s == pytest.approx(expected, rel=1e-9)
    for cost, steps in zip(result.stages, result.steps, strict=True):
        trainer = fitted[cost.name].trainer
        assert (trainer.total_training_steps, trainer.save_freq, trainer.test_freq) == (
            steps,
            cost.save_freq,
            cost.test_freq,
        )
    assert list(result.fixed_s) == ["final evaluation"] and result.total_gpu_hours <= BUDGET_GPU_HOURS


def test_microcoder_trains_300_steps_with_the_planned_cadence_in_about_7_hours():
    chain = Chain(stages=["microcoder_4k"], eval_config="eval_microcoder_8k", overrides=["data.train_files=t.parquet"])
    _, fitted = compose_chain(chain, 1, 8)
    basis = run_plan.Basis(resolve_model("Qwen/Qwen3-4B-Instruct-2507"), GPUS["h100"])
    cost = run_plan.stage_cost("microcoder_4k", fitted["microcoder_4k"], basis)
    trainer = fitted["microcoder_4k"].trainer
    assert (trainer.total_training_steps, trainer.save_freq, trainer.test_freq) == (300, cost.save_freq, cost.test_freq)
    configured = run_plan.configured_plan(chain, fitted, basis, 8, run_plan.TRAIN_PROBLEMS)
    assert round(cost.step_s / 60, 1) == 1.4 and round(configured.stage_wall_s(0) / 3600, 1) == 7.3
    assert configured.stage_wall_s(0) * 8 / 3600 == pytest.approx(59, abs=1)  # GPU-hours, as plan/microcoder_4k.yaml


def test_the_worked_example_on_2_x_8_gpus_with_qwen3_8b_composes_and_plans():
    """launch/README.md "Another cluster and model": what the overrides change, and the plan the README prints."""
    chain = Chain(
        stages=["dapo_32k", "dapo_40k"],
        rescore={"dapo_32k": "eval_lcb_40k"},
        eval_config="eval_lcb_80k",
        overrides=EXAMPLE_OVERRIDES,
        config_overrides=EXAMPLE_CONFIG_OVERRIDES,
    )
    fitted, result = chain_plan(chain, 2, "Qwen3-8B", budget=2 * 8 * 48, model_config=QWEN3_8B_CONFIG)
    first, second, rescore = fitted["dapo_32k"], fitted["dapo_40k"], fitted["eval_lcb_40k"]
    assert (first.trainer.nnodes, first.actor_rollout_ref.rollout.nnodes) == (1, 1)
    assert (first.data.max_response_length, first.actor_rollout_ref.rollout.max_model_len) == (16_384, 18_432)
    assert (second.data.max_response_length, second.actor_rollout_ref.rollout.max_model_len) == (24_576, 26_624)
    assert rescore.actor_rollout_ref.rollout.max_model_len == 26_624  # re-scored at the next stage's length
    assert first.actor_rollout_ref.rollout.max_num_seqs == 168
    assert run_plan.max_num_seqs_warning(compose("dapo_32k", ["context=16k"]), "dapo_32k", result.basis).endswith(
        "suggested actor_rollout_ref.rollout.max_num_seqs=168"
    )
    assert result.steps == (95, 30) and result.total_gpu_hours <= 768
    readme = (REPO / "launch" / "README.md").read_text()
    for name, overrides in result.overrides().items():
        assert f"{name}: {' '.join(overrides)}" in readme
    assert run_plan.table(result) in readme


def test_a_re_plan_from_a_report_recovers_the_measured_efficiencies(tmp_path, capsys):
    """A report measured at exactly the planner's own prediction for a run with half the assumed MFU and 80% of the
    assumed decode bandwidth, and a 6 s weight sync of 16.4 GB: the calibrated plan assumes MFU 0.175, decode
    efficiency 0.72, and 6 s x (29.5 GB / 16.4 GB) for the 14B weight sync; its steps are longer than the default's."""
    model = resolve_model("Qwen3-8B", QWEN3_8B_CONFIG)
    measured_basis = run_plan.Basis(
        model, GPUS["h100"], run_plan.Assumptions(mfu=0.175, hbm_efficiency=0.72, mean_response_fraction=0.5)
    )
    sequences, prompt, response = 128, 600.0, 1500.0
    flops = GPUS["h100"].peak_flops * 0.175 * 8
    trainer_s = sequences * 5 * run_plan.forward_flops(model, prompt + response) / flops
    pool = run_plan.Generation(measured_basis, 8, 1, 0.85, 64)
    rate = pool.tokens_per_s_per_replica(prompt + response)
    report = {
        "format": FORMAT,
        "model": {"path": "/models/Qwen3-8B", "config": json.loads(QWEN3_8B_CONFIG.read_text())},
        "allocation": {
            "nodes": 2,
            "gpus_per_node": 8,
            "gpu": "NVIDIA H100 80GB HBM3",
            "gpu_memory_gb": 80,
            "trainer_gpus": 8,
            "rollout_gpus": 8,
            "rollout_tensor_parallel": 1,
        },
        "shape": {
            "train_batch_size": 16,
            "group_size": 8,
            "max_prompt_length": 2048,
            "max_response_length": 4096,
            "rollout_gpu_memory_utilization": 0.85,
            "rollout_max_num_seqs": 64,
        },
        "steps": [
            {
                "step": step,
                "step_s": 120.0,
                "generation_s": 80.0,
                "weight_sync_s": 6.0,
                "log_prob_s": trainer_s / 5,
                "update_s": trainer_s * 4 / 5,
                "grading_wait_s": 2.0,
                "sequences": sequences,
                "mean_prompt_tokens": prompt,
                "mean_response_tokens": response,
            }
            for step in (1, 2, 3, 4)
        ],
        "rollout_tokens_per_s_per_gpu": rate,
        "peak_memory_gb": {"trainer": 52.0, "rollout": 71.0},
        "weight_sync": {"seconds": 6.0, "bytes": model.weight_bytes},
        "verdict": "ok",
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    run_plan.main(["--measured", str(path), "--table"])
    out = capsys.readouterr().out
    assert "calibrated from" in out and "mfu 0.175, hbm_efficiency 0.72, weight_sync_s 10.8" in out
    assert "measured (" in out and "weight sync 6.0" in out
    steps = {line.split(":")[0]: line for line in out.splitlines() if line.startswith("dapo_")}
    planned = int(re.search(r"total_training_steps=(\d+)", steps["dapo_32k"]).group(1))
    assert planned < 150  # slower trainer and decode: fewer steps in the same budget


def test_measurements_without_a_figure_are_refused_naming_it(tmp_path):
    """metrics.jsonl of a run whose trainer logs no weight sync (a colocated CPU run, say) cannot calibrate it."""
    from rehearsal_report import Measurements, StepTiming

    model = resolve_model("Qwen/Qwen3-14B")
    step = StepTiming(1, 60.0, 30.0, 0.0, 5.0, 20.0, 0.0, 64, 700.0, 900.0)
    measured = Measurements("m.jsonl", model, None, 8, 8, 2, 0.85, 64, (step,), 900.0, model.weight_bytes, {})
    basis = run_plan.Basis(model, GPUS["h100"])
    with pytest.raises(ValueError, match=r"m.jsonl: no measured weight-sync time: nothing to calibrate with"):
        run_plan.calibrate(basis, measured)
