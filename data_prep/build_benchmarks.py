"""CLI: the evaluation sets of the seeds' tables as verl parquet, one file each (``data_prep.benchmarks``).

python -m data_prep.build_benchmarks --local-dir ~/hf --codeforces-metadata ~/hf/metadata_cf.json --out data/benchmarks
python -m data_prep.build_benchmarks --from sample --out data/sample_benchmarks          # bundled rows (demo)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from data_prep.benchmarks import BENCHMARKS, BenchmarkBuildConfig, build_benchmarks, expected_problems
from data_prep.build_deepcoder_mix import add_location_arguments, location_settings
from data_prep.evalplus_tasks import RELEASE_URL
from data_prep.loading import SourceUnavailable
from data_prep.prompts import PROMPT_VARIANTS
from data_prep.sources import ALL_SOURCES
from reward_fns.cli import DefaultsHelpFormatter


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    listing = "; ".join(
        f"{name}: {benchmark.description} ({expected_problems(name)[0]} in the source)"
        for name, benchmark in BENCHMARKS.items()
    )
    parser = argparse.ArgumentParser(
        prog="python -m data_prep.build_benchmarks",
        description="Write the evaluation sets of the seeds' result tables as verl parquet, OUT/<benchmark>.parquet, "
        f"and OUT/manifest.json (counts, sources, interactive problems left out). Benchmarks: {listing}. "
        f"HumanEval+ is EvalPlus's release file ({RELEASE_URL}), read from --local-dir ROOT/"
        f"{ALL_SOURCES['humanevalplus'].repo}/ or --source-dir humanevalplus=DIR.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=Path("data/benchmarks"), help="output directory")
    parser.add_argument(
        "--benchmarks",
        default=",".join(BENCHMARKS),
        help=f"comma-separated benchmarks to build, of {', '.join(BENCHMARKS)}",
    )
    add_location_arguments(parser, ALL_SOURCES)
    parser.add_argument(
        "--codeforces-metadata",
        type=Path,
        default=None,
        help="the Codeforces ids (and ratings) of DeepCoder's codeforces rows: rLLM's "
        "scripts/benchmark/codeforces/metadata_cf.json (ids in row order) or Qwen/CodeElo's test rows (JSON Lines or "
        "array with problem_id, rating, tags, interaction, description; matched by description). Without it the "
        "rows keep positional ids: no rating bands and no Codeforces rating",
    )
    parser.add_argument(
        "--prompt-variant",
        choices=PROMPT_VARIANTS,
        default="nouscoder",
        help="the prompt layout (data_prep/prompts.py); deepcoder is rLLM's, the one DeepCoder was evaluated with",
    )
    args = parser.parse_args(argv)
    args.benchmarks = tuple(name.strip() for name in args.benchmarks.split(",") if name.strip())
    unknown = [name for name in args.benchmarks if name not in BENCHMARKS]
    if unknown or not args.benchmarks:
        parser.error(f"--benchmarks: unknown or none {unknown}; choose from {', '.join(BENCHMARKS)}")
    if args.codeforces_metadata is not None and not args.codeforces_metadata.is_file():
        parser.error(f"--codeforces-metadata {args.codeforces_metadata} is not a file")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = BenchmarkBuildConfig(
        out_dir=args.out,
        benchmarks=args.benchmarks,
        prompt_variant=args.prompt_variant,
        codeforces_metadata=args.codeforces_metadata,
        **location_settings(args, ALL_SOURCES),
    )
    try:
        build_benchmarks(config)
    except (SourceUnavailable, ValueError) as exc:
        print(f"data_prep: error: {exc}", file=sys.stderr)
        return 2
    print(f"data_prep: wrote {args.out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
