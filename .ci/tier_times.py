"""The time each tier of `make test` took, against its budget.

    python .ci/tier_times.py TIMES_FILE --budgets "setup=150 unit=240 integration=600 vllm=300 total=1200"

TIMES_FILE has one line per tier, written by the Makefile as the tier ends: ``NAME START_S END_S EXIT_STATUS``
(whole seconds since the epoch), then optionally ``START_TICKS END_TICKS``: the machine's busy CPU time from the
``cpu`` line of Linux's /proc/stat (user + nice + system + irq + softirq + steal, in clock ticks; ``-`` where there
is no /proc/stat). The table shows each tier's seconds, its budget and whether it kept to it, then the total from the
first start to the last end; with the ticks, also the CPU seconds the whole machine spent in the tier and how many of
its cores that kept busy on average (anything else running on the machine counts too). A tier over its budget is
reported (``OVER BUDGET``) and does not fail the run: the machines are noisy, so a budget is what a new slow test
visibly breaks, not a timed assertion. The budgets and how they were set: docs/DESIGN.md "Test time".
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tier:
    name: str
    start_s: int
    end_s: int
    status: int
    start_ticks: int | None = None
    end_ticks: int | None = None

    @property
    def seconds(self) -> int:
        return self.end_s - self.start_s


def busy_cpu_s(start_ticks: int | None, end_ticks: int | None) -> float | None:
    """The machine's busy CPU seconds between two /proc/stat readings, None where either is missing."""
    if start_ticks is None or end_ticks is None:
        return None
    return (end_ticks - start_ticks) / os.sysconf("SC_CLK_TCK")


def _ticks(word: str) -> int | None:
    return None if word == "-" else int(word)


def read_tiers(path: Path) -> list[Tier]:
    tiers = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        words = line.split()
        well_formed = (
            len(words) in (4, 6)
            and all(word.lstrip("-").isdigit() for word in words[1:4])
            and all(word == "-" or word.isdigit() for word in words[4:])
        )
        if not well_formed:
            raise ValueError(
                f"{path}:{number}: expected 'NAME START_S END_S EXIT_STATUS [START_TICKS END_TICKS]', got {line!r}"
            )
        ticks = [_ticks(word) for word in words[4:]] or [None, None]
        tiers.append(Tier(words[0], int(words[1]), int(words[2]), int(words[3]), *ticks))
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
    rows = [
        (tier.name, tier.seconds, busy_cpu_s(tier.start_ticks, tier.end_ticks), _result(tier.status)) for tier in tiers
    ]
    if tiers:
        first, last = min(tiers, key=lambda tier: tier.start_s), max(tiers, key=lambda tier: tier.end_s)
        rows.append(("total", last.end_s - first.start_s, busy_cpu_s(first.start_ticks, last.end_ticks), ""))
    lines = [f"{'tier':<12} {'seconds':>8} {'budget':>8} {'CPU s':>8} {'cores busy':>10}  result"]
    over = []
    for name, seconds, cpu_s, result in rows:
        budget = budgets.get(name)
        verdict = ""
        if budget is not None and seconds > budget:
            verdict = f"OVER BUDGET by {seconds - budget} s"
            over.append(name)
        budget_text = str(budget) if budget is not None else "-"
        cpu_text = f"{cpu_s:.0f}" if cpu_s is not None else "-"
        cores_text = f"{cpu_s / seconds:.2f}" if cpu_s is not None and seconds > 0 else "-"
        outcome = "; ".join(filter(None, (result, verdict)))
        lines.append(f"{name:<12} {seconds:>8} {budget_text:>8} {cpu_text:>8} {cores_text:>10}  {outcome}".rstrip())
    return lines, over


def _result(status: int) -> str:
    return "passed" if status == 0 else f"failed ({status})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python .ci/tier_times.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "times_file",
        type=Path,
        help="the Makefile's tier log: NAME START_S END_S EXIT_STATUS [START_TICKS END_TICKS] lines",
    )
    parser.add_argument("--budgets", default="", help='seconds per tier, e.g. "unit=240 total=1200"')
    args = parser.parse_args(argv)
    lines, over = table(read_tiers(args.times_file), parse_budgets(args.budgets))
    print(f"make test: time per tier ({os.cpu_count()} cores)")
    print("\n".join(lines))
    if over:
        print(
            f"make test: {', '.join(over)} over budget: find the test that grew (pytest's --durations above) "
            'before raising a budget (docs/DESIGN.md "Test time").'
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
