"""launch/preflight.py in-process: what it prints for the chain (KIND<TAB>NAME<TAB>VALUE) and what it refuses.

The Slurm jobs of test_slurm_chain.py run it for real (layout misfit, node checks); test_local_mode.py its disk check.
~10 s (five configs composed).
"""

from __future__ import annotations

import math
import re

import preflight
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import run_plan

NOUSCODER = [
    "--nodes",
    "6",
    "--gpus-per-node",
    "8",
    "--stages",
    "dapo_32k dapo_40k",
    "--rescore",
    "dapo_32k=eval_lcb_40k",
    "--eval-config",
    "eval_lcb_80k",
    "--offline-filter-config",
    "offline_filter",
]


def rows_parquet(path, rows: int):
    """A parquet of `rows` rows with the columns every run reads (launch/data_check.py), and nothing else."""
    table = pa.table(
        {
            "prompt": [[{"role": "user", "content": f"problem {index}"}] for index in range(rows)],
            "data_source": ["livecodebench"] * rows,
            "reward_model": [{"style": "rule", "ground_truth": "{}"}] * rows,
            "extra_info": [{"problem_id": f"p{index}"} for index in range(rows)],
        }
    )
    pq.write_table(table, path)
    return path


def data_args(tmp_path) -> list[str]:
    """The data the chain's runs read: as many training problems as the plan assumes (its stage 0 cost) and a
    LiveCodeBench-sized test split; a checkpoint size the test's disk holds (the model is not on this machine)."""
    train = rows_parquet(tmp_path / "train.parquet", run_plan.TRAIN_PROBLEMS)
    test = rows_parquet(tmp_path / "test.parquet", run_plan.LCB_V6_PROBLEMS)
    return ["--eval-data", str(test), "--checkpoint-gb", "0.001", f"data.train_files={train}", f"data.val_files={test}"]


def output_args(tmp_path) -> list[str]:
    """Where the preflight writes the bill of materials and whose disk it checks."""
    return ["--manifest", str(tmp_path / "bom.json"), "--output-root", str(tmp_path), "--run-dir", str(tmp_path / "r")]


def lines(capsys) -> dict[tuple[str, str], str]:
    return {
        (kind, name): value for kind, name, value in (line.split("\t") for line in capsys.readouterr().out.splitlines())
    }


def test_a_budget_plans_each_stage_and_the_watchdog_gets_its_facts(tmp_path, capsys):
    preflight.main(
        [
            *NOUSCODER,
            "--manifest",
            str(tmp_path / "bom.json"),
            "--output-root",
            str(tmp_path),
            "--run-dir",
            str(tmp_path / "run"),
            "--budget-gpu-hours",
            "3000",
            *data_args(tmp_path),
        ]
    )
    out = lines(capsys)
    expected = run_plan.default_chain(3000)
    for cost, steps in zip(expected.stages, expected.steps, strict=True):
        assert out[("overrides", cost.name)] == (
            f"trainer.total_training_steps={steps} trainer.save_freq={cost.save_freq} trainer.test_freq={cost.test_freq}"
        )
        assert (out[("steps", cost.name)], out[("test_freq", cost.name)]) == (str(steps), str(cost.test_freq))
    assert out[("overrides", "eval_lcb_80k")] == "trainer.nnodes=6 trainer.n_gpus_per_node=8"
    assert int(out[("expected_s", "offline_filter")]) == pytest.approx(expected.fixed_s["offline filter"], abs=1)
    assert out[("model", "dapo_32k")] == "Qwen/Qwen3-14B"
    assert out[("train_files", "dapo_32k")] == str(tmp_path / "train.parquet")
    assert (tmp_path / "bom.json").is_file()


def test_a_budget_and_explicit_steps_together_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        preflight.main(
            [
                *NOUSCODER,
                "--manifest",
                str(tmp_path / "bom.json"),
                "--output-root",
                str(tmp_path),
                "--run-dir",
                str(tmp_path / "run"),
                "--budget-gpu-hours",
                "3000",
                "trainer.total_training_steps=9",
            ]
        )
    assert exit_info.value.code == 2
    assert (
        "preflight: ERROR: BUDGET_GPU_HOURS plans trainer.total_training_steps, trainer.save_freq, trainer.test_freq; "
        "the overrides set ['trainer.total_training_steps'] too: drop one." in capsys.readouterr().err
    )


def test_the_time_limit_gives_each_stage_its_save_lead_and_says_how_many_jobs_the_chain_takes(tmp_path, capsys):
    """48-hour jobs for the NousCoder chain as configured: each training stage is asked to save one planned step, one
    validation and one save (+ 5 min) before the limit, and the plan's hours need more than one job."""
    arguments = output_args(tmp_path)
    preflight.main([*NOUSCODER, *arguments, *data_args(tmp_path), "--time-limit-s", str(48 * 3600)])
    captured = capsys.readouterr()
    out = {(kind, name): value for kind, name, value in (line.split("\t") for line in captured.out.splitlines())}
    chain = run_plan.default_chain()
    for cost in chain.stages:
        assert int(out[("save_lead_s", cost.name)]) == math.ceil(cost.step_s + cost.validation_s + cost.save_s + 300)
    line = next(line for line in captured.err.splitlines() if "time limit: the plan's" in line)
    hours, usable, jobs = re.search(
        r"~([\d.]+) h against --time=48.0 h \(([\d.]+) h of it usable.*: (\d+) job\(s\)", line
    ).groups()
    longest_lead = max(cost.step_s + cost.validation_s + cost.save_s + 300 for cost in chain.stages)
    assert float(usable) == pytest.approx((48 * 3600 - 900 - longest_lead) / 3600, abs=0.05)
    assert int(jobs) == math.ceil(float(hours) / float(usable)) >= 2


def test_data_without_the_columns_a_run_reads_stops_the_job_naming_the_file(tmp_path, capsys):
    train = tmp_path / "without_ground_truths.parquet"
    pq.write_table(pa.table({"prompt": [[{"role": "user", "content": "x"}]], "data_source": ["s"]}), train)
    arguments = output_args(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        given = [item for item in data_args(tmp_path) if not item.startswith("data.train_files=")]
        preflight.main([*NOUSCODER, *arguments, *given, f"data.train_files={train}"])
    assert exit_info.value.code == 2
    assert (
        f"preflight: ERROR: data: data.train_files={train} (dapo_32k) lacks reward_model, extra_info: write it"
        in capsys.readouterr().err
    )
