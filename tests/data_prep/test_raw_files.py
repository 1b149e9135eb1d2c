"""Streaming readers of the repositories' own files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_prep import raw_files


def test_json_array_streams_elements_across_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(raw_files, "JSON_CHUNK_CHARS", 16)
    records = [{"id": 1, "text": "x" * 200}, {"id": 2, "nested": [1, {"a": "]"}]}, {"id": 3}]
    path = tmp_path / "array.json"
    path.write_text(json.dumps(records, indent=2))
    assert list(raw_files.iter_json_records(path)) == records


def test_json_file_with_one_object_per_line(tmp_path: Path) -> None:
    path = tmp_path / "lines.json"
    path.write_text('{"id": 1}\n\n{"id": 2}\n')
    assert list(raw_files.iter_json_records(path)) == ['{"id": 1}\n', '{"id": 2}\n']


def test_broken_json_array_raises_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[{"id": 1}, {"id": 2')
    with pytest.raises(ValueError, match="broken.json"):
        list(raw_files.iter_json_records(path))
