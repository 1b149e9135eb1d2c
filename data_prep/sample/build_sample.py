"""Regenerate every ``problem.json`` and ``tests.json`` of the bundled sample, byte-identically.

Each ``problems/<problem_id>/`` folder is authored by hand as three files:
``statement.md`` (story, input, output, constraints), ``gen.py`` (metadata constants and ``generate(rng)``, which
returns the test inputs, the statement's example first) and ``reference.py`` (the trusted solution). This script
seeds ``random.Random`` with the problem id, runs the generator, computes every expected output by running the
reference in-process (``inprocess.py``), appends the example to the statement and writes the two JSON files.

    python -m data_prep.sample.build_sample            # rewrite all problems
    python -m data_prep.sample.build_sample --check    # exit 1 if a committed file differs from a rebuild
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from tqdm import tqdm

from data_prep.sample.inprocess import call_functional, run_stdin_program

PROBLEMS_DIR = Path(__file__).resolve().parent / "problems"
SOURCE_TAG = "nous-sample"
PLATFORMS = ("atcoder", "codeforces", "leetcode")
DIFFICULTIES = ("easy", "medium", "hard")
MIN_TESTS = 5


def load_generator(problem_dir: Path) -> ModuleType:
    """Import ``problem_dir/gen.py`` under a private module name."""
    spec = importlib.util.spec_from_file_location(f"_nous_sample_gen_{problem_dir.name}", problem_dir / "gen.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{problem_dir}/gen.py is missing; every sample problem needs a generator")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seeded_rng(problem_id: str, purpose: str = "small") -> random.Random:
    """The generator's random source: a string seed, stable across Python versions and platforms."""
    return random.Random(f"{SOURCE_TAG}/{problem_id}/{purpose}")


def parameter_names(signature: str) -> list[str]:
    """Names of the arguments of ``def fn(self, a: int, b: str) -> ...:`` (``self`` dropped)."""
    function = ast.parse(signature.strip() + "\n    pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    return [argument.arg for argument in function.args.args[1:]]


def starter_code(signature: str) -> str:
    """LeetCode-style starter code: the class line, the method line and an indented empty body."""
    return f"class Solution:\n    {signature.strip()}\n        "


def fn_name_of(signature: str) -> str:
    function = ast.parse(signature.strip() + "\n    pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    return function.name


def functional_input(args: list[Any]) -> str:
    """One JSON value per line, one line per positional argument (docs/DESIGN.md "Ground truth")."""
    return "\n".join(json.dumps(argument) for argument in args)


def render_example(test: dict[str, str], signature: str | None) -> str:
    """The markdown example section built from the first generated test."""
    if signature is None:
        return (
            "## Example\n\n### Input\n\n```\n" + test["input"].rstrip("\n") + "\n```\n\n"
            "### Output\n\n```\n" + test["output"].rstrip("\n") + "\n```\n"
        )
    names = parameter_names(signature)
    assignments = ", ".join(f"{name} = {line}" for name, line in zip(names, test["input"].split("\n"), strict=True))
    return f"## Example\n\n```\nInput: {assignments}\nOutput: {test['output']}\n```\n"


def check_metadata(problem_id: str, generator: ModuleType) -> None:
    """Raise naming the bad field when ``gen.py`` metadata is outside the allowed values."""
    if generator.PLATFORM not in PLATFORMS or generator.DIFFICULTY not in DIFFICULTIES:
        raise ValueError(f"{problem_id}: PLATFORM must be one of {PLATFORMS}, DIFFICULTY one of {DIFFICULTIES}")
    is_functional = getattr(generator, "SIGNATURE", None) is not None
    if is_functional != (generator.PLATFORM == "leetcode"):
        raise ValueError(f"{problem_id}: functional problems (SIGNATURE set) are 'leetcode', stdin ones are not")


def build_tests(problem_dir: Path, generator: ModuleType) -> list[dict[str, str]]:
    """Generate the inputs and compute each expected output with the reference, in-process."""
    problem_id = problem_dir.name
    reference = (problem_dir / "reference.py").read_text()
    signature = getattr(generator, "SIGNATURE", None)
    tests = []
    for generated in generator.generate(seeded_rng(problem_id)):
        if signature is None:
            output = run_stdin_program(reference, generated, str(problem_dir / "reference.py"))
            tests.append({"input": generated, "output": output, "testtype": "stdin"})
        else:
            result = call_functional(reference, fn_name_of(signature), generated, str(problem_dir / "reference.py"))
            tests.append({"input": functional_input(generated), "output": json.dumps(result), "testtype": "functional"})
    if len(tests) < MIN_TESTS:
        raise ValueError(f"{problem_id}: generate() returned {len(tests)} tests; at least {MIN_TESTS} are required")
    return tests


def build_problem(problem_dir: Path) -> dict[str, str]:
    """The text of ``problem.json`` and ``tests.json`` for one problem folder."""
    problem_id = problem_dir.name
    generator = load_generator(problem_dir)
    check_metadata(problem_id, generator)
    signature = getattr(generator, "SIGNATURE", None)
    tests = build_tests(problem_dir, generator)
    statement = (problem_dir / "statement.md").read_text().rstrip("\n") + "\n\n" + render_example(tests[0], signature)
    fn_name = fn_name_of(signature) if signature else None
    problem = {
        "problem_id": problem_id,
        "title": generator.TITLE,
        "statement": statement,
        "source": SOURCE_TAG,
        "platform": generator.PLATFORM,
        "difficulty": generator.DIFFICULTY,
        "contest_date": f"{generator.CONTEST_DATE}T00:00:00",
        "starter_code": starter_code(signature) if signature else "",
        "fn_name": fn_name,
    }
    ground_truth = {"tests": tests, "fn_name": fn_name}
    return {"problem.json": to_json_text(problem), "tests.json": to_json_text(ground_truth)}


def to_json_text(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def problem_dirs(only: list[str] | None = None) -> list[Path]:
    dirs = sorted(path for path in PROBLEMS_DIR.iterdir() if (path / "gen.py").is_file())
    if only:
        unknown = set(only) - {path.name for path in dirs}
        if unknown:
            raise SystemExit(f"unknown problem ids {sorted(unknown)}; see {PROBLEMS_DIR}")
        dirs = [path for path in dirs if path.name in only]
    return dirs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare a rebuild with the files on disk; write nothing")
    parser.add_argument("--only", nargs="*", metavar="PROBLEM_ID", help="rebuild only these problems (default: all)")
    args = parser.parse_args(argv)
    differing = []
    for problem_dir in tqdm(problem_dirs(args.only), desc="building sample problems", unit="problem"):
        for filename, text in build_problem(problem_dir).items():
            path = problem_dir / filename
            if args.check:
                if not path.is_file() or path.read_text() != text:
                    differing.append(str(path))
            else:
                path.write_text(text)
    if differing:
        print("these files differ from a rebuild (run without --check to rewrite):", *differing, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
