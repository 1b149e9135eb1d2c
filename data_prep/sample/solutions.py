"""The bundled solutions: references, legit-but-tricky accepted variants, wrong and hostile programs.

Files in ``problems/<problem_id>/``:

- ``reference.py``: the trusted solution (kind ``reference``, verdict ``accepted``);
- ``accepted_<pattern>.py``: correct programs written in a way weak graders reject (kind ``accepted_<pattern>``);
- ``wrong_<kind>[_<n>].py`` (``wrong_no_code[_<n>].txt``): kind ``wrong_answer`` for ``wrong_answer*`` files, else the
  part after ``wrong_`` (``time_limit``, ``memory_limit``, ``runtime_error``, ``output_limit``, ``compile_error``,
  ``no_code``);
- ``hostile_<what>.py``: programs that attack the grader (kind ``hostile_<what>``).

Every file except ``reference.py`` opens with header comments: ``# expected_verdict: <Verdict value>``,
``# note: <why>`` (continued on following ``#`` lines) and optionally ``# needs_large_tests: true`` when the verdict
only shows on the generated large tests (the program passes every committed test).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from data_prep.sample.bundle import PROBLEMS_DIR, load_problem, problem_ids
from reward_fns.types import Verdict

HEADER_FIELD = re.compile(r"^# (expected_verdict|note|needs_large_tests): ?(.*)$")
NUMBERED_SUFFIX = re.compile(r"_\d+$")


@dataclass(frozen=True)
class SampleSolution:
    """A program for a sample problem, as a model completion, with the verdict a correct grader must give."""

    problem_id: str
    kind: str
    """``reference``, ``accepted_<pattern>``, ``wrong_answer``, ``time_limit``, ..., ``hostile_<what>``."""
    code: str | None
    """The program (header comments removed); None for ``no_code``."""
    completion: str
    """Model-style text: a short ``<think>`` section, prose, then the code in a python fence (none for no_code)."""
    expected_verdict: str
    """A ``reward_fns.types.Verdict`` value."""
    name: str = ""
    """File stem, unique within the problem (``wrong_answer_2``)."""
    note: str = ""
    needs_large_tests: bool = False
    """True when the program passes every committed test and fails only on the generated large tests."""


def kind_of(stem: str) -> str:
    """Solution kind from a file stem: ``wrong_answer_2`` -> ``wrong_answer``, ``wrong_time_limit`` -> ``time_limit``."""
    base = NUMBERED_SUFFIX.sub("", stem)
    if base.startswith("wrong_") and base != "wrong_answer":
        return base.removeprefix("wrong_")
    return base


def split_header(text: str) -> tuple[dict[str, str], str]:
    """Parse the leading ``# key: value`` comment lines; return them and the remaining text."""
    fields: dict[str, str] = {}
    lines = text.splitlines(keepends=True)
    last_key = None
    consumed = 0
    for line in lines:
        match = HEADER_FIELD.match(line.rstrip("\n"))
        if match:
            last_key = match.group(1)
            fields[last_key] = match.group(2).strip()
        elif line.startswith("# ") and last_key == "note":
            fields["note"] += " " + line[2:].strip()
        else:
            break
        consumed += 1
    return fields, "".join(lines[consumed:])


def render_completion(title: str, is_functional: bool, code: str) -> str:
    """Wrap a program the way a reasoning model answers: think section, one line of prose, fenced code."""
    shape = "the `Solution` class" if is_functional else "a program that reads stdin and writes stdout"
    return (
        f'<think>\nThe task is "{title}". I check the input format and the limits, pick an approach that fits them,'
        f" and walk through the edge cases before writing the code.\n</think>\n\n"
        f"Here is {shape}.\n\n```python\n{code.rstrip()}\n```\n"
    )


def solution_from_file(path: Path, title: str, is_functional: bool) -> SampleSolution:
    problem_id, stem = path.parent.name, path.stem
    if stem == "reference":
        fields, body = (
            {"expected_verdict": Verdict.ACCEPTED.value, "note": "trusted reference solution"},
            path.read_text(),
        )
    else:
        fields, body = split_header(path.read_text())
    verdict = fields.get("expected_verdict")
    if verdict not in {member.value for member in Verdict}:
        raise ValueError(f"{path}: header '# expected_verdict: ...' is missing or not a Verdict value ({verdict!r})")
    kind = kind_of(stem)
    if path.suffix == ".txt":
        code, completion = None, body.lstrip("\n")
    else:
        code, completion = body.lstrip("\n"), render_completion(title, is_functional, body.lstrip("\n"))
    return SampleSolution(
        problem_id=problem_id,
        kind=kind,
        code=code,
        completion=completion,
        expected_verdict=verdict,
        name=stem,
        note=fields.get("note", ""),
        needs_large_tests=fields.get("needs_large_tests", "false").lower() == "true",
    )


def solution_files(problem_id: str) -> list[Path]:
    """``reference.py`` first, then the other solution files sorted by name."""
    folder = PROBLEMS_DIR / problem_id
    others = sorted(
        path
        for pattern in ("accepted_*.py", "wrong_*.py", "wrong_*.txt", "hostile_*.py")
        for path in folder.glob(pattern)
    )
    return [folder / "reference.py", *others]


def kind_selected(kind: str, kinds: set[str] | None) -> bool:
    """A kind is selected by its exact name or by its family (``hostile`` selects every ``hostile_*``)."""
    return kinds is None or kind in kinds or any(kind.startswith(family + "_") for family in kinds)


def load_solutions(kinds: Iterable[str] | None = None) -> list[SampleSolution]:
    """Every bundled solution (optionally only ``kinds``), grouped by problem id, the reference first in each."""
    selected = set(kinds) if kinds is not None else None
    solutions = []
    for problem_id in problem_ids():
        problem = load_problem(problem_id, include_large=False)
        for path in solution_files(problem_id):
            if kind_selected(kind_of(path.stem), selected):
                solutions.append(solution_from_file(path, problem.title, problem.is_functional))
    return solutions
