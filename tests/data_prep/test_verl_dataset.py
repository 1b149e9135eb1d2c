"""The built parquet loads in verl's RLHFDataset (tiny local tokenizer, nothing downloaded)."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from data_prep_raw_sources import DEEPCODER, LCB, deepcoder_row, lcb_line, write_deepcoder, write_lcb

from data_prep.build import build_mix
from data_prep.build_settings import BuildConfig
from data_prep.verl_check import load_rlhf_dataset, tiny_chat_tokenizer


def test_train_and_test_parquet_load_in_rlhf_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, problems) -> None:
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    root = tmp_path / "hf"
    write_lcb(root / LCB, {"test6.jsonl": [lcb_line(problems[name]) for name in ("lcb_train", "lcb_test_boundary")]})
    write_deepcoder(
        root / DEEPCODER,
        {
            "taco": [deepcoder_row(problems["taco_functional"], "taco")],
            "primeintellect": [deepcoder_row(problems["pi_stdin"], "primeintellect")],
        },
    )
    build_mix(BuildConfig(out_dir=tmp_path / "out", mode="local", local_dir=root), log=lambda line: None)
    tokenizer = tiny_chat_tokenizer()

    train = load_rlhf_dataset(tmp_path / "out" / "train.parquet", tokenizer)
    assert len(train) == 3
    row = train[1]
    assert row["raw_prompt"][0]["role"] == "system" and row["raw_prompt"][1]["role"] == "user"
    assert row["index"] == 1 and row["extra_info"]["source"] == "taco"
    truth = json.loads(row["reward_model"]["ground_truth"])
    assert truth == problems["taco_functional"].ground_truth

    test = load_rlhf_dataset(tmp_path / "out" / "test.parquet", tokenizer)
    assert len(test) == 1 and test[0]["extra_info"]["contest_date"] == "2024-08-01T00:00:00"
    short = load_rlhf_dataset(tmp_path / "out" / "train.parquet", tokenizer, max_prompt_length=10)
    assert len(short) == 0
