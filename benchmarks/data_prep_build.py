"""Benchmark of ``data_prep.build_deepcoder_mix`` at the recipe's scale, and of loading its output in verl.

Writes a synthetic local copy of the sources in their own layouts (DeepCoder-Preview ``taco`` and
``primeintellect`` parquet configs, LiveCodeBench ``test6.jsonl`` with compressed private tests): ``--problems``
train problems with on average ``--tests`` tests each (50 to 150, inputs of ~``--input-chars`` characters), and
``--large`` problems whose tests exceed ``--large-mb`` MB. Then, each in a fresh process:

- baseline: stream the raw files and ``json.loads`` every row's tests (the parsing no build can avoid);
- build: ``python -m data_prep.build_deepcoder_mix --from local`` at several problem counts (``--limit-per-source``);
- verl: ``RLHFDataset`` over the full ``train.parquet`` (``data_prep.verl_check``).

Prints wall time and peak RSS of each, and the ratios build / baseline. Targets: the full build under 10 minutes
and 4 GB peak RSS on a 2-core machine (data_prep/README.md "Memory and speed").

A bare run is the full benchmark (24,000 problems: minutes, and more than 1 GB of memory); ``--problems 2000 --large 0``
checks the set-up on a small scale.

    .venv/bin/python benchmarks/data_prep_build.py --problems 24000 --work-dir /tmp/data_prep_bench
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import pickle
import random
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from reward_fns.cli import DefaultsHelpFormatter


class HelpFormatter(DefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """The module docstring as written, and each flag's default."""


CHILD = """
import json, resource, sys, time
started = time.monotonic()
kind, args = sys.argv[1], sys.argv[2:]
if kind == "build":
    from data_prep.build_deepcoder_mix import main
    result = {"exit": main(args)}
elif kind == "verl":
    from data_prep.verl_check import check
    from pathlib import Path
    result = check(Path(args[0]))
else:
    import pyarrow.parquet as pq
    from pathlib import Path
    rows = tests = 0
    for path in sorted(Path(args[0]).rglob("*.parquet")):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=32, columns=["tests"]):
            for text in batch.column(0).to_pylist():
                tests += len(json.loads(text)) if text.startswith("[") else len(json.loads(text)["inputs"])
                rows += 1
    result = {"rows": rows, "tests": tests}
result["seconds"] = round(time.monotonic() - started, 2)
result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
print("BENCH " + json.dumps(result))
"""

VOCABULARY = [f"w{index}" for index in range(5000)]


def statement(rng: random.Random, number: int) -> str:
    return f"Problem {number}. " + " ".join(rng.choice(VOCABULARY) for _ in range(80))


def stdin_tests(rng: random.Random, count: int, input_chars: int) -> list[tuple[str, str]]:
    return [(os.urandom(input_chars // 2).hex() + "\n", f"{rng.randrange(10**9)}\n") for _ in range(count)]


def write_sources(root: Path, problems: int, tests: int, input_chars: int, large: int, large_mb: float) -> int:
    """Write the synthetic repositories; return their total size in bytes."""
    rng = random.Random(0)
    deepcoder = root / "agentica-org" / "DeepCoder-Preview-Dataset"
    taco_count = problems * 2 // 5
    configs = {"taco": range(0, taco_count), "primeintellect": range(taco_count, problems)}
    large_positions = set(range(taco_count + 10, taco_count + 10 + 10 * large, 10))
    for config, numbers in configs.items():
        path = deepcoder / config / "train-00000-of-00001.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        writer = None
        batch: list[dict[str, Any]] = []
        for number in numbers:
            big = number in large_positions
            count = 100 if big else rng.randint(tests // 2, tests * 3 // 2)
            chars = int(large_mb * 1e6 / 100) if big else input_chars
            pairs = stdin_tests(rng, count, chars)
            if config == "taco":
                encoded = json.dumps({"inputs": [i for i, _ in pairs], "outputs": [o for _, o in pairs]})
            else:
                encoded = json.dumps([{"type": "stdin_stdout", "input": i, "output": o} for i, o in pairs])
            batch.append({"problem": statement(rng, number), "tests": encoded, "starter_code": "", "metadata": "{}"})
            if len(batch) == 64 or number == numbers[-1]:
                table = pa.Table.from_pylist(batch)
                writer = writer or pq.ParquetWriter(path, table.schema, compression="zstd")
                writer.write_table(table)
                batch = []
        writer.close()
    lcb = root / "livecodebench" / "code_generation_lite"
    lcb.mkdir(parents=True, exist_ok=True)
    with open(lcb / "test6.jsonl", "w") as handle:
        for number in range(454):
            pairs = [{"input": i, "output": o, "testtype": "stdin"} for i, o in stdin_tests(rng, 20, input_chars)]
            private = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(pairs[3:])))).decode()
            row = {
                "question_title": f"t{number}",
                "question_content": statement(rng, 10**6 + number),
                "platform": "atcoder",
                "question_id": f"lcb{number}",
                "contest_id": "c",
                "contest_date": f"2024-{8 + number % 5:02d}-{1 + number % 28:02d}T00:00:00",
                "starter_code": "",
                "difficulty": "easy",
                "public_test_cases": json.dumps(pairs[:3]),
                "private_test_cases": private,
                "metadata": "{}",
            }
            handle.write(json.dumps(row) + "\n")
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def run_child(kind: str, args: list[str]) -> dict[str, Any]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, kind, *args], capture_output=True, text=True, env=env, check=False
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("BENCH ")]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"{kind} failed ({completed.returncode}): {completed.stderr[-3000:]}")
    return json.loads(lines[-1][6:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--problems", type=int, default=24000, help="train problems in the synthetic sources")
    parser.add_argument("--tests", type=int, default=100, help="average tests per problem")
    parser.add_argument("--input-chars", type=int, default=400, help="characters per test input")
    parser.add_argument("--large", type=int, default=3, help="problems with more than --large-mb of tests")
    parser.add_argument("--large-mb", type=float, default=55.0, help="MB of tests of each large problem")
    parser.add_argument("--scales", default="0.125,0.5,1", help="fractions of --problems to build for the growth")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/data_prep_bench"), help="scratch directory")
    parser.add_argument("--skip-verl", action="store_true", help="do not load the result in RLHFDataset")
    args = parser.parse_args()

    raw = args.work_dir / "raw"
    started = time.monotonic()
    if not (raw / "done").exists():
        size = write_sources(raw, args.problems, args.tests, args.input_chars, args.large, args.large_mb)
        (raw / "done").write_text(str(size))
    size = int((raw / "done").read_text())
    print(
        f"synthetic sources: {args.problems} problems, {size / 1e9:.2f} GB on disk ({time.monotonic() - started:.0f} s)"
    )

    baseline = run_child("baseline", [str(raw / "agentica-org")])
    print(f"baseline (stream + json.loads tests): {baseline}")
    taco_share = args.problems * 2 // 5
    for fraction in (float(value) for value in args.scales.split(",")):
        limit = max(taco_share, args.problems - taco_share) if fraction >= 1 else int(args.problems * fraction / 2)
        out = args.work_dir / f"out_{fraction}"
        build = run_child(
            "build",
            ["--from", "local", "--local-dir", str(raw), "--out", str(out), "--limit-per-source", str(limit)],
        )
        manifest = json.loads((out / "manifest.json").read_text())
        rows = manifest["counts"]["train"]["total"]
        print(
            f"build x{fraction}: {rows} train + {manifest['counts']['test']['total']} test rows, "
            f"{build['seconds']} s, peak RSS {build['peak_rss_mib']} MiB; "
            f"time ratio vs baseline {build['seconds'] / baseline['seconds']:.2f}, "
            f"RSS ratio vs baseline {build['peak_rss_mib'] / baseline['peak_rss_mib']:.2f}"
        )
    if not args.skip_verl:
        verl = run_child("verl", [str(args.work_dir / "out_1.0" / "train.parquet")])
        print(
            f"verl RLHFDataset on train.parquet: {verl}; RSS ratio vs baseline "
            f"{verl['peak_rss_mib'] / baseline['peak_rss_mib']:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
