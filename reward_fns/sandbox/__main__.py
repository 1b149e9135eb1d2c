"""``python -m reward_fns.sandbox``: which isolation mechanisms this host gives the grader, as this user.

Run it on a cluster node before training: every ``[missing]`` line says what a hostile program could then do.
Exit status 0 when every required mechanism is available, 1 otherwise (so ``isolation="strict"`` would refuse).
"""

from __future__ import annotations

import argparse

from reward_fns.sandbox.report import probe_isolation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reward_fns.sandbox", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    args = parser.parse_args(argv)
    report = probe_isolation()
    print(report.to_json() if args.json else report.summary())
    return 0 if report.complete else 1


if __name__ == "__main__":
    raise SystemExit(main())
