"""recipe.nouscoder.main: config printing, help, and what it adds to verl's flow (reward path, RUN_DIR, metrics)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import ray
import yaml
from omegaconf import OmegaConf
from verl.trainer.main_ppo import TaskRunnerV1
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.trainer.ppo.v1 import get_trainer_cls

import reward_fns.async_score
from recipe.nouscoder import configs, main

REPO = Path(__file__).resolve().parents[2]


def _run_main(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "recipe.nouscoder.main", *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


@pytest.mark.integration  # the CLI in a subprocess
def test_cfg_job_prints_the_composed_config_without_starting_ray(tmp_path: Path) -> None:
    """The `make demo` line: `python -m recipe.nouscoder.main --config-name dapo_32k --cfg job`."""
    result = _run_main("--config-name", "dapo_32k", "--cfg", "job", cwd=tmp_path)
    printed = yaml.safe_load(result.stdout)
    assert printed["trainer"]["experiment_name"] == "dapo_32k"
    assert printed["actor_rollout_ref"]["actor"]["policy_loss"]["loss_mode"] == "dapo"
    assert printed["data"]["max_response_length"] == 32768
    assert printed["trainer"]["v1"]["trainer_mode"] == "nouscoder_separate_async"
    assert "nouscoder" in printed and "online_filter" in printed["nouscoder"]
    assert "ray init" not in result.stdout + result.stderr


@pytest.mark.integration  # the CLI in a subprocess
def test_overrides_reach_the_printed_config(tmp_path: Path) -> None:
    result = _run_main(
        "--config-name", "gspo_40k", "data.train_files=/data/mix/train.parquet", "--cfg", "job", cwd=tmp_path
    )
    printed = yaml.safe_load(result.stdout)
    assert printed["data"]["train_files"] == "/data/mix/train.parquet"
    assert printed["data"]["max_response_length"] == 38912


@pytest.mark.integration  # the CLI in a subprocess
def test_help_lists_the_experiments_first_and_every_flag(tmp_path: Path) -> None:
    text = _run_main("--help", cwd=tmp_path).stdout
    for name in configs.experiment_names([REPO / "configs"]):
        assert name in text, name
    for flag in ("--config-name", "--cfg job", "--config-dir", "KEY=VALUE", "--help"):
        assert flag in text, flag
    lines = text.splitlines()
    assert len(lines) < 60, "--help prints the composed config again (--cfg job does that)"
    assert lines.index("Experiment configs (--config-name NAME):") < 5


def test_an_unknown_config_name_is_refused_with_the_list_of_experiments(capsys) -> None:
    for argv in (["--config-name", "dapo_32kk"], ["--config-name=dapo_32kk", "trainer.nnodes=1"], ["-cn", "dapo_32kk"]):
        with pytest.raises(SystemExit) as stop:
            main.check_config_name(argv)
        assert stop.value.code == 2
        error = capsys.readouterr().err
        assert error.startswith("recipe.nouscoder.main: error: no experiment config 'dapo_32kk' in ")
        assert "(did you mean dapo_32k?)" in error and "debug_cpu, debug_cpu_extended" in error
        assert "nouscoder_base" not in error and ", _" not in error  # shared pieces are not experiments
    main.check_config_name(["--config-name", "debug_cpu"])  # a known one passes
    main.check_config_name(["--cfg", "job"])  # the default experiment


def test_prepare_config_makes_the_run_dir_absolute(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = OmegaConf.create({"trainer": {"default_local_dir": "checkpoints/nouscoder/dapo_32k"}})
    main.prepare_config(config)
    assert config.trainer.default_local_dir == str(tmp_path / "checkpoints" / "nouscoder" / "dapo_32k")


@pytest.mark.integration  # the CLI in a subprocess
def test_the_configs_grade_through_the_ray_pool_which_verl_loads(tmp_path: Path) -> None:
    """The default reward is the Ray grading pool, by a `pkg://` path that verl's own loader resolves."""
    printed = yaml.safe_load(_run_main("--config-name", "dapo_32k", "--cfg", "job", cwd=tmp_path).stdout)
    reward = printed["reward"]["custom_reward_function"]
    assert reward["path"] == "pkg://reward_fns.async_score"
    loaded = get_custom_reward_fn(OmegaConf.create({"reward": {"custom_reward_function": reward}}))
    raw_function, reward_kwargs = loaded.args
    assert raw_function is reward_fns.async_score.compute_score
    assert reward_kwargs["pool_reserved_cpus_per_node"] == 24


def test_task_runner_is_verls_with_the_recipe_trainers_registered() -> None:
    assert issubclass(main.NousCoderTaskRunner.__ray_actor_class__, TaskRunnerV1.__ray_actor_class__)
    main.register_recipe_trainers()
    assert get_trainer_cls("nouscoder_sync").__name__ == "NousCoderSyncTrainer"
    assert get_trainer_cls("nouscoder_separate_async").__name__ == "NousCoderSeparateAsyncTrainer"


def _trainers_seen_by(runner) -> tuple[int, list[str]]:
    """(pid, registered trainer names) inside the runner actor's own process."""

    def probe(actor_self) -> tuple[int, list[str]]:
        import os

        from verl.trainer.ppo.v1 import trainer_base

        return os.getpid(), sorted(trainer_base.TRAINER_REGISTRY)

    return ray.get(runner.__ray_call__.remote(probe))


@pytest.mark.integration  # a local Ray cluster
def test_task_runner_actor_registers_the_recipe_trainers_in_its_process() -> None:
    """verl's TaskRunner looks the trainer up in the Ray actor, a process that never ran the driver's imports."""
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        pid, names = _trainers_seen_by(main.NousCoderTaskRunner.remote())
    finally:
        ray.shutdown()
    assert pid != os.getpid()
    assert {"nouscoder_sync", "nouscoder_separate_async", "sync", "separate_async"} <= set(names)


def test_missing_config_dir_says_what_to_do(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(configs.CONFIG_DIR_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="NOUSCODER_CONFIG_DIR"):
        configs.config_dir()
