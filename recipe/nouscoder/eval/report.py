"""Evaluation outputs of one benchmark: ``results.json``, ``per_problem.csv``, ``report.md`` and PNG plots.

The report puts our numbers beside the seeds' figures for the same benchmark (``recipe.nouscoder.eval.seeds``) with
the settings used; a Codeforces run adds pass@k per rating band and the rating, a HumanEval+ run pass@k on the base
tests beside base + plus. Plots: ``pass1_by_difficulty.png``, ``length_hist.png`` (correct vs incorrect),
``pass_at_k.png`` (k = 1..n).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first: no display on cluster nodes)
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from recipe.nouscoder.eval.metrics import ProblemResult, default_ks, mean_pass_at_k  # noqa: E402
from recipe.nouscoder.eval.seeds import BASE_MODEL, SeedFigure, figures, format_value  # noqa: E402


def problem_row(problem: ProblemResult, ks: Sequence[int], length_unit: str) -> dict[str, Any]:
    """One problem's line of the CSV and of ``results.json["problems"]``."""
    lengths = [sample.length for sample in problem.samples]
    verdicts = Counter(sample.verdict for sample in problem.samples)
    return {
        "problem_id": problem.problem_id,
        "difficulty": problem.difficulty,
        "platform": problem.platform,
        "contest_date": problem.contest_date,
        "n": problem.n,
        "correct": problem.correct,
        **{f"pass@{k}": problem.pass_at(k) for k in ks},
        "truncated": sum(sample.truncated for sample in problem.samples),
        f"mean_length_{length_unit}": sum(lengths) / len(lengths),
        "verdicts": ";".join(f"{verdict}:{count}" for verdict, count in verdicts.most_common()),
    }


def write_results(
    out_dir: Path,
    summary: dict[str, Any],
    settings: dict[str, Any],
    problems: Sequence[ProblemResult],
    ks: Sequence[int],
    length_unit: str,
) -> Path:
    """``results.json``: settings, the summary metrics and one entry per problem (used by ``compare``)."""
    rows = [problem_row(problem, ks, length_unit) for problem in problems]
    path = out_dir / "results.json"
    path.write_text(json.dumps({"settings": settings, "summary": summary, "problems": rows}, indent=2))
    with (out_dir / "per_problem.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _breakdown_table(title: str, groups: dict[str, dict[str, Any]], ks: Sequence[int]) -> list[str]:
    shown = [str(k) for k in ks]
    lines = [
        f"### {title}",
        "",
        "| group | problems | " + " | ".join(f"pass@{k}" for k in shown) + " |",
        "|---|---|" + "---|" * len(shown),
    ]
    for name, group in groups.items():
        values = " | ".join(_percent(group["pass_at_k"][k]) for k in shown)
        lines.append(f"| {name} | {group['problems']} | {values} |")
    return lines + [""]


def _coverage_warning(summary: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    in_data = settings.get("problems_in_data", summary["problems"])
    if in_data == summary["problems"]:
        return []
    return [
        f"**Only {summary['problems']} of the {in_data} problems of the data were evaluated (--allow-missing): "
        "not comparable with a full run.**",
        "",
    ]


def _pass_at_k_rows(first_column: str, rows: dict[str, dict[str, float]]) -> list[str]:
    """A pass@k table: one row per label, the k of the first row as columns."""
    shown = list(next(iter(rows.values())))
    return [
        f"| {first_column} | " + " | ".join(f"pass@{k}" for k in shown) + " |",
        "|---|" + "---|" * len(shown),
        *(f"| {label} | " + " | ".join(_percent(values[k]) for k in shown) + " |" for label, values in rows.items()),
    ]


def _multi_turn_section(summary: dict[str, Any]) -> list[str]:
    """Single-turn (first programs) beside multi-turn (final programs) pass@k, and how the conversations went."""
    multi = summary.get("multi_turn")
    if not multi:
        return []
    metrics = multi["metrics"]
    hist = ", ".join(
        f"{name.removeprefix('turns/hist_')} turns {_percent(value)}"
        for name, value in metrics.items()
        if name.startswith("turns/hist_")
    )
    public = ", ".join(
        f"turn {name.removeprefix('public_pass_rate/turn_')} {_percent(value)}"
        for name, value in metrics.items()
        if name.startswith("public_pass_rate/")
    )
    stops = ", ".join(
        f"{name.removeprefix('stop_reason/')} {int(value)}"
        for name, value in metrics.items()
        if name.startswith("stop_reason/") and value
    )
    return [
        "## Single-turn vs multi-turn (public-test feedback)",
        "",
        *_pass_at_k_rows(
            "programs graded",
            {
                "first turn (single-turn)": multi["single_turn_pass_at_k"],
                "final turn (multi-turn)": multi["multi_turn_pass_at_k"],
            },
        ),
        "",
        f"Turns used: mean {metrics['turns/mean']:.2f} ({hist}). Public tests passed, by turn: {public or '-'}.",
        f"Feedback was given to {int(metrics.get('feedback/given', 0))} samples; the final program of "
        f"{_percent(metrics.get('feedback/fixed_rate'))} of them passed the hidden tests. Feedback tokens: "
        f"{metrics['feedback_tokens/mean']:.1f} per sample ({_percent(metrics['feedback_tokens/fraction'])} of "
        f"the conversations' tokens). Stop reasons: {stops or '-'}.",
        "",
    ]


def run_figures(summary: dict[str, Any]) -> dict[str, float | None]:
    """This run's numbers under the seeds' metric names: ``pass@1``, ``pass@8`` (when n >= 8), and for Codeforces
    ``rating`` / ``percentile``, for HumanEval+ ``base pass@1`` (``pass@1`` is then base + plus, EvalPlus's
    HumanEval+). Percentages as fractions; a rating as is; None when there is none."""
    values: dict[str, float | None] = {"pass@1": summary["pass_at_k"]["1"]}
    if "8" in summary["pass_at_k"]:
        values["pass@8"] = summary["pass_at_k"]["8"]
    rating = summary.get("codeforces", {}).get("rating")
    if rating is not None:
        values["rating"] = rating.get("rating")
        values["percentile"] = rating["percentile"] / 100 if rating.get("rating") is not None else None
    if "humanevalplus" in summary:
        values["base pass@1"] = summary["humanevalplus"]["base_pass_at_k"]["1"]
    return values


def format_run_value(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if metric == "rating" else _percent(value)


def _seed_table(summary: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    benchmark = settings.get("benchmark", "other")
    lines = [
        "## Ours beside the seeds' figures",
        "",
        "| model | metric | context | value | source |",
        "|---|---|---|---|---|",
    ]
    who = f"**this run**: `{settings.get('model') or settings.get('completions')}`"
    for metric, value in run_figures(summary).items():
        lines.append(
            f"| {who} | {metric} | {settings.get('context', '-')} | **{format_run_value(metric, value)}** | "
            f"this evaluation, n = {summary['samples_per_problem']['min']} |"
        )
    seeds = figures(benchmark)
    for figure in seeds:
        lines.append(
            f"| {figure.model} | {figure.metric} | {figure.context} | {format_value(figure)} | {figure.source} |"
        )
    lines += [
        "",
        "Seed figures are comparable only on the same benchmark with the same sampling settings; a bundled-sample run "
        "is a pipeline check, not a score."
        if seeds
        else f"No seed table reports `{benchmark}`.",
        "",
    ]
    return lines


def _not_graded_section(settings: dict[str, Any]) -> list[str]:
    not_graded = settings.get("not_graded") or []
    if not not_graded:
        return []
    listed = ", ".join(f"{entry['problem_id']} ({entry['known_by']})" for entry in not_graded[:30])
    return [
        f"**{len(not_graded)} interactive problems of the source are not graded** (their tests are a judge's protocol, "
        f"not stdin/stdout pairs; known by: `tag`, `statement_tags` or `statement`): {listed}"
        + (" ..." if len(not_graded) > 30 else "")
        + ". For the Codeforces rating they are unsolved.",
        "",
    ]


def _codeforces_section(summary: dict[str, Any], ks: Sequence[int]) -> list[str]:
    codeforces = summary.get("codeforces")
    if not codeforces:
        return []
    lines = ["## Codeforces", ""] + _breakdown_table("pass@k by problem rating band", codeforces["by_rating_band"], ks)
    rating = codeforces["rating"]
    if rating.get("rating") is None:
        lines += [f"**No Codeforces rating:** {rating['reason']}.", ""]
        skipped = rating.get("skipped_contests") or {}
        lines += [f"Contests left out: {json.dumps(skipped)}", ""] if skipped else []
        return lines
    lines += [
        f"Codeforces rating **{rating['rating']:.0f}**, percentile **{rating['percentile']:.1f}%** "
        f"(mean of {rating['contests_rated']} contest ratings; {rating['method']}; submissions per problem: the first "
        f"{rating['pass_n']} in sample order). Human distribution: {rating['rating_distribution']}.",
        "",
        "| contest | participants | score | penalty | rank | rating | percentile |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {row['contest']} | {row['participants']} | {row['score']:g} | {row['penalty']} | {row['rank']} | "
        f"{row['rating']} | {row['percentile']:.1f}% |"
        for row in rating["contests"]
    ]
    skipped = rating.get("skipped_contests") or {}
    if skipped:
        lines += ["", "Contests left out: " + "; ".join(f"{c}: {why}" for c, why in skipped.items())]
    return lines + [""]


def _humanevalplus_section(summary: dict[str, Any]) -> list[str]:
    evalplus = summary.get("humanevalplus")
    if not evalplus:
        return []
    return [
        "## HumanEval+: base and plus tests",
        "",
        *_pass_at_k_rows(
            "tests",
            {"base (HumanEval's)": evalplus["base_pass_at_k"], "base + plus (HumanEval+)": evalplus["plus_pass_at_k"]},
        ),
        "",
        'A task passes "plus" when its base and plus tests all pass (EvalPlus); the pass@k above the breakdowns is '
        "this one.",
        "",
    ]


def markdown_report(summary: dict[str, Any], settings: dict[str, Any], ks: Sequence[int], length_unit: str) -> str:
    """The report: ours beside the seeds' figures, benchmark sections, breakdowns, verdicts, lengths, settings."""
    n = summary["samples_per_problem"]["min"]
    lines = [
        f"# {settings.get('benchmark_description') or 'Evaluation'}",
        "",
        f"{summary['problems']} problems, {summary['samples']} samples ({n}"
        + (f" to {summary['samples_per_problem']['max']}" if summary["samples_per_problem"]["max"] != n else "")
        + " per problem), graded by `reward_fns` with the training limits.",
        "",
        *_coverage_warning(summary, settings),
        *_not_graded_section(settings),
        f"pass@1 {_percent(summary['pass_at_k']['1'])}, 95% interval over problems (percentile bootstrap, seed 0): "
        f"[{_percent(summary['pass_at_1_ci95'][0])}, {_percent(summary['pass_at_1_ci95'][1])}].",
        "",
        *_seed_table(summary, settings),
        "## pass@k",
        "",
        "| k | " + " | ".join(str(k) for k in ks) + " |",
        "|---|" + "---|" * len(ks),
        "| pass@k | " + " | ".join(_percent(summary["pass_at_k"][str(k)]) for k in ks) + " |",
        "",
    ]
    lines += _humanevalplus_section(summary)
    lines += _codeforces_section(summary, ks)
    lines += _multi_turn_section(summary)
    lines += _breakdown_table("By difficulty", summary["by_difficulty"], ks)
    lines += _breakdown_table("By platform", summary["by_platform"], ks)
    lines += _breakdown_table("By contest month", summary["by_contest_month"], ks)
    length = summary["length"]
    lines += [
        "## Verdicts, truncation, length",
        "",
        f"Overlong (truncated at the token limit): {_percent(summary['overlong_ratio'])} of samples.",
        "",
        "| verdict | samples |",
        "|---|---|",
    ]
    lines += [f"| {verdict} | {count} |" for verdict, count in summary["verdicts"].items()]
    mean = {
        name: (f"{length[name + '_mean']:.1f}" if length[name + "_mean"] is not None else "-")
        for name in ("correct", "incorrect")
    }
    lines += [
        "",
        f"Mean length ({length_unit}): correct {mean['correct']} ({length['correct_count']} samples), "
        f"incorrect {mean['incorrect']} ({length['incorrect_count']} samples).",
        "",
    ]
    if summary["verdicts"].get("internal_error"):
        lines += [
            f"**Warning: {summary['verdicts']['internal_error']} samples are `internal_error` (grader or data "
            "failure, not the model's); they count as incorrect. See `graded.jsonl`.**",
            "",
        ]
    lines += [
        "## Settings",
        "",
        "```json",
        json.dumps(settings, indent=2),
        "```",
        "",
        "Plots: `pass1_by_difficulty.png`, `length_hist.png`, `pass_at_k.png`.",
        "",
    ]
    return "\n".join(lines)


def plot_pass1_by_difficulty(summary: dict[str, Any], path: Path) -> None:
    groups = summary["by_difficulty"]
    names = list(groups)  # easy, medium, hard first (metrics.group_order)
    values = [100 * groups[name]["pass_at_k"]["1"] for name in names]
    figure, axes = plt.subplots(figsize=(6, 4))
    bars = axes.bar([f"{name}\n({groups[name]['problems']} problems)" for name in names], values, color="tab:blue")
    axes.bar_label(bars, labels=[f"{value:.1f}%" for value in values])
    axes.axhline(
        100 * summary["pass_at_k"]["1"],
        color="gray",
        linestyle="--",
        label=f"all: {100 * summary['pass_at_k']['1']:.1f}%",
    )
    axes.set_ylim(0, 105)
    axes.set_ylabel("pass@1 (%)")
    axes.set_title("pass@1 by difficulty")
    axes.legend(loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_length_histograms(problems: Sequence[ProblemResult], length_unit: str, path: Path) -> None:
    """Correct and incorrect samples' lengths as side-by-side bars per bin (overlaid bars would mix their colours),
    each group's mean a dashed line of its colour."""
    correct = [s.length for p in problems for s in p.samples if s.correct]
    incorrect = [s.length for p in problems for s in p.samples if not s.correct]
    figure, axes = plt.subplots(figsize=(8, 4.5))
    everything = correct + incorrect
    bins = 30 if max(everything) > min(everything) else 1
    groups = [(correct, "correct", "tab:green"), (incorrect, "incorrect", "tab:red")]
    axes.hist(
        [lengths for lengths, _, _ in groups],
        bins=bins,
        range=(min(everything), max(everything)),
        color=[color for _, _, color in groups],
        label=[f"{label}: {len(lengths)} samples" for lengths, label, _ in groups],
    )
    for lengths, label, color in groups:
        if lengths:
            mean = sum(lengths) / len(lengths)
            axes.axvline(mean, color=color, linestyle="--", label=f"{label} mean: {mean:.0f} {length_unit}")
    axes.set_ylim(0, axes.get_ylim()[1] * 1.35)  # room for the legend above the bars
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel(f"response length ({length_unit})")
    axes.set_ylabel("samples")
    axes.set_title("Response length: correct vs incorrect samples")
    axes.legend(loc="upper center", ncol=2, fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def pass_at_k_figure(problems: Sequence[ProblemResult], max_k: int, benchmark: str = "lcb_v6") -> Figure:
    """pass@k of this run for k = 1..n, with the benchmark's base model's published pass@1 and pass@8 as labelled
    points (``seeds.BASE_MODEL``; the axis reaches k = 8 even when this run has fewer samples)."""
    ks = list(range(1, max_k + 1))
    values = [100 * mean_pass_at_k(problems, k) for k in ks]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    axes.plot(ks, values, marker="o", label=f"this run (n = {max_k} samples per problem)")
    model = BASE_MODEL.get(benchmark)
    first_per_k: dict[int, SeedFigure] = {}
    for seed in figures(benchmark, model) if model else []:
        if seed.metric.startswith("pass@"):
            first_per_k.setdefault(int(seed.metric.removeprefix("pass@")), seed)  # one context: the table's first
    published = sorted(first_per_k.items())
    if published:
        axes.scatter(
            [k for k, _ in published],
            [seed.value for _, seed in published],
            marker="x",
            s=60,
            color="gray",
            label=f"{model}, published ({published[0][1].source}, {published[0][1].context})",
        )
        for k, seed in published:
            axes.annotate(
                f"{seed.metric} {seed.value:.2f}%",
                (k, seed.value),
                textcoords="offset points",
                xytext=(6, -14),
                fontsize=8,
            )
    ticks = sorted(set(default_ks(max_k)) | {1} | {k for k, _ in published})
    axes.set_xscale("log", base=2)
    axes.set_xticks(ticks, [str(k) for k in ticks])
    axes.set_xlim(0.8, max(ticks) * 1.7)  # room for the label of the rightmost point
    axes.set_xlabel("k (samples per problem)")
    axes.set_ylabel("pass@k (%)")
    axes.set_ylim(0, 105)
    axes.set_title("pass@k (unbiased estimator)" + (" beside the published base model" if published else ""))
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    return figure


def plot_pass_at_k(problems: Sequence[ProblemResult], max_k: int, path: Path, benchmark: str = "lcb_v6") -> None:
    figure = pass_at_k_figure(problems, max_k, benchmark)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def write_report(
    out_dir: Path,
    summary: dict[str, Any],
    settings: dict[str, Any],
    problems: Sequence[ProblemResult],
    ks: Sequence[int],
    length_unit: str,
) -> list[Path]:
    """Every output file; returns their paths."""
    paths = [write_results(out_dir, summary, settings, problems, ks, length_unit), out_dir / "per_problem.csv"]
    report = out_dir / "report.md"
    report.write_text(markdown_report(summary, settings, ks, length_unit))
    plot_pass1_by_difficulty(summary, out_dir / "pass1_by_difficulty.png")
    plot_length_histograms(problems, length_unit, out_dir / "length_hist.png")
    plot_pass_at_k(
        problems, summary["samples_per_problem"]["min"], out_dir / "pass_at_k.png", settings.get("benchmark", "other")
    )
    return paths + [report, out_dir / "pass1_by_difficulty.png", out_dir / "length_hist.png", out_dir / "pass_at_k.png"]
