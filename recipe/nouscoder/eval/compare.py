"""Compare two evaluations (e.g. base vs trained): per-problem gains and losses, paired bootstrap CI.

    python -m recipe.nouscoder.eval.eval_lcb compare BASE/results.json TRAINED/results.json --out DIR

Either file may be a single benchmark's ``results.json`` or the one of a run over several benchmarks
(``recipe.nouscoder.eval.suite``); then every benchmark both runs evaluated is compared on its own (HumanEval+ on its
base + plus pass@1, the one the seeds report), in ``compare.json`` keyed by benchmark and one ``compare.md``.

The pass@1 difference is ``mean_i (p_B,i - p_A,i)`` over the problems both runs evaluated. Paired bootstrap
(Efron & Tibshirani 1993, ch. 16; problems are the resampling unit, both runs keep the same draw): draw m
problems with replacement B times, take the mean difference of each draw, and report the (alpha/2, 1 - alpha/2)
percentiles as the confidence interval. Seeded, so a rerun gives the same interval.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from recipe.nouscoder.eval.metrics import bootstrap_mean_ci
from recipe.nouscoder.eval.suite import SUITE_KEY
from reward_fns.cli import DefaultsHelpFormatter


def benchmark_results(path: Path) -> dict[str, Path]:
    """Benchmark name -> its ``results.json``: the suite's entries, or the file itself under its benchmark name."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a results.json written by eval_lcb ({exc!r})") from exc
    if isinstance(data, dict) and isinstance(data.get(SUITE_KEY), dict):
        return {name: path.parent / entry["results"] for name, entry in data[SUITE_KEY].items()}
    return {str((data.get("settings") or {}).get("benchmark", "other")): path}


def compare_files(base: Path, trained: Path, resamples: int, confidence: float, seed: int) -> dict[str, dict[str, Any]]:
    """Per benchmark both files hold, the paired comparison; two single-benchmark files are compared whatever their
    names.

    Raises:
        ValueError: a file is not a results.json, or the two share no benchmark (or no problem).
    """
    runs_a, runs_b = benchmark_results(base), benchmark_results(trained)
    if len(runs_a) == 1 and len(runs_b) == 1:
        pairs = {next(iter(runs_a)): (next(iter(runs_a.values())), next(iter(runs_b.values())))}
    else:
        pairs = {name: (runs_a[name], runs_b[name]) for name in runs_a if name in runs_b}
    if not pairs:
        raise ValueError(f"the runs share no benchmark: {sorted(runs_a)} vs {sorted(runs_b)}")
    return {name: compare(load_pass1(a), load_pass1(b), resamples, confidence, seed) for name, (a, b) in pairs.items()}


def load_pass1(path: Path) -> dict[str, float]:
    """``problem_id -> pass@1`` from a ``results.json`` written by eval_lcb."""
    try:
        rows = json.loads(path.read_text())["problems"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a results.json written by eval_lcb ({exc!r})") from exc
    return {str(row["problem_id"]): float(row["pass@1"]) for row in rows}


def compare(
    base: dict[str, float], trained: dict[str, float], resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> dict[str, Any]:
    """Paired comparison over the shared problems.

    Raises:
        ValueError: the two runs share no problem.
    """
    shared = sorted(set(base) & set(trained))
    if not shared:
        raise ValueError("the two results share no problem_id; were they evaluated on the same --data?")
    deltas = {problem_id: trained[problem_id] - base[problem_id] for problem_id in shared}
    low, high = bootstrap_mean_ci(list(deltas.values()), resamples, confidence, seed)  # paired: one draw
    ordered = sorted(deltas.items(), key=lambda item: (-item[1], item[0]))
    return {
        "problems": len(shared),
        "only_in_base": sorted(set(base) - set(trained)),
        "only_in_trained": sorted(set(trained) - set(base)),
        "base_pass_at_1": sum(base[p] for p in shared) / len(shared),
        "trained_pass_at_1": sum(trained[p] for p in shared) / len(shared),
        "difference": sum(deltas.values()) / len(shared),
        "ci": {"low": low, "high": high, "confidence": confidence, "resamples": resamples, "seed": seed},
        "gains": [{"problem_id": p, "base": base[p], "trained": trained[p], "delta": d} for p, d in ordered if d > 0],
        "losses": [
            {"problem_id": p, "base": base[p], "trained": trained[p], "delta": d} for p, d in reversed(ordered) if d < 0
        ],
        "unchanged": sum(1 for d in deltas.values() if d == 0),
    }


def markdown(
    result: dict[str, Any], base_name: str, trained_name: str, top: int = 20, title: str = "Comparison"
) -> str:
    ci = result["ci"]
    lines = [
        f"# {title}",
        "",
        f"A = `{base_name}`, B = `{trained_name}`, {result['problems']} shared problems.",
        "",
        "| | pass@1 |",
        "|---|---|",
        f"| A | {100 * result['base_pass_at_1']:.2f}% |",
        f"| B | {100 * result['trained_pass_at_1']:.2f}% |",
        f"| B - A | {100 * result['difference']:+.2f} points, {100 * ci['confidence']:.0f}% CI "
        f"[{100 * ci['low']:+.2f}, {100 * ci['high']:+.2f}] (paired bootstrap, {ci['resamples']} resamples, "
        f"seed {ci['seed']}) |",
        "",
        f"Problems gained: {len(result['gains'])}, lost: {len(result['losses'])}, unchanged: {result['unchanged']}.",
    ]
    if result["only_in_base"] or result["only_in_trained"]:
        lines += [
            "",
            f"Left out (in one run only): {len(result['only_in_base'])} of A, {len(result['only_in_trained'])} of B.",
        ]
    for title, rows, none in (
        ("Largest gains", result["gains"], "No problem gained: B's pass@1 is nowhere above A's."),
        ("Largest losses", result["losses"], "No problem lost: B's pass@1 is nowhere below A's."),
    ):
        lines += ["", f"## {title}", ""]
        if not rows:
            lines.append(none)
            continue
        lines += ["| problem | A pass@1 | B pass@1 | delta |", "|---|---|---|---|"]
        lines += [
            f"| {r['problem_id']} | {r['base']:.3f} | {r['trained']:.3f} | {r['delta']:+.3f} |" for r in rows[:top]
        ]
    return "\n".join(lines) + "\n"


def summary_table(results: dict[str, dict[str, Any]], base_name: str, trained_name: str) -> str:
    """One line per benchmark: both runs' pass@1 over the shared problems, the difference and its interval."""
    lines = [
        "# Comparison across benchmarks",
        "",
        f"A = `{base_name}`, B = `{trained_name}`.",
        "",
        "| benchmark | shared problems | A pass@1 | B pass@1 | B - A (points) | CI |",
        "|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        ci = result["ci"]
        lines.append(
            f"| {name} | {result['problems']} | {100 * result['base_pass_at_1']:.2f}% | "
            f"{100 * result['trained_pass_at_1']:.2f}% | {100 * result['difference']:+.2f} | "
            f"[{100 * ci['low']:+.2f}, {100 * ci['high']:+.2f}] ({100 * ci['confidence']:.0f}%) |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m recipe.nouscoder.eval.eval_lcb compare",
        description="Compare two eval_lcb results.json files (A = base, B = trained): per-problem pass@1 gains and "
        "losses and a paired bootstrap confidence interval on the pass@1 difference B - A, per benchmark when a file "
        "is the results.json of several benchmarks. Writes compare.json and compare.md to --out and prints the "
        "markdown.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("base", type=Path, help="results.json of run A (e.g. the base model)")
    parser.add_argument("trained", type=Path, help="results.json of run B (e.g. the trained checkpoint)")
    parser.add_argument("--out", type=Path, default=Path("lcb_compare"), help="output directory")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence level of the interval")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--top", type=int, default=20, help="gains and losses listed in compare.md")
    args = parser.parse_args(argv)
    if not 0 < args.confidence < 1:
        parser.error("--confidence must lie strictly between 0 and 1")
    if args.resamples < 1:
        parser.error("--resamples must be >= 1")
    return args


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    try:
        results = compare_files(args.base, args.trained, args.resamples, args.confidence, args.seed)
    except ValueError as exc:
        print(f"eval_lcb compare: error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if len(results) == 1:
        result = next(iter(results.values()))
        (args.out / "compare.json").write_text(json.dumps(result, indent=2))
        text = markdown(result, str(args.base), str(args.trained), args.top)
    else:
        (args.out / "compare.json").write_text(json.dumps(results, indent=2))
        text = "\n".join(
            [summary_table(results, str(args.base), str(args.trained))]
            + [
                markdown(result, str(args.base), str(args.trained), args.top, f"Comparison: {name}")
                for name, result in results.items()
            ]
        )
    (args.out / "compare.md").write_text(text)
    print(text)
    return 0
