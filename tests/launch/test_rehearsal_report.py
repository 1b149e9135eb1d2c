"""launch/rehearsal_report.py: the report format (checked field by field) and the same figures from verl's metrics.jsonl.

The metrics lines are written as verl 0.9.1's FileLogger writes them (`{"step": N, "data": {...}}`,
verl/utils/tracking.py) with the keys verl's V1 trainer logs: `timing_s/<timer>` (trainer/ppo/metric_utils.py
`compute_timing_metrics`, timers of trainer/ppo/v1/trainer_base.py), `prompt_length/mean` and
`response_length/mean` (`compute_data_metrics`), `actor/perf/max_memory_allocated_gb` (workers/engine_workers.py:219,
renamed with the `actor/` prefix by trainer_base's `_update_actor`).
"""

from __future__ import annotations

import json

import pytest
import rehearsal_report as rr
from chain import compose
from gpu_spec import GPUS
from model_spec import SHIPPED
from omegaconf import OmegaConf


def verl_line(step: int, **data: float) -> str:
    return json.dumps({"step": step, "data": data}) + "\n"


def training_step(step: int, save: float = 0.0) -> str:
    return verl_line(
        step,
        **{
            "timing_s/step": 100.0 + step + save,
            "timing_s/gen": 60.0,
            "timing_s/update_weights": 5.0,
            "timing_s/old_log_prob": 8.0,
            "timing_s/update_actor": 20.0,
            "timing_s/reward": 1.5,
            "timing_s/save_checkpoint": save,
            "prompt_length/mean": 650.0,
            "response_length/mean": 1200.0,
            "actor/perf/max_memory_allocated_gb": 41.5,
        },
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run directory as recipe.nouscoder.main leaves it: metrics.jsonl and hydra's record of the composed config
    (debug_64: 8 colocated GPUs, Qwen3-14B, 32 prompts x 8 per step)."""
    run = tmp_path_factory.mktemp("run")
    record = run / "hydra" / "2025-01-01_00-00-00" / ".hydra"
    record.mkdir(parents=True)
    (record / "config.yaml").write_text(OmegaConf.to_yaml(compose("debug_64", [])))
    lines = verl_line(0, **{"val-core/livecodebench/acc/mean@8": 0.4})  # validation before training: no update
    lines += training_step(1) + training_step(2, save=30.0) + training_step(3) + training_step(4)
    (run / "metrics.jsonl").write_text(lines)
    return run


def test_metrics_jsonl_gives_the_medians_of_the_training_steps(run_dir):
    measured = rr.read_measurements(run_dir / "metrics.jsonl", None, GPUS["h100"])
    assert [step.step for step in measured.steps] == [1, 2, 3, 4]  # the validation line is left out
    assert measured.median("step_s") == 103.0  # steps 2-4 (start-up left out), the save's 30 s taken off step 2
    assert measured.trainer_s == 28.0 and measured.weight_sync_s == 5.0 and measured.median("grading_wait_s") == 1.5
    assert (measured.sequences, measured.mean_prompt_tokens, measured.mean_response_tokens) == (256, 650.0, 1200.0)
    # colocated: the rollout generates on the same 8 GPUs, for timing_s/gen of each step
    assert measured.tokens_per_s_per_rollout_gpu == pytest.approx(256 * 1200 / 60 / 8)
    assert measured.peak_memory_gb == {"trainer": 41.5}
    assert measured.weight_sync_bytes == measured.model.weight_bytes and measured.model.name == "Qwen/Qwen3-14B"
    assert "step 103.0 s = generation 60.0 + log-probs 8.0 + update 20.0" in measured.describe()


def test_metrics_without_a_hydra_record_need_the_config_name(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(training_step(1))
    with pytest.raises(rr.ReportError, match=r"no hydra record of its run .* pass --measured-config NAME"):
        rr.read_measurements(tmp_path / "metrics.jsonl", None, GPUS["h100"])
    measured = rr.read_measurements(tmp_path / "metrics.jsonl", "debug_64", GPUS["h100"])
    assert measured.trainer_gpus == 8 and measured.steps[0].step_s == 101.0


def report(**changes) -> dict:
    data = {
        "format": rr.FORMAT,
        "model": {"path": "Qwen/Qwen3-14B", "config": json.loads((SHIPPED / "Qwen--Qwen3-14B.json").read_text())},
        "allocation": {
            "nodes": 2,
            "gpus_per_node": 8,
            "gpu": "NVIDIA H200",
            "gpu_memory_gb": 141.0,
            "trainer_gpus": 8,
            "rollout_gpus": 8,
            "rollout_tensor_parallel": 2,
        },
        "shape": {
            "train_batch_size": 8,
            "group_size": 8,
            "max_prompt_length": 2048,
            "max_response_length": 2048,
            "rollout_gpu_memory_utilization": 0.85,
            "rollout_max_num_seqs": 64,
        },
        "steps": [
            {
                "step": 1,
                "step_s": 90.0,
                "generation_s": 50.0,
                "weight_sync_s": 4.0,
                "log_prob_s": 10.0,
                "update_s": 25.0,
                "grading_wait_s": 1.0,
                "sequences": 64,
                "mean_prompt_tokens": 700.0,
                "mean_response_tokens": 900.0,
            }
        ],
        "rollout_tokens_per_s_per_gpu": 800.0,
        "peak_memory_gb": {"trainer": 55.0, "rollout": 120.0},
        "weight_sync": {"seconds": 4.0, "bytes": 29.5e9},
        "verdict": "the path runs",
    }
    data.update(changes)
    return data


def test_a_report_reads_as_measurements(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report()))
    measured = rr.RehearsalReport.read(path).measurements()
    assert measured.gpu == GPUS["h200"] and (measured.trainer_gpus, measured.rollout_gpus) == (8, 8)
    assert measured.trainer_s == 35.0 and measured.weight_sync_bytes == 29.5e9
    assert measured.peak_memory_gb == {"trainer": 55.0, "rollout": 120.0}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "other/2"}, r"format is 'other/2', not nouscoder-rehearsal-report/1"),
        ({"steps": []}, r"no steps"),
        ({"weight_sync": {"seconds": 4.0}}, r"missing field weight_sync.bytes"),
        ({"rollout_tokens_per_s_per_gpu": "fast"}, r"field rollout_tokens_per_s_per_gpu is 'fast', not a float"),
        ({"model": {"path": "m", "config": {"hidden_size": 8}}}, r"model.config: m: config.json has no"),
    ],
)
def test_a_bad_report_names_the_field(tmp_path, changes, message):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report(**changes)))
    with pytest.raises(rr.ReportError, match=message):
        rr.RehearsalReport.read(path)


def test_a_bad_step_names_its_index(tmp_path):
    data = report()
    data["steps"].append({**data["steps"][0], "update_s": None})
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    with pytest.raises(rr.ReportError, match=r"steps\[1\]: field update_s is None, not a float"):
        rr.RehearsalReport.read(path)
