"""The reward-only distribution, installed offline into a verl environment that it must leave as it was.

    python .ci/reward_only_check.py --wheelhouse DIR --work DIR [--verl 0.8.0]

Run by `make reward-only-check` (part of `make test`) after `make wheelhouse` has put `packages/nouscoder-reward` and
its requirements into DIR (reward_fns/README.md "Install", README "Offline compute nodes"). In a new venv under
``--work``:

1. verl ``--verl`` (another release than the recipe's 0.9.1) is installed from the index with ``--no-deps``: the
   existing verl environment of a user, without its torch download;
2. ``nouscoder-reward`` is installed from the wheelhouse alone (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``: the offline
   route). It must add exactly itself and its declared requirements, and leave verl's version and files (its
   ``RECORD``) as they were;
3. ``python -m reward_fns.grade --check-expected`` grades a problems file in that venv alone (no torch, no ray);
4. verl's own loader (``verl.trainer.ppo.reward.get_custom_reward_fn`` with
   ``reward.custom_reward_function.path=pkg://reward_fns.verl_reward``) grades the same completions, with that
   release's verl imported from the venv; what verl itself imports (torch, ray, omegaconf, ...) is lent from the
   interpreter running this script through ``PYTHONPATH`` (links to its site-packages without verl, this
   repository's package, tqdm and the installers), as an existing environment would have it;
5. in a second venv, ``pip install --editable packages/nouscoder-reward`` from the wheelhouse alone: a build from
   source offline, whose build requirements (setuptools, wheel) come from the wheelhouse, as ``make
   setup-gpu-offline`` builds this repository's package; there a program importing a package of the environment
   (tqdm) is accepted (reward_fns/README.md "Install": a wheel install hides site-packages from programs).

Each step runs from the work directory, so nothing is imported from the checkout; both graders must load
``reward_fns`` from the venv. Exit status 0 when every verdict is the expected one, else 1 with the reason.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import venv
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTION = REPO / "packages" / "nouscoder-reward"
LENT_EXCEPT = {"verl", "nouscoder-verl", "nouscoder-reward", "tqdm", "pip", "setuptools", "wheel"}
"""Distributions of this interpreter's site-packages not lent to step 4: the venv's own, and the installers."""

ADD_PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n"
ADD = f"```python\n{ADD_PROGRAM}```"
PROBLEMS = [
    {"problem_id": "add", "ground_truth": {"tests": [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]}},
    {"problem_id": "add_taco", "ground_truth": json.dumps({"inputs": ["4 5\n", "10 -3\n"], "outputs": ["9\n", "7\n"]})},
    {
        "problem_id": "twice",
        "ground_truth": {"tests": [{"input": "21", "output": "42", "testtype": "functional"}], "fn_name": "twice"},
    },
]
"""Our layout (stdin and functional) and verl ``prime_code``'s TACO layout (reward_fns/layouts.py)."""
COMPLETIONS = [
    {"problem_id": "add", "completion": ADD, "expected_verdict": "accepted"},
    {"problem_id": "add", "completion": "```python\nprint(3)\nprint(4)\n```", "expected_verdict": "wrong_answer"},
    {"problem_id": "add_taco", "completion": f"<think>easy</think>\n{ADD}", "expected_verdict": "accepted"},
    {"problem_id": "add_taco", "completion": "no program here", "expected_verdict": "no_code"},
    {
        "problem_id": "twice",
        "completion": "```python\nclass Solution:\n    def twice(self, x):\n        return 2 * x\n```",
        "expected_verdict": "accepted",
    },
    {
        "problem_id": "twice",
        "completion": "```python\ndef twice(x):\n    return x\n```",
        "expected_verdict": "wrong_answer",
    },
]


ENVIRONMENT_IMPORT = {
    "problem_id": "add",
    "completion": f"```python\nimport tqdm\n{ADD_PROGRAM}```",
    "expected_verdict": "accepted",
}
"""A program that imports a package of the grader's environment (step 5)."""


class CheckFailed(Exception):
    """What the check found wrong."""


def run(command: list[str], cwd: Path, **environment: str) -> str:
    """Run ``command`` and return its stdout; its output and exit status become the error if it fails."""
    done = subprocess.run(command, cwd=cwd, env=os.environ | environment, capture_output=True, text=True)
    if done.returncode != 0:
        raise CheckFailed(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout


def installed(python: Path) -> dict[str, str]:
    """Distribution name -> version, of the venv of ``python`` alone (``-I``: no PYTHONPATH, no user site)."""
    code = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    versions = json.loads(run([str(python), "-I", "-c", code], cwd=python.parent))
    return {canonicalize_name(name): version for name, version in versions.items()}


def verl_record(site_packages: Path) -> str:
    """verl's RECORD: every file of the distribution with its hash."""
    return next(site_packages.glob("verl-*.dist-info")).joinpath("RECORD").read_text(encoding="utf-8")


def base_install() -> set[str]:
    """The distribution and its base requirements (canonical names), from its pyproject.toml."""
    project = tomllib.loads((DISTRIBUTION / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {
        canonicalize_name(text) for text in [project["name"], *(Requirement(r).name for r in project["dependencies"])]
    }


def lend_site_packages(into: Path) -> int:
    """Links in ``into`` to this interpreter's site-packages entries, but those of ``LENT_EXCEPT``."""
    site_packages = Path(sysconfig.get_paths()["purelib"]).resolve()
    kept_out = {"__pycache__"}
    for distribution in importlib.metadata.distributions(path=[str(site_packages)]):
        if canonicalize_name(distribution.metadata["Name"]) in LENT_EXCEPT:
            kept_out |= {file.parts[0] for file in distribution.files or []}
    into.mkdir()
    lent = 0
    for entry in site_packages.iterdir():
        if entry.name in kept_out or entry.suffix == ".pth" or entry.name.startswith("__editable__"):
            continue
        (into / entry.name).symlink_to(entry)
        lent += 1
    return lent


def new_venv(path: Path) -> tuple[Path, Path]:
    """A venv without pip at ``path`` (this interpreter's pip installs into it): its python and site-packages."""
    shutil.rmtree(path, ignore_errors=True)
    venv.create(path, with_pip=False)
    python = path / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return python, Path(run([str(python), "-I", "-c", purelib], cwd=path).strip())


def pip_install(python: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]


def grade_cli(python: Path, work: Path, name: str, completions: list[dict]) -> Path:
    """Step 3 (and 5): ``python -m reward_fns.grade --check-expected`` in the venv of ``python`` alone (``-I``)."""
    problems, completions_file = work / "problems.jsonl", work / f"{name}.jsonl"
    problems.write_text("".join(json.dumps(line) + "\n" for line in PROBLEMS), encoding="utf-8")
    completions_file.write_text("".join(json.dumps(line) + "\n" for line in completions), encoding="utf-8")
    files = ["--problems", str(problems), "--completions", str(completions_file), "--out", str(work / f"{name}.out")]
    cli = "-I -m reward_fns.grade --workers 1 --time-limit-s 10 --check-expected".split()
    run([str(python), *cli, *files], cwd=work)
    return completions_file


def check(wheelhouse: Path, work: Path, verl_version: str) -> None:
    """Steps 1-5 of the module docstring; raises CheckFailed naming what went wrong."""
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse.resolve())}
    python, site_packages = new_venv(work / "venv")
    install_beside_verl(python, site_packages, offline, work, verl_version)

    completions = grade_cli(python, work, "completions", COMPLETIONS)
    print(f"python -m reward_fns.grade: {len(COMPLETIONS)} completions, every verdict as expected")

    lent = work / "lent"
    shutil.rmtree(lent, ignore_errors=True)
    count = lend_site_packages(lent)
    itself = [str(python), str(Path(__file__).resolve()), "grade-with-verl", str(work / "problems.jsonl")]
    loaded = json.loads(run([*itself, str(completions)], cwd=work, PYTHONPATH=str(lent)))
    for path in (loaded["verl"], loaded["reward_fns"]):
        if not Path(path).is_relative_to(site_packages):
            raise CheckFailed(f"step 4 imported {path}, not the venv's")
    if loaded["verl_version"] != verl_version:
        raise CheckFailed(f"verl's loader ran verl {loaded['verl_version']}, not {verl_version}")
    wrong = [
        row
        for row in loaded["rows"]
        if (row["verdict"], row["score"]) != (row["expected_verdict"], 1.0 if row["verdict"] == "accepted" else -1.0)
    ]
    if wrong:
        raise CheckFailed(f"verl's loader graded otherwise than expected: {wrong}")
    print(
        f"verl {verl_version}'s get_custom_reward_fn(pkg://reward_fns.verl_reward): {len(loaded['rows'])} "
        f"completions, every verdict and score as expected ({count} entries lent: torch, ray, omegaconf, ...)"
    )

    editable, _ = new_venv(work / "venv-editable")
    run([*pip_install(editable), "--editable", str(DISTRIBUTION)], cwd=work, **offline)
    grade_cli(editable, work, "environment_import", [ENVIRONMENT_IMPORT])
    print("editable install built from source offline; a program importing tqdm from the environment is accepted")


def install_beside_verl(
    python: Path, site_packages: Path, offline: dict[str, str], work: Path, verl_version: str
) -> None:
    """Steps 1 and 2: verl from the index without its requirements, then the reward from the wheelhouse alone."""
    run([*pip_install(python), "--no-deps", f"verl=={verl_version}"], cwd=work)
    before, record = installed(python), verl_record(site_packages)
    run([*pip_install(python), "nouscoder-reward"], cwd=work, **offline)
    after = installed(python)
    added = {name: version for name, version in after.items() if name not in before}
    listed = ", ".join(f"{name} {version}" for name, version in sorted(added.items()))
    print(f"reward-only install from the wheelhouse: {len(added)} distributions added ({listed})")
    if set(added) != base_install():
        raise CheckFailed(f"the install added {sorted(added)}, not {sorted(base_install())}")
    if after.get("verl") != verl_version or verl_record(site_packages) != record:
        raise CheckFailed(f"verl changed: {verl_version} before, {after.get('verl')} after (or its files differ)")
    print(f"verl {verl_version} untouched (version and RECORD)")


def grade_with_verl(problems: Path, completions: Path) -> None:
    """Step 4, in the check's venv: verl's loader as verl's reward loop calls it; prints what it loaded and graded."""
    import verl
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    import reward_fns

    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": "pkg://reward_fns.verl_reward",
                    "name": "compute_score",
                    "reward_kwargs": {"time_limit_s": 10},
                }
            }
        }
    )
    compute_score = get_custom_reward_fn(config)
    truths = {row["problem_id"]: row["ground_truth"] for row in map(json.loads, problems.read_text().splitlines())}
    rows = []
    for line in completions.read_text().splitlines():
        completion = json.loads(line)
        result = compute_score(
            data_source="reward_only_check",
            solution_str=completion["completion"],
            ground_truth=truths[completion["problem_id"]],
            extra_info={"problem_id": completion["problem_id"]},
        )
        rows.append(
            {
                "problem_id": completion["problem_id"],
                "verdict": result["verdict"],
                "score": result["score"],
                "expected_verdict": completion["expected_verdict"],
            }
        )
    print(
        json.dumps(
            {"verl": verl.__file__, "verl_version": verl.__version__, "reward_fns": reward_fns.__file__, "rows": rows}
        )
    )


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["grade-with-verl"]:
        grade_with_verl(Path(arguments[1]), Path(arguments[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheelhouse", type=Path, required=True, help="directory `make wheelhouse` filled")
    parser.add_argument("--work", type=Path, required=True, help="directory for the venv and the graded files")
    parser.add_argument("--verl", default="0.8.0", help="the verl release of the existing environment")
    options = parser.parse_args(arguments)
    options.work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        check(options.wheelhouse, options.work.resolve(), options.verl)
    except CheckFailed as exc:
        print(f"reward-only check FAILED: {exc}", file=sys.stderr)
        return 1
    print(f"reward-only check passed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
