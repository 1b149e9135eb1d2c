"""plot_metrics reads a metrics log written by verl's own file logger and makes the three PNGs."""

import json

import matplotlib.image
import pytest
from verl.utils.tracking import FileLogger

from recipe.nouscoder.run.plot_metrics import HELD_OUT_PASS_RATE, build_figure, main, read_metrics_log, run_name
from recipe.nouscoder.training.step_metrics import compute_step_metrics

STEPS = 8


def step_batch(kit, step: int):
    """Four groups whose incorrect responses grow longer with the step and correct ones stay short."""
    correct = [1 + (i % 3) for i in range(3)]
    incorrect_length = 4 + 2 * step
    groups = []
    for group in range(4):
        rollouts = [kit.Rollout(1, list(range(group, group + length)), 0.5) for length in correct[: 1 + group % 2]]
        rollouts += [
            kit.Rollout(-1, [7 + group + step] * incorrect_length, -0.5) for _ in range(1 + (group + step) % 2)
        ]
        groups.append(kit.Group(f"s{step}g{group}", rollouts))
    return kit.build(groups, response_width=40)


@pytest.fixture
def metrics_log(tmp_path, kit, monkeypatch):
    path = tmp_path / "run.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(path))
    logger = FileLogger(project_name="nouscoder", experiment_name="test")
    logged = {}
    for step in range(1, STEPS + 1):
        metrics = compute_step_metrics(step_batch(kit, step), max_response_length=20, diversity_ngram=2)
        metrics["nouscoder/temperature"] = 0.8 if step < 5 else 1.2
        metrics["nouscoder/online_filter/removed_problems"] = float(step // 2)
        logger.log(data=metrics, step=step)
        logged[step] = metrics
    logger.finish()
    return path, logged


def test_read_metrics_log_returns_the_logged_series(metrics_log):
    path, logged = metrics_log
    series = read_metrics_log(path)
    steps, values = series["length_bias/incorrect_length_mean"]
    assert steps == list(range(1, STEPS + 1))
    assert values == [logged[step]["length_bias/incorrect_length_mean"] for step in steps]
    # incorrect length = min(4 + 2 * step, 40): 6, 8, ..., 20
    assert values == [float(4 + 2 * step) for step in steps]
    assert series["nouscoder/temperature"][1] == [0.8] * 4 + [1.2] * 4


def test_a_resumed_runs_earlier_segments_are_read_and_a_step_logged_again_keeps_its_later_value(tmp_path):
    def line(step: int, rate: float) -> str:
        return json.dumps({"step": step, "data": {"nouscoder/pass_rate": rate}}) + "\n"

    (tmp_path / "metrics.1.jsonl").write_text(line(1, 0.1) + line(2, 0.2))
    (tmp_path / "metrics.2.jsonl").write_text(line(2, 0.25) + line(3, 0.3))  # crashed after step 3's log line
    (tmp_path / "metrics.jsonl").write_text(line(3, 0.35) + line(4, 0.4))
    assert read_metrics_log(tmp_path / "metrics.jsonl")["nouscoder/pass_rate"] == ([1, 2, 3, 4], [0.1, 0.25, 0.35, 0.4])


def test_plot_command_writes_three_pngs(metrics_log, tmp_path, capsys):
    path, _ = metrics_log
    written = main(["--log", str(path), "--out-dir", str(tmp_path / "plots"), "--title", "test run"])
    assert [png.name for png in written] == ["length_by_correctness.png", "pass_rate.png", "diversity.png"]
    for png in written:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        height, width, _ = matplotlib.image.imread(png).shape
        assert height > 300 and width > 600
    assert "wrote" in capsys.readouterr().out


def test_bad_log_lines_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 1, "data": {"nouscoder/pass_rate": 0.5}}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        read_metrics_log(bad)
    (tmp_path / "other.jsonl").write_text('{"step": 1, "data": {"actor/lr": 0.1}}\n')
    with pytest.raises(SystemExit, match="none of the plotted metrics"):
        main(["--log", str(tmp_path / "other.jsonl"), "--out-dir", str(tmp_path / "out")])


def test_figures_read_as_a_person_needs(metrics_log):
    """Whole-number steps, a real title with the run's name, fractions on [0, 1], and a line hidden under an equal
    one named in the legend."""
    path, _ = metrics_log
    series = read_metrics_log(path)
    series["length_bias/masked_advantage_fraction"] = series["length_bias/truncation_rate"]  # equal, as in the demo
    figure = build_figure(series, "length_by_correctness", "demo run")
    top, bottom = figure.axes
    assert top.get_title() == "Response length, correct vs incorrect, and truncation (demo run)"
    ticks = [tick for tick in bottom.get_xticks() if 1 <= tick <= STEPS]
    assert ticks and all(float(tick).is_integer() for tick in ticks)
    assert bottom.get_ylim() == (-0.03, 1.03)
    labels = [text.get_text() for text in bottom.get_legend().get_texts()]
    assert labels == ["truncation rate", "masked advantage fraction (= truncation rate)"]
    markers = {line.get_marker() for line in bottom.get_lines()}
    assert len(markers) == 2 and all(line.get_markerfacecolor() == "none" for line in bottom.get_lines())


def test_default_title_is_the_run_folder(tmp_path):
    assert run_name(tmp_path / "cpu_run" / "metrics.jsonl") == "cpu_run"


def test_the_pass_rate_panel_shows_the_held_out_points_beside_the_training_curve(tmp_path):
    """Validation is logged at step 0 and every test_freq steps (``val-core/<source>/acc/mean@<n>``, averaged over
    sources); the training pass rate at every training step."""
    lines = [{"step": 0, "data": {"val-core/a/acc/mean@4": 0.2, "val-core/b/acc/mean@4": 0.4}}]
    lines += [{"step": step, "data": {"nouscoder/pass_rate": 0.1 * step}} for step in (1, 2, 3)]
    lines += [{"step": 3, "data": {"val-core/a/acc/mean@4": 0.5, "val-core/b/acc/mean@4": 0.7}}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    series = read_metrics_log(tmp_path / "metrics.jsonl")
    steps, values = series[HELD_OUT_PASS_RATE]
    assert steps == [0, 3] and values == pytest.approx([0.3, 0.6])
    top = build_figure(series, "pass_rate", "run").axes[0]
    drawn = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in top.get_lines()}
    assert drawn["held-out pass rate (validation)"] == ([0, 3], pytest.approx([0.3, 0.6]))
    assert drawn["pass rate (trained rollouts)"][0] == [1, 2, 3]
