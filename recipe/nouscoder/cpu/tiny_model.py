"""Build the CPU mode's tiny model: a random Qwen2 of about 1M parameters and a byte-level BPE tokenizer.

    python -m recipe.nouscoder.cpu.tiny_model --data demo_out/data/train.parquet --out RUN_DIR/tiny_qwen2

Nothing comes from a hub: the tokenizer is trained here on the prompts of the given parquet files plus the bundled
sample's programs (so code and statements take few tokens), with the Qwen chat markers ``<|im_start|>`` /
``<|im_end|>`` (end of turn = EOS) and a chat template of the same shape as Qwen's. The weights are random
(seeded). The directory is a normal Hugging Face checkpoint (``config.json``, ``model.safetensors``, tokenizer
files) that verl, transformers and ``select_checkpoint``'s merger load like any other; the CPU mode builds it
once under the run directory and reuses it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow.parquet as pq
import torch

END_OF_TEXT, TURN_START, TURN_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}" + TURN_START + "{{ message['role'] }}\n{{ message['content'] }}" + TURN_END + "\n"
    "{% endfor %}{% if add_generation_prompt %}" + TURN_START + "assistant\n{% endif %}"
)
BUILD_INFO_FILE = "nouscoder_tiny_model.json"


@dataclass(frozen=True)
class TinyModelShape:
    """Qwen2 shape of the tiny model: 2048 x 128 embeddings (untied) + 3 layers = 0.97M parameters."""

    vocab_size: int = 2048
    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 3
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 4096
    seed: int = 0


def prompt_texts(parquet_files: Sequence[Path]) -> Iterable[str]:
    """Every message text of the ``prompt`` column of each file."""
    for path in parquet_files:
        for messages in pq.read_table(path, columns=["prompt"]).column("prompt").to_pylist():
            yield from (message["content"] for message in messages)


def sample_program_texts() -> list[str]:
    from data_prep.sample import load_solutions

    return [solution.completion for solution in load_solutions()]


def train_tokenizer(texts: Iterable[str], vocab_size: int):
    """Byte-level BPE with the chat markers as special tokens; EOS = end of turn, as in Qwen chat models."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT, TURN_START, TURN_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token=TURN_END, pad_token=END_OF_TEXT)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def random_qwen2(tokenizer, shape: TinyModelShape = TinyModelShape()):
    """A randomly initialised (seeded) fp32 Qwen2 of ``shape`` for ``tokenizer``: EOS = end of turn, pad = its pad."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(shape.seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_key_value_heads,
        max_position_embeddings=shape.max_position_embeddings,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        dtype="float32",
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def build_tiny_model(parquet_files: Sequence[Path], out_dir: Path, shape: TinyModelShape = TinyModelShape()) -> dict:
    """Write tokenizer + random Qwen2 to ``out_dir``; returns the build info (also saved as ``BUILD_INFO_FILE``)."""
    missing = [str(path) for path in parquet_files if not Path(path).is_file()]
    if missing:
        raise FileNotFoundError(f"no parquet file at {missing}: build the data first (python -m data_prep...)")
    texts = [*prompt_texts(parquet_files), *sample_program_texts()]
    tokenizer = train_tokenizer(texts, shape.vocab_size)
    model = random_qwen2(tokenizer, shape)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out_dir)
    model.save_pretrained(out_dir)
    prompt_lengths = [len(tokenizer(text)["input_ids"]) for text in prompt_texts(parquet_files)]
    info = {
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
        "vocab_size": len(tokenizer),
        "shape": asdict(shape),
        "trained_on": [str(path) for path in parquet_files],
        "longest_prompt_message_tokens": max(prompt_lengths, default=0),
    }
    (out_dir / BUILD_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return info


def is_built(out_dir: Path) -> bool:
    return (out_dir / BUILD_INFO_FILE).is_file()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, nargs="+", required=True, help="parquet files whose prompts train the tokenizer"
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory (a Hugging Face checkpoint)")
    parser.add_argument(
        "--vocab-size", type=int, default=TinyModelShape.vocab_size, help="tokenizer vocabulary (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=TinyModelShape.seed, help="weight seed (default %(default)s)")
    args = parser.parse_args(argv)
    info = build_tiny_model(args.data, args.out, TinyModelShape(vocab_size=args.vocab_size, seed=args.seed))
    print(json.dumps(info))


if __name__ == "__main__":
    main()
