"""Stream rows out of a dataset repository's own files (parquet, JSON Lines, one big JSON array).

Nothing here reads a whole file into memory: parquet is read in small record batches, JSON Lines line by
line, and a top-level JSON array (TACO-verified ships one 1.9 GB array) object by object.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

PARQUET_BATCH_ROWS = 8
"""Rows per parquet record batch: small, since one row's tests can be tens of megabytes."""
JSON_CHUNK_CHARS = 8 << 20


def iter_parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Rows of a parquet file as dicts, a few at a time."""
    parquet = pq.ParquetFile(path)
    for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
        yield from batch.to_pylist()


def iter_json_lines(path: Path) -> Iterator[str]:
    """Non-blank lines of a JSON Lines file (gzip-compressed when its name ends in ``.gz``, as EvalPlus releases
    ``HumanEvalPlus.jsonl.gz``), undecoded (a bad line is the row's problem, not the file's)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield line


def iter_json_records(path: Path) -> Iterator[Any]:
    """Objects of a ``.json`` file: a top-level array streamed element by element, else JSON Lines.

    Raises:
        ValueError: when the array itself is broken (the rest of the file cannot be located).
    """
    with open(path, encoding="utf-8") as handle:
        head = handle.read(1 << 16)
        if head.lstrip().startswith("["):
            handle.seek(0)
            yield from _iter_json_array(handle, path)
            return
    yield from iter_json_lines(path)


def _iter_json_array(handle: Any, path: Path) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    buffer = handle.read(JSON_CHUNK_CHARS)
    position = buffer.index("[") + 1
    exhausted = False
    while True:
        position = _skip_separators(buffer, position)
        if position >= len(buffer):
            if exhausted:
                raise ValueError(f"{path}: JSON array is not closed with ']'")
            buffer, position, exhausted = buffer[position:] + handle.read(JSON_CHUNK_CHARS), 0, False
            continue
        if buffer[position] == "]":
            return
        try:
            value, end = decoder.raw_decode(buffer, position)
        except json.JSONDecodeError as exc:
            if exhausted:
                raise ValueError(f"{path}: broken JSON array element at char {exc.pos}: {exc.msg}") from exc
            more = handle.read(max(JSON_CHUNK_CHARS, len(buffer) - position))
            exhausted = not more
            buffer, position = buffer[position:] + more, 0
            continue
        yield value
        position = end


def _skip_separators(buffer: str, position: int) -> int:
    while position < len(buffer) and (buffer[position].isspace() or buffer[position] == ","):
        position += 1
    return position
