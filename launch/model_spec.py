"""The model the planner plans for: the architecture facts of its Hugging Face `config.json`, and what follows.

From `hidden_size` h, `num_hidden_layers` N, `num_attention_heads` H, `num_key_value_heads` K, `head_dim` d (default
h / H), `intermediate_size` I, `vocab_size` V and `tie_word_embeddings` (default false, as Qwen2/Qwen3/Llama configs):

    parameters     P = V h (x2 untied) + N (h H d + 2 h K d + H d h + 3 h I + 2 h) + h
                       (+ q/k/v biases H d + 2 K d per layer for Qwen2; + q/k norms 2 d per layer for Qwen3)
    KV per token   2 N K d x 2 bytes (bf16 K and V of every layer)
    weights        2 P bytes (bf16, as vLLM and the merged model hold them)

Native context (the base of a YaRN factor): `rope_scaling.original_max_position_embeddings` when the config has one,
else `max_position_embeddings` -- except a Qwen3 config stating 40,960 positions, whose model card documents 32,768
native positions (its config "reserves 32,768 tokens for outputs and 8,192 for typical prompts"; YaRN is given as
`original_max_position_embeddings: 32768`, Qwen3-8B / Qwen3-14B cards, "Processing Long Texts").

Where the model comes from (`resolve_model`): an explicit config.json (`--model-config`), a local model directory, a
hub id in the local Hugging Face cache, or one of the descriptions shipped in `launch/model_configs/` (the
experiment configs' own models: their config.json values with the source of each), so that a login node without the
weights can still plan the seed experiments.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHIPPED = Path(__file__).resolve().parent / "model_configs"
BF16_BYTES = 2
QWEN3_DOCUMENTED_NATIVE = {40_960: 32_768}  # Qwen3 cards: 40,960 in config.json = 32,768 native + 8,192 of prompt


class UnknownModel(ValueError):
    """The model's config.json cannot be found without the network; the message says what to pass."""


@dataclass(frozen=True)
class ModelSpec:
    """A dense decoder-only transformer, as its config.json describes it."""

    name: str
    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    max_positions: int
    native_context: int
    rope_theta: float

    @classmethod
    def from_config(cls, config: dict[str, Any], name: str, native_context: int | None = None) -> ModelSpec:
        try:
            heads = int(config["num_attention_heads"])
            hidden = int(config["hidden_size"])
            positions = int(config["max_position_embeddings"])
            spec = cls(
                name=name,
                model_type=str(config.get("model_type", "")),
                hidden=hidden,
                layers=int(config["num_hidden_layers"]),
                heads=heads,
                kv_heads=int(config.get("num_key_value_heads") or heads),
                head_dim=int(config.get("head_dim") or hidden // heads),
                intermediate=int(config["intermediate_size"]),
                vocab=int(config["vocab_size"]),
                tied_embeddings=bool(config.get("tie_word_embeddings", False)),
                max_positions=positions,
                native_context=native_context or documented_native_context(config),
                rope_theta=float(config.get("rope_theta", 10_000.0)),
            )
        except KeyError as missing:
            raise UnknownModel(f"{name}: config.json has no {missing.args[0]}; is it a decoder-only LLM's?") from None
        return spec

    @property
    def layer_params(self) -> int:
        attention = self.hidden * self.heads * self.head_dim * 2 + 2 * self.hidden * self.kv_heads * self.head_dim
        if self.model_type == "qwen2":  # Qwen2 has q/k/v biases
            attention += (self.heads + 2 * self.kv_heads) * self.head_dim
        if self.model_type == "qwen3":  # Qwen3 normalises q and k per head
            attention += 2 * self.head_dim
        return attention + 3 * self.hidden * self.intermediate + 2 * self.hidden

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def params(self) -> int:
        return self.embedding_params + self.layers * self.layer_params + self.hidden

    @property
    def weight_bytes(self) -> float:
        return BF16_BYTES * self.params

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * BF16_BYTES

    @property
    def attention_width(self) -> int:
        return self.heads * self.head_dim

    def describe(self) -> str:
        return (
            f"{self.name}: {self.params / 1e9:.2f}B parameters, {self.layers} layers, {self.heads} query / "
            f"{self.kv_heads} KV heads of {self.head_dim}, {self.native_context:,} native positions"
        )


def documented_native_context(config: dict[str, Any]) -> int:
    """The positions the model was trained on (module docstring: the rule and its Qwen3 exception)."""
    scaling = config.get("rope_scaling") or {}
    if scaling.get("original_max_position_embeddings"):
        return int(scaling["original_max_position_embeddings"])
    positions = int(config["max_position_embeddings"])
    if config.get("model_type") == "qwen3":
        return QWEN3_DOCUMENTED_NATIVE.get(positions, positions)
    return positions


def shipped_name(model: str) -> Path:
    return SHIPPED / f"{model.replace('/', '--')}.json"


def read_config_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise UnknownModel(f"cannot read the model config {path}: {error}") from None


def cached_config(model: str) -> Path | None:
    """config.json of a hub id in the local Hugging Face cache (no network), else None."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(model, "config.json")
    except ValueError:  # not a hub id (a path, a malformed name): nothing cached under it
        return None
    return Path(found) if isinstance(found, str) else None


def resolve_model(model: str, model_config: Path | None = None, native_context: int | None = None) -> ModelSpec:
    """The ModelSpec of `model` (a directory, a hub id) or of an explicit config.json; UnknownModel if none is here."""
    if model_config is not None:
        return ModelSpec.from_config(read_config_json(model_config), model, native_context)
    for find in (
        lambda: Path(model).expanduser() / "config.json",
        lambda: cached_config(model),
        lambda: shipped_name(model),
    ):
        candidate = find()
        if candidate is not None and candidate.is_file():
            return ModelSpec.from_config(read_config_json(candidate), model, native_context)
    raise UnknownModel(
        f"the model {model} has no config.json here (not a local directory, not in the Hugging Face cache, not one of "
        f"{', '.join(sorted(p.stem.replace('--', '/') for p in SHIPPED.glob('*.json')))}): pass its config.json with "
        "--model-config PATH (MODEL_CONFIG=PATH for the launcher), e.g. after `hf download MODEL config.json`"
    )


def add_model_arguments(parser: argparse.ArgumentParser, model_flag: str = "--model") -> None:
    group = parser.add_argument_group("the model (default: the first stage's actor_rollout_ref.model.path)")
    group.add_argument(
        model_flag, dest="model", default=None, help="a model directory or hub id (the launcher's INIT_MODEL)"
    )
    group.add_argument(
        "--model-config",
        type=Path,
        default=None,
        help="its config.json, where the model is not on this machine (the launcher's MODEL_CONFIG)",
    )
    group.add_argument(
        "--native-context", type=int, default=None, help="positions it was trained on (default: from config.json)"
    )


def model_from_args(args: argparse.Namespace, first_stage: Any) -> ModelSpec:
    """The chain's model: --model, else the directory of --model-config, else the first stage config's
    `actor_rollout_ref.model.path`."""
    if args.model:
        name = args.model
    elif args.model_config is not None:
        name = args.model_config.expanduser().resolve().parent.name
    else:
        name = str(first_stage.actor_rollout_ref.model.path)
    return resolve_model(name, args.model_config, args.native_context)
