"""End-to-end builds from raw-format local copies of every source (no network)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from data_prep_raw_sources import (
    DEEPCODER,
    LCB,
    PRIMEINTELLECT,
    TACO_VERIFIED,
    FixtureProblem,
    deepcoder_row,
    lcb_line,
    primeintellect_row,
    taco_verified_row,
    with_statement,
    with_tests,
    write_deepcoder,
    write_lcb,
    write_parquet,
)

from data_prep.build import build_mix
from data_prep.build_deepcoder_mix import main as cli_main
from data_prep.build_settings import BuildConfig, DateWindow
from data_prep.filters import QualityConfig
from data_prep.loading import SourceUnavailable
from data_prep.sources import download_command


def _lcb_files(problems: dict[str, FixtureProblem]) -> dict[str, list[str]]:
    missing_statement = json.loads(lcb_line(with_statement(problems["lcb_train"], "missing", "x")))
    del missing_statement["question_content"]
    return {
        "test5.jsonl": [lcb_line(problems["lcb_train"]), json.dumps(missing_statement) + "\n"],
        "test6.jsonl": [
            lcb_line(problems["lcb_test_functional"]),
            lcb_line(problems["lcb_test_boundary"]),
            lcb_line(problems["lcb_after_window"]),
            lcb_line(with_statement(problems["lcb_test_boundary"], "undecodable", "u"), private="!!not-base64!!"),
        ],
    }


def _planted_taco(problems: dict[str, FixtureProblem]) -> list[dict]:
    taco, functional = problems["taco_stdin"], problems["taco_functional"]
    near = with_statement(taco, "taco-near", taco.statement + " Good luck!")
    contaminated = with_statement(taco, "taco-contam", problems["lcb_test_boundary"].statement)
    few = with_tests(
        with_statement(taco, "taco-few", "Few tests. " + taco.statement[::-1]), taco.ground_truth["tests"][:3]
    )
    empty = with_tests(
        with_statement(taco, "taco-empty", "Empty output. " + functional.statement[::-1]),
        [dict(test, output="  \n") for test in taco.ground_truth["tests"]],
    )
    rows = [deepcoder_row(p, "taco") for p in (taco, functional, near, contaminated, few, empty)]
    rows.append(deepcoder_row(taco, "taco", tests="{not json"))
    return rows


def _planted_primeintellect(problems: dict[str, FixtureProblem]) -> list[dict]:
    stdin, functional = problems["pi_stdin"], problems["pi_functional"]
    duplicate = with_statement(functional, "pi-dup", "  " + problems["taco_functional"].statement.upper() + "!")
    same_inputs = with_tests(
        with_statement(stdin, "pi-same-inputs", "Unrelated text. " + stdin.statement[::-1]),
        problems["lcb_test_boundary"].ground_truth["tests"],
    )
    large = with_tests(
        with_statement(stdin, "pi-large", "Large tests. " + problems["lcb_train"].statement[::-1]),
        [dict(test, input=test["input"] * 1000) for test in stdin.ground_truth["tests"]],
    )
    return [deepcoder_row(p, "primeintellect") for p in (stdin, functional, duplicate, same_inputs, large)]


@pytest.fixture
def local_root(tmp_path: Path, problems: dict[str, FixtureProblem]) -> Path:
    root = tmp_path / "hf"
    write_lcb(root / LCB, _lcb_files(problems))
    write_deepcoder(
        root / DEEPCODER, {"taco": _planted_taco(problems), "primeintellect": _planted_primeintellect(problems)}
    )
    return root


def _build(root: Path, out: Path, **overrides) -> dict:
    settings = {"mode": "local", "local_dir": root, "quality": QualityConfig(max_test_chars=40_000)} | overrides
    return build_mix(BuildConfig(out_dir=out, **settings), log=lambda line: None)


def _rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def test_counts_per_source_and_split(local_root: Path, tmp_path: Path) -> None:
    manifest = _build(local_root, tmp_path / "out")
    assert manifest["counts"]["test"]["by_source"] == {"livecodebench": 2}
    assert manifest["counts"]["train"]["by_source"] == {"livecodebench": 1, "primeintellect": 2, "taco": 2}
    assert len(_rows(tmp_path / "out" / "train.parquet")) == 5
    assert len(_rows(tmp_path / "out" / "test.parquet")) == 2
    assert any("454" in warning for warning in manifest["warnings"])


def test_date_boundary_sends_july_31_to_train_and_august_1_to_test(local_root: Path, tmp_path: Path) -> None:
    _build(local_root, tmp_path / "out")
    train = {row["extra_info"]["problem_id"]: row for row in _rows(tmp_path / "out" / "train.parquet")}
    test = {row["extra_info"]["problem_id"]: row for row in _rows(tmp_path / "out" / "test.parquet")}
    assert train["lcb/supply_knapsack"]["extra_info"]["contest_date"] == "2024-07-31T00:00:00"
    assert test["lcb/task_order"]["extra_info"]["contest_date"] == "2024-08-01T00:00:00"
    assert "lcb/task_order" not in train and "lcb/supply_knapsack" not in test
    assert "lcb/tree_trail" not in train and "lcb/tree_trail" not in test


def test_every_filter_counts_its_reason(local_root: Path, tmp_path: Path) -> None:
    filters = _build(local_root, tmp_path / "out")["filters"]["train"]
    assert filters == {
        "contaminated_identical_inputs": {"primeintellect": 1},
        "contaminated_statement_overlap": {"taco": 1},
        "duplicate_exact": {"primeintellect": 1},
        "duplicate_near": {"taco": 1},
        "empty_output": {"taco": 1},
        "outside_date_windows": {"livecodebench": 1},
        "tests_too_large": {"primeintellect": 1},
        "too_few_tests": {"taco": 1},
    }


def test_dedup_and_decontamination_name_the_planted_pairs(local_root: Path, tmp_path: Path) -> None:
    manifest = _build(local_root, tmp_path / "out")
    flagged = {(flag["train_id"], flag["test_id"], flag["signal"]) for flag in manifest["decontamination"]["flagged"]}
    taco_ids = "deepcoder_taco/train-00000-of-00001.parquet"
    pi_ids = "deepcoder_primeintellect/train-00000-of-00001.parquet"
    assert flagged == {
        (f"{taco_ids}:3", "lcb/task_order", "statement_overlap"),
        (f"{pi_ids}:3", "lcb/task_order", "identical_inputs"),
    }
    assert manifest["duplicates"]["exact"] == [{"dropped": f"{pi_ids}:2", "kept": f"{taco_ids}:1"}]
    assert [(d["dropped"], d["kept"]) for d in manifest["duplicates"]["near"]] == [(f"{taco_ids}:2", f"{taco_ids}:0")]
    assert manifest["decontamination"]["statement_ngram_words"] == 13
    assert "method" in manifest["decontamination"]


def test_malformed_rows_are_skipped_counted_and_named(local_root: Path, tmp_path: Path) -> None:
    skipped = _build(local_root, tmp_path / "out")["malformed_rows"]
    assert skipped["by_source_and_reason"] == {
        "deepcoder_taco/bad_json": 1,
        "lcb/missing_field": 1,
        "lcb/undecodable_private_tests": 1,
    }
    named = {(row["source"], row["id"], row["reason"]) for row in skipped["rows"]}
    assert ("lcb", "lcb/undecodable", "undecodable_private_tests") in named
    assert ("lcb", "lcb/missing", "missing_field") in named
    assert ("deepcoder_taco", "deepcoder_taco/train-00000-of-00001.parquet:6", "bad_json") in named


def test_rows_have_the_verl_layout_and_converted_ground_truth(
    local_root: Path, tmp_path: Path, problems: dict[str, FixtureProblem]
) -> None:
    _build(local_root, tmp_path / "out")
    train = {row["extra_info"]["problem_id"]: row for row in _rows(tmp_path / "out" / "train.parquet")}
    taco_functional = train["deepcoder_taco/train-00000-of-00001.parquet:1"]
    assert taco_functional["ability"] == "code" and taco_functional["data_source"] == "taco"
    assert taco_functional["reward_model"]["style"] == "rule"
    truth = json.loads(taco_functional["reward_model"]["ground_truth"])
    original = problems["taco_functional"].ground_truth
    assert truth["fn_name"] == original["fn_name"]
    for converted, expected in zip(truth["tests"], original["tests"], strict=True):
        assert converted["testtype"] == "functional"
        assert [json.loads(line) for line in converted["input"].split("\n")] == [
            json.loads(line) for line in expected["input"].split("\n")
        ]
        assert json.loads(converted["output"]) == json.loads(expected["output"])
    assert [row["extra_info"]["index"] for row in train.values()] == list(range(5))
    assert [m["role"] for m in taco_functional["prompt"]] == ["system", "user"]
    # DeepCoder's taco config ships no starter code: the prompt gets a stub with the graded function's name
    assert "```python\ndef compressRuns(arg1):\n    \n```" in taco_functional["prompt"][1]["content"]
    lcb_test = _rows(tmp_path / "out" / "test.parquet")[0]
    assert lcb_test["extra_info"]["problem_id"] == "lcb/count_hills"
    lcb_truth = json.loads(lcb_test["reward_model"]["ground_truth"])
    assert lcb_truth == problems["lcb_test_functional"].ground_truth
    assert lcb_test["extra_info"]["num_tests"] == len(lcb_truth["tests"]) and lcb_test["extra_info"]["split"] == "test"


def test_content_hash_is_reproducible_and_manifest_lists_files(local_root: Path, tmp_path: Path) -> None:
    first = _build(local_root, tmp_path / "one")
    second = _build(local_root, tmp_path / "two")
    assert first["content_sha256"] == second["content_sha256"]
    assert json.loads((tmp_path / "one" / "manifest.json").read_text())["content_sha256"] == first["content_sha256"]
    lcb = next(source for source in first["sources"] if source["name"] == "lcb")
    assert lcb["splits"] == ["test", "train"]
    assert [entry["path"] for entry in lcb["files"]] == ["test5.jsonl", "test6.jsonl"]
    third = _build(local_root, tmp_path / "three", prompt_variant="deepcoder")
    assert third["content_sha256"]["train"] != first["content_sha256"]["train"]


def test_original_repositories_taco_verified_and_primeintellect(
    tmp_path: Path, problems: dict[str, FixtureProblem]
) -> None:
    root = tmp_path / "hf"
    write_lcb(root / LCB, _lcb_files(problems))
    taco_rows = [taco_verified_row(problems["taco_stdin"]), taco_verified_row(problems["taco_functional"])]
    (root / TACO_VERIFIED).mkdir(parents=True)
    (root / TACO_VERIFIED / "taco_verified.json").write_text(json.dumps(taco_rows, indent=1))
    cpp = with_statement(problems["pi_stdin"], "pi-cpp", "A C++ only problem. " + problems["pi_stdin"].statement[::-1])
    rows = [
        primeintellect_row(problems["pi_stdin"]),
        primeintellect_row(problems["pi_functional"]),
        primeintellect_row(cpp, language="cpp"),
        primeintellect_row(with_statement(cpp, "pi-broken", "x"), drop="verification_info"),
    ]
    write_parquet(root / PRIMEINTELLECT / "data" / "train-00000-of-00001.parquet", rows)
    manifest = _build(root, tmp_path / "out", train_sources=("taco_verified", "primeintellect"))
    assert manifest["counts"]["train"]["by_source"] == {"primeintellect": 2, "taco": 2}
    assert manifest["filters"]["train"] == {"not_python": {"primeintellect": 1}}
    assert manifest["malformed_rows"]["by_source_and_reason"]["primeintellect/missing_field"] == 1
    train = {row["extra_info"]["problem_id"]: row for row in _rows(tmp_path / "out" / "train.parquet")}
    pi_functional = json.loads(train["primeintellect/mirror_word"]["reward_model"]["ground_truth"])
    original = problems["pi_functional"].ground_truth
    assert pi_functional["fn_name"] == original["fn_name"]
    for converted, expected in zip(pi_functional["tests"], original["tests"], strict=True):
        assert json.loads(converted["output"]) == json.loads(expected["output"])
        assert converted["input"].split("\n") == [
            json.dumps(json.loads(line)) for line in expected["input"].split("\n")
        ]


def test_an_empty_local_dir_names_every_missing_source_at_once(
    local_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    code = cli_main(
        ["--local-dir", str(empty), "--out", str(out), "--train-sources", "lcb,deepcoder_taco,taco_verified"]
    )
    error = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "3 sources have no local copy" in error
    for name, repo in (("lcb", LCB), ("deepcoder_taco", DEEPCODER), ("taco_verified", TACO_VERIFIED)):
        assert f"  {name} (" in error
        assert f"  hf download {repo} --repo-type dataset --local-dir {empty / repo}\n" in error
    assert "--source-dir NAME=PATH" in error and "--from sample" in error and "huggingface-cli" not in error

    (local_root / DEEPCODER / "taco").rename(local_root / DEEPCODER / "moved")  # the directory is there, no file is
    with pytest.raises(SourceUnavailable) as caught:
        _build(local_root, tmp_path / "one_missing")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("source 'deepcoder_taco'") and "no file matches taco/" in message
    assert (
        f"Download it with `hf download {DEEPCODER} --repo-type dataset --local-dir {local_root / DEEPCODER}`"
        in message
    )


@pytest.mark.integration
def test_the_download_command_runs_with_this_environments_hf(tmp_path: Path) -> None:
    """Offline, ``hf download`` gets past its arguments to the network: the command's every flag exists (a flag it
    does not know is a usage error, exit 2)."""
    hf = Path(sys.executable).with_name("hf")
    command = shlex.split(download_command(LCB, tmp_path / "copy", revision="0" * 40))
    assert command[:2] == ["hf", "download"]
    offline = os.environ | {"HF_HUB_OFFLINE": "1"}
    for extra, status, says in (([], 1, "offline mode is enabled"), (["--no-such-flag"], 2, "No such option")):
        done = subprocess.run([str(hf), *command[1:], *extra], env=offline, capture_output=True, text=True, timeout=120)
        assert (done.returncode, says in done.stdout + done.stderr) == (status, True), done.stderr[-2000:]


class _FakeHubInfo:
    def __init__(self, sha: str) -> None:
        self.sha = sha


def test_unreachable_hub_gives_one_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import huggingface_hub

    def refuse(*args, **kwargs):
        raise ConnectionError("name resolution failed")

    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", refuse)
    code = cli_main(["--from", "hub", "--out", str(tmp_path / "out")])
    error = capsys.readouterr().err
    assert code == 2 and error.count("\n") == 1
    assert "cannot resolve revision 'main' of livecodebench/code_generation_lite on the hub" in error
    assert "--local-dir" in error and "name resolution failed" in error


def test_hub_mode_pins_one_commit_per_repository_and_reports_a_dead_hub(
    local_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import datasets
    import huggingface_hub

    downloads = []
    resolved = {LCB: "a" * 40, DEEPCODER: "b" * 40}

    def dataset_info(self, repo_id: str, revision: str | None = None):
        assert revision in (None, "v6-tag")
        return _FakeHubInfo(resolved[repo_id] if revision is None else "c" * 40)

    def local_file(repo_id: str, filename: str, repo_type: str, revision: str) -> str:
        assert repo_type == "dataset"
        downloads.append((repo_id, filename, revision))
        return str(local_root / repo_id / filename)

    def refuse(*args, **kwargs):
        assert kwargs["revision"] == "b" * 40  # every config of a repository is read at the resolved commit
        raise ConnectionError("hub unreachable")

    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", dataset_info)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", local_file)
    monkeypatch.setattr(datasets, "load_dataset", refuse)
    code = cli_main(["--from", "hub", "--lcb-version", "v6", "--out", str(tmp_path / "out")])
    error = capsys.readouterr().err
    assert code == 2
    assert "cannot read agentica-org/DeepCoder-Preview-Dataset:taco from the hub" in error
    assert (tmp_path / "out" / "test.parquet").exists()
    assert set(downloads) == {(LCB, "test6.jsonl", "a" * 40)}
    args = ["--from", "hub", "--lcb-version", "v6", "--revision", f"{LCB}=v6-tag", "--train-sources", "lcb"]
    assert cli_main([*args, "--out", str(tmp_path / "pinned")]) == 0
    manifest = json.loads((tmp_path / "pinned" / "manifest.json").read_text())
    assert manifest["sources"][0] | {"files": None} == {
        "name": "lcb",
        "repo": LCB,
        "config": None,
        "splits": ["test", "train"],
        "revision": "c" * 40,
        "requested": "v6-tag",
        "files": None,
    }


def test_local_copy_records_its_download_revision_and_refuses_another_pin(local_root: Path, tmp_path: Path) -> None:
    for path in (local_root / LCB).glob("*.jsonl"):
        metadata = local_root / LCB / ".cache" / "huggingface" / "download" / f"{path.name}.metadata"
        metadata.parent.mkdir(parents=True, exist_ok=True)
        metadata.write_text(f"{'d' * 40}\netag\n1712656091.123\n")
    manifest = _build(local_root, tmp_path / "out")
    revisions = {source["name"]: source["revision"] for source in manifest["sources"]}
    assert revisions["lcb"] == "d" * 40 and revisions["deepcoder_taco"].startswith("unknown")
    with pytest.raises(SourceUnavailable, match=f"revision {'d' * 40}, but --revision pins {'e' * 40}"):
        _build(local_root, tmp_path / "pinned", revisions={LCB: "e" * 40})


def test_cli_flags_reach_the_build(local_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["--local-dir", str(local_root), "--out", str(out), "--min-tests", "8", "--max-test-chars", "40000"]
    assert (
        cli_main([*args, "--prompt-variant", "deepcoder", "--decontam-ngram", "9", "--near-dup-threshold", "0.99"]) == 0
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["prompt_variant"] == "deepcoder"
    assert manifest["settings"]["quality"]["min_tests"] == 8
    assert manifest["decontamination"]["statement_ngram_words"] == 9
    assert manifest["settings"]["near_duplicate"]["threshold"] == 0.99
    assert manifest["filters"]["train"]["too_few_tests"] == {"livecodebench": 1, "taco": 1}  # 7 and 3 tests
    assert "duplicate_near" not in manifest["filters"]["train"]
    row = pq.read_table(out / "train.parquet").to_pylist()[0]
    assert [message["role"] for message in row["prompt"]] == ["user"]


def test_the_454_check_applies_to_the_v6_window_only(local_root: Path, tmp_path: Path) -> None:
    v5_window = DateWindow(test_start="2024-08-01", test_end="2025-02-01")
    manifest = _build(local_root, tmp_path / "v5", window=v5_window)
    assert not [warning for warning in manifest["warnings"] if "should have" in warning]
    manifest = _build(local_root, tmp_path / "v5_count", window=v5_window, expected_test_count=100)
    assert any("should have 100" in warning for warning in manifest["warnings"])
