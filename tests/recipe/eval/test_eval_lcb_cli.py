"""eval_lcb on CPU with --completions built from the bundled sample: pass@k values, resume after a kill, outputs."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from data_prep import build_deepcoder_mix
from data_prep.sample import load_solutions
from recipe.nouscoder.eval import eval_lcb
from recipe.nouscoder.eval.data import load_eval_problems

N = 4
INCORRECT_KINDS = ("wrong_answer", "runtime_error", "compile_error")
NO_CODE_TEXT = "I could not find an approach that fits the limits, so there is no program this time."
# Hand-computed pass@k for n = 4 samples with c correct: 1 - C(4-c, k) / C(4, k).
PASS_AT_2 = {0: 0.0, 1: 1 - 3 / 6, 2: 1 - 1 / 6, 3: 1.0, 4: 1.0}
PASS_AT_4 = {0: 0.0, 1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0}
GRADING_FLAGS = ["--time-limit-s", "4"]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def sample_eval(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The sample's test split as parquet and completions with a known number c of correct samples per problem."""
    root = tmp_path_factory.mktemp("lcb_eval")
    assert build_deepcoder_mix.main(["--from", "sample", "--out", str(root / "mix")]) == 0
    data = root / "mix" / "test.parquet"
    problem_ids = [problem.problem_id for problem in load_eval_problems(data)]
    solutions = load_solutions()
    correct_counts: dict[str, int] = {}
    lines = []
    for position, problem_id in enumerate(problem_ids):
        own = [s for s in solutions if s.problem_id == problem_id]
        reference = next(s.completion for s in own if s.kind == "reference")
        wrong = next((s.completion for s in own if s.kind in INCORRECT_KINDS), NO_CODE_TEXT)
        correct = position % (N + 1)
        correct_counts[problem_id] = correct
        for index in range(N):
            text = reference if index < correct else wrong
            lines.append(
                {
                    "problem_id": problem_id,
                    "completion": text,
                    "response_tokens": 100 + 10 * index,
                    "finish_reason": "length" if index == N - 1 and correct == 0 else "stop",
                }
            )
    completions = root / "completions.jsonl"
    completions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = root / "clean"
    assert (
        eval_lcb.main(
            [
                "--completions",
                str(completions),
                "--data",
                str(data),
                "--out",
                str(out),
                "--workers",
                "2",
                *GRADING_FLAGS,
            ]
        )
        == 0
    )
    return {"root": root, "data": data, "completions": completions, "out": out, "correct": correct_counts}


def test_pass_at_k_equals_hand_computed_values(sample_eval: dict) -> None:
    results = json.loads((sample_eval["out"] / "results.json").read_text())
    correct = sample_eval["correct"]
    assert set(correct.values()) == {0, 1, 2, 3, 4}  # c = 0 and c = n are both covered
    rows = {row["problem_id"]: row for row in results["problems"]}
    assert set(rows) == set(correct)
    for problem_id, c in correct.items():
        assert rows[problem_id]["n"] == N
        assert rows[problem_id]["correct"] == c, rows[problem_id]["verdicts"]
        assert rows[problem_id]["pass@1"] == pytest.approx(c / N)
        assert rows[problem_id]["pass@2"] == pytest.approx(PASS_AT_2[c])
        assert rows[problem_id]["pass@4"] == pytest.approx(PASS_AT_4[c])
    summary = results["summary"]
    count = len(correct)
    assert summary["pass_at_k"]["1"] == pytest.approx(sum(c / N for c in correct.values()) / count)
    assert summary["pass_at_k"]["2"] == pytest.approx(sum(PASS_AT_2[c] for c in correct.values()) / count)
    assert summary["pass_at_k"]["4"] == pytest.approx(sum(PASS_AT_4[c] for c in correct.values()) / count)
    assert summary["verdicts"]["accepted"] == sum(correct.values())
    truncated = sum(1 for c in correct.values() if c == 0)
    assert summary["overlong_ratio"] == pytest.approx(truncated / (N * count))
    easy = [pid for pid, row in rows.items() if row["difficulty"] == "easy"]
    assert summary["by_difficulty"]["easy"]["pass_at_k"]["1"] == pytest.approx(
        sum(correct[pid] / N for pid in easy) / len(easy)
    )
    assert results["settings"]["length_unit"] == "tokens"


def test_k_above_n_is_rejected_clearly(sample_eval: dict, capsys: pytest.CaptureFixture) -> None:
    code = eval_lcb.main(
        [
            "--completions",
            str(sample_eval["completions"]),
            "--data",
            str(sample_eval["data"]),
            "--out",
            str(sample_eval["out"]),
            "--k",
            "1,5",
            *GRADING_FLAGS,
        ]
    )
    assert code == 2
    assert "k=[5]" in capsys.readouterr().err


def test_n_selects_the_first_samples(sample_eval: dict) -> None:
    out = sample_eval["root"] / "first_two"
    out.mkdir()
    for name in ("graded.jsonl", "graded.settings.json"):  # the clean run's grades are reused: nothing is regraded
        shutil.copy(sample_eval["out"] / name, out / name)
    assert (
        eval_lcb.main(
            [
                "--completions",
                str(sample_eval["completions"]),
                "--data",
                str(sample_eval["data"]),
                "--out",
                str(out),
                "--n",
                "2",
                *GRADING_FLAGS,
            ]
        )
        == 0
    )
    rows = {row["problem_id"]: row for row in json.loads((out / "results.json").read_text())["problems"]}
    for problem_id, c in sample_eval["correct"].items():
        assert rows[problem_id]["n"] == 2
        assert rows[problem_id]["correct"] == min(c, 2)
    graded = [json.loads(line) for line in (out / "graded.jsonl").read_text().splitlines()]
    keys = [(row["problem_id"], row["sample_index"]) for row in graded]
    assert len(keys) == len(set(keys)) == 2 * len(sample_eval["correct"])  # the reused --out keeps no stale rows
    assert {index for _, index in keys} == {0, 1}


def test_report_csv_and_plots_are_written(sample_eval: dict) -> None:
    out = sample_eval["out"]
    report = (out / "report.md").read_text()
    # the sample's test split is the v6 window (its manifest says so): the seeds' v6 figures, not v5's
    for published in ("60.79%", "63.35%", "67.87%", "75.11%", "79.52%"):
        assert published in report
    assert "# LiveCodeBench v6, 2024-08-01 to 2025-05-01" in report and "60.60%" not in report
    assert "95% interval over problems" in report
    assert "By difficulty" in report and "By contest month" in report and '"time_limit_s": 4.0' in report
    header = (out / "per_problem.csv").read_text().splitlines()[0]
    assert header.startswith("problem_id,difficulty,platform,contest_date,n,correct,pass@1")
    for name in ("pass1_by_difficulty.png", "length_hist.png", "pass_at_k.png"):
        png = (out / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


@pytest.mark.integration  # the CLI in a subprocess, killed and rerun
def test_resume_after_kill_gives_the_same_results(sample_eval: dict) -> None:
    out = sample_eval["root"] / "killed"
    graded = out / "graded.jsonl"
    inputs = ["--completions", str(sample_eval["completions"]), "--data", str(sample_eval["data"]), *GRADING_FLAGS]
    command = [sys.executable, "-m", "recipe.nouscoder.eval.eval_lcb", *inputs, "--out", str(out), "--workers", "1"]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and process.poll() is None:
        if graded.exists() and graded.read_bytes().count(b"\n") >= 8:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
    total = N * len(sample_eval["correct"])
    assert 8 <= graded.read_bytes().count(b"\n") < total
    assert not (out / "results.json").exists()

    assert eval_lcb.main([*inputs, "--out", str(out), "--workers", "2"]) == 0
    lines = [json.loads(line) for line in graded.read_text().splitlines()]
    assert len({(line["problem_id"], line["sample_index"]) for line in lines}) == total
    resumed = json.loads((out / "results.json").read_text())
    clean = json.loads((sample_eval["out"] / "results.json").read_text())
    assert resumed["settings"] == clean["settings"]
    assert resumed["summary"] == clean["summary"]
    assert resumed["problems"] == clean["problems"]


def test_missing_problems_and_unknown_ids_are_errors(sample_eval: dict, capsys: pytest.CaptureFixture) -> None:
    partial = sample_eval["root"] / "partial.jsonl"
    lines = sample_eval["completions"].read_text().splitlines()
    partial.write_text("\n".join(lines[:N]) + "\n")
    base = ["--completions", str(partial), "--data", str(sample_eval["data"]), *GRADING_FLAGS]
    assert eval_lcb.main([*base, "--out", str(sample_eval["root"] / "partial")]) == 2
    assert "have no samples" in capsys.readouterr().err
    assert eval_lcb.main([*base, "--out", str(sample_eval["root"] / "partial"), "--allow-missing"]) == 0
    results = json.loads((sample_eval["root"] / "partial" / "results.json").read_text())
    assert results["summary"]["problems"] == 1
    assert "Only 1 of the 16 problems" in (sample_eval["root"] / "partial" / "report.md").read_text()
    stray = sample_eval["root"] / "stray.jsonl"
    stray.write_text(json.dumps({"problem_id": "not_a_problem", "completion": "x"}) + "\n")
    assert (
        eval_lcb.main(
            [
                "--completions",
                str(stray),
                "--data",
                str(sample_eval["data"]),
                "--out",
                str(sample_eval["root"] / "stray"),
            ]
        )
        == 2
    )
    assert "not in --data" in capsys.readouterr().err
