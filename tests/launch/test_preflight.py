"""launch/preflight.py in-process: what it prints for the chain (KIND<TAB>NAME<TAB>VALUE) and what it refuses.

The Slurm jobs of test_slurm_chain.py run it for real (layout misfit, node checks); test_local_mode.py its disk check.
Configs are composed once per test session (tests/launch/conftest.py).
"""

from __future__ import annotations

import math
import re
import shutil

import preflight
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import run_plan

from recipe.nouscoder.configs import CONFIG_DIR_ENV, config_dir

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

# launch/run_deepcoder_16k_to_32k.sh's chain, on --nodes N
DEEPCODER = ["--gpus-per-node", "8", "--stages", "deepcoder_16k deepcoder_32k", "--eval-config", "eval_lcb_v5_64k"]


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
    train, test = tmp_path / "train.parquet", tmp_path / "test.parquet"
    if not train.exists():
        rows_parquet(train, run_plan.TRAIN_PROBLEMS)
        rows_parquet(test, run_plan.LCB_V6_PROBLEMS)
    return ["--eval-data", str(test), "--checkpoint-gb", "0.001", f"data.train_files={train}", f"data.val_files={test}"]


def run(tmp_path, capsys, *argv: str, status: int | None = None) -> tuple[dict[tuple[str, str], str], str]:
    """preflight.main with the job's files under tmp_path (data with the columns every run reads, a tiny checkpoint,
    so that the disk fits anywhere)."""
    files = ["--manifest", str(tmp_path / "bom.json"), "--output-root", str(tmp_path), "--run-dir", str(tmp_path / "r")]
    given = {item.split("=", 1)[0] for item in argv if "=" in item}
    files += [item for item in data_args(tmp_path) if item.split("=", 1)[0] not in given]
    if status is None:
        preflight.main([*argv, *files])
    else:
        with pytest.raises(SystemExit) as exit_info:
            preflight.main([*argv, *files])
        assert exit_info.value.code == status
    captured = capsys.readouterr()
    lines = {(kind, name): value for kind, name, value in (line.split("\t") for line in captured.out.splitlines())}
    return lines, captured.err


def test_a_budget_plans_each_stage_and_the_watchdog_gets_its_facts(tmp_path, capsys):
    out, err = run(tmp_path, capsys, *NOUSCODER, "--budget-gpu-hours", "3000")
    expected = run_plan.default_chain(3000)
    for cost, steps in zip(expected.stages, expected.steps, strict=True):
        assert out[("overrides", cost.name)] == (
            f"trainer.total_training_steps={steps} trainer.save_freq={cost.save_freq} trainer.test_freq={cost.test_freq}"
        )
        assert (out[("steps", cost.name)], out[("test_freq", cost.name)]) == (str(steps), str(cost.test_freq))
        assert out[("step_s", cost.name)] == str(int(-(-cost.step_s // 1)))  # for the pace check
    assert out[("overrides", "eval_lcb_80k")] == "trainer.nnodes=6 trainer.n_gpus_per_node=8"  # YaRN as derived
    assert int(out[("expected_s", "offline_filter")]) == pytest.approx(expected.fixed_s["offline filter"], abs=1)
    assert out[("model", "dapo_32k")] == "Qwen/Qwen3-14B"
    assert out[("train_files", "dapo_32k")] == str(tmp_path / "train.parquet")
    assert (tmp_path / "bom.json").is_file()
    assert "(Qwen/Qwen3-14B on H100 SXM 80 GB" in err
    assert "eval_lcb_80k: 81,920 tokens: YaRN factor 2.5 over Qwen/Qwen3-14B's 32,768 native positions" in err


def test_a_budget_and_explicit_steps_together_are_refused(tmp_path, capsys):
    _, err = run(tmp_path, capsys, *NOUSCODER, "--budget-gpu-hours", "3000", "trainer.total_training_steps=9", status=2)
    assert (
        "preflight: ERROR: BUDGET_GPU_HOURS plans trainer.total_training_steps, trainer.save_freq, trainer.test_freq; "
        "the overrides set ['trainer.total_training_steps'] too: drop one." in err
    )


def test_an_unknown_stage_is_one_line_naming_the_closest(tmp_path, capsys):
    _, err = run(tmp_path, capsys, "--nodes", "6", "--gpus-per-node", "8", "--stages", "dapo_32k dapo_40kk", status=2)
    errors = [line for line in err.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "Traceback" not in err
    assert (
        errors[0].startswith("preflight: ERROR: no experiment config 'dapo_40kk' in ")
        and "(did you mean dapo_40k?)" in errors[0]
    )


def test_a_bad_override_and_overrides_for_a_config_the_job_does_not_run_are_one_line(tmp_path, capsys):
    base = ["--nodes", "6", "--gpus-per-node", "8", "--stages", "dapo_32k"]
    _, err = run(tmp_path, capsys, *base, "context=99k", status=2)
    assert "preflight: ERROR: dapo_32k with overrides context=99k " in err and "Traceback" not in err
    assert "In 'dapo_32k': Could not find 'context/99k'" in err
    _, err = run(tmp_path, capsys, *base, "--config-overrides", "dapo_40k=context=24k", status=2)
    assert "overrides for dapo_40k, which this job does not run (its configs: dapo_32k)" in err


def test_a_plan_that_cannot_fit_names_each_role_over_its_memory_and_the_knobs(tmp_path, capsys):
    """Qwen3-14B's NousCoder stages on one node split 4 + 4: 16 B x 14.77e9 / 4 = 59 GB of states per trainer GPU."""
    split = [
        "trainer.nnodes=1",
        "trainer.n_gpus_per_node=4",
        "actor_rollout_ref.rollout.nnodes=1",
        "actor_rollout_ref.rollout.n_gpus_per_node=4",
    ]
    args = ["--nodes", "1", "--gpus-per-node", "8", "--stages", "dapo_32k dapo_40k", "--eval-config", "eval_lcb_80k"]
    _, err = run(tmp_path, capsys, *args, *split, status=2)
    assert "preflight: ERROR: dapo_32k: trainer, training pass: ~93 GB of 80 (states 59.1 + " in err
    assert "lower it with actor_rollout_ref.actor.fsdp_config.fsdp_size (shard over more GPUs)" in err
    assert "preflight: ERROR: eval_lcb_80k: colocated, generating: ~83 GB of 80" in err


def test_deepcoder_on_six_nodes_is_refused_naming_the_rule_and_what_fits(tmp_path, capsys):
    _, err = run(tmp_path, capsys, "--nodes", "6", *DEEPCODER, status=2)
    assert (
        "preflight: ERROR: deepcoder_16k: the mini-batch of 64 x 16 = 1,024 sequences does not divide by the 12 "
        "data-parallel ranks (48 trainer GPUs / Ulysses 4): remainder 4. Fits: sbatch --nodes=4" in err
    )
    assert "(verl 0.9.1 workers/engine_workers.py:267, mini-batch sequences by data-parallel size)" in err


@pytest.mark.parametrize(
    "override",
    [
        "actor_rollout_ref.rollout.tensor_model_parallel_size=0",
        "actor_rollout_ref.actor.ulysses_sequence_parallel_size=0",
        "actor_rollout_ref.actor.ppo_mini_batch_size=0",
        "actor_rollout_ref.rollout.n=0",
        "data.max_response_length=0",
        "trainer.v1.separate_async.parameter_sync_step=-2",
    ],
)
def test_a_size_that_is_not_positive_is_named_for_each_config(tmp_path, capsys, override):
    """Sizes the rules divide by: a zero is one line per config, not a ZeroDivisionError of a later check."""
    _, err = run(tmp_path, capsys, "--nodes", "4", *DEEPCODER, override, status=2)
    key, value = override.split("=")
    for name in ("deepcoder_16k", "deepcoder_32k", "eval_lcb_v5_64k"):
        assert f"preflight: ERROR: {name}: {key}={value} must be a positive integer" in err


def test_deepcoder_on_four_nodes_passes_and_its_second_stage_needs_no_path(tmp_path, capsys):
    out, err = run(tmp_path, capsys, "--nodes", "4", *DEEPCODER)
    assert out[("steps", "deepcoder_16k")] == "588" and out[("steps", "deepcoder_32k")] == "134"
    assert out[("overrides", "eval_lcb_v5_64k")] == "trainer.nnodes=4 trainer.n_gpus_per_node=8"
    assert "ERROR" not in err and "WARNING" not in err


def test_a_yarn_evaluation_of_a_model_with_enough_positions_loses_its_yarn(tmp_path, capsys):
    """DeepSeek-R1-Distill-Qwen-14B has 131,072 positions: eval_lcb_80k's YaRN (written for Qwen3) is removed."""
    args = ["--nodes", "4", "--gpus-per-node", "8", "--stages", "deepcoder_16k", "--eval-config", "eval_lcb_80k"]
    out, err = run(tmp_path, capsys, *args)
    removed = [f"~actor_rollout_ref.model.override_config.{key}" for key in ("max_position_embeddings", "rope_scaling")]
    for override in removed:
        assert override in out[("overrides", "eval_lcb_80k")].split()
    assert "eval_lcb_80k: 81,920 tokens within deepseek-ai/DeepSeek-R1-Distill-Qwen-14B's 131,072 positions" in err


def test_a_model_trained_on_40960_positions_gets_factor_2(tmp_path, capsys):
    out, err = run(tmp_path, capsys, *NOUSCODER, "--native-context", "40960")
    overrides = out[("overrides", "eval_lcb_80k")].split()
    assert "++actor_rollout_ref.model.override_config.rope_scaling.factor=2.0" in overrides
    assert (
        "++actor_rollout_ref.rollout.engine_kwargs.vllm.hf_overrides.rope_scaling.original_max_position_embeddings=40960"
        in overrides
    )


def test_a_re_scored_stage_must_validate_as_many_checkpoints_as_it_re_scores(tmp_path, capsys):
    _, err = run(tmp_path, capsys, *NOUSCODER, "--config-overrides", "dapo_32k=trainer.test_freq=90", status=2)
    assert (
        "dapo_32k: 150 steps with trainer.test_freq=90 validate 2 checkpoint(s), fewer than the RESCORE_TOP_K=3 it "
        "re-scores: set trainer.test_freq=50" in err
    )


def test_per_config_overrides_derive_the_context_settings(tmp_path, capsys):
    out, err = run(tmp_path, capsys, *NOUSCODER, "--config-overrides", "dapo_40k=data.max_response_length=20480")
    assert out[("overrides", "dapo_40k")] == "actor_rollout_ref.rollout.max_model_len=22528"
    assert "dapo_40k: actor_rollout_ref.rollout.max_model_len=22528 (prompt + response budget)" in err


def test_a_user_config_directory_is_honoured(tmp_path, capsys, monkeypatch):
    """A copy of configs/ with an experiment of one's own, selected with --config-dir (NOUSCODER_CONFIG_DIR)."""
    mine = tmp_path / "my_configs"
    shutil.copytree(config_dir(), mine)
    (mine / "dapo_16k.yaml").write_text((mine / "dapo_32k.yaml").read_text().replace("context: 32k", "context: 16k"))
    monkeypatch.delenv(CONFIG_DIR_ENV, raising=False)
    args = ["--nodes", "6", "--gpus-per-node", "8", "--stages", "dapo_16k", "--config-dir", str(mine)]
    out, err = run(tmp_path, capsys, *args)
    assert out[("steps", "dapo_16k")] == "150" and "dapo_16k (nouscoder_separate_async) on 6 x 8 GPUs" in err


def test_the_time_limit_gives_each_stage_its_save_lead_and_says_how_many_jobs_the_chain_takes(tmp_path, capsys):
    """48-hour jobs for the NousCoder chain as configured: each training stage is asked to save one planned step, one
    validation and one save (+ 5 min) before the limit, and the plan's hours need more than one job."""
    out, err = run(tmp_path, capsys, *NOUSCODER, "--time-limit-s", str(48 * 3600))
    chain = run_plan.default_chain()
    for cost in chain.stages:
        assert int(out[("save_lead_s", cost.name)]) == math.ceil(cost.step_s + cost.validation_s + cost.save_s + 300)
    line = next(line for line in err.splitlines() if "time limit: the plan's" in line)
    hours, usable, jobs = re.search(
        r"~([\d.]+) h against --time=48.0 h \(([\d.]+) h of it usable.*: (\d+) job\(s\)", line
    ).groups()
    longest_lead = max(cost.step_s + cost.validation_s + cost.save_s + 300 for cost in chain.stages)
    assert float(usable) == pytest.approx((48 * 3600 - 900 - longest_lead) / 3600, abs=0.05)
    assert int(jobs) == math.ceil(float(hours) / float(usable)) >= 2


def test_data_without_the_columns_a_run_reads_stops_the_job_naming_the_file(tmp_path, capsys):
    train = tmp_path / "without_ground_truths.parquet"
    pq.write_table(pa.table({"prompt": [[{"role": "user", "content": "x"}]], "data_source": ["s"]}), train)
    _, err = run(tmp_path, capsys, *NOUSCODER, f"data.train_files={train}", status=2)
    assert (
        f"preflight: ERROR: data: data.train_files={train} (dapo_32k) lacks reward_model, extra_info: write it" in err
    )


def test_a_second_stage_config_run_first_needs_its_model_named_in_one_line(tmp_path, capsys):
    args = ["--nodes", "6", "--gpus-per-node", "8", "--stages", "dapo_40k"]
    _, err = run(tmp_path, capsys, *args, status=2)
    errors = [line for line in err.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "Traceback" not in err
    assert (
        errors[0].startswith("preflight: ERROR: dapo_40k: ") and "actor_rollout_ref.model.path is required" in errors[0]
    )
    assert errors[0].endswith("(the launcher: INIT_MODEL=PATH for the first stage's model)")
    out, _ = run(tmp_path, capsys, *args, "--init-model", "Qwen/Qwen3-14B")
    assert out[("model", "dapo_40k")] == "Qwen/Qwen3-14B"
