"""Write the bundled sample in the input format of the grading CLI (``python -m reward_fns.grade``).

    python -m data_prep.sample.export --out demo_out/sample
    python -m reward_fns.grade --problems demo_out/sample/problems.jsonl \
        --completions demo_out/sample/completions.jsonl --out demo_out/sample/graded.jsonl

``problems.jsonl``: ``problem_id``, ``data_source`` ("nous_sample"), ``ground_truth`` (JSON string, docs/DESIGN.md "Ground truth").
``completions.jsonl``: ``problem_id``, ``completion``, ``kind``, ``expected_verdict``, ``name``, ``needs_large_tests``
(the last four are passed through by the grader, so its output can be checked against the expectation).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from data_prep.sample.bundle import DATA_SOURCE, load_problems
from data_prep.sample.solutions import SampleSolution, load_solutions


def problem_rows(include_large: bool) -> list[dict[str, str]]:
    problems = tqdm(load_problems(include_large=include_large), desc="loading problems", unit="problem")
    return [
        {"problem_id": problem.problem_id, "data_source": DATA_SOURCE, "ground_truth": problem.ground_truth_json()}
        for problem in problems
    ]


def completion_row(solution: SampleSolution) -> dict[str, object]:
    return {
        "problem_id": solution.problem_id,
        "completion": solution.completion,
        "kind": solution.kind,
        "expected_verdict": solution.expected_verdict,
        "name": solution.name,
        "needs_large_tests": solution.needs_large_tests,
    }


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def export(out_dir: Path, include_large: bool = True, kinds: list[str] | None = None) -> tuple[int, int, int]:
    """Write both files; return (problems, completions written, completions skipped for lack of large tests)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    problems = problem_rows(include_large)
    solutions = load_solutions(kinds)
    kept = [solution for solution in solutions if include_large or not solution.needs_large_tests]
    write_jsonl(out_dir / "problems.jsonl", problems)
    write_jsonl(out_dir / "completions.jsonl", [completion_row(solution) for solution in kept])
    return len(problems), len(kept), len(solutions) - len(kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="output folder (created if missing)")
    parser.add_argument(
        "--include-large",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="add the generated multi-megabyte tests to their problems (default: yes). Without them, solutions "
        "whose verdict needs the large tests are left out of completions.jsonl",
    )
    parser.add_argument(
        "--kinds",
        nargs="+",
        metavar="KIND",
        help="only these solution kinds, e.g. reference wrong_answer hostile (a family name such as 'hostile' or "
        "'accepted' selects every kind starting with it); default: all",
    )
    args = parser.parse_args(argv)
    problems, written, skipped = export(args.out, args.include_large, args.kinds)
    print(f"wrote {problems} problems and {written} completions to {args.out}", end="")
    print(f" ({skipped} left out: their verdict needs --include-large)" if skipped else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
