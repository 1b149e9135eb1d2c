"""How many verdicts LiveCodeBench's execution environment changes, against a bare interpreter.

The grader runs every program after LiveCodeBench's prelude (``reward_fns.sandbox.harness.LCB_PRELUDE_MODULES``:
``List``, ``deque``, ``gcd``, ... resolve in every program, recursion limit 50,000). The bare environment is emulated
in the same grader (``bare``: the program executed in globals with the real builtins, CPython's default recursion
limit of 1,000), so both columns come from one sandbox. Completions graded:

* the bundled sample's solutions that run (``data_prep.sample``; not the too-slow or syntax-error ones), functional
  and stdin;
* starter-code copies: each functional problem's reference with its ``def`` line replaced by the problem's starter
  code line (``def f(self, nums: List[int]) -> int:``) and its own ``typing`` imports removed, as a model that
  copies the prompt's starter code writes it.

Prints, per group, how many completions changed verdict and each change.

    python benchmarks/lcb_environment_effect.py --workers 2
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

from data_prep.sample import load_problems, load_solutions
from reward_fns.sandbox import GraderPool
from reward_fns.types import GraderConfig, Problem


def bare(code: str) -> str:
    """``code`` run as a bare interpreter runs it: in fresh globals whose builtins are the real ones (the grader puts
    the prelude's names in the program's builtins), after CPython's default recursion limit is restored; what it
    defines is copied back into the module, where the harness looks for ``Solution`` or the function."""
    return (
        "import builtins as _builtins, sys as _sys\n"
        "_sys.setrecursionlimit(1000)\n"
        "_namespace = {'__name__': __name__, '__builtins__': _builtins}\n"
        f"exec(compile({code!r}, 'solution.py', 'exec'), _namespace)\n"
        "globals().update({name: value for name, value in _namespace.items() if not name.startswith('__')})\n"
    )


_TYPING_IMPORT = re.compile(r"^from typing import .*\n", re.MULTILINE)


def starter_code_copy(reference: str, starter_code: str, fn_name: str) -> str | None:
    """``reference`` with the ``def fn_name`` line replaced by the starter code's and no ``typing`` import."""
    starter_line = next((line for line in starter_code.splitlines() if f"def {fn_name}(" in line), None)
    lines = _TYPING_IMPORT.sub("", reference).splitlines()
    for index, line in enumerate(lines):
        if f"def {fn_name}(" in line and starter_line is not None:
            indent = line[: len(line) - len(line.lstrip())]
            lines[index] = indent + starter_line.strip()
            return "\n".join(lines) + "\n"
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="fork servers (default 2)")
    parser.add_argument("--time-limit-s", type=float, default=4.0, help="per-test wall limit (default 4)")
    args = parser.parse_args(argv)
    problems = {sample.problem_id: sample for sample in load_problems()}
    parsed = {problem_id: Problem.from_ground_truth(sample.ground_truth) for problem_id, sample in problems.items()}
    groups: dict[str, list[tuple[str, str, Problem]]] = {"sample, functional": [], "sample, stdin": []}
    for solution in load_solutions():
        if solution.code is not None and solution.kind not in ("time_limit", "compile_error"):
            problem = parsed[solution.problem_id]
            group = "sample, functional" if problem.is_functional else "sample, stdin"
            groups[group].append((f"{solution.problem_id}/{solution.name}", solution.code, problem))
    copies = groups["starter-code copies of the functional references"] = []
    for solution in load_solutions(kinds=["reference"]):
        sample, problem = problems[solution.problem_id], parsed[solution.problem_id]
        if problem.fn_name and solution.code:
            copy = starter_code_copy(solution.code, sample.starter_code, problem.fn_name)
            if copy is not None:
                copies.append((solution.problem_id, copy, problem))
    with GraderPool(workers=args.workers, config=GraderConfig(time_limit_s=args.time_limit_s)) as pool:
        for group, entries in groups.items():
            judge = pool.grade_many((code, problem) for _, code, problem in entries)
            bare_results = pool.grade_many((bare(code), problem) for _, code, problem in entries)
            changes = [
                (name, str(before.verdict), str(after.verdict))
                for (name, _, _), before, after in zip(entries, bare_results, judge, strict=True)
                if before.verdict != after.verdict
            ]
            summary = Counter(f"{before} -> {after}" for _, before, after in changes)
            print(f"{group}: {len(changes)} of {len(entries)} change verdict {dict(summary)}")
            for name, before, after in changes:
                print(f"  {name}: {before} (bare interpreter) -> {after} (LiveCodeBench's environment)")


if __name__ == "__main__":
    main()
