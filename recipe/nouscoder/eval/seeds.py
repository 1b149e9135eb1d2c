"""The seeds' published figures (/work/shared/seeds/ of the project: the NousCoder-14B blog and the DeepCoder-14B
model card), by benchmark, so that a report sets each of its numbers beside theirs.

Benchmarks (``data_prep.benchmarks``): ``lcb_v6`` (LiveCodeBench v6, 2024-08-01 to 2025-05-01, 454 problems),
``lcb_v5`` (LiveCodeBench v5, 2024-08-01 to 2025-02-01), ``codeforces`` (rating and percentile by the CodeElo method),
``humanevalplus`` (EvalPlus's "HumanEval+": base and plus tests). Sampling: the NousCoder blog's evaluation used
temperature 0.6 and top-p 0.95 (Table 3) with G = 8 samples (Pass@G); the DeepCoder card states no sampling settings.
"""

from __future__ import annotations

from dataclasses import dataclass

NOUSCODER = "NousCoder blog, Tables 1-2"
DEEPCODER_CONTEXT_TABLE = "DeepCoder-14B model card, context table (16K / 32K / 64K)"
DEEPCODER_EVALUATION_TABLE = "DeepCoder-14B model card, Evaluation table"


@dataclass(frozen=True)
class SeedFigure:
    """One published number: ``value`` is a percentage, except a Codeforces ``rating``."""

    benchmark: str
    model: str
    metric: str
    """``pass@1``, ``pass@8`` (NousCoder's Pass@G, G = 8), ``rating`` or ``percentile``."""
    value: float
    context: str
    source: str


SEED_MODELS = ("DeepCoder-14B-Preview", "DeepSeek-R1-Distill-Qwen-14B", "NousCoder-14B", "Qwen3-14B")
"""DeepCoder-14B-Preview and its base model; NousCoder-14B (DAPO, the blog's best objective) and its base model."""

SEED_FIGURES = (
    SeedFigure("lcb_v6", "Qwen3-14B", "pass@1", 60.79, "40,960", NOUSCODER),
    SeedFigure("lcb_v6", "Qwen3-14B", "pass@8", 75.11, "40,960", NOUSCODER),
    SeedFigure("lcb_v6", "NousCoder-14B", "pass@1", 63.35, "40,960", NOUSCODER),
    SeedFigure("lcb_v6", "NousCoder-14B", "pass@1", 67.87, "81,920 (YaRN x2)", NOUSCODER),
    SeedFigure("lcb_v6", "NousCoder-14B", "pass@8", 79.52, "40,960", NOUSCODER),
    SeedFigure("lcb_v6", "NousCoder-14B", "pass@8", 78.41, "81,920 (YaRN x2)", NOUSCODER),
    SeedFigure("lcb_v5", "DeepCoder-14B-Preview", "pass@1", 60.6, "64K", DEEPCODER_EVALUATION_TABLE),
    SeedFigure("lcb_v5", "DeepCoder-14B-Preview", "pass@1", 57.9, "32K", DEEPCODER_CONTEXT_TABLE),
    SeedFigure("lcb_v5", "DeepCoder-14B-Preview", "pass@1", 45.6, "16K", DEEPCODER_CONTEXT_TABLE),
    SeedFigure("lcb_v5", "DeepSeek-R1-Distill-Qwen-14B", "pass@1", 53.0, "64K", DEEPCODER_EVALUATION_TABLE),
    SeedFigure("lcb_v5", "DeepSeek-R1-Distill-Qwen-14B", "pass@1", 53.0, "32K", DEEPCODER_CONTEXT_TABLE),
    SeedFigure("lcb_v5", "DeepSeek-R1-Distill-Qwen-14B", "pass@1", 50.2, "16K", DEEPCODER_CONTEXT_TABLE),
    SeedFigure("codeforces", "DeepCoder-14B-Preview", "rating", 1936, "not stated", DEEPCODER_EVALUATION_TABLE),
    SeedFigure("codeforces", "DeepCoder-14B-Preview", "percentile", 95.3, "not stated", DEEPCODER_EVALUATION_TABLE),
    SeedFigure("codeforces", "DeepSeek-R1-Distill-Qwen-14B", "rating", 1791, "not stated", DEEPCODER_EVALUATION_TABLE),
    SeedFigure(
        "codeforces", "DeepSeek-R1-Distill-Qwen-14B", "percentile", 92.7, "not stated", DEEPCODER_EVALUATION_TABLE
    ),
    SeedFigure("humanevalplus", "DeepCoder-14B-Preview", "pass@1", 92.6, "not stated", DEEPCODER_EVALUATION_TABLE),
    SeedFigure(
        "humanevalplus", "DeepSeek-R1-Distill-Qwen-14B", "pass@1", 92.0, "not stated", DEEPCODER_EVALUATION_TABLE
    ),
)

BASE_MODEL = {
    "lcb_v6": "Qwen3-14B",
    "lcb_v5": "DeepSeek-R1-Distill-Qwen-14B",
    "humanevalplus": "DeepSeek-R1-Distill-Qwen-14B",
}
"""The base model whose published pass@k the pass@k plot marks, per benchmark."""


def figures(benchmark: str, model: str | None = None, metric: str | None = None) -> list[SeedFigure]:
    """The seed figures of a benchmark (of one model and metric when given), in table order."""
    return [
        figure
        for figure in SEED_FIGURES
        if figure.benchmark == benchmark
        and (model is None or figure.model == model)
        and (metric is None or figure.metric == metric)
    ]


def format_value(figure: SeedFigure) -> str:
    return f"{figure.value:.0f}" if figure.metric == "rating" else f"{figure.value:.2f}%"
