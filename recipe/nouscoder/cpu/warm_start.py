"""The learning run's model: a tokenizer and a small Qwen2 made here, warm-started by a short supervised pass.

    python -m recipe.nouscoder.cpu.warm_start --data RUN_DIR/learn_data --out RUN_DIR/learn_model [--seed 0]

The supervised pass teaches the answer format and what each kind of problem asks for, but not to avoid mistakes:
every training problem of the task family (``task_family.py``) gets ``responses_per_problem`` responses in which
each mistake of ``task_family.Mistakes`` appears independently at its rate in ``MistakeRates``. A model that fits
this mixture passes with probability (1 - read)(1 - answer)(1 - label)(1 - fence), 0.31 at the default rates
(``MistakeRates.pass_rate``); the small model fits it loosely (it also confuses kinds of problem and breaks a fence
now and then), so its held-out pass rate starts near 0.2. Reinforcement learning has to find out which of its own
habits the grader rewards.
Nothing is graded here and nothing comes from a hub: the tokenizer is trained on the training split's prompts and
the responses (``tiny_model.train_tokenizer``), the weights start random (``tiny_model.random_qwen2``).

Deterministic under ``WarmStartSpec.seed``: one torch thread, seeded draws and initialisation. The directory is a
normal Hugging Face checkpoint; ``BUILD_INFO_FILE`` records the spec and the supervised loss.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pyarrow.parquet as pq
import torch
from verl.utils.tokenizer.chat_template import apply_chat_template

from data_prep.prompts import SYSTEM_MESSAGE, format_block
from recipe.nouscoder.cpu.task_family import MANIFEST_FILE, Mistakes, kind_of_problem_id, response_text
from recipe.nouscoder.cpu.tiny_model import TinyModelShape, random_qwen2, train_tokenizer

BUILD_INFO_FILE = "nouscoder_warm_start.json"
PROMPT_CONSTANTS = (SYSTEM_MESSAGE, format_block(""))
"""The LiveCodeBench prompt's system message and its format block for stdin problems (data_prep/prompts.py)."""


LEARNER_SHAPE = TinyModelShape(
    vocab_size=1024, hidden_size=96, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4
)
"""A Qwen2 of 0.4M parameters: after the supervised pass it picks the operation a statement asks for about 2 times in
3 (with 0.23M parameters, 1 in 2), in about a minute on one core."""


@dataclass(frozen=True)
class MistakeRates:
    """How often each mistake appears in the supervised responses (independently)."""

    read: float = 0.35
    answer: float = 0.15
    """Spread evenly over the kind's sibling operations."""
    label: float = 0.35
    fence: float = 0.15

    @property
    def pass_rate(self) -> float:
        """Pass rate of a model that reproduces the mixture exactly."""
        return (1 - self.read) * (1 - self.answer) * (1 - self.label) * (1 - self.fence)

    def draw(self, rng: random.Random, wrong_answers: int) -> Mistakes:
        return Mistakes(
            read=rng.random() < self.read,
            answer=rng.randint(1, wrong_answers) if rng.random() < self.answer else 0,
            label=rng.random() < self.label,
            fence=rng.random() < self.fence,
        )


@dataclass(frozen=True)
class WarmStartSpec:
    """Everything the build depends on besides the data."""

    seed: int = 0
    """Seeds the drawn responses, the initial weights (over ``shape.seed``) and the batch order."""
    shape: TinyModelShape = field(default_factory=lambda: LEARNER_SHAPE)
    rates: MistakeRates = field(default_factory=MistakeRates)
    responses_per_problem: int = 4
    steps: int = 300
    batch_size: int = 32
    learning_rate: float = 5e-3


def training_examples(train_parquet: Path, spec: WarmStartSpec) -> list[tuple[list[dict], str]]:
    """(chat messages, response text) pairs: ``responses_per_problem`` drawn responses per training problem."""
    table = pq.read_table(train_parquet, columns=["prompt", "extra_info"]).to_pylist()
    rng = random.Random(f"warm_start/{spec.seed}")
    examples = []
    for row in table:
        kind = kind_of_problem_id(row["extra_info"]["problem_id"])
        for _ in range(spec.responses_per_problem):
            examples.append((row["prompt"], response_text(kind, spec.rates.draw(rng, len(kind.wrong_answers)))))
    return examples


def tokenized(tokenizer, examples: list[tuple[list[dict], str]]) -> list[tuple[list[int], int]]:
    """Token ids of prompt (verl's own chat-template call, as its agent loop makes it) + response + EOS, and the prompt length."""
    rows = []
    for messages, response in examples:
        prompt = list(apply_chat_template(tokenizer, messages, add_generation_prompt=True, tokenize=True))
        answer = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        rows.append((prompt + answer, len(prompt)))
    return rows


def task_tokenizer(examples: list[tuple[list[dict], str]], vocab_size: int):
    """``tiny_model``'s byte-level BPE trained on the messages (with their roles) and the responses, plus one token for
    each fixed part of the LiveCodeBench prompt (``PROMPT_CONSTANTS``), which every prompt repeats verbatim."""
    from tokenizers import AddedToken

    texts = []
    for messages, response in examples:
        for message in messages:
            content = message["content"]
            for constant in PROMPT_CONSTANTS:
                content = content.replace(constant, "")
            texts += [message["role"], content]
        texts += ["assistant", response]
    tokenizer = train_tokenizer(texts, vocab_size)
    tokenizer.add_tokens([AddedToken(constant, normalized=False) for constant in PROMPT_CONSTANTS])
    return tokenizer


def supervised_pass(model, rows: list[tuple[list[int], int]], spec: WarmStartSpec, pad_token_id: int) -> list[float]:
    """AdamW on the response tokens (and EOS) only, linear decay to 0; returns the loss of every 10th step and the last."""
    generator = torch.Generator().manual_seed(spec.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / spec.steps)
    losses = []
    model.train()
    for step in range(spec.steps):
        picked = torch.randint(len(rows), (spec.batch_size,), generator=generator).tolist()
        width = max(len(rows[index][0]) for index in picked)
        input_ids = torch.full((len(picked), width), pad_token_id, dtype=torch.long)
        labels = torch.full((len(picked), width), -100, dtype=torch.long)
        attention_mask = torch.zeros((len(picked), width), dtype=torch.long)
        for row, index in enumerate(picked):
            ids, prompt_length = rows[index]
            input_ids[row, : len(ids)] = torch.tensor(ids)
            labels[row, prompt_length : len(ids)] = torch.tensor(ids[prompt_length:])
            attention_mask[row, : len(ids)] = 1
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 10 == 0 or step == spec.steps - 1:
            losses.append(round(loss.item(), 4))
    model.eval()
    return losses


def build_warm_start(data_dir: Path, out_dir: Path, spec: WarmStartSpec = WarmStartSpec()) -> dict:
    """Tokenizer + Qwen2 + supervised pass on ``data_dir/train.parquet``, saved to ``out_dir``; returns the build info."""
    train_parquet = data_dir / "train.parquet"
    if not train_parquet.is_file():
        raise FileNotFoundError(
            f"no {train_parquet}: build the task family first (python -m recipe.nouscoder.cpu.task_family --out "
            f"{data_dir})"
        )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same floats on every machine for the same seed
    try:
        start = time.perf_counter()
        examples = training_examples(train_parquet, spec)
        tokenizer = task_tokenizer(examples, spec.shape.vocab_size)
        model = random_qwen2(tokenizer, replace(spec.shape, seed=spec.seed))
        rows = tokenized(tokenizer, examples)
        losses = supervised_pass(model, rows, spec, tokenizer.pad_token_id)
        out_dir.mkdir(parents=True, exist_ok=True)
        tokenizer.save_pretrained(out_dir)
        model.save_pretrained(out_dir)
    finally:
        torch.set_num_threads(threads)
    info = {
        "spec": asdict(spec),
        "data_sha256": training_data_digest(data_dir),
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
        "vocab_size": len(tokenizer),
        "examples": len(rows),
        "longest_sequence_tokens": max(len(ids) for ids, _ in rows),
        "mixture_pass_rate": round(spec.rates.pass_rate, 4),
        "supervised_loss": losses,
        "build_s": round(time.perf_counter() - start, 1),
    }
    (out_dir / BUILD_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return info


def training_data_digest(data_dir: Path) -> str:
    """The content hash of the task family's training split (its manifest, task_family.py)."""
    return json.loads((data_dir / MANIFEST_FILE).read_text())["splits"]["train"]["sha256"]


def is_built(out_dir: Path, spec: WarmStartSpec, data_dir: Path) -> bool:
    """Whether ``out_dir`` holds a model built with ``spec`` from the training split now in ``data_dir``."""
    path = out_dir / BUILD_INFO_FILE
    if not path.is_file():
        return False
    info = json.loads(path.read_text())
    return info["spec"] == json.loads(json.dumps(asdict(spec))) and info["data_sha256"] == training_data_digest(
        data_dir
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="task family directory (train.parquet)")
    parser.add_argument("--out", type=Path, required=True, help="output directory (a Hugging Face checkpoint)")
    parser.add_argument("--seed", type=int, default=WarmStartSpec.seed, help="seed (default %(default)s)")
    args = parser.parse_args(argv)
    print(json.dumps(build_warm_start(args.data, args.out, WarmStartSpec(seed=args.seed))))


if __name__ == "__main__":
    main()
