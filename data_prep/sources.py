"""The raw sources of the DeepCoder mix: where their files are and how one row becomes a :class:`Problem`.

Each source reads its dataset repository's own files, either from a local copy (``--local-dir ROOT`` holds
``ROOT/<owner>/<name>/...`` as ``huggingface-cli download <owner>/<name> --repo-type dataset --local-dir
ROOT/<owner>/<name>`` leaves it) or from the hub. Row layouts (the public code each fact comes from is cited in
``data_prep/README.md``, "Format facts"):

- ``livecodebench/code_generation_lite``: ``test.jsonl``, ``test2.jsonl`` ... ``test6.jsonl`` (release_v1 ...
  release_v6 add one file each); string columns ``question_title, question_content, platform, question_id,
  contest_id, contest_date, starter_code, difficulty, public_test_cases, private_test_cases, metadata``.
- ``agentica-org/DeepCoder-Preview-Dataset``: configs ``primeintellect``, ``taco``, ``lcbv5`` (train) and
  ``codeforces``, ``lcbv5`` (test) as ``<config>/<split>-XXXXX-of-XXXXX.parquet``; columns ``problem``, ``tests``
  (JSON text), ``solutions`` (list of strings, where the config has them), ``starter_code`` and ``metadata`` (a dict
  with ``func_name`` in ``lcbv5``; JSON text is accepted too).
- ``likaixin/TACO-verified``: one ``taco_verified.json`` (a JSON array) with TACO's columns ``question,
  solutions, starter_code, input_output, difficulty, source, name, url, date, ...``; ``source`` is the platform.
- ``PrimeIntellect/verifiable-coding-problems``: ``data/train-*.parquet``; columns ``problem_id, source,
  task_type, in_source_id, prompt, gold_standard_solution, verification_info, metadata`` (JSON strings).

Evaluation sets (``python -m data_prep.build_benchmarks``): DeepCoder's ``codeforces`` test config (the problem text
in rLLM's Codeforces template, with a ``Tags:`` line: ``data_prep.statements.statement_tags``) and EvalPlus's
HumanEval+ release ``HumanEvalPlus.jsonl.gz`` (not a hub repository: a GitHub release asset,
``evalplus/data/utils.py`` ``get_dataset_metadata``), read by ``data_prep.evalplus_tasks``.

Statements lose PrimeIntellect's prompt wrapper here (``data_prep.statements``), so every later step sees the
problem text only.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from data_prep import ground_truth
from data_prep.evalplus_tasks import RELEASE_URL as HUMANEVALPLUS_URL
from data_prep.evalplus_tasks import convert_humanevalplus_row
from data_prep.problem import MalformedRow, Problem
from data_prep.raw_files import iter_json_lines, iter_json_records, iter_parquet_rows
from data_prep.statements import strip_prompt_wrapper

LCB_REPO = "livecodebench/code_generation_lite"
DEEPCODER_REPO = "agentica-org/DeepCoder-Preview-Dataset"
TACO_VERIFIED_REPO = "likaixin/TACO-verified"
PRIMEINTELLECT_REPO = "PrimeIntellect/verifiable-coding-problems"
_MAX_TAGS_CHARS = 10_000
"""Longer tag columns are not parsed (a tag list is a few words; literal_eval of huge text is slow)."""
LCB_FILES = ("test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl")

RowConverter = Callable[[Any, str], Problem]
"""(raw row, row id) -> Problem; raises MalformedRow."""


@dataclass(frozen=True)
class Source:
    """One raw source: a repository (and config), its files, and its row converter."""

    name: str
    family: str
    repo: str
    config: str | None
    file_patterns: tuple[str, ...]
    convert: RowConverter
    file_format: str
    """``parquet``, ``jsonl`` or ``json``."""
    split: str = "train"
    """The split a hub read streams (``datasets.load_dataset(..., split=)``)."""
    download_url: str | None = None
    """A source that is not a hub repository: the URL of its one file (the local copy's download command names it)."""

    def describe(self) -> str:
        return f"{self.repo}:{self.config}" if self.config else self.repo


def lcb_release_files(version: str) -> tuple[str, ...]:
    """Files of a LiveCodeBench release tag: ``release_vN`` = test.jsonl..testN.jsonl, ``vN`` = testN only."""
    if version == "release_latest":
        return LCB_FILES
    if version.startswith("release_v") and version[9:].isdigit() and 1 <= int(version[9:]) <= len(LCB_FILES):
        return LCB_FILES[: int(version[9:])]
    if version.startswith("v") and version[1:].isdigit() and 1 <= int(version[1:]) <= len(LCB_FILES):
        return (LCB_FILES[int(version[1:]) - 1],)
    raise ValueError(f"unknown LiveCodeBench version {version!r}: use release_v1..release_v6, v1..v6 or release_latest")


def lcb_row_date(row: dict[str, Any]) -> str:
    """A LiveCodeBench row's contest date as ``YYYY-MM-DDT00:00:00`` (raises MalformedRow when absent)."""
    date = row.get("contest_date")
    if not isinstance(date, str) or len(date) < 10:
        raise MalformedRow("missing_field", "contest_date")
    return date[:10] + "T00:00:00"


def convert_lcb_row(row: dict[str, Any], row_id: str) -> Problem:
    metadata = _metadata(row)
    fn_name = metadata.get("func_name")
    public = ground_truth.loads_json(_field(row, "public_test_cases"), "public_test_cases")
    private = ground_truth.decode_lcb_private_tests(_field(row, "private_test_cases"))
    return Problem(
        problem_id=row_id,
        source="livecodebench",
        origin=LCB_REPO,
        statement=_field(row, "question_content"),
        tests=ground_truth.lcb_tests(_as_list(public, "public_test_cases") + _as_list(private, "private"), fn_name),
        public_tests=ground_truth.lcb_tests(_as_list(public, "public_test_cases"), fn_name),
        fn_name=fn_name,
        starter_code=row.get("starter_code") or "",
        title=row.get("question_title") or "",
        difficulty=row.get("difficulty") or "",
        contest_date=lcb_row_date(row),
        platform=row.get("platform") or "",
        source_name="lcb",
    )


def _deepcoder_converter(config: str) -> RowConverter:
    family = {"taco": "taco", "primeintellect": "primeintellect"}.get(config, "livecodebench")

    def convert(row: dict[str, Any], row_id: str) -> Problem:
        metadata = _metadata(row)
        tests, fn_name = ground_truth.deepcoder_tests(
            ground_truth.loads_json(_field(row, "tests"), "tests"), metadata.get("func_name")
        )
        return Problem(
            problem_id=row_id,
            source=family,
            origin=f"{DEEPCODER_REPO}:{config}",
            statement=strip_prompt_wrapper(_field(row, "problem")),
            tests=tests,
            fn_name=fn_name,
            starter_code=row.get("starter_code") or "",
            difficulty=str(metadata.get("difficulty") or ""),
            contest_date=_date_or_empty(metadata.get("contest_date")),
            platform=str(metadata.get("platform") or config),
            source_name=f"deepcoder_{config}",
            solutions=_strings(ground_truth.loads_list(row.get("solutions"), "solutions")),
        )

    return convert


def convert_deepcoder_codeforces_row(row: dict[str, Any], row_id: str) -> Problem:
    """A row of DeepCoder's ``codeforces`` test config: the statement is rLLM's Codeforces template (description,
    ``Input Format:``, ``Output Format:``, ``Tags:``, limits; rllm-org/rllm ``rllm/data/preprocess/code/
    codeforces.ipynb``) and its tests a list of ``{input, output}``, converted as the training configs are (the
    ``Tags:`` line is read by the interactive rule, ``data_prep.filters.interactive_reason``). The problem id and
    rating come from the row's ``metadata`` when it has them, else from the Codeforces metadata joined by
    ``data_prep.codeforces_metadata``."""
    metadata = _metadata(row)
    tests, fn_name = ground_truth.deepcoder_tests(
        ground_truth.loads_json(_field(row, "tests"), "tests"), metadata.get("func_name")
    )
    statement = _field(row, "problem").strip("\n")
    return Problem(
        problem_id=str(metadata.get("problem_id") or row_id),
        source="codeforces",
        origin=f"{DEEPCODER_REPO}:codeforces",
        statement=statement,
        tests=tests,
        fn_name=fn_name,
        starter_code=row.get("starter_code") or "",
        difficulty=str(metadata.get("rating") or ""),
        platform="codeforces",
        source_name="deepcoder_codeforces",
    )


def convert_taco_verified_row(row: dict[str, Any], row_id: str) -> Problem:
    platform = str(row.get("source") or "")
    io = ground_truth.loads_json(_field(row, "input_output"), "input_output")
    tests, fn_name = ground_truth.taco_tests(io, platform)
    return Problem(
        problem_id=row_id,
        source="taco",
        origin=TACO_VERIFIED_REPO,
        statement=_field(row, "question"),
        tests=tests,
        fn_name=fn_name,
        starter_code=row.get("starter_code") or "",
        title=row.get("name") or "",
        difficulty=str(row.get("difficulty") or ""),
        contest_date=_date_or_empty(row.get("date")),
        platform=platform,
        source_name="taco_verified",
        solutions=_strings(ground_truth.loads_list(row.get("solutions"), "solutions")),
        tags=_taco_tags(row),
    )


def convert_primeintellect_row(row: dict[str, Any], row_id: str) -> Problem:
    info = ground_truth.loads_json(_field(row, "verification_info"), "verification_info")
    if not isinstance(info, dict) or "test_cases" not in info:
        raise MalformedRow("missing_field", "verification_info.test_cases")
    metadata = _metadata(row)
    tests, fn_name = ground_truth.primeintellect_tests(info["test_cases"])
    gold = row.get("gold_standard_solution")
    return Problem(
        problem_id=row_id,
        source="primeintellect",
        origin=PRIMEINTELLECT_REPO,
        statement=strip_prompt_wrapper(_field(row, "prompt")),
        tests=tests,
        fn_name=fn_name,
        difficulty=str(metadata.get("difficulty") or ""),
        platform=str(row.get("source") or ""),
        language=str(info.get("language") or "python").lower(),
        source_name="primeintellect",
        solutions=[gold] if isinstance(gold, str) and gold.strip() else [],
    )


SOURCES: dict[str, Source] = {
    "lcb": Source("lcb", "livecodebench", LCB_REPO, None, LCB_FILES, convert_lcb_row, "jsonl"),
    "deepcoder_taco": Source(
        "deepcoder_taco",
        "taco",
        DEEPCODER_REPO,
        "taco",
        ("taco/train-*.parquet",),
        _deepcoder_converter("taco"),
        "parquet",
    ),
    "deepcoder_primeintellect": Source(
        "deepcoder_primeintellect",
        "primeintellect",
        DEEPCODER_REPO,
        "primeintellect",
        ("primeintellect/train-*.parquet",),
        _deepcoder_converter("primeintellect"),
        "parquet",
    ),
    "deepcoder_lcbv5": Source(
        "deepcoder_lcbv5",
        "livecodebench",
        DEEPCODER_REPO,
        "lcbv5",
        ("lcbv5/train-*.parquet",),
        _deepcoder_converter("lcbv5"),
        "parquet",
    ),
    "taco_verified": Source(
        "taco_verified", "taco", TACO_VERIFIED_REPO, None, ("*.json",), convert_taco_verified_row, "json"
    ),
    "primeintellect": Source(
        "primeintellect",
        "primeintellect",
        PRIMEINTELLECT_REPO,
        None,
        ("data/train-*.parquet",),
        convert_primeintellect_row,
        "parquet",
    ),
}


EVAL_ONLY_SOURCES: dict[str, Source] = {
    "deepcoder_codeforces": Source(
        "deepcoder_codeforces",
        "codeforces",
        DEEPCODER_REPO,
        "codeforces",
        ("codeforces/test-*.parquet",),
        convert_deepcoder_codeforces_row,
        "parquet",
        split="test",
    ),
    "humanevalplus": Source(
        "humanevalplus",
        "humanevalplus",
        "evalplus/humanevalplus_release",
        None,
        ("HumanEvalPlus*.jsonl", "HumanEvalPlus*.jsonl.gz"),
        convert_humanevalplus_row,
        "jsonl",
        download_url=HUMANEVALPLUS_URL,
    ),
}
"""Sources of evaluation sets only: never a ``--train-sources`` choice (training on them would train on the test).
``humanevalplus`` is EvalPlus's GitHub release file, read from a local copy only (``data_prep.evalplus_tasks``)."""
ALL_SOURCES = {**SOURCES, **EVAL_ONLY_SOURCES}


def local_files(source: Source, repo_dir: Path, lcb_files: tuple[str, ...] = LCB_FILES) -> list[Path]:
    """The source's files under a local copy of its repository, sorted; raises FileNotFoundError with advice."""
    patterns = lcb_files if source.name == "lcb" else source.file_patterns
    if not repo_dir.is_dir():
        raise FileNotFoundError(_missing_message(source, repo_dir, "the directory does not exist"))
    files = sorted(
        path
        for path in repo_dir.rglob("*")
        if path.is_file() and any(fnmatch.fnmatch(path.relative_to(repo_dir).as_posix(), p) for p in patterns)
    )
    if not files:
        raise FileNotFoundError(_missing_message(source, repo_dir, f"no file matches {', '.join(patterns)}"))
    return files


def _missing_message(source: Source, repo_dir: Path, why: str) -> str:
    download = (
        f"curl -L --create-dirs -o {repo_dir}/{source.download_url.rsplit('/', 1)[-1]} {source.download_url}"
        if source.download_url
        else f"huggingface-cli download {source.repo} --repo-type dataset --local-dir {repo_dir}"
    )
    return (
        f"source {source.name!r} ({source.describe()}): no local copy at {repo_dir} ({why}). "
        f"Download it with `{download}`, "
        f"point to another copy with --source-dir {source.name}=PATH, or build from the bundled sample with --from sample."
    )


def iter_local_rows(source: Source, files: list[Path]) -> Iterator[tuple[str, Any]]:
    """(row id, raw row) for every row of the files; JSON Lines rows stay undecoded strings."""
    for path in files:
        rows = {"parquet": iter_parquet_rows, "jsonl": iter_json_lines, "json": iter_json_records}[source.file_format](
            path
        )
        for position, row in enumerate(rows):
            yield f"{path.name}:{position}", row


def problem_id_for(source: Source, row: dict[str, Any], fallback: str) -> str:
    """A stable id: the row's own id column where the source has one, else ``file:row``."""
    own = {"lcb": "question_id", "primeintellect": "problem_id", "taco_verified": "id"}.get(source.name)
    value = row.get(own) if own else None
    return f"{source.name}/{value if value not in (None, '') else fallback}"


def _field(row: dict[str, Any], name: str, default: Any = None) -> Any:
    value = row.get(name, default)
    if value is None:
        raise MalformedRow("missing_field", name)
    return value


def _as_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise MalformedRow("bad_test_format", f"{what} tests are a {type(value).__name__}, expected a list")
    return value


def _metadata(row: dict[str, Any]) -> dict[str, Any]:
    """The row's ``metadata``: a dict (DeepCoder parquet) or JSON text (LiveCodeBench, PrimeIntellect); else {}."""
    metadata = ground_truth.loads_json(row.get("metadata") or {}, "metadata")
    return metadata if isinstance(metadata, dict) else {}


def _taco_tags(row: dict[str, Any]) -> list[str]:
    """TACO's ``raw_tags`` (the platform's tags) and ``tags`` (TACO's topics): Python list literals as text in BAAI/TACO
    (its dataset card reads them with ``eval(sample["raw_tags"])``), or lists. Read with ``ast.literal_eval``; an
    unreadable value gives no tags (tags only inform the ``interactive`` filter)."""
    tags: list[str] = []
    for column in ("raw_tags", "tags"):
        value = row.get(column)
        if isinstance(value, str) and len(value) <= _MAX_TAGS_CHARS:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError, RecursionError):
                value = None
        if isinstance(value, list):
            tags += [tag.strip().lower() for tag in value if isinstance(tag, str)]
    return tags


def _strings(values: list[Any]) -> list[str]:
    return [value for value in values if isinstance(value, str) and value.strip()]


def _date_or_empty(value: Any) -> str:
    if isinstance(value, str) and len(value) >= 10 and value[4] == "-" and value[7] == "-":
        return value[:10] + "T00:00:00"
    return ""
