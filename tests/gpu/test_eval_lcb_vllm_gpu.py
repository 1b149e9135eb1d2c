"""Opt-in: eval_lcb's vLLM path end to end on a GPU with a tiny random model built here (nothing downloaded).

Runs only where vLLM and CUDA are importable (`pip install vllm` on a GPU machine):
    pytest tests/gpu/test_eval_lcb_vllm_gpu.py -q
The model is untrained, so its samples are noise (mostly ``no_code``); the test checks the path, not a score:
every (problem, sample) is generated once with token counts within the budget, graded, and reported, YaRN
overrides reach vLLM, and a rerun generates nothing new.
"""

import json
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from data_prep import build_deepcoder_mix  # noqa: E402
from recipe.nouscoder.eval import eval_lcb  # noqa: E402

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_tiny_model(directory: Path) -> None:
    """A byte-level tokenizer (256 byte tokens + chat specials) and a 2-layer random Qwen2 model."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: index for index, symbol in enumerate(sorted(alphabet))}
    for token in SPECIAL_TOKENS:
        vocab[token] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(SPECIAL_TOKENS)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(directory)
    config = Qwen2Config(
        vocab_size=len(vocab),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        eos_token_id=vocab["<|im_end|>"],
        pad_token_id=vocab["<|endoftext|>"],
        bos_token_id=vocab["<|endoftext|>"],
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(directory)


@pytest.fixture(scope="module")
def tiny_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lcb_gpu")
    build_tiny_model(root / "model")
    assert build_deepcoder_mix.main(["--from", "sample", "--out", str(root / "mix")]) == 0
    return root / "model", root / "mix" / "test.parquet"


@pytest.mark.parametrize("yarn", [False, True], ids=["plain", "yarn_x2"])
def test_vllm_generation_grading_and_report(tiny_setup: tuple[Path, Path], tmp_path: Path, yarn: bool) -> None:
    model, data = tiny_setup
    out = tmp_path / "out"
    argv = [
        "--model",
        str(model),
        "--data",
        str(data),
        "--out",
        str(out),
        "--n",
        "2",
        "--max-tokens",
        "64",
        "--gpu-memory-utilization",
        "0.3",
        "--data-parallel-size",
        "1",
        "--time-limit-s",
        "4",
    ]
    argv += (
        ["--yarn-factor", "2.0", "--original-max-position-embeddings", "4096"] if yarn else ["--max-model-len", "4096"]
    )
    assert eval_lcb.main(argv) == 0
    generations = [
        json.loads(line)
        for path in sorted((out / "generations").glob("rank-*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert len(generations) == 16 * 2
    assert all(0 < record["response_tokens"] <= 64 and record["prompt_tokens"] > 0 for record in generations)
    results = json.loads((out / "results.json").read_text())
    assert results["summary"]["samples"] == 32 and results["settings"]["length_unit"] == "tokens"
    assert results["settings"]["effective_max_model_len"] == (8192 if yarn else 4096)
    for name in ("report.md", "per_problem.csv", "pass1_by_difficulty.png", "length_hist.png", "pass_at_k.png"):
        assert (out / name).is_file()
    assert eval_lcb.main(argv) == 0  # resumed: nothing new generated or graded
    assert sum(len(path.read_text().splitlines()) for path in (out / "generations").glob("rank-*.jsonl")) == 32
