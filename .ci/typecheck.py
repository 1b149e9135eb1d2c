"""mypy over the package against a baseline of known errors that may only shrink.

    python .ci/typecheck.py            # exit 1 on an error not in the baseline, or a baseline entry that is fixed
    python .ci/typecheck.py --shrink   # drop the fixed entries from the baseline (new errors still fail)

The baseline (``.ci/mypy-baseline.txt``) holds one line per known error, ``path: message  [code]``, without line
numbers, so that edits elsewhere in a file do not disturb it; a message may repeat. Settings: ``[tool.mypy]`` in
pyproject.toml. A new error is fixed in the code (or, where the checker cannot know better, ignored on its line with
the error code and a reason); the baseline never grows.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / ".ci" / "mypy-baseline.txt"
ERROR_LINE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+): error: (?P<message>.*)$")


def current_errors() -> tuple[Counter[str], dict[str, list[str]]]:
    """Baseline keys of mypy's errors now (with multiplicity), and the ``path:line`` places of each key."""
    completed = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True)
    if completed.returncode not in (0, 1) or "error: " not in completed.stdout and completed.returncode:
        sys.exit(f"mypy failed to run:\n{completed.stdout}\n{completed.stderr}")
    errors: Counter[str] = Counter()
    places: dict[str, list[str]] = {}
    for line in completed.stdout.splitlines():
        match = ERROR_LINE.match(line)
        if match:
            key = f"{match['path']}: {match['message']}"
            errors[key] += 1
            places.setdefault(key, []).append(f"{match['path']}:{match['line']}")
    return errors, places


def read_baseline() -> Counter[str]:
    if not BASELINE.is_file():
        return Counter()
    return Counter(line for line in BASELINE.read_text(encoding="utf-8").splitlines() if line.strip())


def write_baseline(errors: Counter[str]) -> None:
    BASELINE.write_text("".join(f"{key}\n" for key in sorted(errors.elements())), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python .ci/typecheck.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shrink", action="store_true", help="remove the fixed entries from the baseline")
    parser.add_argument("--init", action="store_true", help="write the baseline from scratch (once, when adopting)")
    args = parser.parse_args(argv)
    errors, places = current_errors()
    if args.init:
        write_baseline(errors)
        print(f"typecheck: baseline written with {sum(errors.values())} known errors")
        return 0
    baseline = read_baseline()
    new, fixed = errors - baseline, baseline - errors
    if args.shrink and fixed:
        write_baseline(baseline - fixed)
        print(
            f"typecheck: baseline shrunk by {sum(fixed.values())} fixed errors, {sum((baseline - fixed).values())} left"
        )
        fixed = Counter()
    for key in sorted(new):
        print(f"new type error: {', '.join(places[key])}: {key.split(': ', 1)[1]}")
    if fixed:
        print(f"typecheck: {sum(fixed.values())} baseline errors are fixed; run `python .ci/typecheck.py --shrink`:")
        for key in sorted(fixed):
            print(f"  {key}")
    if new or fixed:
        return 1
    print(f"typecheck: no new type errors ({sum(baseline.values())} known in .ci/mypy-baseline.txt)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
