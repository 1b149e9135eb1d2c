"""One report per model across benchmarks: ``results.json`` and ``report.md`` beside each benchmark's own directory.

Every number of every benchmark (``report.run_figures``: pass@1, pass@8, the Codeforces rating and percentile,
HumanEval+ on base tests) is set beside the seeds' figures for the same benchmark and metric
(``recipe.nouscoder.eval.seeds``: DeepCoder-14B-Preview, its base model DeepSeek-R1-Distill-Qwen-14B, NousCoder-14B
and its base model Qwen3-14B, each at the contexts the seeds give), with the problems, samples per problem, context
and sampling settings of the run, so a reader sees at a glance whether a run reproduces a table.
``eval_lcb compare`` reads this ``results.json`` too (per benchmark).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recipe.nouscoder.eval.report import format_run_value, run_figures
from recipe.nouscoder.eval.seeds import SEED_MODELS, figures, format_value

SUITE_KEY = "benchmarks"
"""The key of a multi-benchmark ``results.json`` (a single benchmark's has ``problems``)."""


def sampling_text(settings: dict[str, Any]) -> str:
    """Temperature, top-p and the token budget as the run states them; ``not stated`` for completions without
    ``--completions-settings``."""
    parts = [
        f"{name} {settings[key]}"
        for key, name in (("temperature", "T"), ("top_p", "top-p"), ("max_tokens", "max tokens"))
        if settings.get(key) is not None
    ]
    return ", ".join(parts) if parts else "not stated"


def benchmark_entry(name: str, summary: dict[str, Any], settings: dict[str, Any], out: Path, root: Path) -> dict:
    return {
        "description": settings.get("benchmark_description", name),
        "results": str((out / "results.json").relative_to(root)),
        "report": str((out / "report.md").relative_to(root)),
        "data": settings.get("data"),
        "problems": summary["problems"],
        "problems_in_data": settings.get("problems_in_data"),
        "not_graded": len(settings.get("not_graded") or []),
        "samples_per_problem": summary["samples_per_problem"],
        "context": settings.get("context", "not stated"),
        "sampling": sampling_text(settings),
        "figures": run_figures(summary),
        "codeforces_rating_reason": summary.get("codeforces", {}).get("rating", {}).get("reason"),
    }


def suite_markdown(entries: dict[str, dict[str, Any]], who: str) -> str:
    header = "| benchmark | problems | n | context | sampling | metric | this run | " + " | ".join(SEED_MODELS) + " |"
    lines = [
        "# Evaluation across benchmarks",
        "",
        f"{who}. Each benchmark's details (breakdowns, verdicts, plots) are in its own `report.md`.",
        "",
        header,
        "|" + "---|" * (7 + len(SEED_MODELS)),
    ]
    for name, entry in entries.items():
        n = entry["samples_per_problem"]["min"]
        problems = f"{entry['problems']}" + (f" (+{entry['not_graded']} not graded)" if entry["not_graded"] else "")
        for metric, value in entry["figures"].items():
            seeds = [
                "; ".join(f"{format_value(seed)} ({seed.context})" for seed in figures(name, model, metric)) or "-"
                for model in SEED_MODELS
            ]
            lines.append(
                f"| {name} | {problems} | {n} | {entry['context']} | {entry['sampling']} | {metric} | "
                f"**{format_run_value(metric, value)}** | " + " | ".join(seeds) + " |"
            )
    lines += ["", "## Benchmarks", ""]
    for name, entry in entries.items():
        lines.append(f"- `{name}`: {entry['description']}; `{entry['data']}`; details in `{entry['report']}`.")
        if entry["codeforces_rating_reason"]:
            lines.append(f"  No Codeforces rating: {entry['codeforces_rating_reason']}.")
    sources = sorted({seed.source for name in entries for seed in figures(name)})
    lines += [
        "",
        "Seed figures: " + "; ".join(sources) + ". NousCoder sampled with temperature 0.6 and top-p 0.95, 8 samples "
        "a problem (Pass@8); the DeepCoder card states no sampling settings (rLLM's evaluation script: temperature "
        "0.6, top-p 0.95, 65,536 response tokens, 1 sample a LiveCodeBench problem, 8 a Codeforces one). Figures "
        "compare only on the same benchmark, context and sampling; a bundled-sample run is a pipeline check, not a "
        "score."
        if sources
        else "No seed table reports these benchmarks.",
        "",
    ]
    return "\n".join(lines)


def write_suite_report(out: Path, suite: dict[str, tuple[dict[str, Any], dict[str, Any], Path]]) -> list[Path]:
    """``out/results.json`` and ``out/report.md`` from each benchmark's (summary, settings, directory)."""
    entries = {
        name: benchmark_entry(name, summary, settings, where, out) for name, (summary, settings, where) in suite.items()
    }
    first_settings = next(iter(suite.values()))[1]
    who = (
        f"Model: `{first_settings['model']}`"
        if first_settings.get("model")
        else f"Completions: `{first_settings.get('completions')}`"
    )
    shared = {key: first_settings[key] for key in ("model", "completions", "context", "n") if key in first_settings}
    results = out / "results.json"
    results.write_text(json.dumps({"settings": shared, SUITE_KEY: entries}, indent=2))
    report = out / "report.md"
    report.write_text(suite_markdown(entries, who))
    return [results, report]
