"""The evaluation sets of the seeds' result tables, each written as its own verl parquet.

| name | what | problems | count's source |
|---|---|---|---|
| ``lcb_v6`` | LiveCodeBench ``release_v6``, contest dates in [2024-08-01, 2025-05-01) (NousCoder) | 454 | NousCoder blog |
| ``lcb_v5`` | LiveCodeBench ``release_v5``, [2024-08-01, 2025-02-01) (DeepCoder) | 279 | rLLM's release data |
| ``codeforces`` | DeepCoder-Preview-Dataset ``codeforces`` test config (from Qwen/CodeElo) | 408 rows | rLLM |
| ``humanevalplus`` | EvalPlus HumanEval+ v0.1.10 | 164 | EvalPlus |

(the sources of each count: ``data_prep.build_settings.KNOWN_TEST_COUNTS``, ``CODEFORCES_ROWS`` and
``data_prep.evalplus_tasks.TASK_COUNT``.) Every problem is converted by the rules of the training data
(``data_prep.sources``, ``data_prep.ground_truth``), gets the same prompt (``--prompt-variant``) and is written as a
test row (``data_prep.build.write_test_split``: exact duplicates dropped). Interactive problems (known by a tag, the
statement's ``Tags:`` line or its wording: ``data_prep.filters.interactive_reason``) are not written: their tests
are a judge's settings, not stdin/stdout pairs; ``manifest.json`` lists them with how each was known, and the
evaluation reports them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from data_prep.build import lcb_test_problems, source_rows, write_test_split
from data_prep.build_settings import LCB_WINDOWS, BuildConfig, BuildStats, known_test_count
from data_prep.codeforces_metadata import CodeforcesMetadata, attach
from data_prep.decontamination import EvalSetIndex
from data_prep.evalplus_tasks import RELEASE_FILE, RELEASE_URL, TASK_COUNT
from data_prep.filters import interactive_reason
from data_prep.loading import SourceUnavailable, iter_problems, sample_problems
from data_prep.parquet_writer import SplitWriter
from data_prep.problem import Problem
from data_prep.sources import ALL_SOURCES, lcb_release_files

CODEFORCES_ROWS = 408
"""Rows of DeepCoder's ``codeforces`` test config: rLLM's release data for it (rllm-org/rllm
``rllm/data/test/code/codeforces.json``, 408 rows, removed in commit e5751bae) and its id list
(``scripts/benchmark/codeforces/metadata_cf.json``, 408 ids). 17 of those rows are interactive by their ``Tags:`` line,
16 of which also say "This is an interactive problem" (problem 2013C does not)."""
SAMPLE_DIR = Path(__file__).parent / "sample" / "benchmarks"
"""Hand-made rows in each source's own layout, for ``--from sample`` (the demo) and the tests."""


@dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    source: str
    """The ``data_prep.sources`` name its rows are read from."""
    lcb_window: str | None = None


BENCHMARKS = {
    "lcb_v6": Benchmark("lcb_v6", LCB_WINDOWS["nouscoder_v6"].description, "lcb", "nouscoder_v6"),
    "lcb_v5": Benchmark("lcb_v5", LCB_WINDOWS["deepcoder_v5"].description.split(";")[0], "lcb", "deepcoder_v5"),
    "codeforces": Benchmark(
        "codeforces", "Codeforces: DeepCoder-Preview-Dataset's codeforces test config", "deepcoder_codeforces"
    ),
    "humanevalplus": Benchmark("humanevalplus", f"HumanEval+ (EvalPlus {RELEASE_FILE})", "humanevalplus"),
}


@dataclass(frozen=True)
class BenchmarkBuildConfig:
    out_dir: Path
    benchmarks: tuple[str, ...] = tuple(BENCHMARKS)
    mode: str = "auto"
    local_dir: Path | None = None
    source_dirs: dict[str, Path] = field(default_factory=dict)
    revisions: dict[str, str] = field(default_factory=dict)
    prompt_variant: str = "nouscoder"
    codeforces_metadata: Path | None = None
    """rLLM's ``metadata_cf.json`` or Qwen/CodeElo's test rows (``data_prep.codeforces_metadata``)."""


def expected_problems(name: str) -> tuple[int | None, str]:
    """The published size of a benchmark's source and where it is stated."""
    benchmark = BENCHMARKS[name]
    if benchmark.lcb_window:
        window = LCB_WINDOWS[benchmark.lcb_window]
        return known_test_count(window.lcb_version, window.window), "data_prep.build_settings.KNOWN_TEST_COUNTS"
    if name == "codeforces":
        return CODEFORCES_ROWS, "rLLM's release data (data_prep.benchmarks.CODEFORCES_ROWS)"
    return TASK_COUNT, "EvalPlus (data_prep.evalplus_tasks.TASK_COUNT)"


def build_benchmarks(config: BenchmarkBuildConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Write ``<name>.parquet`` for each benchmark and ``manifest.json`` under ``config.out_dir``; return the manifest.

    Raises:
        SourceUnavailable: a source cannot be read (the message names what to download and pass).
        ValueError: an unknown benchmark, or Codeforces metadata that does not fit the rows.
    """
    unknown = [name for name in config.benchmarks if name not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark(s) {unknown}; choose from {', '.join(BENCHMARKS)}")
    mode = "local" if config.mode == "auto" and (config.local_dir or config.source_dirs) else config.mode
    mode = "hub" if mode == "auto" else mode
    config.out_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"created_by": "python -m data_prep.build_benchmarks", "mode": mode, "benchmarks": {}}
    for name in config.benchmarks:
        started = time.monotonic()
        manifest["benchmarks"][name] = _build_one(BENCHMARKS[name], config, mode)
        entry = manifest["benchmarks"][name]
        entry["build_seconds"] = round(time.monotonic() - started, 2)
        log(
            f"data_prep: {name}: {entry['problems']} problems -> {entry['file']}"
            + (f" ({len(entry['interactive'])} interactive not written)" if entry["interactive"] else "")
            + "".join(f"; WARNING: {warning}" for warning in entry["warnings"])
        )
    (config.out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def _build_one(benchmark: Benchmark, config: BenchmarkBuildConfig, mode: str) -> dict[str, Any]:
    window = LCB_WINDOWS[benchmark.lcb_window] if benchmark.lcb_window else LCB_WINDOWS["nouscoder_v6"]
    build_config = BuildConfig(
        out_dir=config.out_dir,
        mode=mode,
        local_dir=config.local_dir,
        source_dirs=config.source_dirs,
        revisions=config.revisions,
        lcb_version=window.lcb_version,
        window=window.window,
        prompt_variant=config.prompt_variant,
    )
    stats = BuildStats()
    lcb_files = lcb_release_files(window.lcb_version)
    extra: dict[str, Any] = {}
    if benchmark.lcb_window:
        problems: Iterator[Problem] = lcb_test_problems(
            build_config, mode, sample_problems(include_large=False) if mode == "sample" else [], lcb_files, stats
        )
    else:
        read = list(_eval_source_problems(benchmark.source, build_config, mode, stats))
        if benchmark.name == "codeforces":
            metadata_path = SAMPLE_DIR / "codeelo_test.jsonl" if mode == "sample" else config.codeforces_metadata
            read, extra["codeforces_metadata"] = attach(
                read, CodeforcesMetadata.read(metadata_path) if metadata_path else None
            )
        problems = iter(read)
    interactive: list[dict[str, str]] = []
    path = config.out_dir / f"{benchmark.name}.parquet"
    writer = SplitWriter(path)
    write_test_split(_without_interactive(problems, interactive, stats), writer, EvalSetIndex(), build_config, stats)
    content_hash = writer.close()
    expected, count_source = expected_problems(benchmark.name)
    read_rows = writer.rows_written + len(interactive) + sum(n for (_, _, reason), n in stats.dropped.items())
    warnings = []
    if expected is not None and mode != "sample" and read_rows != expected:
        warnings.append(f"{read_rows} problems read; the source has {expected} ({count_source})")
    if extra.get("codeforces_metadata", {}).get("without_id"):
        warnings.append(
            f"{len(extra['codeforces_metadata']['without_id'])} Codeforces rows have no problem id: no rating band and "
            "no contest for them (pass --codeforces-metadata)"
        )
    return {
        "description": benchmark.description,
        "file": str(path),
        "problems": writer.rows_written,
        "problems_read": read_rows,
        "expected_in_source": expected,
        "expected_source": count_source,
        "interactive": interactive,
        "dropped": {reason: n for (_, _, reason), n in sorted(stats.dropped.items())},
        "malformed_rows": stats.skips.to_dict(),
        "sources": _sources_read(benchmark, mode, stats),
        "lcb_window": asdict(window.window) | {"lcb_version": window.lcb_version} if benchmark.lcb_window else None,
        "prompt_variant": config.prompt_variant,
        "sha256": content_hash,
        "warnings": warnings + stats.warnings,
        **extra,
    }


def _sources_read(benchmark: Benchmark, mode: str, stats: BuildStats) -> list[dict[str, Any]]:
    """What was read: the bundled sample, or each source with its repository and the revision ``source_rows``
    recorded."""
    if mode == "sample":
        return [{"name": "sample", "repo": "data_prep/sample" + ("" if benchmark.lcb_window else "/benchmarks")}]
    return [
        {"name": name, "repo": ALL_SOURCES[name].repo, "config": ALL_SOURCES[name].config} | read
        for name, read in stats.reads.items()
    ]


def _eval_source_problems(name: str, config: BuildConfig, mode: str, stats: BuildStats) -> Iterator[Problem]:
    source = ALL_SOURCES[name]
    if mode == "sample":
        path = SAMPLE_DIR / f"{name}.jsonl"
        rows = ((f"{path.name}:{position}", line) for position, line in enumerate(path.read_text().splitlines()))
        return iter_problems(source, rows, stats.skips)
    if name == "humanevalplus" and mode == "hub":
        raise SourceUnavailable(
            f"HumanEval+ is EvalPlus's GitHub release file, not a hub dataset: download it with `curl -L "
            f"--create-dirs -o ROOT/{source.repo}/{RELEASE_FILE} {RELEASE_URL}` and pass --local-dir ROOT (or "
            "--source-dir humanevalplus=DIR)"
        )
    return iter_problems(source, source_rows(name, config, mode, (), stats), stats.skips)


def _without_interactive(
    problems: Iterator[Problem], interactive: list[dict[str, str]], stats: BuildStats
) -> Iterator[Problem]:
    """The problems that are not interactive; the others are recorded (id, how they were known) and counted."""
    for problem in problems:
        reason = interactive_reason(problem)
        if reason is None:
            yield problem
            continue
        interactive.append({"problem_id": problem.problem_id, "known_by": reason})
        stats.count(problem, "dropped/interactive")
