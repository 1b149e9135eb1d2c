"""Append-only JSON Lines caches keyed by ``(problem_id, sample_index)``: generations and grades survive a kill.

Each record is written as one line and flushed, so a killed run loses at most the line being written. On
opening, a last line without its newline (the kill's leftover) is cut off before anything is appended, so the
next record starts on a fresh line. Reading keeps the last record of a key (a regrade supersedes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

SampleKey = tuple[str, int]


def sample_key(record: dict[str, Any]) -> SampleKey:
    return str(record["problem_id"]), int(record["sample_index"])


def repair_partial_line(path: Path) -> int:
    """Cut a trailing line that has no newline (a write interrupted by a kill); returns the bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    with path.open("rb+") as handle:
        if size == 0:
            return 0
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        handle.seek(0)
        keep = handle.read().rfind(b"\n") + 1
        handle.truncate(keep)
        return size - keep


def read_records(paths: Iterable[Path]) -> dict[SampleKey, dict[str, Any]]:
    """Records of every file by key (the last one wins); a line cut by a kill (no trailing newline) is skipped."""
    records: dict[SampleKey, dict[str, Any]] = {}
    for path in paths:
        if not path.exists():
            continue
        for line in _complete_lines(path):
            record = json.loads(line)
            records[sample_key(record)] = record
    return records


def _complete_lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.endswith("\n") and line.strip():
                yield line


def keep_only(path: Path, keys: Iterable[SampleKey]) -> int:
    """Rewrite ``path`` with the last record of each of ``keys``, in that order, dropping every other line (samples of
    an earlier evaluation, superseded grades); atomic (a ``.partial`` file renamed). Returns the lines dropped."""
    if not path.exists():
        return 0
    records = read_records([path])
    kept = [records[key] for key in dict.fromkeys(keys) if key in records]
    lines_before = sum(1 for _ in _complete_lines(path))
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in kept)
    os.replace(partial, path)
    return lines_before - len(kept)


class AppendOnlyJsonl:
    """An append-only JSONL file; ``append`` writes one record and flushes it to the OS."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        repair_partial_line(path)
        self._handle: TextIO = path.open("a", encoding="utf-8")

    def append(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(record) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()

    def __enter__(self) -> AppendOnlyJsonl:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_settings(path: Path, wanted: dict[str, Any]) -> None:
    """Record ``wanted`` at ``path`` for a new cache; refuse to resume a cache made with different settings.

    Raises:
        ValueError: naming the settings that differ.
    """
    normalized = json.loads(json.dumps(wanted))
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(normalized, indent=2))
        return
    cached = json.loads(path.read_text())
    differ = sorted(key for key in set(cached) | set(normalized) if cached.get(key) != normalized.get(key))
    if differ:
        details = "; ".join(f"{key}: cached {cached.get(key)!r}, now {normalized.get(key)!r}" for key in differ)
        raise ValueError(
            f"{path.parent} was made with other settings ({details}); use another --out or delete {path.parent}"
        )
