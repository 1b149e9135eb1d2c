"""The time each tier of `make test` took, against its budget.

    python .ci/tier_times.py TIMES_FILE --budgets "setup=150 unit=240 integration=600 vllm=300 total=1200"

TIMES_FILE has one line per tier, written by the Makefile as the tier ends: ``NAME START_S END_S EXIT_STATUS``
(whole seconds since the epoch). The table shows each tier's seconds, its budget and whether it kept to it, then the
total from the first start to the last end. A tier over its budget is reported (``OVER BUDGET``) and does not fail
the run: the machines are noisy, so a budget is what a new slow test visibly breaks, not a timed assertion. The
budgets and how they were set: docs/DESIGN.md "Conventions".
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tier:
    name: str
    start_s: int
    end_s: int
    status: int

    @property
    def seconds(self) -> int:
        return self.end_s - self.start_s


def read_tiers(path: Path) -> list[Tier]:
    tiers = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        words = line.split()
        if len(words) != 4 or not all(word.lstrip("-").isdigit() for word in words[1:]):
            raise ValueError(f"{path}:{number}: expected 'NAME START_S END_S EXIT_STATUS', got {line!r}")
        tiers.append(Tier(words[0], int(words[1]), int(words[2]), int(words[3])))
    return tiers


def parse_budgets(text: str) -> dict[str, int]:
    budgets = {}
    for item in text.split():
        name, equals, seconds = item.partition("=")
        if not equals or not seconds.isdigit():
            raise ValueError(f"budget {item!r}: expected NAME=SECONDS")
        budgets[name] = int(seconds)
    return budgets


def table(tiers: list[Tier], budgets: dict[str, int]) -> tuple[list[str], list[str]]:
    """The report's lines, and the names of the tiers (or ``total``) over their budget."""
    rows = [(tier.name, tier.seconds, "passed" if tier.status == 0 else f"failed ({tier.status})") for tier in tiers]
    if tiers:
        rows.append(("total", max(tier.end_s for tier in tiers) - min(tier.start_s for tier in tiers), ""))
    lines = [f"{'tier':<12} {'seconds':>8} {'budget':>8}  result"]
    over = []
    for name, seconds, result in rows:
        budget = budgets.get(name)
        verdict = ""
        if budget is not None and seconds > budget:
            verdict = f"OVER BUDGET by {seconds - budget} s"
            over.append(name)
        budget_text = str(budget) if budget is not None else "-"
        lines.append(f"{name:<12} {seconds:>8} {budget_text:>8}  {'; '.join(filter(None, (result, verdict)))}".rstrip())
    return lines, over


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python .ci/tier_times.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("times_file", type=Path, help="the Makefile's tier log: NAME START_S END_S EXIT_STATUS lines")
    parser.add_argument("--budgets", default="", help='seconds per tier, e.g. "unit=240 total=1200"')
    args = parser.parse_args(argv)
    lines, over = table(read_tiers(args.times_file), parse_budgets(args.budgets))
    print("make test: time per tier")
    print("\n".join(lines))
    if over:
        print(
            f"make test: {', '.join(over)} over budget: find the test that grew (pytest's --durations above) "
            'before raising a budget (docs/DESIGN.md "Conventions").'
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
