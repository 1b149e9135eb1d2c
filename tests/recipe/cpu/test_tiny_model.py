"""recipe.nouscoder.cpu.tiny_model: a ~1M-parameter Qwen2 and a chat tokenizer built locally."""

import json

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from recipe.nouscoder.cpu.tiny_model import BUILD_INFO_FILE, TURN_END, is_built


def test_the_tiny_model_is_a_loadable_qwen2_of_about_a_million_parameters(tiny_model_dir):
    info = json.loads((tiny_model_dir / BUILD_INFO_FILE).read_text())
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    assert is_built(tiny_model_dir)
    assert model.config.model_type == "qwen2"
    assert 0.8e6 < sum(p.numel() for p in model.parameters()) == info["parameters"] < 1.2e6


def test_the_tokenizer_round_trips_text_and_ends_turns_with_eos(tiny_model_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    program = "```python\nn = int(input())\nprint(n * (n + 1) // 2)\n```"
    assert tokenizer.decode(tokenizer(program)["input_ids"]) == program
    messages = [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "Sum 1..n"}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True)
    text = tokenizer.decode(ids["input_ids"])
    assert (
        text
        == f"<|im_start|>system\nBe exact.{TURN_END}\n<|im_start|>user\nSum 1..n{TURN_END}\n<|im_start|>assistant\n"
    )
    assert tokenizer.eos_token == TURN_END and tokenizer.pad_token_id != tokenizer.eos_token_id
    # statements and programs of the sample take few tokens: the tokenizer was trained on them
    assert len(tokenizer(program)["input_ids"]) < len(program) / 2
