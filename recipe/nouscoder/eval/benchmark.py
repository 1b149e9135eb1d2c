"""Which benchmark a test parquet is, and what its build left out (``data_prep.benchmarks``).

``--data NAME=PATH`` names it. Otherwise the ``manifest.json`` beside the parquet says: a ``build_benchmarks`` manifest
lists each file under its benchmark; a ``build_deepcoder_mix`` manifest's LiveCodeBench release and window name the
test split (``lcb_v6`` or ``lcb_v5`` for the two windows of ``data_prep.build_settings.LCB_WINDOWS``). Without a
manifest the rows' ``data_source`` decides (``codeforces``, ``humanevalplus``); anything else is ``other``, reported
without seed figures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from data_prep.benchmarks import BENCHMARKS
from data_prep.build_settings import LCB_WINDOWS

WINDOW_BENCHMARK = {"nouscoder_v6": "lcb_v6", "deepcoder_v5": "lcb_v5"}
OTHER = "other"


@dataclass(frozen=True)
class BenchmarkData:
    """A benchmark's parquet, its name and description, and the problems its build did not write."""

    name: str
    path: Path
    description: str
    not_graded: list[dict[str, str]] = field(default_factory=list)
    """Interactive problems of the source (``problem_id``, ``known_by``), from the build's manifest."""


def parse_data_argument(text: str) -> tuple[str | None, Path]:
    """``NAME=PATH`` or ``PATH``."""
    name, sep, path = text.partition("=")
    if sep and name in (*BENCHMARKS, OTHER):
        return name, Path(path)
    return None, Path(text)


def load_benchmark(path: Path, name: str | None = None) -> BenchmarkData:
    """The benchmark of ``path`` (``name`` when given, else detected: module docstring)."""
    entry = _build_benchmarks_entry(path)
    detected = name or (entry[0] if entry else None) or _window_benchmark(path) or _by_data_source(path)
    description = BENCHMARKS[detected].description if detected in BENCHMARKS else f"{path.name} (no seed figures)"
    not_graded = list(entry[1].get("interactive", [])) if entry and entry[0] == detected else []
    return BenchmarkData(detected, path, description, not_graded)


def _manifest(path: Path) -> dict[str, Any] | None:
    manifest = path.parent / "manifest.json"
    if not manifest.is_file():
        return None
    try:
        return json.loads(manifest.read_text())
    except json.JSONDecodeError:
        return None


def _build_benchmarks_entry(path: Path) -> tuple[str, dict[str, Any]] | None:
    manifest = _manifest(path) or {}
    for name, entry in (manifest.get("benchmarks") or {}).items():
        if Path(entry.get("file", "")).name == path.name:
            return name, entry
    return None


def _window_benchmark(path: Path) -> str | None:
    manifest = _manifest(path) or {}
    window = manifest.get("date_window") or {}
    if path.name != "test.parquet" or not window:
        return None
    for window_name, known in LCB_WINDOWS.items():
        if (
            manifest.get("livecodebench_version") == known.lcb_version
            and window.get("test_start") == known.window.test_start
            and window.get("test_end") == known.window.test_end
        ):
            return WINDOW_BENCHMARK[window_name]
    return None


def _by_data_source(path: Path) -> str:
    sources = set(pq.read_table(path, columns=["data_source"]).column("data_source").to_pylist())
    return sources.pop() if len(sources) == 1 and sources <= {"codeforces", "humanevalplus"} else OTHER
