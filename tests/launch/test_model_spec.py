"""launch/model_spec.py: the planner's model facts from a config.json, checked against transformers and model cards.

The fixture tests/launch/data/qwen3_8b/config.json holds the published config.json values of Qwen/Qwen3-8B
(https://huggingface.co/Qwen/Qwen3-8B, config.json: hidden_size 4096, intermediate_size 12288, num_hidden_layers 36,
num_attention_heads 32, num_key_value_heads 8, head_dim 128, vocab_size 151936, max_position_embeddings 40960,
rope_theta 1000000, tie_word_embeddings false). Its model card gives what they must add up to: "Number of
Parameters: 8.2B; Number of Paramaters (Non-Embedding): 6.95B; Number of Layers: 36; Number of Attention Heads
(GQA): 32 for Q and 8 for KV; Context Length: 32,768 natively and 131,072 tokens with YaRN". Qwen3-14B's card: 14.8B,
13.2B non-embedding; Qwen3-4B-Instruct-2507's: 4.0B, 3.6B non-embedding, 262,144 natively.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from model_spec import SHIPPED, ModelSpec, UnknownModel, resolve_model
from transformers import AutoConfig, AutoModelForCausalLM

QWEN3_8B = Path(__file__).parent / "data" / "qwen3_8b" / "config.json"


def transformers_count(config: dict) -> int:
    """Parameters of the model transformers builds from `config`, on the meta device (no memory)."""
    hf_config = AutoConfig.for_model(**{key: value for key, value in config.items() if not key.startswith("_")})
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_config)
    return sum(parameter.numel() for parameter in model.parameters())


@pytest.mark.parametrize("path", [QWEN3_8B, *sorted(SHIPPED.glob("*.json"))], ids=lambda p: p.parent.name + p.stem)
def test_the_parameter_count_is_the_one_transformers_builds(path):
    config = json.loads(path.read_text())
    assert resolve_model(path.stem, model_config=path).params == transformers_count(config)


@pytest.mark.parametrize(
    ("path", "total", "non_embedding", "native"),
    [
        (QWEN3_8B, 8.2e9, 6.95e9, 32_768),
        (SHIPPED / "Qwen--Qwen3-14B.json", 14.8e9, 13.2e9, 32_768),
        (SHIPPED / "Qwen--Qwen3-4B-Instruct-2507.json", 4.0e9, 3.6e9, 262_144),
    ],
)
def test_the_model_cards_figures(path, total, non_embedding, native):
    model = resolve_model("card", model_config=path)
    assert model.params == pytest.approx(total, abs=0.05e9)
    assert model.params - model.embedding_params == pytest.approx(non_embedding, abs=0.05e9)
    assert model.native_context == native


def test_kv_bytes_and_weights_of_qwen3_14b():
    """configs/README.md "Memory arithmetic": 2 (K, V) x 40 layers x 8 heads x 128 x 2 bytes = 160 KiB per token."""
    model = resolve_model("Qwen/Qwen3-14B")  # the shipped description: no weights on this machine
    assert model.kv_bytes_per_token == 160 * 1024
    assert model.weight_bytes == 2 * model.params
    assert (model.layers, model.attention_width, model.native_context) == (40, 5120, 32_768)


def test_native_context_rules():
    base = json.loads(QWEN3_8B.read_text())
    assert ModelSpec.from_config(base, "qwen3").native_context == 32_768  # Qwen3's 40,960 = 32,768 + 8,192 prompt
    scaled = {**base, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert ModelSpec.from_config({**scaled, "max_position_embeddings": 131072}, "yarn").native_context == 32_768
    llama = {**base, "model_type": "llama", "max_position_embeddings": 8192}
    assert ModelSpec.from_config(llama, "llama").native_context == 8192
    assert ModelSpec.from_config(base, "given", native_context=40_960).native_context == 40_960


def test_a_model_not_here_names_what_to_pass(tmp_path):
    with pytest.raises(UnknownModel, match=r"pass its config.json with --model-config PATH \(MODEL_CONFIG=PATH"):
        resolve_model("someone/not-a-model-here")
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    with pytest.raises(UnknownModel, match=r"config.json has no num_attention_heads"):
        resolve_model(str(tmp_path))
    assert resolve_model(str(QWEN3_8B.parent)).hidden == 4096  # a local directory
