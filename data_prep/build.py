"""Build the DeepCoder / NousCoder training mix and the LiveCodeBench v6 test split as verl parquet.

One streaming pass per split; nothing holds more than one problem's tests at a time besides the parquet
writer's current row group:

1. test: LiveCodeBench rows dated in [test_start, test_end) -> exact dedup -> ``test.parquet``; their
   statements and inputs go into the decontamination index.
2. train: each train source in order -> quality filters -> gold-solution verdicts (``--verified``) ->
   decontamination against the test index -> exact dedup -> MinHash near-dedup -> ``train.parquet`` (first
   occurrence wins, so source order is priority).
3. ``manifest.json`` (``data_prep.manifest``): sources with the revision read, counts, every filter's counts, the
   per-source table, malformed rows, duplicates by source pair, the contamination report, a content hash per split.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from data_prep.build_settings import BuildConfig, BuildStats, DateWindow, known_test_count
from data_prep.decontamination import EvalSetIndex
from data_prep.dedup import MinHasher, NearDuplicateIndex, exact_key
from data_prep.filters import quality_reason
from data_prep.loading import (
    SourceUnavailable,
    hub_reachable,
    hub_revision,
    hub_rows,
    iter_problems,
    local_revision,
    local_rows,
    sample_problems,
)
from data_prep.manifest import REPORT_LIST_LIMIT, build_manifest, log_summary
from data_prep.parquet_writer import SplitWriter, verl_row
from data_prep.problem import Problem
from data_prep.sources import ALL_SOURCES, SOURCES, lcb_release_files, local_files
from data_prep.statements import statement_words


def build_mix(config: BuildConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Build ``train.parquet``, ``test.parquet`` and ``manifest.json`` under ``config.out_dir``; return the manifest.

    Raises:
        SourceUnavailable: a source directory is missing, the hub cannot be reached, or (``auto``) neither a local
            copy nor the hub is there (the message says what to download and pass).
    """
    started = time.monotonic()
    mode = resolve_mode(config)
    lcb_files = lcb_release_files(config.lcb_version)
    unknown = [name for name in config.train_sources if name not in SOURCES]
    if unknown:
        raise ValueError(f"unknown train source(s) {unknown}; choose from {', '.join(SOURCES)}")
    sample = sample_problems() if mode == "sample" else []
    stats = BuildStats()
    verified = load_verified(config.verified) if config.verified else None
    config.out_dir.mkdir(parents=True, exist_ok=True)
    index = EvalSetIndex(config.decontamination)
    group_bytes = config.row_group_mb << 20

    test_writer = SplitWriter(config.out_dir / "test.parquet", max_group_bytes=group_bytes)
    write_test_split(lcb_test_problems(config, mode, sample, lcb_files, stats), test_writer, index, config, stats)
    test_hash = test_writer.close()
    expected = config.expected_test_count or known_test_count(config.lcb_version, config.window)
    if not test_writer.rows_written:
        stats.warnings.append(
            f"the test split is empty: no problem is dated in [{config.window.test_start}, {config.window.test_end})"
        )
    elif expected is not None and mode != "sample" and test_writer.rows_written != expected:
        stats.warnings.append(
            f"test split has {test_writer.rows_written} problems; LiveCodeBench {config.lcb_version} "
            f"[{config.window.test_start}, {config.window.test_end}) should have {expected}"
        )

    train_writer = SplitWriter(config.out_dir / "train.parquet", max_group_bytes=group_bytes)
    streams = _train_streams(config, mode, sample, lcb_files, stats)
    _write_train_split(streams, train_writer, index, config, stats, verified)
    train_hash = train_writer.close()

    manifest = build_manifest(config, mode, lcb_files, stats, {"train": train_hash, "test": test_hash})
    manifest["build_seconds"] = round(time.monotonic() - started, 2)
    (config.out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    log_summary(manifest, log)
    return manifest


def resolve_mode(config: BuildConfig) -> str:
    """``local`` when a directory is given, else ``hub``; ``auto`` with neither is an error, never the sample."""
    if config.mode != "auto":
        return config.mode
    if config.local_dir is not None or config.source_dirs:
        return "local"
    if hub_reachable():
        return "hub"
    repos = dict.fromkeys(SOURCES[name].repo for name in ("lcb", *config.train_sources) if name in SOURCES)
    downloads = "; ".join(
        f"huggingface-cli download {repo} --repo-type dataset --local-dir ROOT/{repo}" for repo in repos
    )
    raise SourceUnavailable(
        "--from auto: no --local-dir was given and the Hugging Face hub is unreachable (an offline node?), so there "
        f"is nothing to build from. On a machine with network run: {downloads}; then pass --local-dir ROOT. "
        "(--from sample builds only the 44-problem bundled sample, a demo, not a training set.)"
    )


def load_verified(path: Path) -> dict[str, dict[str, Any]]:
    """``verify_solutions`` results by problem id (one JSON object a line; malformed lines are an error)."""
    results = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                results[str(record["problem_id"])] = record
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a verify_solutions result line ({exc})") from exc
    return results


def gold_outcome(problem: Problem, verified: dict[str, dict[str, Any]]) -> str:
    """What the gold-solution results say about a problem: ``verified``, ``failed_<verdict>``, ``no_gold``,
    ``grader_error`` (an internal error: not the data's fault, kept), ``stale`` (the ground truth changed since it
    was graded: kept) or ``not_graded``."""
    record = verified.get(problem.problem_id)
    if record is None:
        return "not_graded"
    if record.get("ground_truth_sha256") != problem.ground_truth_sha256():
        return "stale"
    if record.get("accepted") is None:
        return "no_gold"
    if record["accepted"]:
        return "verified"
    verdict = str(record.get("verdict") or "unknown")
    return "grader_error" if verdict == "internal_error" else f"failed_{verdict}"


def write_test_split(
    problems: Iterable[Problem], writer: SplitWriter, index: EvalSetIndex, config: BuildConfig, stats: BuildStats
) -> None:
    """Write evaluation problems (exact duplicates dropped) and index them for decontamination; a row that fails is
    reported with its id and the rest are written."""
    keys: set[bytes] = set()
    for problem in tqdm(problems, desc="test split", unit=" problems", mininterval=1.0):
        stats.seen[("test", problem.source)] += 1
        stats.count(problem, "read")
        try:
            _add_test_problem(problem, keys, writer, index, config, stats)
        except MemoryError:
            raise
        except Exception as error:  # noqa: BLE001 - one row's fault is reported with its id, the build goes on
            stats.row_failed("test", problem, error)


def _add_test_problem(
    problem: Problem, keys: set[bytes], writer: SplitWriter, index: EvalSetIndex, config: BuildConfig, stats: BuildStats
) -> None:
    """Dedup, write and index (for decontamination) one test problem; the row is written, or refused, first."""
    words = statement_words(problem.statement)
    key = exact_key(words)
    if key in keys:
        stats.drop("test", problem, "duplicate_exact")
        stats.pair_duplicates[(problem.source_name, problem.source_name, "exact")] += 1
        return
    written = problem.with_public_tests(config.public_tests)
    writer.add(verl_row(written, "test", writer.rows_written, config.prompt_variant))
    keys.add(key)
    index.add(problem, words)
    stats.written("test", problem, written)


@dataclass
class _TrainState:
    """What the train pass remembers across problems: the MinHash index and the first problem of each exact key."""

    hasher: MinHasher
    near: NearDuplicateIndex
    first_of_key: dict[bytes, tuple[str, str]] = field(default_factory=dict)
    kept_source: dict[str, str] = field(default_factory=dict)


def _write_train_split(
    streams: Iterable[Iterator[Problem]],
    writer: SplitWriter,
    index: EvalSetIndex,
    config: BuildConfig,
    stats: BuildStats,
    verified: dict[str, dict[str, Any]] | None,
) -> None:
    state = _TrainState(
        MinHasher(config.minhash_permutations, config.shingle_words),
        NearDuplicateIndex(config.minhash_bands, config.near_duplicate_threshold),
    )
    for stream in streams:
        for problem in stream:
            stats.seen[("train", problem.source)] += 1
            stats.count(problem, "read")
            try:
                _add_train_problem(problem, state, writer, index, config, stats, verified)
            except MemoryError:
                raise
            except Exception as error:  # noqa: BLE001 - one row's fault is reported with its id, the build goes on
                stats.row_failed("train", problem, error)


def _add_train_problem(
    problem: Problem,
    state: _TrainState,
    writer: SplitWriter,
    index: EvalSetIndex,
    config: BuildConfig,
    stats: BuildStats,
    verified: dict[str, dict[str, Any]] | None,
) -> None:
    """Filter, check the gold verdict, decontaminate, dedup and write one train problem. The writer refuses a bad
    row before keeping anything and the dedup indexes learn the problem only after it is written, so a fault leaves
    no trace of the problem."""
    reason = quality_reason(problem, config.quality)
    if reason:
        stats.drop("train", problem, reason)
        return
    if verified is not None:
        outcome = gold_outcome(problem, verified)
        stats.gold.setdefault(problem.source_name, Counter())[outcome] += 1
        if outcome.startswith("failed_"):
            stats.drop("train", problem, f"gold_{outcome}")
            return
    words = statement_words(problem.statement)
    flag = index.check(problem, words)
    if flag:
        stats.contamination.append(flag)
        stats.drop("train", problem, f"contaminated_{flag.signal}")
        return
    key = exact_key(words)
    if key in state.first_of_key:
        kept_id, kept_name = state.first_of_key[key]
        stats.drop("train", problem, "duplicate_exact")
        stats.pair_duplicates[(problem.source_name, kept_name, "exact")] += 1
        _append_limited(stats.exact_duplicates, {"dropped": problem.problem_id, "kept": kept_id})
        return
    signature = state.hasher.signature(words)
    match = state.near.find(signature)
    if match:
        stats.drop("train", problem, "duplicate_near")
        stats.pair_duplicates[(problem.source_name, state.kept_source[match[0]], "near")] += 1
        _append_limited(
            stats.near_duplicates,
            {"dropped": problem.problem_id, "kept": match[0], "estimated_jaccard": round(match[1], 4)},
        )
        return
    written = problem.with_public_tests(config.public_tests)
    writer.add(verl_row(written, "train", writer.rows_written, config.prompt_variant))
    state.first_of_key[key] = (problem.problem_id, problem.source_name)
    state.kept_source[problem.problem_id] = problem.source_name
    state.near.add(problem.problem_id, signature)
    stats.written("train", problem, written)


def lcb_test_problems(
    config: BuildConfig, mode: str, sample: list[Problem], lcb_files: tuple[str, ...], stats: BuildStats
) -> Iterator[Problem]:
    """The LiveCodeBench problems of ``config.window``'s test dates (from the bundled sample in ``sample`` mode)."""
    if mode == "sample":
        return iter([p for p in sample if _sample_split(p, config.window) == "test"])
    rows = source_rows("lcb", config, mode, lcb_files, stats)
    return iter_problems(
        SOURCES["lcb"], rows, stats.skips, wanted_date=lambda day: config.window.split_of(day) == "test"
    )


def _train_streams(
    config: BuildConfig, mode: str, sample: list[Problem], lcb_files: tuple[str, ...], stats: BuildStats
) -> Iterator[Iterator[Problem]]:
    if mode == "sample":
        kept = [p for p in sample if _sample_split(p, config.window) == "train"]
        yield iter(tqdm(kept, desc="train: sample", unit=" problems"))
        return
    for name in config.train_sources:
        wanted = _lcb_train_filter(config, stats) if name == "lcb" else None
        problems = source_problems(name, config, mode, lcb_files, stats, wanted_date=wanted)
        yield iter(tqdm(problems, desc=f"train: {name}", unit=" problems", mininterval=1.0))


def source_problems(
    name: str,
    config: BuildConfig,
    mode: str,
    lcb_files: tuple[str, ...],
    stats: BuildStats,
    wanted_date: Callable[[str], bool] | None = None,
) -> Iterator[Problem]:
    """The problems of one train source (at most ``config.limit_per_source``); malformed rows go to ``stats.skips``."""
    problems = iter_problems(
        ALL_SOURCES[name], source_rows(name, config, mode, lcb_files, stats), stats.skips, wanted_date=wanted_date
    )
    if config.limit_per_source is not None:
        problems = (problem for _, problem in zip(range(config.limit_per_source), problems, strict=False))
    return problems


def _sample_split(problem: Problem, window: DateWindow) -> str | None:
    """Bundled sample problems are all dated contest problems: they split by date like LiveCodeBench."""
    return window.split_of(problem.contest_date) if problem.contest_date else "train"


def _lcb_train_filter(config: BuildConfig, stats: BuildStats) -> Callable[[str], bool]:
    def wanted(day: str) -> bool:
        split = config.window.split_of(day)
        if split is None:
            stats.dropped[("train", "livecodebench", "outside_date_windows")] += 1
            stats.table.setdefault("lcb", Counter())["dropped/outside_date_windows"] += 1
            stats.table["lcb"]["read"] += 1
        return split == "train"

    return wanted


def source_rows(
    name: str, config: BuildConfig, mode: str, lcb_files: tuple[str, ...], stats: BuildStats
) -> Iterator[tuple[str, Any]]:
    """(row id, raw row) of a source, from the hub at a pinned commit or from its local copy (revision checked)."""
    source = ALL_SOURCES[name]
    pinned = config.revisions.get(source.repo)
    if mode == "hub":
        known = [read["revision"] for read in stats.reads.values() if read.get("repo") == source.repo]
        revision = known[0] if known else hub_revision(source.repo, pinned)
        files = list(lcb_files) if name == "lcb" else "taco_verified.json" if name == "taco_verified" else "streamed"
        stats.reads[name] = {"repo": source.repo, "revision": revision, "requested": pinned, "files": files}
        return hub_rows(source, lcb_files, revision)
    repo_dir = repo_dir_of(name, config)
    rows = local_rows(source, repo_dir, lcb_files)
    files = local_files(source, repo_dir, lcb_files)
    local = local_revision(repo_dir, files)
    if pinned and local and pinned not in local.split(", "):
        raise SourceUnavailable(
            f"source {name!r}: the local copy {repo_dir} is revision {local}, but --revision pins {pinned}. Download "
            f"that revision: huggingface-cli download {source.repo} --repo-type dataset --revision {pinned} "
            f"--local-dir {repo_dir}"
        )
    if pinned and not local:
        stats.warnings.append(
            f"{source.repo}: cannot check --revision {pinned} against {repo_dir} (no download "
            "metadata in .cache/huggingface; was it copied rather than downloaded?)"
        )
    stats.reads[name] = {
        "repo": source.repo,
        "revision": local or "unknown (no huggingface-cli download metadata in the local copy)",
        "requested": pinned,
        "local_dir": str(repo_dir),
        "files": [{"path": str(path.relative_to(repo_dir)), "bytes": path.stat().st_size} for path in files],
    }
    return rows


def repo_dir_of(name: str, config: BuildConfig) -> Path:
    """Where a source's local copy is: ``--source-dir NAME=PATH``, else ``--local-dir``/<owner>/<name>."""
    if name in config.source_dirs:
        return config.source_dirs[name]
    source = ALL_SOURCES[name]
    if config.local_dir is None:
        raise SourceUnavailable(
            f"source {name!r} ({source.describe()}): --from local needs --local-dir ROOT (holding "
            f"ROOT/{source.repo}) or --source-dir {name}=PATH."
        )
    return config.local_dir / source.repo


def _append_limited(items: list[Any], item: Any) -> None:
    if len(items) < REPORT_LIST_LIMIT:
        items.append(item)
