"""recipe.nouscoder.run.run_dir: the files of a run directory."""

from pathlib import Path

from recipe.nouscoder.run.run_dir import read_step_metrics, rotate_metrics_file


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


def test_a_line_that_is_not_a_file_logger_record_is_reported_and_the_rest_read(tmp_path: Path, capsys) -> None:
    """A segment cut off mid-line (a node that lost power), and lines of the wrong shape: each is named with its file
    and line on stderr and skipped; every other step is read, the later segment overriding the earlier."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.1.jsonl").write_text(
        '{"step": 1, "data": {"score": 0.1}}\n{"step": 2, "data": {"score": 0.2}}\n{"step": 3, "da'
    )
    (run / "metrics.jsonl").write_text(
        '[1, 2]\n{"step": "x", "data": {}}\n{"step": 4, "data": 5}\n{"data": {}}\n'
        '{"step": 3, "data": {"score": 0.3}}\n\n{"step": 2, "data": {"other": 1.0}}\n'
    )
    assert read_step_metrics(run / "metrics.jsonl") == {
        1: {"score": 0.1},
        2: {"score": 0.2, "other": 1.0},
        3: {"score": 0.3},
    }
    warnings = capsys.readouterr().err.splitlines()
    assert [line.split(": not a verl")[0] for line in warnings] == [
        f"WARNING: {run / 'metrics.1.jsonl'}:3",
        *(f"WARNING: {run / 'metrics.jsonl'}:{number}" for number in (1, 2, 3, 4)),
    ]
