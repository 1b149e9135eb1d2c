"""recipe/nouscoder/run/validation_coverage.py: a validation that verl would run over fewer problems than the data has stops
before it starts, naming the problems; through `python -m recipe.nouscoder.main` too (exit 2, no Ray).

The bundled sample's 16 LiveCodeBench-template test prompts take at most ~340 tokens of the CPU mode's tiny tokenizer
(built from the sample, tests/recipe/conftest.py); the validation set is built by verl's own `create_rl_dataset`.
~10 s, most of it the tiny model's build shared with other tests of the session.
"""

from __future__ import annotations

import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir

from recipe.nouscoder.configs import config_dir
from recipe.nouscoder.run.validation_coverage import ValidationProblemsDropped, check_validation_coverage


def debug_cpu(sample_data_dir, tiny_model_dir, *overrides: str):
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        return compose(
            config_name="debug_cpu",
            overrides=[
                f"actor_rollout_ref.model.path={tiny_model_dir}",
                f"data.train_files={sample_data_dir / 'train.parquet'}",
                f"data.val_files={sample_data_dir / 'test.parquet'}",
                *overrides,
            ],
        )


def prompt_lengths(sample_data_dir, tiny_model_dir) -> dict[str, int]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    rows = pq.read_table(sample_data_dir / "test.parquet", columns=["prompt", "extra_info"]).to_pylist()
    return {  # verl's own count (rl_dataset.py: apply_chat_template's input ids, normalized)
        row["extra_info"]["problem_id"]: len(
            tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True)["input_ids"]
        )
        for row in rows
    }


def test_a_prompt_budget_that_drops_problems_stops_naming_them(sample_data_dir, tiny_model_dir):
    lengths = prompt_lengths(sample_data_dir, tiny_model_dir)
    budget = sorted(lengths.values())[-3]  # the 2 longest prompts are over it
    dropped = sorted(problem for problem, length in lengths.items() if length > budget)
    assert len(dropped) == 2
    check_validation_coverage(debug_cpu(sample_data_dir, tiny_model_dir))  # the config's 512: every problem
    config = debug_cpu(sample_data_dir, tiny_model_dir, f"data.max_prompt_length={budget}")
    with pytest.raises(ValidationProblemsDropped) as error:
        check_validation_coverage(config)
    message = str(error.value)
    assert f"2 of 16 problems have a prompt longer than data.max_prompt_length={budget} tokens" in message
    assert "the score would be over 14 problems, not 16" in message and ", ".join(dropped) in message
    allowed = debug_cpu(
        sample_data_dir,
        tiny_model_dir,
        f"data.max_prompt_length={budget}",
        "nouscoder.validation.require_every_problem=false",
    )
    check_validation_coverage(allowed)
    no_validation = debug_cpu(
        sample_data_dir, tiny_model_dir, f"data.max_prompt_length={budget}", "trainer.test_freq=-1"
    )
    check_validation_coverage(no_validation)  # val_before_train is off in debug_cpu: nothing validates


@pytest.mark.integration  # a subprocess CLI
def test_main_exits_2_with_the_message_before_ray_starts(sample_data_dir, tiny_model_dir, tmp_path):
    budget = sorted(prompt_lengths(sample_data_dir, tiny_model_dir).values())[-3]
    command = [
        sys.executable,
        "-m",
        "recipe.nouscoder.main",
        "--config-name",
        "debug_cpu",
        f"actor_rollout_ref.model.path={tiny_model_dir}",
        f"data.train_files={sample_data_dir / 'train.parquet'}",
        f"data.val_files={sample_data_dir / 'test.parquet'}",
        f"data.max_prompt_length={budget}",
        f"trainer.default_local_dir={tmp_path / 'run'}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "recipe.nouscoder.main: error: data.val_files=" in result.stderr
    assert "Started a local Ray instance" not in result.stderr + result.stdout
