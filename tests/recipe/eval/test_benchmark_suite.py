"""A completions-mode run over the seeds' benchmarks (LiveCodeBench v5, Codeforces, HumanEval+), on the bundled rows
in each source's layout: per-benchmark reports, the report across benchmarks beside the seeds' figures, the
Codeforces rating from a contest file, HumanEval+ base vs plus, compare across runs, and verl's dump as input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_prep import build_benchmarks
from data_prep.sample import eval_completions
from recipe.nouscoder.eval import eval_lcb, verl_dump

BENCHMARKS = ("lcb_v5", "codeforces", "humanevalplus")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("suite")
    assert build_benchmarks.main(["--from", "sample", "--benchmarks", ",".join(BENCHMARKS), "--out", str(root)]) == 0
    data = [str(root / f"{name}.parquet") for name in BENCHMARKS]
    completions = root / "completions.jsonl"
    assert eval_completions.main(["--data", *data, "--out", str(completions), "--n", "2"]) == 0
    out = root / "eval"
    argv = ["--completions", str(completions), "--data", *data, "--out", str(out), "--workers", "2"]
    assert eval_lcb.main([*argv, "--time-limit-s", "4"]) == 0
    return {"root": root, "out": out, "completions": completions, "data": data}


def test_each_benchmark_has_its_report_and_the_suite_sets_them_beside_the_seeds(suite: dict[str, Path]) -> None:
    out = suite["out"]
    results = json.loads((out / "results.json").read_text())["benchmarks"]
    assert list(results) == list(BENCHMARKS)
    for name in BENCHMARKS:
        single = json.loads((out / name / "results.json").read_text())
        assert single["settings"]["benchmark"] == name and (out / name / "pass_at_k.png").is_file()
        assert results[name]["samples_per_problem"] == {"min": 2, "max": 2}
    assert results["lcb_v5"]["problems"] == 12 and results["codeforces"]["problems"] == 3
    report = (out / "report.md").read_text()
    lcb_row = next(line for line in report.splitlines() if line.startswith("| lcb_v5 |"))
    assert "60.60% (64K); 57.90% (32K); 45.60% (16K)" in lcb_row and "53.00% (64K)" in lcb_row
    assert "| codeforces | 3 (+1 not graded) | 2 |" in report and "1936 (not stated)" in report
    assert "92.60% (not stated)" in report and "| base pass@1 |" in report
    assert "No Codeforces rating: no contest data" in report


def test_codeforces_bands_interactive_and_humanevalplus_suites(suite: dict[str, Path]) -> None:
    out = suite["out"]
    codeforces = json.loads((out / "codeforces" / "results.json").read_text())
    bands = codeforces["summary"]["codeforces"]["by_rating_band"]
    assert list(bands) == ["800-1199", "1200-1599", "1600-1999"]  # the bundled rows' ratings 800, 1200, 1600
    assert codeforces["settings"]["not_graded"] == [{"problem_id": "codeforces/90001D", "known_by": "tag"}]
    assert "codeforces/90001D (tag)" in (out / "codeforces" / "report.md").read_text()
    evalplus = json.loads((out / "humanevalplus" / "results.json").read_text())["summary"]["humanevalplus"]
    # Sample/0's second sample passes the base tests and fails a plus one (running max from 0 with negatives)
    assert evalplus["base_pass_at_k"]["1"] == pytest.approx(4 / 6)
    assert evalplus["plus_pass_at_k"]["1"] == pytest.approx(3 / 6)


def test_rating_from_a_contest_file(suite: dict[str, Path], tmp_path: Path) -> None:
    """Contest 90001 of the bundled rows, 300 rated participants at 1600; the reference solves A, B, C (first
    samples), 100 rows above with 4 solved, 51 tying with 3 solved and no penalty: rank 151, rating 1600 (the
    expected rank of 1600 is 1 + 300 / 2 = 151); 3 of the 4 human ratings are below it: 75.0%."""
    handles = [f"u{i}" for i in range(300)]
    solved = [4] * 100 + [3] * 51 + [1] * 149
    contests = {
        "source": "hand-made",
        "rating_distribution": {"source": "hand-made", "ratings": [1000, 1200, 1500, 1900]},
        "contests": {
            "90001": {
                "name": "sample",
                "problems": [{"index": index, "points": None, "rating": None} for index in "ABCD"],
                "standings": [[h, s, 0] for h, s in zip(handles, solved, strict=True)],
                "rating_changes": [[h, 1600] for h in handles],
            }
        },
    }
    contest_file = tmp_path / "contests.json"
    contest_file.write_text(json.dumps(contests))
    out = tmp_path / "cf"
    completions = tmp_path / "codeforces.jsonl"
    lines = suite["completions"].read_text().splitlines()
    completions.write_text("".join(line + "\n" for line in lines if '"codeforces/' in line))
    argv = ["--completions", str(completions), "--data", str(suite["root"] / "codeforces.parquet")]
    assert eval_lcb.main([*argv, "--out", str(out), "--codeforces-contests", str(contest_file), "--workers", "2"]) == 0
    rating = json.loads((out / "results.json").read_text())["summary"]["codeforces"]["rating"]
    assert (rating["rating"], rating["percentile"], rating["contests"][0]["rank"]) == (1600, 75.0, 151)
    assert "Codeforces rating **1600**, percentile **75.0%**" in (out / "report.md").read_text()


def test_compare_across_benchmarks(suite: dict[str, Path], tmp_path: Path, capsys) -> None:
    results = str(suite["out"] / "results.json")
    assert eval_lcb.main(["compare", results, results, "--out", str(tmp_path / "cmp"), "--resamples", "200"]) == 0
    compared = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert list(compared) == list(BENCHMARKS) and all(entry["difference"] == 0 for entry in compared.values())
    assert "| humanevalplus | 3 | 50.00% | 50.00% | +0.00 |" in capsys.readouterr().out


def test_verl_dump_gives_the_same_completions(suite: dict[str, Path], tmp_path: Path) -> None:
    """verl's dump keys (input, output, gts, score, step, uid = <prompt>_<sample>_<turn>): one line per sample, or one per
    turn where the last one is the sample; matched to problems by ground truth."""
    import pyarrow.parquet as pq

    truths = {}
    for path in suite["data"]:
        for row in pq.read_table(path, columns=["reward_model", "extra_info"]).to_pylist():
            truths[row["extra_info"]["problem_id"]] = row["reward_model"]["ground_truth"]
    lines = [json.loads(line) for line in suite["completions"].read_text().splitlines()]
    dump = []
    for position, line in enumerate(lines):
        base = {"input": "prompt", "gts": truths[line["problem_id"]], "score": 0.0, "step": 0}
        uid = f"u{position // 2}_{line['sample_index']}"
        if position == 0:  # a conversation: its first turn is not the sample
            dump.append({**base, "output": "first turn", "uid": f"{uid}_0"})
        dump.append({**base, "output": line["completion"], "uid": f"{uid}_{1 if position == 0 else 0}"})
    generations = tmp_path / "generations"
    generations.mkdir()
    (generations / "0.jsonl").write_text("".join(json.dumps(line) + "\n" for line in dump))
    out = tmp_path / "completions.jsonl"
    assert verl_dump.main(["--generations", str(generations), "--data", *suite["data"], "--out", str(out)]) == 0
    converted = [json.loads(line) for line in out.read_text().splitlines()]
    assert converted == [{k: line[k] for k in ("problem_id", "sample_index", "completion")} for line in lines]
    (generations / "0.jsonl").write_text(json.dumps({**dump[0], "gts": "{}"}) + "\n")
    assert verl_dump.main(["--generations", str(generations), "--data", *suite["data"], "--out", str(out)]) == 2
