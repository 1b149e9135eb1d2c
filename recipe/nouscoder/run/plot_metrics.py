"""Turn a run's logged metrics into PNG plots: length by correctness, pass rate, diversity.

Reads the JSON-lines log of verl's ``file`` logger (``trainer.logger=[console,file]``; one
``{"step": N, "data": {metric: value}}`` a line, path from ``VERL_FILE_LOGGER_PATH`` or
``<VERL_FILE_LOGGER_ROOT>/<project>/<experiment>.jsonl``), with the earlier segments a resumed run left beside it
(``metrics.<k>.jsonl``, recipe.nouscoder.main). Lines that are flat ``{"step": N, metric: value}``
objects are read too.

    python -m recipe.nouscoder.run.plot_metrics --log run.jsonl --out-dir plots/
"""

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from recipe.nouscoder.run.learning_curve import validation_curve  # noqa: E402
from recipe.nouscoder.run.run_dir import metrics_segments  # noqa: E402

Series = dict[str, tuple[list[int], list[float]]]
HELD_OUT_PASS_RATE = "held_out/pass_rate"
"""Derived series: ``learning_curve.validation_pass_rate`` of each validated step (verl's ``val-core/.../acc/mean@n``,
averaged over data sources), drawn with the training pass rate so a run's real result is on the same panel."""

FIGURES: dict[str, list[list[tuple[str, str]]]] = {
    # file name -> panels -> (metric key, legend label)
    "length_by_correctness": [
        [
            ("length_bias/correct_length_mean", "correct, mean"),
            ("length_bias/incorrect_length_mean", "incorrect, mean"),
            ("length_bias/correct_length_median", "correct, median"),
            ("length_bias/incorrect_length_median", "incorrect, median"),
        ],
        [
            ("length_bias/truncation_rate", "truncation rate"),
            ("length_bias/masked_advantage_fraction", "masked advantage fraction"),
        ],
    ],
    "pass_rate": [
        [
            ("nouscoder/pass_rate", "pass rate (trained rollouts)"),
            (HELD_OUT_PASS_RATE, "held-out pass rate (validation)"),
        ],
        [
            ("nouscoder/groups/solve_all", "solve-all groups"),
            ("nouscoder/groups/solve_none", "solve-none groups"),
            ("nouscoder/groups/mixed", "mixed groups"),
            ("nouscoder/dynamic_sampling/dropped_groups", "dropped by dynamic sampling"),
            ("nouscoder/online_filter/removed_problems", "removed by online filter (total)"),
        ],
    ],
    "diversity": [
        [("nouscoder/diversity/within_group", "within-group diversity")],
        [("nouscoder/temperature", "sampling temperature")],
    ],
}
STAGED_METRICS = {"nouscoder/temperature", "nouscoder/online_filter/removed_problems"}  # drawn as steps
TITLES = {
    "length_by_correctness": "Response length, correct vs incorrect, and truncation",
    "pass_rate": "Pass rate and group outcomes",
    "diversity": "Within-group diversity and sampling temperature",
}
Y_LABELS = {
    "length_by_correctness": ["response tokens", "fraction of responses"],
    "pass_rate": ["fraction of rollouts accepted", "groups (or problems) per step"],
    "diversity": ["n-gram Jaccard distance", "temperature"],
}
FRACTION_PANELS = {("length_by_correctness", 1), ("pass_rate", 0), ("diversity", 0)}
"""Panels of values in [0, 1], drawn on the whole range so that a small change does not look like a large one."""
MARKERS = ("o", "s", "^", "D", "v", "P")
"""One hollow marker shape per line of a panel, so that lines with equal values stay visible as overlaid outlines
(their legend entries also say which line they equal)."""


def read_metrics_log(path: str | Path) -> Series:
    """``{metric: (steps, values)}`` of every numeric, finite metric in a JSON-lines log and its earlier segments
    (``metrics.<k>.jsonl`` of resumed invocations), in step order; a step logged again keeps its later value."""
    points: dict[str, dict[int, float]] = defaultdict(dict)
    for segment in metrics_segments(Path(path)):
        for line_number, line in enumerate(segment.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{segment}:{line_number}: not a JSON line ({error.msg})") from error
            if "step" not in record:
                raise ValueError(f"{segment}:{line_number}: no 'step' key; expected verl file-logger lines")
            data = record["data"] if isinstance(record.get("data"), dict) else record
            for key, value in data.items():
                if key != "step" and isinstance(value, int | float) and math.isfinite(value):
                    points[key][int(record["step"])] = float(value)
    series = {key: (sorted(by_step), [by_step[step] for step in sorted(by_step)]) for key, by_step in points.items()}
    by_step: dict[int, dict[str, float]] = defaultdict(dict)
    for key, values in points.items():
        for step, value in values.items():
            by_step[step][key] = value
    if held_out := validation_curve(by_step):
        series[HELD_OUT_PASS_RATE] = (list(held_out), list(held_out.values()))
    return series


def build_figure(series: Series, name: str, title: str) -> Figure | None:
    """One figure of stacked panels sharing an integer step axis; None when the log has none of its metrics."""
    panels = [[(key, label) for key, label in panel if key in series] for panel in FIGURES[name]]
    if not any(panels):
        return None
    figure, axes = plt.subplots(len(panels), 1, figsize=(11, 3.4 * len(panels)), sharex=True, squeeze=False)
    for index, (axis, panel, y_label) in enumerate(zip(axes[:, 0], panels, Y_LABELS[name], strict=True)):
        drawn: list[tuple[tuple[list[int], list[float]], str]] = []
        for position, (key, label) in enumerate(panel):
            steps, values = series[key]
            same = next((earlier for points, earlier in drawn if points == (steps, values)), None)
            drawn.append(((steps, values), label))
            axis.plot(
                steps,
                values,
                marker=MARKERS[position % len(MARKERS)],
                markersize=8,
                markerfacecolor="none",
                markeredgewidth=1.5,
                label=f"{label} (= {same})" if same else label,
                linestyle="--" if "median" in key else "-",
                drawstyle="steps-post" if key in STAGED_METRICS else "default",
                zorder=2 + position,
            )
        axis.set_ylabel(y_label)
        if (name, index) in FRACTION_PANELS:
            axis.set_ylim(-0.03, 1.03)
        axis.grid(alpha=0.3)
        if panel:
            axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    axes[-1, 0].set_xlabel("training step")
    axes[-1, 0].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0, 0].set_title(f"{TITLES[name]} ({title})")
    figure.tight_layout()
    return figure


def plot_figure(series: Series, name: str, out_dir: Path, title: str) -> Path | None:
    """``build_figure`` saved as ``<name>.png`` in ``out_dir``; None when the log has none of its metrics."""
    figure = build_figure(series, name, title)
    if figure is None:
        return None
    path = out_dir / f"{name}.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def run_name(log: str | Path) -> str:
    """The run a log belongs to, for titles: its folder (``RUN_DIR/metrics.jsonl`` -> ``RUN_DIR``'s name)."""
    return Path(log).resolve().parent.name


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(
        prog="python -m recipe.nouscoder.run.plot_metrics",
        description="Plot length by correctness, pass rate and diversity over training steps from a verl "
        "file-logger metrics log (JSON lines). Writes length_by_correctness.png, pass_rate.png, diversity.png.",
    )
    parser.add_argument("--log", required=True, help="JSON-lines metrics log written by verl's `file` logger")
    parser.add_argument("--out-dir", required=True, help="folder for the PNG files (created if missing)")
    parser.add_argument(
        "--title", default=None, help="the run's name in every figure's title (default: the log's folder name)"
    )
    args = parser.parse_args(argv)

    series = read_metrics_log(args.log)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in FIGURES:
        path = plot_figure(series, name, out_dir, args.title or run_name(args.log))
        print(f"{name}: {'wrote ' + str(path) if path else 'skipped, none of its metrics is in the log'}")
        if path:
            written.append(path)
    if not written:
        raise SystemExit(f"{args.log}: none of the plotted metrics is logged; was the run using a nouscoder_* trainer?")
    return written


if __name__ == "__main__":
    main()
