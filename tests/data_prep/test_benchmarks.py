"""The evaluation sets, built from hand-made rows in each source's own on-disk layout.

Formats (each fact's source):
- DeepCoder-Preview ``codeforces`` test config: ``codeforces/test-XXXXX-of-XXXXX.parquet`` with ``problem``,
  ``tests`` (JSON text of ``{input, output}``), ``starter_code`` and ``metadata`` (the columns the ``lcbv5`` config
  has: rLLM and others load both test configs with one ``concatenate_datasets``, rllm-org/rllm
  ``cookbooks/deepcoder/prepare_deepcoder_data.py``); the problem text is rLLM's Codeforces template
  (``rllm/data/preprocess/code/codeforces.ipynb``, ``CODEFORCES_TEMPLATE``), as the rows of rLLM's release data show
  (``rllm/data/test/code/codeforces.json`` before commit e5751bae; its problem 2013C is interactive by its ``Tags:``
  line only, its "Output Format:" empty, no "Interaction" section).
- rLLM's ``scripts/benchmark/codeforces/metadata_cf.json``: a JSON list of ids in row order; Qwen/CodeElo's test rows:
  ``problem_id``, ``description``, ``tags``, ``rating``, ``interaction`` (non-empty iff interactive: the dataset card).
- EvalPlus's release: ``HumanEvalPlus.jsonl.gz``, one task a line (evalplus/evalplus ``evalplus/data/humaneval.py``).
- LiveCodeBench: the shared writers of ``data_prep_raw_sources.py``.

The bundled rows (``data_prep/sample/benchmarks/``) are original, written for this project in those layouts.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from data_prep_raw_sources import LCB, lcb_line, write_lcb, write_parquet

from data_prep import build_benchmarks, build_deepcoder_mix
from data_prep.benchmarks import SAMPLE_DIR
from data_prep.filters import QualityConfig, interactive_reason, quality_reason
from data_prep.sources import convert_deepcoder_codeforces_row
from data_prep.statements import is_interactive_statement, statement_tags

DEEPCODER = "agentica-org/DeepCoder-Preview-Dataset"
EVALPLUS = "evalplus/humanevalplus_release"
INTERACTIVE_BY_TAGS_ONLY = {
    "problem": "\nA sample problem written for this project. The jury thinks of a permutation of length $n$; you may "
    "ask for the sum of any two of its positions. Restore it with at most $2n$ questions.\n\nInput Format:\nThe "
    "first line contains $t$ ($1 \\le t \\le 20$), the number of test cases.\n\nOutput Format:\n\n\nTags:\n"
    "['constructive algorithms', 'interactive']\n\nTime Limit: 2000 ms\nMemory Limit: 256 MB\n",
    "tests": json.dumps([{"input": "1\n3\n\n5\n\n4\n", "output": "? 1 2\n\n? 2 3\n\n! 2 3 1\n"}]),
    "starter_code": "",
    "metadata": {"func_name": None},
}
"""A row shaped as rLLM's 2013C: interactive only by its ``Tags:`` line (the template has no Interaction section)."""


def sample_rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (SAMPLE_DIR / name).read_text().splitlines()]


def test_the_tags_line_rule_finds_an_interactive_row_the_statement_rule_misses() -> None:
    problem = convert_deepcoder_codeforces_row(INTERACTIVE_BY_TAGS_ONLY, "deepcoder_codeforces/test:0")
    assert statement_tags(problem.statement) == ["constructive algorithms", "interactive"]
    assert interactive_reason(problem) == "statement_tags" and not is_interactive_statement(problem.statement)
    # the same rule filters training data
    assert quality_reason(problem, QualityConfig(min_tests=1)) == "interactive"
    plain = convert_deepcoder_codeforces_row(sample_rows("deepcoder_codeforces.jsonl")[0], "x")
    assert interactive_reason(plain) is None and statement_tags(plain.statement) == ["implementation", "math"]


@pytest.fixture
def local_root(tmp_path: Path) -> Path:
    """A --local-dir with DeepCoder's codeforces config, EvalPlus's release and LiveCodeBench release_v6 files."""
    root = tmp_path / "hf"
    rows = [*sample_rows("deepcoder_codeforces.jsonl"), INTERACTIVE_BY_TAGS_ONLY]
    write_parquet(root / DEEPCODER / "codeforces" / "test-00000-of-00001.parquet", rows)
    release = root / EVALPLUS / "HumanEvalPlus.jsonl.gz"
    release.parent.mkdir(parents=True)
    with gzip.open(release, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in sample_rows("humanevalplus.jsonl"))
    return root


def test_codeforces_and_humanevalplus_from_their_release_layouts(local_root: Path, tmp_path: Path) -> None:
    ids = tmp_path / "metadata_cf.json"
    ids.write_text(json.dumps(["90001A", "90001B", "90001C", "90001D", "2013C"]))
    out = tmp_path / "bench"
    argv = ["--local-dir", str(local_root), "--benchmarks", "codeforces,humanevalplus", "--out", str(out)]
    assert build_benchmarks.main([*argv, "--codeforces-metadata", str(ids)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())["benchmarks"]
    codeforces = manifest["codeforces"]
    assert codeforces["problems_read"] == 5 and codeforces["problems"] == 3
    assert codeforces["interactive"] == [
        {"problem_id": "codeforces/90001D", "known_by": "statement_tags"},
        {"problem_id": "codeforces/2013C", "known_by": "statement_tags"},
    ]
    assert codeforces["codeforces_metadata"]["found_by"]["position"] == 5
    assert codeforces["warnings"] == [
        "5 problems read; the source has 408 (rLLM's release data (data_prep.benchmarks.CODEFORCES_ROWS))"
    ]
    rows = pq.read_table(out / "codeforces.parquet").to_pylist()
    assert [row["extra_info"]["problem_id"] for row in rows] == [f"codeforces/90001{c}" for c in "ABC"]
    assert {row["data_source"] for row in rows} == {"codeforces"}
    tasks = pq.read_table(out / "humanevalplus.parquet").to_pylist()
    truth = json.loads(tasks[1]["reward_model"]["ground_truth"])
    # the canonical solution's outputs, as literals: a tuple stays a tuple
    assert truth["base"] == ["(2.3333333333333335, 3.0)"] and len(truth["plus_time"]) == 3
    assert tasks[1]["extra_info"]["problem_id"] == "humanevalplus/Sample/1"
    assert "```python\nfrom typing import List, Tuple\ndef mean_and_spread(" in tasks[1]["prompt"][1]["content"]


def test_codeelo_rows_give_ratings_and_ids_by_description(local_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    argv = ["--local-dir", str(local_root), "--benchmarks", "codeforces", "--out", str(out)]
    metadata = SAMPLE_DIR / "codeelo_test.jsonl"
    assert build_benchmarks.main([*argv, "--codeforces-metadata", str(metadata)]) == 0
    rows = pq.read_table(out / "codeforces.parquet").to_pylist()
    assert [row["extra_info"]["difficulty"] for row in rows] == ["800", "1200", "1600"]
    report = json.loads((out / "manifest.json").read_text())["benchmarks"]["codeforces"]
    assert report["codeforces_metadata"]["found_by"]["description"] == 4
    assert report["interactive"][0] == {"problem_id": "codeforces/90001D", "known_by": "tag"}
    unmatched = report["interactive"][1]["problem_id"]  # the 2013C-shaped row is not in these CodeElo rows
    assert unmatched.startswith("deepcoder_codeforces/") and report["codeforces_metadata"]["without_id"] == [unmatched]


def test_an_id_list_of_another_length_is_refused(local_root: Path, tmp_path: Path, capsys) -> None:
    ids = tmp_path / "metadata_cf.json"
    ids.write_text(json.dumps(["90001A"]))
    argv = ["--local-dir", str(local_root), "--benchmarks", "codeforces", "--out", str(tmp_path / "b")]
    assert build_benchmarks.main([*argv, "--codeforces-metadata", str(ids)]) == 2
    assert "lists 1 ids but the codeforces config has 5 rows" in capsys.readouterr().err


def test_missing_release_file_names_the_download(tmp_path: Path, capsys) -> None:
    argv = ["--local-dir", str(tmp_path), "--benchmarks", "humanevalplus", "--out", str(tmp_path / "b")]
    assert build_benchmarks.main(argv) == 2
    assert "curl -L --create-dirs -o" in capsys.readouterr().err


def test_lcb_v5_window_reads_release_v5_files_and_dates(tmp_path: Path, problems) -> None:
    """release_v5 = test.jsonl..test5.jsonl; the window keeps dates in [2024-08-01, 2025-02-01)."""
    dated = {
        "test.jsonl": [("a", "2024-07-31T00:00:00"), ("b", "2024-08-01T00:00:00")],
        "test5.jsonl": [("c", "2025-01-31T00:00:00"), ("d", "2025-02-01T00:00:00")],
        "test6.jsonl": [("e", "2024-09-01T00:00:00")],
    }
    base = next(iter(problems.values()))
    files = {
        name: [
            lcb_line(replace(base, problem_id=pid, statement=f"statement {pid} " * 5, contest_date=date))
            for pid, date in entries
        ]
        for name, entries in dated.items()
    }
    write_lcb(tmp_path / "hf" / LCB, files)
    out = tmp_path / "bench"
    argv = ["--local-dir", str(tmp_path / "hf"), "--benchmarks", "lcb_v5", "--out", str(out)]
    assert build_benchmarks.main(argv) == 0
    rows = pq.read_table(out / "lcb_v5.parquet").to_pylist()
    assert sorted(row["extra_info"]["problem_id"] for row in rows) == ["lcb/b", "lcb/c"]
    entry = json.loads((out / "manifest.json").read_text())["benchmarks"]["lcb_v5"]
    assert entry["lcb_window"] == {
        "test_start": "2024-08-01",
        "test_end": "2025-02-01",
        "train_before": None,
        "lcb_version": "release_v5",
    }
    assert entry["expected_in_source"] == 279


def test_lcb_window_preset_of_the_training_build(capsys) -> None:
    args = build_deepcoder_mix.parse_args(["--lcb-window", "deepcoder_v5"])
    assert (args.lcb_version, args.test_start, args.test_end) == ("release_v5", "2024-08-01", "2025-02-01")
    assert build_deepcoder_mix.parse_args([]).lcb_version == "release_v6"
    with pytest.raises(SystemExit):
        build_deepcoder_mix.parse_args(["--lcb-window", "deepcoder_v5", "--test-end", "2025-03-01"])
    assert "drop --test-end" in capsys.readouterr().err
