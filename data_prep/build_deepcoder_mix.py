"""CLI: build the DeepCoder training mix and the LiveCodeBench v6 test split as verl parquet.

python -m data_prep.build_deepcoder_mix --out data/deepcoder_mix                   # from the hub (online)
python -m data_prep.build_deepcoder_mix --local-dir ~/hf --out data/deepcoder_mix  # local copies of the repos
python -m data_prep.build_deepcoder_mix --from sample --out data/sample_mix        # the 44 bundled problems (demo)
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Mapping
from pathlib import Path

from data_prep.build import build_mix
from data_prep.build_settings import DEFAULT_TRAIN_SOURCES, LCB_WINDOWS, BuildConfig, DateWindow
from data_prep.decontamination import DecontaminationConfig
from data_prep.filters import QualityConfig
from data_prep.loading import SourceUnavailable
from data_prep.prompts import PROMPT_VARIANTS
from data_prep.sources import SOURCES, Source
from reward_fns.cli import DefaultsHelpFormatter


def add_location_arguments(parser: argparse.ArgumentParser, sources: Mapping[str, Source] = SOURCES) -> None:
    """Where rows are read (also ``python -m data_prep.build_benchmarks``): --from, --local-dir, --source-dir,
    --revision."""
    parser.add_argument(
        "--from",
        dest="mode",
        choices=("auto", "local", "hub", "sample"),
        default="auto",
        help="where rows come from: auto = local when --local-dir/--source-dir is given, else the hub (an error "
        "naming the download commands when it is unreachable); sample = the bundled sample problems (a demo)",
    )
    parser.add_argument(
        "--local-dir",
        type=Path,
        help="root holding a copy of each dataset repository as ROOT/<owner>/<name>, e.g. what "
        "`huggingface-cli download <owner>/<name> --repo-type dataset --local-dir ROOT/<owner>/<name>` leaves",
    )
    parser.add_argument(
        "--source-dir",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help=f"repository copy for one source, overriding --local-dir (sources: {', '.join(sources)}); repeatable",
    )
    parser.add_argument(
        "--revision",
        action="append",
        default=[],
        metavar="REPO=REV",
        help="read REPO (e.g. agentica-org/DeepCoder-Preview-Dataset) at branch, tag or commit REV; with a local copy, "
        "insist that it was downloaded at REV. Without it the hub's current commit is resolved once and recorded in "
        "manifest.json. Repeatable",
    )


def location_settings(args: argparse.Namespace, sources: Mapping[str, Source] = SOURCES) -> dict:
    """``mode``, ``local_dir``, ``source_dirs``, ``revisions`` from :func:`add_location_arguments`'s flags
    (SystemExit naming a bad value)."""
    source_dirs = {}
    for item in args.source_dir:
        name, sep, path = item.partition("=")
        if not sep or name not in sources:
            raise SystemExit(f"--source-dir expects NAME=PATH with NAME one of {', '.join(sources)}; got {item!r}")
        source_dirs[name] = Path(path)
    revisions = {}
    for item in args.revision:
        repo, sep, revision = item.partition("=")
        if not sep or "/" not in repo or not revision:
            raise SystemExit(f"--revision expects REPO=REV with REPO like owner/name; got {item!r}")
        revisions[repo] = revision
    return {"mode": args.mode, "local_dir": args.local_dir, "source_dirs": source_dirs, "revisions": revisions}


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that say which rows are read (shared with ``python -m data_prep.verify_solutions``)."""
    add_location_arguments(parser)
    parser.add_argument(
        "--train-sources",
        default=",".join(DEFAULT_TRAIN_SOURCES),
        help="comma-separated train sources in priority order (first occurrence of a duplicate wins); "
        "taco_verified and primeintellect read the original repositories instead of DeepCoder's cleaned configs",
    )
    parser.add_argument("--limit-per-source", type=int, default=None, help="read at most N problems per train source")


def source_settings(args: argparse.Namespace) -> dict:
    """``BuildConfig`` fields from the flags of :func:`add_source_arguments` (SystemExit naming a bad value)."""
    train_sources = tuple(name.strip() for name in args.train_sources.split(",") if name.strip())
    unknown = [name for name in train_sources if name not in SOURCES]
    if unknown:
        raise SystemExit(f"--train-sources: unknown source(s) {unknown}; choose from {', '.join(SOURCES)}")
    return {**location_settings(args), "train_sources": train_sources, "limit_per_source": args.limit_per_source}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m data_prep.build_deepcoder_mix",
        description=(
            "Build train.parquet (TACO-verified + PrimeIntellect SYNTHETIC-1 + LiveCodeBench before the test window), "
            "test.parquet (LiveCodeBench v6, 2024-08-01 to 2025-05-01, 454 problems) and manifest.json as verl "
            "RLHFDataset rows with reward_fns ground truth. With no arguments: reads the hub, and stops with the "
            "download commands when it is unreachable; the 44-problem bundled sample only with --from sample."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=Path("data/deepcoder_mix"), help="output directory")
    add_source_arguments(parser)
    parser.add_argument(
        "--lcb-window",
        choices=tuple(LCB_WINDOWS),
        default=None,
        help="a named test window: "
        + "; ".join(
            f"{name} = {w.lcb_version}, [{w.window.test_start}, {w.window.test_end})" for name, w in LCB_WINDOWS.items()
        )
        + " (sets --lcb-version, --test-start and --test-end, which may then not be given)",
    )
    parser.add_argument(
        "--lcb-version",
        default=None,
        help="LiveCodeBench release whose files are read: release_vN = test.jsonl..testN.jsonl, vN = testN.jsonl only "
        "(default: release_v6)",
    )
    parser.add_argument(
        "--test-start", default=None, help="first contest date of the test split (inclusive; default 2024-08-01)"
    )
    parser.add_argument("--test-end", default=None, help="end of the test split (exclusive; default 2025-05-01)")
    parser.add_argument(
        "--train-before",
        default=None,
        help="LiveCodeBench problems dated before this train (default: --test-start)",
    )
    parser.add_argument(
        "--expected-test-count",
        type=int,
        default=None,
        help="warn when the test split has another size (default: the known size of the window, 454 for release_v6 "
        "[2024-08-01, 2025-05-01) and 279 for release_v5 [2024-08-01, 2025-02-01); no check for other windows)",
    )
    parser.add_argument(
        "--prompt-variant",
        choices=PROMPT_VARIANTS,
        default="nouscoder",
        help="nouscoder: LiveCodeBench chat layout (system turn + '### Question:' user turn); deepcoder: rLLM's "
        "single user turn with the system text inlined (see data_prep/prompts.py)",
    )
    parser.add_argument("--min-tests", type=int, default=5, help="drop train problems with fewer tests")
    parser.add_argument(
        "--max-test-chars", type=int, default=64_000_000, help="drop train problems whose tests total more characters"
    )
    parser.add_argument(
        "--max-chars-per-test",
        type=int,
        default=16_000_000,
        help="drop train problems with one test (input + output) of more characters",
    )
    parser.add_argument(
        "--verified",
        type=Path,
        default=None,
        help="results of `python -m data_prep.verify_solutions` (JSONL): drop train problems none of whose gold "
        "solutions pass; counts per source and reason go to manifest.json",
    )
    parser.add_argument(
        "--keep-empty-outputs", action="store_true", help="keep train problems where a test expects empty output"
    )
    parser.add_argument(
        "--near-dup-threshold", type=float, default=0.8, help="estimated Jaccard at which two statements are duplicates"
    )
    parser.add_argument("--minhash-permutations", type=int, default=64, help="MinHash signature length")
    parser.add_argument("--minhash-bands", type=int, default=16, help="LSH bands (must divide the permutations)")
    parser.add_argument("--shingle-words", type=int, default=5, help="words per MinHash shingle")
    parser.add_argument("--decontam-ngram", type=int, default=13, help="words per statement n-gram for decontamination")
    parser.add_argument(
        "--decontam-overlap",
        type=float,
        default=0.5,
        help="flag a train problem when shared n-grams cover this fraction of the smaller statement",
    )
    parser.add_argument(
        "--decontam-min-input-chars", type=int, default=8, help="shorter test inputs are ignored for decontamination"
    )
    parser.add_argument(
        "--decontam-min-shared-inputs",
        type=int,
        default=3,
        help="flag a train problem sharing this many distinct test inputs with one test problem",
    )
    parser.add_argument(
        "--decontam-shared-input-fraction",
        type=float,
        default=0.5,
        help="...or sharing this fraction of that test problem's inputs",
    )
    parser.add_argument("--row-group-mb", type=int, default=64, help="parquet row-group size cap in MiB")
    parser.add_argument(
        "--public-tests",
        type=int,
        default=0,
        metavar="K",
        help="for problems whose source has no public tests (TACO, SYNTHETIC-1, the sample): their first K tests "
        "become the public tests of extra_info.public_tests (the multi-turn feedback runs them) and leave the hidden "
        "set; LiveCodeBench rows always keep their own public tests; 0 = none moved",
    )
    args = parser.parse_args(argv)
    if args.public_tests < 0:
        parser.error("--public-tests must be >= 0")
    apply_lcb_window(parser, args)
    check_dates(parser, args)
    return args


def apply_lcb_window(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--lcb-window NAME`` sets the release and the dates; without it, the NousCoder v6 window's values are the
    defaults of the three flags."""
    chosen = LCB_WINDOWS[args.lcb_window or "nouscoder_v6"]
    given = [flag for flag in ("lcb_version", "test_start", "test_end") if getattr(args, flag) is not None]
    if args.lcb_window and given:
        parser.error(
            f"--lcb-window {args.lcb_window} sets --lcb-version, --test-start and --test-end; drop "
            + ", ".join("--" + flag.replace("_", "-") for flag in given)
        )
    defaults = {
        "lcb_version": chosen.lcb_version,
        "test_start": chosen.window.test_start,
        "test_end": chosen.window.test_end,
    }
    for flag, value in defaults.items():
        if getattr(args, flag) is None:
            setattr(args, flag, value)


def check_dates(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--test-start``, ``--test-end`` and ``--train-before`` are calendar dates and the test window is not empty.
    (The build compares dates as ``YYYY-MM-DD`` text: anything else would silently select nothing.)"""
    for flag in ("test_start", "test_end", "train_before"):
        value = getattr(args, flag)
        if value is None:
            continue
        try:
            date = datetime.date.fromisoformat(value)
        except ValueError:
            parser.error(f"--{flag.replace('_', '-')} {value!r} is not a date: write YYYY-MM-DD, e.g. 2024-08-01")
        setattr(args, flag, date.isoformat())
    if args.test_start >= args.test_end:
        parser.error(
            f"the test window [--test-start {args.test_start}, --test-end {args.test_end}) is empty: --test-end must "
            "come after --test-start (the window includes its start and excludes its end)"
        )


def config_from_args(args: argparse.Namespace) -> BuildConfig:
    if args.verified is not None and not args.verified.is_file():
        raise SystemExit(
            f"--verified {args.verified} is not a file (write it with python -m data_prep.verify_solutions)"
        )
    if args.minhash_permutations % args.minhash_bands:
        raise SystemExit("--minhash-bands must divide --minhash-permutations")
    return BuildConfig(
        out_dir=args.out,
        **source_settings(args),
        lcb_version=args.lcb_version,
        window=DateWindow(args.test_start, args.test_end, args.train_before),
        expected_test_count=args.expected_test_count,
        prompt_variant=args.prompt_variant,
        quality=QualityConfig(
            args.min_tests, args.max_test_chars, args.max_chars_per_test, not args.keep_empty_outputs
        ),
        decontamination=DecontaminationConfig(
            args.decontam_ngram,
            args.decontam_overlap,
            args.decontam_min_input_chars,
            args.decontam_min_shared_inputs,
            args.decontam_shared_input_fraction,
        ),
        near_duplicate_threshold=args.near_dup_threshold,
        minhash_permutations=args.minhash_permutations,
        minhash_bands=args.minhash_bands,
        shingle_words=args.shingle_words,
        row_group_mb=args.row_group_mb,
        verified=args.verified,
        public_tests=args.public_tests,
    )


def main(argv: list[str] | None = None) -> int:
    config = config_from_args(parse_args(argv))
    try:
        build_mix(config)
    except SourceUnavailable as exc:
        print(f"data_prep: error: {exc}", file=sys.stderr)
        return 2
    print(
        f"data_prep: wrote {config.out_dir / 'train.parquet'}, {config.out_dir / 'test.parquet'}, "
        f"{config.out_dir / 'manifest.json'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
