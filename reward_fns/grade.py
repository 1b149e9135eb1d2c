"""Grading CLI: grade a JSONL file of model completions against a JSONL file of problems (docs/DESIGN.md "Grading CLI").

    python -m reward_fns.grade --problems P.jsonl --completions C.jsonl --out O.jsonl [--workers N] [--summary]

Input lines:
- problems: ``problem_id``, ``ground_truth`` (JSON string or object in the layout of docs/DESIGN.md "Ground truth"), ``data_source``
  (optional, not used for grading);
- completions: ``problem_id``, ``completion`` (model text; the last fenced python block is the program), any other
  keys (passed through to the output; ``expected_verdict`` is used by ``--summary`` and ``--check-expected``).

Output: one line per non-blank completion line, in input order: the passed-through keys, then ``problem_id``,
``score``, ``verdict``, ``passed``, ``total``, ``time_s`` (all tests), ``max_test_time_s`` (slowest test), ``detail``
(first failing test, stderr tail, or what was wrong), ``ground_truth_error`` (the problem's ground truth could not be
read: the data's fault); ours win over passed-through keys of the same name. Whatever a line holds (not UTF-8, not
JSON, nested too deeply, a missing or ill-typed key, an unknown ``problem_id``, a malformed ground truth) it is
reported on stderr as ``FILE:LINE: what is wrong`` and its completion still gets an output line, with verdict
``internal_error``, so the output stays aligned with the input. Blank lines are skipped.

Exit status: 0 when every completion got a verdict; 1 when every completion is ``internal_error`` (nothing was
graded: bad ground truth, unknown problem ids), or with ``--check-expected`` when a verdict differs from the line's
``expected_verdict``; 2 for bad arguments, unreadable files, a bad or misspelt ``REWARD_FNS_*`` variable, a problems
file in which no ground truth parses (then nothing is graded), or ``--isolation strict`` on a host that lacks a
mechanism. ``--out`` appears only when grading finished (it is written beside as ``<out>.partial`` first).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tqdm import tqdm

from reward_fns.batch_grading import OUTPUT_KEYS, Completion, grade_in_order, output_record
from reward_fns.cli import DefaultsHelpFormatter, add_grader_arguments, grader_overrides
from reward_fns.extract import extract_code
from reward_fns.grade_summary import SummaryRow, format_summary
from reward_fns.sandbox import GraderPool, IsolationUnavailableError
from reward_fns.score import grader_config
from reward_fns.types import GraderConfig, GradeResult, GroundTruthError, Problem, Verdict


@dataclass(slots=True)
class ProblemTable:
    """Parsed problems by id; problems whose ground truth is bad map to the reason instead."""

    problems: dict[str, Problem] = field(default_factory=dict)
    broken: dict[str, GroundTruthError] = field(default_factory=dict)


def report(path: Path, line_number: int, message: str) -> None:
    """Print ``FILE:LINE: message`` on stderr (the format editors and CI logs link to)."""
    print(f"{path}:{line_number}: {message}", file=sys.stderr)


def read_jsonl(path: Path, consequence: str) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """``(line number, object)`` per non-blank line; a line that is not a JSON object (not UTF-8, not JSON, nested
    too deeply, an integer past Python's conversion limit) is reported and gives None.

    ``consequence`` (what happens to such a line) ends the report.
    """
    with path.open("rb") as lines:
        for line_number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                report(path, line_number, f"not UTF-8 text ({exc.reason} at byte {exc.start}); {consequence}")
                yield line_number, None
                continue
            except json.JSONDecodeError as exc:
                report(path, line_number, f"not valid JSON ({exc.msg} at column {exc.colno}); {consequence}")
                yield line_number, None
                continue
            except (ValueError, RecursionError) as exc:
                report(path, line_number, f"not readable JSON ({type(exc).__name__}: {exc}); {consequence}")
                yield line_number, None
                continue
            if not isinstance(record, dict):
                report(path, line_number, f"expected a JSON object, got {type(record).__name__}; {consequence}")
                yield line_number, None
                continue
            yield line_number, record


def load_problems(path: Path) -> ProblemTable:
    """Parse every problem line; bad lines are reported and their completions become ``internal_error``."""
    table = ProblemTable()
    for line_number, record in read_jsonl(path, "line skipped"):
        if record is None:
            continue
        problem_id = record.get("problem_id")
        if not isinstance(problem_id, str | int) or "ground_truth" not in record:
            report(path, line_number, 'a problem needs "problem_id" (string) and "ground_truth"; line skipped')
            continue
        problem_id = str(problem_id)
        if problem_id in table.problems or problem_id in table.broken:
            report(path, line_number, f"duplicate problem_id {problem_id!r}; the first one is used")
            continue
        try:
            table.problems[problem_id] = Problem.from_ground_truth(record["ground_truth"])
        except GroundTruthError as exc:
            report(path, line_number, f"problem {problem_id!r}: {exc}; its completions are internal_error")
            table.broken[problem_id] = exc
    return table


def read_completions(path: Path, table: ProblemTable) -> Iterator[Completion]:
    """Each completion line with its problem and program, or with a decided result when it cannot be run."""
    for line_number, record in read_jsonl(path, "graded as internal_error"):
        if record is None:
            yield Completion(line_number, {}, decided=_internal_error(f"line {line_number} is not a JSON object"))
            continue
        yield _prepare_completion(path, line_number, record, table)


def _prepare_completion(path: Path, line_number: int, record: dict[str, Any], table: ProblemTable) -> Completion:
    problem_id = record.get("problem_id")
    completion = record.get("completion")
    if not isinstance(problem_id, str | int) or not isinstance(completion, str):
        message = 'a completion needs "problem_id" (string or integer) and "completion" (string)'
        report(path, line_number, f"{message}; graded as internal_error")
        return Completion(line_number, record, decided=_internal_error(message))
    problem_id = str(problem_id)
    if problem_id in table.broken:
        return Completion(line_number, record, decided=GradeResult.bad_ground_truth(table.broken[problem_id]))
    problem = table.problems.get(problem_id)
    if problem is None:
        message = f"unknown problem_id {problem_id!r} (not in the problems file)"
        report(path, line_number, f"{message}; graded as internal_error")
        return Completion(line_number, record, decided=_internal_error(message))
    code = extract_code(completion)
    del record["completion"]  # the model text is not passed through; only the program is kept, until graded
    if code is None:
        no_code = GradeResult.no_code(problem)
        return Completion(line_number, record, decided=no_code)
    return Completion(line_number, record, code=code, problem=problem)


def _internal_error(detail: str) -> GradeResult:
    return GradeResult(Verdict.INTERNAL_ERROR, detail=detail)


def count_lines(path: Path) -> int:
    """Non-blank lines of ``path`` (the progress bar's total), read in binary without parsing."""
    with path.open("rb") as lines:
        return sum(1 for line in lines if line.strip())


class NothingToGrade(ValueError):
    """No problem of the problems file has a usable ground truth: grading would only write internal errors."""


def usable_problems(path: Path) -> ProblemTable:
    """The problems file parsed; raises :class:`NothingToGrade` (naming the file, a reason and the fix) when none of
    its ground truths parses."""
    table = load_problems(path)
    if table.problems:
        return table
    if not table.broken:
        raise NothingToGrade(f"--problems {path} holds no problem line with problem_id and ground_truth")
    problem_id, reason = next(iter(table.broken.items()))
    raise NothingToGrade(
        f"--problems {path}: none of its {len(table.broken)} problems has a usable ground truth (e.g. problem "
        f'{problem_id!r}: {reason}); write it in the layout of docs/DESIGN.md "Ground truth" or one listed in '
        'reward_fns/README.md "Ground-truth layouts" (python -m data_prep.build_deepcoder_mix writes it)'
    )


def run(args: argparse.Namespace, config: GraderConfig, out: TextIO, table: ProblemTable) -> list[SummaryRow]:
    """Grade every completion into ``out``; returns one summary row per completion."""
    rows: list[SummaryRow] = []
    total = count_lines(args.completions)
    with GraderPool(args.workers, config) as pool:
        graded = grade_in_order(read_completions(args.completions, table), pool)
        for completion, result in tqdm(graded, total=total, desc="grading", unit="completion", file=sys.stderr):
            record = output_record(completion, result)
            out.write(_output_line(record, completion.line_number))
            rows.append(SummaryRow.from_record(record))
    return rows


def _output_line(record: dict[str, Any], line_number: int) -> str:
    """The output line of a record; when a passed-through value cannot be written back (nested past the recursion
    limit at this depth), the line without the passed-through keys, saying so in ``detail``."""
    try:
        return json.dumps(record) + "\n"
    except (ValueError, RecursionError, TypeError) as exc:
        ours = {key: record[key] for key in OUTPUT_KEYS}
        ours["detail"] += f" (line {line_number}'s other keys could not be written back: {type(exc).__name__})"
        return json.dumps(ours) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m reward_fns.grade",
        description="Grade model completions against problems' hidden tests in the sandbox; one output line per "
        "completion, in input order. Settings not given as flags come from REWARD_FNS_<FIELD> environment "
        "variables (fields of reward_fns.types.GraderConfig), else the NousCoder defaults.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--problems", type=Path, required=True, help="JSONL: problem_id, ground_truth, data_source")
    parser.add_argument(
        "--completions", type=Path, required=True, help="JSONL: problem_id, completion, other keys passed through"
    )
    parser.add_argument("--out", type=Path, required=True, help="JSONL written here, one line per completion")
    parser.add_argument("--workers", type=int, default=None, help="parallel sandbox workers (default: all cores)")
    add_grader_arguments(parser)
    parser.add_argument(
        "--summary", action="store_true", help="print a table of verdicts and timings per completion and per verdict"
    )
    parser.add_argument(
        "--check-expected",
        action="store_true",
        help="exit 1 when a verdict differs from the completion line's expected_verdict",
    )
    args = parser.parse_args(argv)
    for name in ("problems", "completions"):
        if not getattr(args, name).is_file():
            parser.error(f"--{name} {getattr(args, name)} is not a readable file")
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = grader_config(grader_overrides(args))
        table = usable_problems(args.problems)
    except ValueError as exc:
        print(f"python -m reward_fns.grade: error: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as out:
            rows = run(args, config, out, table)
    except IsolationUnavailableError as exc:
        partial.unlink(missing_ok=True)
        print(f"error: {exc}\n(--isolation strict refuses to run without every mechanism; use auto)", file=sys.stderr)
        return 2
    except BaseException:
        partial.unlink(missing_ok=True)  # nothing half-written: --out appears complete or not at all
        raise
    os.replace(partial, args.out)
    if args.summary:
        print(format_summary(rows))
    mismatches = [row for row in rows if row.mismatch]
    print(f"graded {len(rows)} completions into {args.out}", file=sys.stderr)
    if rows and all(row.verdict == Verdict.INTERNAL_ERROR.value for row in rows):
        print(
            f"python -m reward_fns.grade: error: all {len(rows)} completions are internal_error, none was graded "
            f"(see the detail column of {args.out}): check that their problem_ids are in {args.problems} and that "
            "its ground truths parse (the FILE:LINE messages above)",
            file=sys.stderr,
        )
        return 1
    if args.check_expected and mismatches:
        print(f"{len(mismatches)} verdict(s) differ from expected_verdict", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
