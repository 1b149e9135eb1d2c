"""Evaluation on LiveCodeBench and the seeds' other benchmarks: sample with vLLM (or read completions), grade with
the training grader, report beside the seeds' figures.

    python -m recipe.nouscoder.eval.eval_lcb --model PATH --data test.parquet [--n 16] [--temperature 0.6] \\
        [--top-p 0.95] [--max-tokens 40960] [--yarn-factor 2.5] --out DIR
    python -m recipe.nouscoder.eval.eval_lcb --model PATH --data test.parquet --turns 3 --out DIR     # multi-turn
    python -m recipe.nouscoder.eval.eval_lcb --completions FILE --data test.parquet --out DIR
    python -m recipe.nouscoder.eval.eval_lcb --model PATH --data B/lcb_v5.parquet B/codeforces.parquet \\
        B/humanevalplus.parquet [--codeforces-contests B/codeforces_contests.json] --out DIR   # several benchmarks
    python -m recipe.nouscoder.eval.eval_lcb compare BASE/results.json TRAINED/results.json --out DIR

With several ``--data`` (each ``PATH`` or ``NAME=PATH``; the benchmark is named by the build's manifest otherwise:
``recipe.nouscoder.eval.benchmark``), the samples of all problems are generated in one pass, each benchmark is
graded and reported in ``DIR/<benchmark>/`` as a single one would be in ``DIR``, and ``DIR/results.json`` and
``DIR/report.md`` set every benchmark beside the seeds' figures (``recipe.nouscoder.eval.suite``).

Files in ``--out``: ``generations/`` (vLLM samples, append-only), ``graded.jsonl`` (grades: appended while
grading, then exactly this evaluation's samples), ``results.json``, ``per_problem.csv``, ``report.md``,
``pass1_by_difficulty.png``, ``length_hist.png``, ``pass_at_k.png``. Rerunning the same command resumes: only samples missing from the caches are generated
or graded. Metrics and their formulas: ``recipe/nouscoder/eval/metrics.py``; documentation: ``recipe/nouscoder/eval/README.md``.
With ``--turns N`` (N >= 2) each sample is a conversation with public-test feedback (``recipe.nouscoder.eval.multi_turn``); the
first turns are also graded (``graded_first_turn.jsonl``), so the report holds single-turn and multi-turn pass@k.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from data_prep.benchmarks import BENCHMARKS
from recipe.nouscoder.eval import compare
from recipe.nouscoder.eval.benchmark import OTHER, BenchmarkData, load_benchmark, parse_data_argument
from recipe.nouscoder.eval.cache import check_settings, read_records
from recipe.nouscoder.eval.codeforces import band_breakdown, codeforces_rating, read_contest_data
from recipe.nouscoder.eval.data import EvalProblem, load_eval_problems
from recipe.nouscoder.eval.generate import (
    EngineFactory,
    GenerationSettings,
    generate_missing,
    read_generations,
    settings_dict,
)
from recipe.nouscoder.eval.grading import GroundTruthView, grade_pending
from recipe.nouscoder.eval.humanevalplus import base_suite
from recipe.nouscoder.eval.metrics import GradedSample, ProblemResult, default_ks, summarize
from recipe.nouscoder.eval.multi_turn import multi_turn_summary
from recipe.nouscoder.eval.report import write_report
from recipe.nouscoder.eval.samples import Sample, read_completions_file
from recipe.nouscoder.eval.suite import write_suite_report
from recipe.nouscoder.multi_turn.options import MultiTurnOptions
from reward_fns.cli import DefaultsHelpFormatter, add_grader_arguments, grader_overrides
from reward_fns.sandbox import IsolationUnavailableError
from reward_fns.score import grader_config
from reward_fns.types import GraderConfig

DEFAULT_N = 16
GRADED_FILE = "graded.jsonl"
GRADED_FIRST_TURN_FILE = "graded_first_turn.jsonl"
GRADED_BASE_FILE = "graded_base.jsonl"
"""HumanEval+: the samples graded on the base suite alone (EvalPlus's "base" pass@k)."""
GRADER_SETTINGS_FILE = "graded.settings.json"


def json_object(text: str) -> dict[str, Any]:
    """An argparse type: a JSON object such as '{"rope_scaling": {...}}'."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg}): {text!r}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m recipe.nouscoder.eval.eval_lcb",
        description="LiveCodeBench pass@1 / pass@k: sample a model with vLLM (--model) or take completions made "
        "elsewhere (--completions), grade them with reward_fns and the training limits, and write results.json, "
        "per_problem.csv, report.md and PNG plots to --out. Rerunning resumes from the caches in --out. "
        "`python -m recipe.nouscoder.eval.eval_lcb compare A/results.json B/results.json` compares two runs.",
        formatter_class=DefaultsHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="HF model directory or id to sample with vLLM (needs GPUs and vllm)")
    source.add_argument(
        "--completions",
        type=Path,
        help="JSONL of completions made elsewhere: problem_id, completion, optional sample_index, "
        "response_tokens, finish_reason ('length' = truncated) or truncated",
    )
    parser.add_argument(
        "--data",
        nargs="+",
        required=True,
        help="test parquet(s) written by data_prep (verl rows), each PATH or NAME=PATH with NAME one of "
        f"{', '.join((*BENCHMARKS, OTHER))} (otherwise named by the manifest.json beside it, or its data_source)",
    )
    parser.add_argument("--out", type=Path, default=Path("lcb_eval"), help="output and cache directory")
    parser.add_argument(
        "--n",
        type=int,
        default=None,
        help=f"samples per problem: generated with --model (default {DEFAULT_N}); with --completions, only "
        "sample_index < n is used and every problem must have n (default: all samples of the file)",
    )
    parser.add_argument("--k", default=None, help="comma-separated k of pass@k (default 1, 2, 4, ... and n); k <= n")
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="evaluate only the problems that have samples instead of stopping (the score then "
        "covers fewer problems: the report says how many)",
    )
    sampling = parser.add_argument_group("sampling (--model; defaults: NousCoder Table 3 evaluation)")
    sampling.add_argument("--temperature", type=float, default=0.6, help="sampling temperature")
    sampling.add_argument("--top-p", type=float, default=0.95, help="nucleus sampling top-p")
    sampling.add_argument(
        "--max-tokens",
        type=int,
        default=40960,
        help="generated tokens per sample at most (also capped by max model length - prompt)",
    )
    sampling.add_argument(
        "--yarn-factor",
        type=float,
        default=None,
        help="YaRN rope scaling factor (the final evaluation: 2.5 over Qwen3's 32,768 positions, i.e. 81,920 tokens); "
        "none if unset",
    )
    sampling.add_argument(
        "--original-max-position-embeddings",
        type=int,
        default=GenerationSettings.original_max_position_embeddings,
        help="the model's native context that --yarn-factor multiplies (default %(default)s: Qwen3's, its model card)",
    )
    sampling.add_argument(
        "--max-model-len",
        type=int,
        default=None,
        help="vLLM max_model_len (default: factor x original with YaRN, else the model's)",
    )
    sampling.add_argument(
        "--hf-overrides",
        type=json_object,
        default={},
        help="JSON object of extra config.json overrides for vLLM, merged over the YaRN ones",
    )
    sampling.add_argument("--seed", type=int, default=0, help="sampling seed (each sample gets a seed from it)")
    sampling.add_argument("--tensor-parallel-size", type=int, default=1, help="GPUs per vLLM engine")
    sampling.add_argument(
        "--data-parallel-size",
        type=int,
        default=None,
        help="vLLM engines, one process each (default: visible GPUs / tensor parallel size)",
    )
    sampling.add_argument("--gpu-memory-utilization", type=float, default=0.9, help="vLLM GPU memory fraction")
    sampling.add_argument(
        "--chunk-size", type=int, default=512, help="requests per vLLM generate call; the cache is appended after each"
    )
    multi_turn = parser.add_argument_group(
        "multi-turn (--turns >= 2: the training loop's public-test feedback, recipe/nouscoder/multi_turn; "
        "--max-tokens is then the budget of a whole conversation)"
    )
    multi_turn.add_argument(
        "--turns",
        type=int,
        default=1,
        help="assistant turns per sample at most; 1 = single-turn; >= 2 also reports the first "
        "turn's (single-turn) pass@k beside the final one",
    )
    multi_turn.add_argument(
        "--feedback-format",
        choices=("full", "verdict"),
        default="full",
        help="full: verdict, failing public input, expected and actual output; verdict: verdict only",
    )
    multi_turn.add_argument(
        "--feedback-field-chars",
        type=int,
        default=MultiTurnOptions.feedback_field_chars,
        help="each input / output / stderr tail shown is cut to this many characters",
    )
    multi_turn.add_argument(
        "--allow-done", action="store_true", help="after feedback the model may keep its last program by replying DONE"
    )
    multi_turn.add_argument(
        "--min-turn-tokens",
        type=int,
        default=MultiTurnOptions.min_turn_tokens,
        help="no new turn when fewer tokens would be left after its feedback message",
    )
    parser.add_argument(
        "--completions-settings",
        type=Path,
        default=None,
        help="JSON object of the settings the --completions were sampled with (model, temperature, top_p, "
        "max_tokens, context), stated in the report (python -m recipe.nouscoder.eval.verl_dump writes it)",
    )
    codeforces = parser.add_argument_group("codeforces (the CodeElo rating; recipe/nouscoder/eval/codeforces.py)")
    codeforces.add_argument(
        "--codeforces-contests",
        type=Path,
        default=None,
        help="contest data for the rating and percentile, fetched with `python -m "
        "recipe.nouscoder.eval.codeforces_contests`; without it the per-band pass rates are reported and no rating",
    )
    codeforces.add_argument(
        "--codeforces-pass-n",
        type=int,
        default=None,
        help="the first N samples of a problem are its submissions, in sample order (default: all; rLLM rated "
        "DeepCoder with 8 samples and --pass_n 8)",
    )
    grading = parser.add_argument_group(
        "grading (defaults: the training limits of reward_fns.types.GraderConfig, "
        "or REWARD_FNS_* environment variables)"
    )
    grading.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="parallel grader workers")
    add_grader_arguments(grading)
    args = parser.parse_args(argv)
    if args.n is not None and args.n < 1:
        parser.error("--n must be >= 1")
    if args.turns < 1:
        parser.error("--turns must be >= 1")
    if args.turns > 1 and args.completions is not None:
        parser.error(
            "--turns needs --model (conversations are generated here); completions files that carry "
            "first_completion / multi_turn are reported both ways without it"
        )
    if args.yarn_factor is not None and args.yarn_factor <= 1.0:
        parser.error("--yarn-factor must be > 1 (it multiplies the context); leave it out for no YaRN")
    data = [parse_data_argument(text) for text in args.data]
    for _, path in data:
        if not path.is_file():
            parser.error(
                f"--data {path} does not exist; build it with `python -m data_prep.build_deepcoder_mix` or "
                "`python -m data_prep.build_benchmarks`"
            )
    for flag in ("completions", "completions_settings", "codeforces_contests"):
        value = getattr(args, flag)
        if value is not None and not value.is_file():
            parser.error(f"--{flag.replace('_', '-')} {value} does not exist")
    if args.codeforces_pass_n is not None and args.codeforces_pass_n < 1:
        parser.error("--codeforces-pass-n must be >= 1")
    args.benchmarks = [load_benchmark(path, name) for name, path in data]
    names = [benchmark.name for benchmark in args.benchmarks]
    if len(set(names)) != len(names):
        parser.error(f"--data names a benchmark twice ({names}); name them with NAME=PATH")
    return args


def multi_turn_options(args: argparse.Namespace) -> MultiTurnOptions | None:
    """The conversation settings of ``--turns`` >= 2 (None: single-turn)."""
    if args.turns < 2:
        return None
    return MultiTurnOptions(
        max_turns=args.turns,
        feedback_format=args.feedback_format,
        feedback_field_chars=args.feedback_field_chars,
        allow_done=args.allow_done,
        min_turn_tokens=args.min_turn_tokens,
    )


def generation_settings(args: argparse.Namespace, config: GraderConfig | None = None) -> GenerationSettings:
    options = multi_turn_options(args)
    return GenerationSettings(
        model=args.model,
        n=args.n or DEFAULT_N,
        temperature=args.temperature,
        top_p=args.top_p,
        max_tokens=args.max_tokens,
        yarn_factor=args.yarn_factor,
        original_max_position_embeddings=args.original_max_position_embeddings,
        max_model_len=args.max_model_len,
        seed=args.seed,
        hf_overrides=args.hf_overrides,
        tensor_parallel_size=args.tensor_parallel_size,
        data_parallel_size=args.data_parallel_size,
        gpu_memory_utilization=args.gpu_memory_utilization,
        chunk_size=args.chunk_size,
        multi_turn=options,
        public_grader=config if options else None,
    )


def select_samples(
    samples: Sequence[Sample], problems: Sequence[EvalProblem], n: int | None, allow_missing: bool
) -> tuple[list[Sample], list[EvalProblem]]:
    """Samples of the evaluated problems (``sample_index < n`` when n is given) and those problems.

    Raises:
        ValueError: a sample names a problem not in the data; a problem has no samples (unless
            ``allow_missing``) or fewer than n.
    """
    known = {problem.problem_id for problem in problems}
    unknown = sorted({sample.problem_id for sample in samples} - known)
    if unknown:
        raise ValueError(f"{len(unknown)} sampled problem(s) are not in --data, e.g. {unknown[:5]}; wrong --data?")
    chosen = [sample for sample in samples if n is None or sample.sample_index < n]
    counts: dict[str, int] = {}
    for sample in chosen:
        counts[sample.problem_id] = counts.get(sample.problem_id, 0) + 1
    missing = [problem.problem_id for problem in problems if problem.problem_id not in counts]
    if missing and not allow_missing:
        raise ValueError(
            f"{len(missing)} problem(s) of --data have no samples, e.g. {missing[:5]}; "
            "add their completions or pass --allow-missing"
        )
    short = sorted(pid for pid, count in counts.items() if n is not None and count < n)
    if short:
        raise ValueError(f"{len(short)} problem(s) have fewer than --n {n} samples, e.g. {short[:5]}; lower --n")
    return chosen, [problem for problem in problems if problem.problem_id in counts]


def grade_and_summarize(
    args: argparse.Namespace,
    benchmark: BenchmarkData,
    out: Path,
    samples: Sequence[Sample],
    problems: Sequence[EvalProblem],
    config: GraderConfig,
    ks: Sequence[int],
    graded_file: str,
    view: GroundTruthView | None = None,
):
    """Grade ``samples`` into ``out/graded_file`` (resumable); (problem results, summary, length unit, graded)."""
    graded_now = grade_pending(samples, benchmark.path, config, args.workers, out / graded_file, view)
    print(f"eval_lcb: graded {graded_now} new samples into {out / graded_file}", file=sys.stderr)
    length_unit = "tokens" if all(sample.response_tokens is not None for sample in samples) else "characters"
    graded = read_records([out / graded_file])
    results = problem_results(problems, samples, graded, length_unit)
    return results, summarize(results, ks), length_unit, graded


def problem_results(
    problems: Sequence[EvalProblem],
    samples: Sequence[Sample],
    graded: dict[tuple[str, int], dict[str, Any]],
    length_unit: str,
) -> list[ProblemResult]:
    """One ``ProblemResult`` per evaluated problem, samples in index order, from the graded cache."""
    results = {p.problem_id: ProblemResult(p.problem_id, p.difficulty, p.platform, p.contest_date) for p in problems}
    for sample in sorted(samples, key=lambda s: s.key):
        record = graded[sample.key]
        length = record["response_tokens"] if length_unit == "tokens" else record["response_chars"]
        results[sample.problem_id].samples.append(
            GradedSample(
                sample.problem_id, sample.sample_index, record["verdict"], int(length), bool(record["truncated"])
            )
        )
    return [results[problem.problem_id] for problem in problems]


def parse_ks(text: str | None, largest: int) -> list[int]:
    """The requested k values, each checked against the fewest samples of a problem."""
    if text is None:
        return default_ks(largest)
    try:
        ks = sorted({int(value) for value in text.split(",") if value.strip()})
    except ValueError as exc:
        raise ValueError(f"--k must be comma-separated integers, got {text!r}") from exc
    too_large = [k for k in ks if k > largest or k < 1]
    if too_large:
        raise ValueError(
            f"pass@k for k={too_large} needs 1 <= k <= n = {largest} samples per problem; "
            "lower --k or sample more with --n"
        )
    return ks


def load_samples(
    args: argparse.Namespace, problems: Sequence[EvalProblem], make_engine: EngineFactory | None, config: GraderConfig
) -> tuple[list[Sample], dict[str, Any]]:
    """The samples to grade (generating missing ones with --model) and the settings for the report."""
    if args.completions is not None:
        stated = json.loads(args.completions_settings.read_text()) if args.completions_settings else {}
        return read_completions_file(args.completions), {"completions": str(args.completions), **stated}
    settings = generation_settings(args, config)
    cache_dir = args.out / "generations"
    generated = generate_missing(problems, settings, cache_dir, make_engine)
    print(f"eval_lcb: generated {generated} new samples into {cache_dir}", file=sys.stderr)
    samples = [Sample.from_record(record, record["sample_index"]) for record in read_generations(cache_dir).values()]
    context = f"{settings.effective_max_model_len() or 'model default'}"
    if settings.yarn_factor:
        context += f" (YaRN x{settings.yarn_factor:g})"
    return samples, {**settings_dict(settings), "context": context}


def evaluate(args: argparse.Namespace, make_engine: EngineFactory | None = None) -> dict[str, dict[str, Any]]:
    """The whole evaluation; returns each benchmark's summary (what its ``results.json`` holds)."""
    args.out.mkdir(parents=True, exist_ok=True)
    problems = {benchmark.name: load_eval_problems(benchmark.path) for benchmark in args.benchmarks}
    union: dict[str, EvalProblem] = {}
    for name, listed in problems.items():
        for problem in listed:
            if union.setdefault(problem.problem_id, problem).messages != problem.messages:
                raise ValueError(
                    f"problem {problem.problem_id} of {name} has another prompt in an earlier --data; build the "
                    "benchmarks with one --prompt-variant"
                )
    config = grader_config(grader_overrides(args))
    samples, settings = load_samples(args, list(union.values()), make_engine, config)  # one sampling pass for all
    samples = without_ungraded(samples, args.benchmarks, union)
    n = args.n if args.completions is not None else (args.n or DEFAULT_N)
    single = len(args.benchmarks) == 1
    summaries, suite = {}, {}
    for benchmark in args.benchmarks:
        out = args.out if single else args.out / benchmark.name
        ids = {problem.problem_id for problem in problems[benchmark.name]}
        mine = samples if single else [sample for sample in samples if sample.problem_id in ids]
        summary, benchmark_settings = evaluate_benchmark(
            args, benchmark, out, mine, problems[benchmark.name], config, n, settings
        )
        summaries[benchmark.name] = summary
        suite[benchmark.name] = (summary, benchmark_settings, out)
    if not single:
        paths = write_suite_report(args.out, suite)
        print("eval_lcb: all benchmarks: " + ", ".join(str(path) for path in paths), file=sys.stderr)
    return summaries


def without_ungraded(
    samples: list[Sample], benchmarks: Sequence[BenchmarkData], problems: dict[str, EvalProblem]
) -> list[Sample]:
    """The samples, less those of problems their build did not write (interactive: reported, not graded)."""
    ungraded = {entry["problem_id"] for benchmark in benchmarks for entry in benchmark.not_graded}
    kept = [sample for sample in samples if sample.problem_id not in ungraded or sample.problem_id in problems]
    if len(kept) < len(samples):
        print(
            f"eval_lcb: {len(samples) - len(kept)} samples of interactive problems are not graded (their tests are a "
            "judge's protocol); the report lists the problems",
            file=sys.stderr,
        )
    return kept


def evaluate_benchmark(
    args: argparse.Namespace,
    benchmark: BenchmarkData,
    out: Path,
    samples: list[Sample],
    all_problems: list[EvalProblem],
    config: GraderConfig,
    n: int | None,
    settings: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Grade, summarize and report one benchmark into ``out``; (summary, settings)."""
    out.mkdir(parents=True, exist_ok=True)
    samples, problems = select_samples(samples, all_problems, n, args.allow_missing)
    ks = parse_ks(args.k, min(Counter(sample.problem_id for sample in samples).values()))  # before the long grading
    check_settings(out / GRADER_SETTINGS_FILE, {"data": str(benchmark.path.resolve()), "grader": asdict(config)})
    grade = functools.partial(grade_and_summarize, args, benchmark, out, problems=problems, config=config, ks=ks)
    results, summary, length_unit, final = grade(samples=samples, graded_file=GRADED_FILE)
    if any(sample.first_completion is not None for sample in samples):
        first_samples = [sample.first_turn() for sample in samples]
        _, first_summary, _, first = grade(samples=first_samples, graded_file=GRADED_FIRST_TURN_FILE)
        verdicts = {key: record["verdict"] for key, record in final.items()}
        first_verdicts = {key: record["verdict"] for key, record in first.items()}
        records = [
            {"problem_id": s.problem_id, "sample_index": s.sample_index, "multi_turn": s.multi_turn}
            for s in samples
            if s.multi_turn is not None
        ]
        summary["multi_turn"] = multi_turn_summary(
            records, verdicts, first_verdicts, first_summary["pass_at_k"], summary["pass_at_k"]
        )
        print(
            f"eval_lcb: single-turn pass@1 {100 * first_summary['pass_at_k']['1']:.2f}% (first turns), multi-turn "
            f"pass@1 {100 * summary['pass_at_k']['1']:.2f}% (final programs)",
            file=sys.stderr,
        )
    if benchmark.name == "codeforces":
        contests = read_contest_data(args.codeforces_contests) if args.codeforces_contests else None
        summary["codeforces"] = {
            "by_rating_band": band_breakdown(results, ks),
            "rating": codeforces_rating(results, contests, args.codeforces_pass_n, f"--data {benchmark.path}"),
        }
    if benchmark.name == "humanevalplus":
        _, base_summary, _, _ = grade(samples=samples, graded_file=GRADED_BASE_FILE, view=base_suite)
        summary["humanevalplus"] = {"plus_pass_at_k": summary["pass_at_k"], "base_pass_at_k": base_summary["pass_at_k"]}
    settings = {
        **settings,
        "data": str(benchmark.path),
        "benchmark": benchmark.name,
        "benchmark_description": benchmark.description,
        "n": n,
        "ks": ks,
        "grader": asdict(config),
        "length_unit": length_unit,
        "problems_in_data": len(all_problems),
        "not_graded": benchmark.not_graded,
    }
    paths = write_report(out, summary, settings, results, ks, length_unit)
    print(
        f"eval_lcb: {benchmark.name}: pass@1 {100 * summary['pass_at_k']['1']:.2f}% over {summary['problems']} "
        f"problems; wrote {', '.join(path.name for path in paths)} in {out}",
        file=sys.stderr,
    )
    return summary, settings


def main(argv: Sequence[str] | None = None, make_engine: EngineFactory | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["compare"]:
        return compare.main(argv[1:])
    args = parse_args(argv)
    try:
        summaries = evaluate(args, make_engine)
    except (ValueError, IsolationUnavailableError) as exc:
        print(f"eval_lcb: error: {exc}", file=sys.stderr)
        return 2
    for name, summary in summaries.items():
        internal_errors = summary["verdicts"].get("internal_error", 0)
        if internal_errors:
            graded = args.out / (GRADED_FILE if len(summaries) == 1 else f"{name}/{GRADED_FILE}")
            print(
                f"eval_lcb: WARNING: {name}: {internal_errors} samples are internal_error (the grader or the data "
                f"failed, not the model); they count as incorrect; see {graded}",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
