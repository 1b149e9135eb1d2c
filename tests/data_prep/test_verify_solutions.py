"""``python -m data_prep.verify_solutions`` on raw rows: correct conversions pass, a mis-converted problem is flagged
(and the other wrapping convention named as the fix), and the build drops what failed. Two rows of TACO-verified's
codewars factorial kata (a 56,130-digit expected output) are graded, with a right and a wrong gold solution
(the wrong one also goes through the other-wrapping check, which reads the expected outputs again)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from data_prep_raw_sources import (
    DEEPCODER,
    FACTORIAL_GOLD,
    LCB,
    TACO_VERIFIED,
    deepcoder_row,
    factorial_kata_row,
    lcb_line,
    reference_code,
    sample_by_id,
    taco_verified_row,
    with_statement,
    with_tests,
    write_deepcoder,
    write_lcb,
)

from data_prep.build import build_mix
from data_prep.build_settings import BuildConfig
from data_prep.filters import QualityConfig
from data_prep.verify_solutions import main as verify_main

pytestmark = pytest.mark.integration  # the CLI end to end on fork servers, and on a Ray cluster

WRONG = "class Solution:\n    def compressRuns(self, message):\n        return message\n"


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict], dict]:
    """Rows: three right conversions, one second-solution pass, one without gold, one mis-converted problem."""
    root = tmp_path_factory.mktemp("verify") / "hf"
    sample = sample_by_id()
    merge, compress, coin = sample["merge_bookings"], sample["compress_runs"], sample["coin_purse"]
    second = deepcoder_row(with_statement(compress, "second", "Second try. " + compress.statement[::-1]), "taco")
    second["solutions"] = [WRONG, reference_code()["compress_runs"]]
    no_gold = deepcoder_row(with_statement(coin, "no-gold", "No gold here. " + coin.statement[::-1]), "taco")
    no_gold["solutions"] = []
    taco = [
        deepcoder_row(merge, "taco", platform="leetcode"),
        deepcoder_row(compress, "taco"),
        deepcoder_row(coin, "taco"),
        second,
        no_gold,
    ]
    write_deepcoder(root / DEEPCODER, {"taco": taco})
    # a list-returning problem whose every result is a one-element list, from a platform of unknown convention:
    # the per-problem rule unwraps it, wrongly; only grading the gold solution can tell
    single_only = with_tests(
        with_statement(merge, "merge-single", "Merge only these bookings. " + merge.statement[::-1]),
        [test for test in merge.ground_truth["tests"] if len(json.loads(test["output"])) == 1],
    )
    misconverted = taco_verified_row(single_only, platform="geeksforgeeks")
    misconverted["solutions"] = [reference_code()["merge_bookings"]]
    (root / TACO_VERIFIED).mkdir(parents=True)
    wrong_gold = FACTORIAL_GOLD.replace("math.factorial(n)", "math.factorial(n) + 1")
    factorial_wrong = factorial_kata_row("The kata again, with a wrong gold solution.", [wrong_gold])
    rows = [misconverted, factorial_kata_row(), factorial_wrong]
    (root / TACO_VERIFIED / "taco_verified.json").write_text(json.dumps(rows))
    write_lcb(root / LCB, {"test6.jsonl": [lcb_line(sample["task_order"])]})
    out = root.parent / "verify.jsonl"
    args = [
        "--from",
        "local",
        "--local-dir",
        str(root),
        "--train-sources",
        "deepcoder_taco,taco_verified",
        "--out",
        str(out),
        "--grader",
        "local",
        "--workers",
        "2",
    ]
    assert verify_main(args) == 0
    records = {record["problem_id"]: record for record in map(json.loads, out.read_text().splitlines())}
    summary = json.loads(out.with_name("verify.jsonl.summary.json").read_text())
    return root, records, summary


def test_correct_conversions_pass_and_the_misconverted_problem_is_flagged(verified) -> None:
    _, records, summary = verified
    taco = "deepcoder_taco/train-00000-of-00001.parquet"
    outcome = {problem_id: (r["accepted"], r["verdict"], r["verdicts"]) for problem_id, r in records.items()}
    assert outcome == {
        f"{taco}:0": (True, "accepted", ["accepted"]),
        f"{taco}:1": (True, "accepted", ["accepted"]),
        f"{taco}:2": (True, "accepted", ["accepted"]),
        f"{taco}:3": (True, "accepted", ["wrong_answer", "accepted"]),
        f"{taco}:4": (None, "no_gold", []),
        "taco_verified/taco_verified.json:0": (False, "wrong_answer", ["wrong_answer"]),
        "taco_verified/taco_verified.json:1": (True, "accepted", ["accepted"]),
        "taco_verified/taco_verified.json:2": (False, "wrong_answer", ["wrong_answer"]),
    }
    flagged = records["taco_verified/taco_verified.json:0"]
    assert flagged["other_wrapping_passes"] is True and flagged["functional"] is True
    assert records[f"{taco}:3"]["other_wrapping_passes"] is None
    assert records["taco_verified/taco_verified.json:2"]["other_wrapping_passes"] is False
    assert summary["by_source"] == {
        "deepcoder_taco": {"accepted": 4, "no_gold": 1},
        "taco_verified": {"accepted": 1, "failed_wrong_answer": 2, "other_wrapping_passes": 1},
    }
    assert summary["malformed_rows"]["total"] == 0
    assert summary["problems_graded"] == 7 and summary["solutions_graded"] == 8 and summary["problems_per_s"] > 0


def test_the_build_drops_problems_whose_gold_solutions_fail(verified, tmp_path: Path) -> None:
    root, _, _ = verified
    config = BuildConfig(
        out_dir=tmp_path / "out",
        mode="local",
        local_dir=root,
        train_sources=("deepcoder_taco", "taco_verified"),
        quality=QualityConfig(min_tests=3),
        verified=root.parent / "verify.jsonl",
    )
    manifest = build_mix(config, log=lambda line: None)
    assert manifest["filters"]["train"]["gold_failed_wrong_answer"] == {"taco": 2}
    assert manifest["gold_verification"]["by_source"] == {
        "deepcoder_taco": {"no_gold": 1, "verified": 4},
        "taco_verified": {"failed_wrong_answer": 2, "verified": 1},
    }
    assert manifest["per_source"]["taco_verified"]["dropped"] == {"gold_failed_wrong_answer": 2}
    assert manifest["counts"]["train"]["by_source"] == {"taco": 6}


def test_the_ray_grading_pool_gives_the_same_verdicts(verified, tmp_path: Path) -> None:
    """``--grader ray`` on a Ray cluster (started here, 2 CPUs): the pool's sandbox workers grade the same rows."""
    import ray

    from reward_fns.ray_pool import shutdown_pools

    root, local_records, _ = verified
    out = tmp_path / "ray.jsonl"
    environ = dict(os.environ)  # ray.init sets RAY_AUTH_MODE and others in os.environ: later tests must not see them
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        args = [
            "--from",
            "local",
            "--local-dir",
            str(root),
            "--train-sources",
            "deepcoder_taco,taco_verified",
            "--out",
            str(out),
            "--grader",
            "ray",
            "--ray-address",
            "auto",
        ]
        assert verify_main(args) == 0
        summary = json.loads(out.with_name("ray.jsonl.summary.json").read_text())
    finally:
        shutdown_pools()
        ray.shutdown()
        os.environ.clear()
        os.environ.update(environ)
    records = {record["problem_id"]: record for record in map(json.loads, out.read_text().splitlines())}
    keys = ("accepted", "verdicts", "other_wrapping_passes")
    assert {pid: [r[key] for key in keys] for pid, r in records.items()} == {
        pid: [r[key] for key in keys] for pid, r in local_records.items()
    }
    assert summary["grader"].startswith("Ray grading pool")


def test_auto_uses_the_ray_pool_only_when_a_cluster_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from data_prep import verify_solutions
    from reward_fns.types import GraderConfig

    addresses = []
    monkeypatch.setattr(
        verify_solutions, "RayGrader", lambda address, config, window: addresses.append(address) or "ray"
    )
    monkeypatch.setattr(verify_solutions, "LocalGrader", lambda workers, config: "local")
    args = verify_solutions.parse_args(["--out", "v.jsonl"])
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert verify_solutions.make_grader(args, GraderConfig()) == "local"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert verify_solutions.make_grader(args, GraderConfig()) == "ray" and addresses == ["10.0.0.1:6379"]
