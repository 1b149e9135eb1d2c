"""The run_*.sh wrappers' defaults, and the documented one-machine run (launch/README.md "Local mode").

`STAGES=debug_64 RUN_NAME=debug_64 RUN_EVAL=0 bash launch/run_dapo_32k_to_40k.sh` used to stop on a missing EVAL_DATA:
the wrapper's `RESCORE=dapo_32k=eval_lcb_40k` applied though dapo_32k was not run. The 32k stage's defaults (its
re-scoring at 40k, the offline filter's stage 0) now apply only when that stage is in STAGES. Each case runs bash for
well under a second (no Slurm, no Ray).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BASH = os.environ.get("LAUNCH_TEST_BASH", "bash")
pytestmark = pytest.mark.integration  # the launch scripts as programs


def run(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("SLURM", "STAGES", "RESCORE"))}
    return subprocess.run(
        [BASH, str(REPO / "launch" / script)], cwd=cwd, env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("script", "stage"), [("run_dapo_32k_to_40k.sh", "dapo_32k"), ("run_gspo_plus_32k_to_40k.sh", "gspo_plus_32k")]
)
def test_the_32k_stage_defaults_apply_only_when_it_runs(tmp_path, script, stage):
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "stage_chain.sh").write_text('echo "STAGES=$STAGES|RESCORE=$RESCORE|OFFLINE_FILTER=$OFFLINE_FILTER"\n')
    default = run(script, tmp_path, LAUNCH_DIR=str(stub)).stdout.strip()
    assert default.endswith(f"|RESCORE={stage}=eval_lcb_40k|OFFLINE_FILTER=build")
    assert run(script, tmp_path, LAUNCH_DIR=str(stub), STAGES="debug_64").stdout.strip() == (
        "STAGES=debug_64|RESCORE=|OFFLINE_FILTER=none"
    )
    given = run(script, tmp_path, LAUNCH_DIR=str(stub), OFFLINE_FILTER="f.parquet", RESCORE="").stdout.strip()
    assert given.endswith("|RESCORE=|OFFLINE_FILTER=f.parquet")


def test_the_documented_one_machine_run_gets_past_the_evaluation_data_check(tmp_path):
    """As written in launch/README.md, on this machine without GPUs and without data/deepcoder_mix/test.parquet: it
    stops where a machine without GPUs must (naming the CPU mode), not on EVAL_DATA."""
    result = run(
        "run_dapo_32k_to_40k.sh",
        tmp_path,
        STAGES="debug_64",
        RUN_NAME="debug_64",
        RUN_EVAL="0",
        OUTPUT_ROOT=str(tmp_path / "outputs"),
    )
    assert result.returncode == 1
    assert "EVAL_DATA" not in result.stderr, result.stderr
    assert "ERROR: no GPU on the job's nodes" in result.stderr, result.stderr


def test_a_rescored_stage_outside_stages_is_refused(tmp_path):
    result = run("run_dapo_32k_to_40k.sh", tmp_path, STAGES="debug_64", RUN_NAME="x", RESCORE="dapo_32k=eval_lcb_40k")
    assert result.returncode == 1
    assert (
        'ERROR: RESCORE=dapo_32k=eval_lcb_40k names stage dapo_32k, which is not one of STAGES="debug_64": drop it '
        "(RESCORE=) or add the stage." in result.stderr
    )


def test_the_deepcoder_wrapper_chains_its_two_stages_and_evaluates_as_the_card(tmp_path):
    """No re-scoring, no stage 0, and DeepCoder's own evaluation: LiveCodeBench v5 at 64K (eval_lcb_v5_64k)."""
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "stage_chain.sh").write_text('echo "$STAGES|RESCORE=$RESCORE|$OFFLINE_FILTER|$EVAL_CONFIG|$EVAL_DATA"\n')
    assert run("run_deepcoder_16k_to_32k.sh", tmp_path, LAUNCH_DIR=str(stub)).stdout.strip() == (
        f"deepcoder_16k deepcoder_32k|RESCORE=|none|eval_lcb_v5_64k|{tmp_path}/data/benchmarks/lcb_v5.parquet"
    )
