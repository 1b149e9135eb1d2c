"""Load built parquet in verl's ``RLHFDataset`` and report rows and memory: proof that the trainer can read it.

``RLHFDataset`` (verl/utils/dataset/rl_dataset.py) reads the parquet with ``datasets.load_dataset("parquet")``
(an Arrow cache, memory-mapped), applies the tokenizer's chat template to the ``prompt`` column to drop prompts
longer than ``max_prompt_length``, and returns rows with ``raw_prompt`` (the messages) and ``index`` from
``extra_info``. Without a model tokenizer at hand, a tiny word-level tokenizer with a plain chat template is
built locally (nothing is downloaded); token counts then are word counts.

Before loading, the file must exist, be parquet and have the columns verl and the reward read (``ROW_SCHEMA`` of
``data_prep/parquet_writer.py``); after loading, every row's ground truth must parse as the reward parses it. Each
failure is one message naming the file (and row) and exit status 2 (bad input) or 1 (bad rows).

    python -m data_prep.verl_check data/deepcoder_mix/train.parquet
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from data_prep.parquet_writer import ROW_SCHEMA

PROG = "python -m data_prep.verl_check"
REBUILD = "write it with python -m data_prep.build_deepcoder_mix"

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def tiny_chat_tokenizer() -> Any:
    """A word-level ``PreTrainedTokenizerFast`` with a chat template, trained on a few strings (no download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    words = "You are an expert Python programmer question format answer read the inputs from stdin solve".split()
    trainer = trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"])
    tokenizer.train_from_iterator([" ".join(words)] * 2, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def load_rlhf_dataset(parquet: Path, tokenizer: Any, max_prompt_length: int = 1_000_000, workers: int = 1) -> Any:
    """verl's ``RLHFDataset`` over one parquet file, with overlong-prompt filtering on (as the trainer runs it)."""
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = OmegaConf.create(
        {
            "prompt_key": "prompt",
            "max_prompt_length": max_prompt_length,
            "filter_overlong_prompts": True,
            "filter_overlong_prompts_workers": workers,
            "truncation": "error",
            "cache_dir": tempfile.mkdtemp(prefix="verl_rlhf_"),
        }
    )
    return RLHFDataset(data_files=str(parquet), tokenizer=tokenizer, config=config)


class BadParquet(ValueError):
    """The file cannot be what the trainer reads (exit 2); the message names it and the fix."""


class BadRows(ValueError):
    """The file is a verl parquet but rows of it cannot be trained on (exit 1); the message names them."""


def check_schema(parquet: Path) -> int:
    """The file's row count, after checking that it is parquet with every column of ``ROW_SCHEMA`` (and the
    ``reward_model.ground_truth`` and ``extra_info.problem_id`` fields).

    Raises:
        BadParquet: a missing file, not parquet, or missing columns.
    """
    if not parquet.is_file():
        raise BadParquet(f"{parquet} does not exist ({REBUILD})")
    try:
        metadata = pq.read_metadata(parquet)
    except (pa.ArrowInvalid, OSError) as exc:
        raise BadParquet(f"{parquet} is not a parquet file ({exc}); {REBUILD}") from exc
    schema = metadata.schema.to_arrow_schema()
    missing = [name for name in ROW_SCHEMA.names if name not in schema.names]
    for column, field in (("reward_model", "ground_truth"), ("extra_info", "problem_id")):
        if column in schema.names and field not in {child.name for child in schema.field(column).type}:
            missing.append(f"{column}.{field}")
    if missing:
        raise BadParquet(
            f"{parquet} lacks {', '.join(missing)} (has {', '.join(schema.names)}): verl's RLHFDataset and the reward "
            f"read them; {REBUILD}"
        )
    return metadata.num_rows


def bad_ground_truths(parquet: Path, limit: int = 5) -> tuple[int, list[str]]:
    """(rows whose ``reward_model.ground_truth`` the reward cannot parse, the first ``limit`` as "row N (id): why").
    Streams the two columns a row group at a time."""
    from reward_fns.types import GroundTruthError
    from reward_fns.types import Problem as GradedProblem

    bad, position = 0, 0
    examples: list[str] = []
    parquet_file = pq.ParquetFile(parquet)
    for batch in parquet_file.iter_batches(batch_size=64, columns=["reward_model", "extra_info"]):
        for row in batch.to_pylist():
            try:
                GradedProblem.from_ground_truth((row["reward_model"] or {}).get("ground_truth") or "")
            except GroundTruthError as exc:
                bad += 1
                if len(examples) < limit:
                    examples.append(f"row {position} ({(row['extra_info'] or {}).get('problem_id')}): {exc}")
            position += 1
    return bad, examples


def check(parquet: Path, samples: int = 3) -> dict[str, Any]:
    """Check the file, load it, read a few rows through ``__getitem__``, parse every ground truth, and report rows,
    seconds and peak RSS (MiB).

    Raises:
        BadParquet: the file is missing, not parquet, or lacks a column.
        BadRows: a ground truth does not parse, or verl's RLHFDataset keeps no row.
    """
    started = time.monotonic()
    rows_in_file = check_schema(parquet)
    bad, examples = bad_ground_truths(parquet)
    if bad:
        raise BadRows(
            f"{parquet}: the reward cannot parse the ground truth of {bad} of its {rows_in_file} rows: "
            + "; ".join(examples)
            + f"; {REBUILD}"
        )
    dataset = load_rlhf_dataset(parquet, tiny_chat_tokenizer())
    if rows_in_file and not len(dataset):
        raise BadRows(
            f"{parquet}: verl's RLHFDataset kept none of its {rows_in_file} rows (a prompt must be a list of "
            f"{{role, content}} chat messages; its log above says which rows failed); {REBUILD}"
        )
    for position in range(min(samples, len(dataset))):
        dataset[position]
    return {
        "rows": len(dataset),
        "rows_in_file": rows_in_file,
        "seconds": round(time.monotonic() - started, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Load a built parquet in verl's RLHFDataset (tiny local tokenizer) and report rows and peak RSS; "
        "first check its columns and that every ground truth parses. Exit 2 for a file that is not such a parquet, "
        "1 for rows whose ground truth does not parse.",
    )
    parser.add_argument("parquet", type=Path, help="train.parquet or test.parquet written by build_deepcoder_mix")
    parser.add_argument("--samples", type=int, default=3, help="rows to read back through __getitem__")
    args = parser.parse_args(argv)
    try:
        report = check(args.parquet, args.samples)
    except (BadParquet, BadRows) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, BadParquet) else 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
