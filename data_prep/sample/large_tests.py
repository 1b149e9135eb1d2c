"""Large hidden tests (megabytes of input), generated on demand and cached, never committed.

Two problems get them: ``inversion_audit`` (about 4.2 MB of input: N = 2 * 10^5 random amounts plus N = 10^5
amounts with many repeats) and ``courier_routes`` (about 3.3 MB: 10^5 depots and 1.4 * 10^5 roads with weights up to
10^9, so shortest times exceed 10^9). Their sizes make each bundled quadratic ``time_limit`` program need >= 10^10
steps, too slow on any machine by a wide margin. Expected outputs come from the trusted reference, run in-process. Files are cached under
``$NOUSCODER_CACHE/sample/large-v<VERSION>/`` (default cache root ``~/.cache/nouscoder-verl``); bump ``VERSION``
whenever a generator or a reference changes.

    python -m data_prep.sample.large_tests     # warm the cache and print the sizes
"""

from __future__ import annotations

import json
import logging
import os
import random
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

from data_prep.sample.build_sample import PROBLEMS_DIR, seeded_rng
from data_prep.sample.inprocess import run_stdin_program

VERSION = "4"
logger = logging.getLogger(__name__)


def cache_dir() -> Path:
    root = Path(os.environ.get("NOUSCODER_CACHE", Path.home() / ".cache" / "nouscoder-verl"))
    return root / "sample" / f"large-v{VERSION}"


def inversion_inputs(rng: random.Random) -> list[str]:
    """N = 2 * 10^5 amounts up to 10^18 (about 3.8 MB), then N = 10^5 amounts with many repeats (about 0.4 MB)."""
    spread = [str(rng.randint(1, 10**18)) for _ in range(200_000)]
    repeats = [str(rng.randint(1, 1000)) for _ in range(100_000)]
    return [f"{len(values)}\n{' '.join(values)}\n" for values in (spread, repeats)]


def courier_inputs(rng: random.Random) -> list[str]:
    """10^5 depots; a random tree of roads keeps most depots reachable, plus random extra roads (about 3.3 MB)."""
    depots, extra_roads = 100_000, 40_000
    roads = [
        (rng.randint(max(1, depot - 50), depot - 1), depot, rng.randint(0, 10**9)) for depot in range(2, depots + 1)
    ]
    roads += [(rng.randint(1, depots), rng.randint(1, depots), rng.randint(0, 10**9)) for _ in range(extra_roads)]
    rng.shuffle(roads)
    return [f"{depots} {len(roads)}\n" + "".join(f"{u} {v} {w}\n" for u, v, w in roads)]


LARGE_GENERATORS: dict[str, Callable[[random.Random], list[str]]] = {
    "inversion_audit": inversion_inputs,
    "courier_routes": courier_inputs,
}
"""Problem id -> generator of large stdin inputs."""


def build_large_tests(problem_id: str) -> list[dict[str, str]]:
    """Generate the inputs and compute the outputs with the problem's reference (in-process)."""
    reference_path = PROBLEMS_DIR / problem_id / "reference.py"
    reference = reference_path.read_text()
    inputs = LARGE_GENERATORS[problem_id](seeded_rng(problem_id, "large"))
    return [
        {"input": text, "output": run_stdin_program(reference, text, str(reference_path)), "testtype": "stdin"}
        for text in inputs
    ]


@cache
def _cached_large_tests(problem_id: str) -> tuple[tuple[str, str, str], ...]:
    path = cache_dir() / f"{problem_id}.json"
    if path.is_file():
        tests = json.loads(path.read_text())
    else:
        tests = build_large_tests(problem_id)
        write_cache(path, tests)
    return tuple((test["input"], test["output"], test["testtype"]) for test in tests)


def write_cache(path: Path, tests: list[dict[str, str]]) -> None:
    """Write atomically (concurrent workers may race); an unwritable cache only costs a regeneration next time."""
    partial = path.with_suffix(f".tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(tests))
        os.replace(partial, path)
    except OSError as error:
        logger.warning("cannot cache large tests in %s (%s); set NOUSCODER_CACHE to a writable folder", path, error)


def large_tests(problem_id: str) -> list[dict[str, str]]:
    """The large tests of ``problem_id`` in the ground-truth layout; ``[]`` for problems without any."""
    if problem_id not in LARGE_GENERATORS:
        return []
    return [
        {"input": text, "output": output, "testtype": testtype}
        for text, output, testtype in _cached_large_tests(problem_id)
    ]


def main() -> int:
    for problem_id in LARGE_GENERATORS:
        tests = large_tests(problem_id)
        megabytes = sum(len(test["input"]) for test in tests) / 1e6
        print(f"{problem_id}: {len(tests)} large tests, {megabytes:.2f} MB of input (cache folder {cache_dir()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
