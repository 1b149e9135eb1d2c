"""A family of short stdin/stdout problems made from templates: what the CPU learning run trains and validates on.

    python -m recipe.nouscoder.cpu.task_family --out RUN_DIR/learn_data [--seed 0 --train 512 --val 64]

Each problem is one of ``KINDS`` (add two integers, maximum of a list, reverse a word, ...), stated in one of the
kind's phrasings with its own variable names and worked example, and graded on its own hidden tests (the example
plus ``HIDDEN_TESTS`` drawn inputs). Rows are the project's parquet rows (docs/DESIGN.md "Parquet row", written by
``data_prep.parquet_writer``) with the ground truth in the project's layout ("Ground truth"), so the recipe's real
reward path grades them like any other problem. Train and validation problems are drawn from disjoint seeds and no
statement appears twice, so the validation split measures problems the policy never trained on.

A solution is two lines, ``<read the input>`` then ``print(<answer>)``, in a python fence. Every kind also names
its typical mistakes (``Mistakes``), one per place of the program:

- ``read``: the input read without converting it (``a, b = input().split()``: strings, not numbers);
- ``answer``: a sibling operation (the product instead of the sum, ``min`` instead of ``max``, ...);
- ``print``: a label before the answer (``print("Answer:", a + b)``, which no judge accepts);
- ``fence``: the program without its python fence (the grader then finds no code).

``response_text`` writes a response with any set of them; every combination with at least one mistake fails at
least one hidden test of every problem (checked in-process while the tests are drawn, with the reward's own output
comparison), so a response passes exactly when it makes none. The warm start (``warm_start.py``) trains the tiny
model on responses whose mistakes are drawn at set rates; reinforcement learning must then learn to avoid them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from data_prep.parquet_writer import SplitWriter, verl_row
from data_prep.problem import Problem
from data_prep.sample.inprocess import run_stdin_program
from reward_fns.compare import stdout_matches
from reward_fns.types import GraderConfig

SOURCE = "nouscoder-cpu-learn"
"""``data_source`` and ``extra_info.source`` of the rows."""
HIDDEN_TESTS = 4
"""Drawn tests per problem besides the statement's example (more are drawn when a mistake would pass them)."""
MAX_EXTRA_TESTS = 8
MANIFEST_FILE = "task_family.json"
LABEL = "Answer:"
"""The ``print`` mistake: ``print("Answer:", <answer>)``."""


@dataclass(frozen=True)
class Mistakes:
    """Which mistakes a response makes (module docstring); ``Mistakes()`` is the correct response."""

    read: bool = False
    answer: int = 0
    """0 = the right operation; k >= 1 = the kind's k-th sibling operation."""
    label: bool = False
    """The ``print`` mistake."""
    fence: bool = False

    @property
    def any(self) -> bool:
        return self.read or self.answer > 0 or self.label or self.fence


@dataclass(frozen=True)
class Kind:
    """One problem kind: statement phrasings, the correct program's parts, its mistakes and its input generator."""

    name: str
    phrasings: tuple[str, ...]
    """Statement templates; ``{a}``/``{b}`` name the numbers, ``{s}`` the word, ``{xs}`` the list."""
    read: str
    misread: str
    answer: str
    wrong_answers: tuple[str, ...]
    draw_input: Callable[[random.Random], str]

    def program(self, mistakes: Mistakes = Mistakes()) -> str:
        read = self.misread if mistakes.read else self.read
        answer = self.wrong_answers[mistakes.answer - 1] if mistakes.answer else self.answer
        printed = f'print("{LABEL}", {answer})' if mistakes.label else f"print({answer})"
        return f"{read}\n{printed}"

    def all_mistakes(self) -> Iterator[Mistakes]:
        """Every combination of mistakes with at least one (the program-level ones; ``fence`` changes no program)."""
        answers = range(len(self.wrong_answers) + 1)
        for read, answer, label in itertools.product((False, True), answers, (False, True)):
            mistakes = Mistakes(read=read, answer=answer, label=label)
            if mistakes.any:
                yield mistakes


def response_text(kind: Kind, mistakes: Mistakes = Mistakes()) -> str:
    """The model's whole answer: the program in a python fence (bare with the ``fence`` mistake)."""
    program = kind.program(mistakes)
    return program if mistakes.fence else f"```python\n{program}\n```"


def _pair(rng: random.Random) -> str:
    return f"{rng.randint(2, 99)} {rng.randint(2, 99)}"


def _numbers(rng: random.Random) -> str:
    """A count line and that many integers mixing one-, two- and three-digit values (string order != number order)."""
    values = [rng.randint(1, 9), rng.randint(10, 99), rng.randint(100, 999)]
    values += [rng.randint(1, 999) for _ in range(rng.randint(0, 3))]
    rng.shuffle(values)
    return f"{len(values)}\n{' '.join(map(str, values))}"


def _word(rng: random.Random) -> str:
    while True:
        word = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 8)))
        if word != word[::-1] and word not in ("yes", "no"):
            return word


PAIR_READ, PAIR_MISREAD = "a, b = map(int, input().split())", "a, b = input().split()"
LIST_READ = "n = int(input())\nxs = list(map(int, input().split()))"
LIST_MISREAD = "n = int(input())\nxs = input().split()"
WORD_READ, WORD_MISREAD = "s = input()", "s = input().split()"
PAIR_INPUT = "one line with two integers {a} and {b}"
LIST_INPUT = "a count n on the first line and n integers {xs} on the second"
WORD_INPUT = "one line with a lowercase word {s}"

KINDS: tuple[Kind, ...] = (
    Kind(
        "add",
        (
            "Read two integers {a} and {b} from one line and print their sum.",
            "The input is " + PAIR_INPUT + ". Output {a} + {b}.",
            "Add the two numbers {a} and {b} given on a single line and write the total.",
            "Given " + PAIR_INPUT + ", print the sum of {a} and {b}.",
        ),
        PAIR_READ,
        PAIR_MISREAD,
        "a + b",
        ("a * b", "a - b"),
        _pair,
    ),
    Kind(
        "subtract",
        (
            "Read two integers {a} and {b} from one line and print {a} minus {b}.",
            "The input is " + PAIR_INPUT + ". Output the difference {a} - {b}.",
            "Subtract {b} from {a}; both are given on a single line. Write the result.",
            "Given " + PAIR_INPUT + ", print how much larger {a} is than {b} (negative if it is smaller).",
        ),
        PAIR_READ,
        PAIR_MISREAD,
        "a - b",
        ("b - a", "a + b"),
        _pair,
    ),
    Kind(
        "multiply",
        (
            "Read two integers {a} and {b} from one line and print their product.",
            "The input is " + PAIR_INPUT + ". Output {a} times {b}.",
            "Multiply the two numbers {a} and {b} given on a single line and write the result.",
            "Given " + PAIR_INPUT + ", print the product of {a} and {b}.",
        ),
        PAIR_READ,
        PAIR_MISREAD,
        "a * b",
        ("a + b", "a - b"),
        _pair,
    ),
    Kind(
        "maximum",
        (
            "The input holds " + LIST_INPUT + ". Print the largest of them.",
            "Given a list {xs} of n integers (n on the first line, the list on the second), output its maximum.",
            "Find the biggest number among the n integers {xs} on the second line (n is on the first line).",
            "Read n, then n integers {xs}. Write the maximum value.",
        ),
        LIST_READ,
        LIST_MISREAD,
        "max(xs)",
        ("min(xs)", "xs[-1]"),
        _numbers,
    ),
    Kind(
        "minimum",
        (
            "The input holds " + LIST_INPUT + ". Print the smallest of them.",
            "Given a list {xs} of n integers (n on the first line, the list on the second), output its minimum.",
            "Find the least number among the n integers {xs} on the second line (n is on the first line).",
            "Read n, then n integers {xs}. Write the minimum value.",
        ),
        LIST_READ,
        LIST_MISREAD,
        "min(xs)",
        ("max(xs)", "xs[0]"),
        _numbers,
    ),
    Kind(
        "total",
        (
            "The input holds " + LIST_INPUT + ". Print the sum of all of them.",
            "Given a list {xs} of n integers (n on the first line, the list on the second), output its total.",
            "Add up the n integers {xs} on the second line (n is on the first line) and write the sum.",
            "Read n, then n integers {xs}. Write the sum of the whole list.",
        ),
        LIST_READ,
        LIST_MISREAD,
        "sum(xs)",
        ("max(xs)", "len(xs)"),
        _numbers,
    ),
    Kind(
        "reverse",
        (
            "The input is " + WORD_INPUT + ". Print {s} written backwards.",
            "Reverse the word {s} given on one line and output it.",
            "Given " + WORD_INPUT + ", write its letters in reverse order.",
            "Read a word {s} and print it from its last letter to its first.",
        ),
        WORD_READ,
        WORD_MISREAD,
        "s[::-1]",
        ("s", "s.upper()"),
        _word,
    ),
    Kind(
        "shout",
        (
            "The input is " + WORD_INPUT + ". Print {s} in capital letters.",
            "Convert the word {s} given on one line to upper case and output it.",
            "Given " + WORD_INPUT + ", write it with every letter capitalised.",
            "Read a word {s} and print it in uppercase.",
        ),
        WORD_READ,
        WORD_MISREAD,
        "s.upper()",
        ("s", "s[::-1]"),
        _word,
    ),
)
KIND_BY_NAME = {kind.name: kind for kind in KINDS}
NAMES = {"a": ("a", "x", "p", "m", "u"), "b": ("b", "y", "q", "k", "v"), "s": ("s", "w", "t"), "xs": ("xs", "v", "arr")}
"""Variable names a statement may use (the programs always use a, b, s, xs)."""


@dataclass(frozen=True)
class TaskProblem:
    """A drawn problem: its kind, statement and tests, as a ``data_prep`` problem for the parquet writer."""

    kind: str
    problem: Problem


def _outputs_pass(program: str, tests: Sequence[dict[str, str]], config: GraderConfig) -> bool:
    """Whether ``program`` (one of the family's own trusted programs) prints every expected output, run in-process."""
    for test in tests:
        try:
            actual = run_stdin_program(program, test["input"], filename="<task_family>")
        except Exception:  # a mistake such as ``sum`` over strings raises: that program fails the test
            return False
        if not stdout_matches(actual, test["output"], config):
            return False
    return True


def _draw_tests(kind: Kind, example: str, rng: random.Random, config: GraderConfig) -> list[dict[str, str]]:
    """The example plus ``HIDDEN_TESTS`` drawn inputs, extended until every mistaken program fails one of them."""
    inputs = [example] + [kind.draw_input(rng) for _ in range(HIDDEN_TESTS)]
    reference = kind.program()
    for _ in range(MAX_EXTRA_TESTS + 1):
        tests = [
            {"input": text + "\n", "output": run_stdin_program(reference, text + "\n"), "testtype": "stdin"}
            for text in inputs
        ]
        passing = [m for m in kind.all_mistakes() if _outputs_pass(kind.program(m), tests, config)]
        if not passing:
            return tests
        inputs.append(kind.draw_input(rng))
    raise RuntimeError(f"task family kind {kind.name}: mistakes {passing} pass {len(inputs)} drawn tests")


def _statement(kind: Kind, example: str, expected: str, rng: random.Random) -> str:
    phrasing = rng.choice(kind.phrasings)
    names = {key: rng.choice(choices) for key, choices in NAMES.items()}
    if names["a"] == names["b"]:
        names["b"] = "b" if names["a"] != "b" else "y"
    text = phrasing.format(**names)
    return f"{text}\n\nExample input:\n{example}\nExample output:\n{expected.strip()}"


def draw_problem(kind: Kind, rng: random.Random, problem_id: str, config: GraderConfig) -> TaskProblem:
    example = kind.draw_input(rng)
    tests = _draw_tests(kind, example, rng, config)
    statement = _statement(kind, example, tests[0]["output"], rng)
    problem = Problem(
        problem_id=problem_id,
        source=SOURCE,
        origin=f"recipe.nouscoder.cpu.task_family/{kind.name}",
        statement=statement,
        tests=tests,
        title=kind.name,
        difficulty="easy",
        platform="templated",
        source_name=SOURCE,
    )
    return TaskProblem(kind.name, problem)


def draw_split(split: str, count: int, seed: int, taken: set[str]) -> list[TaskProblem]:
    """``count`` problems cycling through ``KINDS``, seeded by (seed, split); statements in ``taken`` are redrawn."""
    rng = random.Random(f"{SOURCE}/{seed}/{split}")
    config = GraderConfig(compare_mode="tolerant")
    problems: list[TaskProblem] = []
    for index in range(count):
        kind = KINDS[index % len(KINDS)]
        for _ in range(100):
            drawn = draw_problem(kind, rng, f"{SOURCE}/{split}/{index:05d}-{kind.name}", config)
            if drawn.problem.statement not in taken:
                break
        else:
            raise RuntimeError(f"task family: no new {kind.name} statement in 100 draws; lower the problem count")
        taken.add(drawn.problem.statement)
        problems.append(drawn)
    return problems


@dataclass(frozen=True)
class TaskFamilySpec:
    """What ``build_task_family`` draws: the seed and the size of each split."""

    seed: int = 0
    train: int = 512
    val: int = 64


def build_task_family(out_dir: Path, spec: TaskFamilySpec = TaskFamilySpec()) -> dict:
    """Write ``train.parquet`` and ``test.parquet`` (the held-out split) and ``MANIFEST_FILE`` to ``out_dir``."""
    taken: set[str] = set()
    manifest: dict = {"spec": asdict(spec), "kinds": [kind.name for kind in KINDS], "splits": {}}
    for split, count, file_name in (("train", spec.train, "train.parquet"), ("test", spec.val, "test.parquet")):
        writer = SplitWriter(out_dir / file_name)
        for index, drawn in enumerate(draw_split(split, count, spec.seed, taken)):
            writer.add(verl_row(drawn.problem, split, index, "nouscoder"))
        manifest["splits"][split] = {"file": file_name, "rows": writer.rows_written, "sha256": writer.close()}
    (out_dir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def is_built(out_dir: Path, spec: TaskFamilySpec) -> bool:
    manifest = out_dir / MANIFEST_FILE
    return manifest.is_file() and json.loads(manifest.read_text())["spec"] == asdict(spec)


def kind_of_problem_id(problem_id: str) -> Kind:
    """The kind a problem id of this family names (``.../<index>-<kind>``)."""
    return KIND_BY_NAME[problem_id.rsplit("-", 1)[-1]]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory (train.parquet, test.parquet)")
    parser.add_argument("--seed", type=int, default=TaskFamilySpec.seed, help="draw seed (default %(default)s)")
    parser.add_argument("--train", type=int, default=TaskFamilySpec.train, help="training problems (%(default)s)")
    parser.add_argument("--val", type=int, default=TaskFamilySpec.val, help="held-out problems (%(default)s)")
    args = parser.parse_args(argv)
    print(json.dumps(build_task_family(args.out, TaskFamilySpec(args.seed, args.train, args.val))))


if __name__ == "__main__":
    main()
