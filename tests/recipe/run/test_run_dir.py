"""recipe.nouscoder.run.run_dir: the files of a run directory."""

from pathlib import Path

from recipe.nouscoder.run.run_dir import rotate_metrics_file


def test_a_new_segment_keeps_the_earlier_metrics_files(tmp_path: Path) -> None:
    """verl's FileLogger truncates its file: a resumed run must not erase the earlier validation scores."""
    first = rotate_metrics_file(tmp_path / "run")
    assert first == tmp_path / "run" / "metrics.jsonl" and not first.exists()
    first.write_text('{"step": 10, "data": {}}\n')
    second = rotate_metrics_file(tmp_path / "run")
    second.write_text('{"step": 20, "data": {}}\n')
    rotate_metrics_file(tmp_path / "run")
    assert (tmp_path / "run" / "metrics.1.jsonl").read_text().startswith('{"step": 10')
    assert (tmp_path / "run" / "metrics.2.jsonl").read_text().startswith('{"step": 20')
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
