"""The CPU learning run's model (recipe/nouscoder/cpu/warm_start.py): the supervised mixture, the tokenizer, the
prompt tokens verl's agent loop will send, and a seeded, deterministic build."""

import random
from dataclasses import replace

import pytest
from verl.utils.tokenizer.chat_template import apply_chat_template

from recipe.nouscoder.cpu.task_family import TaskFamilySpec, build_task_family
from recipe.nouscoder.cpu.warm_start import (
    PROMPT_CONSTANTS,
    MistakeRates,
    WarmStartSpec,
    build_warm_start,
    is_built,
    task_tokenizer,
    tokenized,
    training_examples,
)

TINY = WarmStartSpec(responses_per_problem=2, steps=4, batch_size=4)
"""A few steps: what these tests check does not need a trained model."""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("warm_start_data")
    build_task_family(out, TaskFamilySpec(seed=1, train=16, val=8))
    return out


def test_pass_rate_of_the_mixture_is_the_product_of_the_mistake_free_chances():
    rates = MistakeRates(read=0.2, answer=0.5, label=0.1, fence=0.25)
    assert rates.pass_rate == pytest.approx(0.8 * 0.5 * 0.9 * 0.75)
    rng = random.Random(5)
    draws = [rates.draw(rng, wrong_answers=2) for _ in range(20000)]
    assert sum(not draw.any for draw in draws) / len(draws) == pytest.approx(rates.pass_rate, abs=0.01)
    assert sum(draw.answer == 2 for draw in draws) / len(draws) == pytest.approx(0.25, abs=0.01)


def test_examples_cover_every_training_problem_with_drawn_mistakes(data_dir):
    examples = training_examples(data_dir / "train.parquet", WarmStartSpec(responses_per_problem=3))
    assert len(examples) == 16 * 3
    responses = {response for _, response in examples}
    assert any(response.startswith("```python") for response in responses)
    assert any(not response.startswith("```") for response in responses)  # the fence mistake


def test_prompt_tokens_are_verls_and_the_fixed_prompt_parts_are_one_token_each(data_dir):
    examples = training_examples(data_dir / "train.parquet", TINY)
    tokenizer = task_tokenizer(examples, 512)
    for constant in PROMPT_CONSTANTS:
        assert len(tokenizer(constant, add_special_tokens=False)["input_ids"]) == 1
    messages, response = examples[0]
    ids, prompt_length = tokenized(tokenizer, [examples[0]])[0]
    assert ids[:prompt_length] == list(apply_chat_template(tokenizer, messages, add_generation_prompt=True))
    assert ids[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(ids[prompt_length:-1]) == response


def test_the_build_is_deterministic_under_its_seed_and_tracks_its_data(tmp_path):
    data_dir = tmp_path / "data"
    build_task_family(data_dir, TaskFamilySpec(seed=1, train=16, val=8))
    first = build_warm_start(data_dir, tmp_path / "a", TINY)
    second = build_warm_start(data_dir, tmp_path / "b", TINY)
    other_seed = build_warm_start(data_dir, tmp_path / "c", replace(TINY, seed=1))
    weights = [(tmp_path / name / "model.safetensors").read_bytes() for name in ("a", "b", "c")]
    assert weights[0] == weights[1] and weights[0] != weights[2]
    assert first["supervised_loss"] == second["supervised_loss"] != other_seed["supervised_loss"]
    assert first["supervised_loss"][-1] < first["supervised_loss"][0]
    assert is_built(tmp_path / "a", TINY, data_dir) and not is_built(tmp_path / "a", replace(TINY, seed=1), data_dir)
    build_task_family(data_dir, TaskFamilySpec(seed=2, train=16, val=8))
    assert not is_built(tmp_path / "a", TINY, data_dir)  # trained on a family that is no longer there
