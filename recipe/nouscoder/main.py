"""Entry point: `python -m recipe.nouscoder.main --config-name NAME [hydra overrides]`.

Composes verl 0.9.1's trainer config (`pkg://verl.trainer.config`, found through the `hydra.searchpath` of
`configs/nouscoder_base.yaml`) with one experiment config of `configs/`, then runs verl's own V1 flow
(`verl.trainer.main_ppo.run_ppo`: Ray init, a TaskRunner actor, `trainer.fit`) with four additions:

- the recipe's trainers (`recipe.nouscoder.training.trainer`: `nouscoder_sync`, `nouscoder_separate_async`) are registered
  in the driver and, through `NousCoderTaskRunner`, in the TaskRunner process where verl looks the trainer up;
- a run that validates stops before Ray starts if verl would drop a validation problem for its prompt length
  (`recipe.nouscoder.run.validation_coverage`), rather than report a score over fewer problems;
- `trainer.default_local_dir` (RUN_DIR) is made absolute and verl's file logger writes to RUN_DIR/metrics.jsonl
  (an existing one is kept as metrics.<k>.jsonl, since verl's FileLogger truncates), which is what
  `python -m recipe.nouscoder.selection.select_checkpoint RUN_DIR` reads.

With the multi-turn agent loop selected (``actor_rollout_ref.rollout.agent.default_agent_loop=
nouscoder_public_test_feedback``), its module is added to ``VERL_USE_EXTERNAL_MODULES`` of the Ray runtime
environment, so ``import verl`` registers it in every process (the agent-loop workers look it up by name).

verl_ext's estimators and losses need nothing here: `import verl` loads them in every process (setup.py entry
point `verl.plugins`). Config directory: `$NOUSCODER_CONFIG_DIR` if set, else `configs/` of this repository
(two levels above this file; an editable install). Hydra's own flags work as usual: `--cfg job` prints the
composed config and exits (no Ray, no GPU), `--resolve` resolves it, `--config-dir DIR` adds a directory, and
`--help` lists the experiments. A `--config-name` that names no experiment is refused before hydra starts, with the
list of experiments.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

# verl announces on import each optional training engine it cannot load (torchtitan, veomni, automodel, mindspeed,
# megatron); this recipe runs the FSDP engine, so they are noise on every console.
warnings.filterwarnings("ignore", message=r".* engine is not available", category=UserWarning)

import hydra  # noqa: E402
import ray  # noqa: E402
from omegaconf import DictConfig, open_dict  # noqa: E402
from verl.trainer.main_ppo import TaskRunnerV1, run_ppo  # noqa: E402
from verl.trainer.ppo.utils import need_critic, need_reference_policy  # noqa: E402
from verl.utils.config import validate_config  # noqa: E402
from verl.utils.device import auto_set_device, get_resource_name  # noqa: E402

from recipe.nouscoder.configs import UnknownExperiment, check_experiment, config_dir  # noqa: E402
from recipe.nouscoder.cpu import is_cpu_mode, prepare_cpu_run  # noqa: E402
from recipe.nouscoder.multi_turn import AGENT_LOOP_MODULE, uses_multi_turn  # noqa: E402
from recipe.nouscoder.run.cluster_check import ClusterTooSmall, check_cluster  # noqa: E402
from recipe.nouscoder.run.console import console_mode, progress_console  # noqa: E402
from recipe.nouscoder.run.required_values import check_required_values  # noqa: E402
from recipe.nouscoder.run.run_dir import rotate_metrics_file  # noqa: E402
from recipe.nouscoder.run.validation_coverage import ValidationProblemsDropped, check_validation_coverage  # noqa: E402

PROG = "recipe.nouscoder.main"
EXTERNAL_MODULES_ENV = "VERL_USE_EXTERNAL_MODULES"


def _flag_value(argv: Sequence[str], flags: tuple[str, ...]) -> str | None:
    """The value of the last of ``flags`` in ``argv`` (``--flag VALUE`` or ``--flag=VALUE``)."""
    value = None
    for position, word in enumerate(argv):
        name, equals, inline = word.partition("=")
        if name in flags:
            value = inline if equals else (argv[position + 1] if position + 1 < len(argv) else None)
    return value


def check_config_name(argv: Sequence[str]) -> None:
    """Exit 2 with the list of experiments when ``--config-name`` (``-cn``) names no config of ``configs/`` (or of
    hydra's ``--config-path`` / ``--config-dir``): hydra would only say it cannot find it."""
    name = _flag_value(argv, ("--config-name", "-cn"))
    if name is None:
        return
    primary = _flag_value(argv, ("--config-path", "-cp"))
    directories = [Path(primary) if primary else config_dir()]
    extra = _flag_value(argv, ("--config-dir", "-cd"))
    if extra:
        directories.append(Path(extra))
    try:
        check_experiment(name, directories)
    except UnknownExperiment as error:
        print(f"{PROG}: error: {error} (--help describes each).", file=sys.stderr)
        sys.exit(2)


def prepare_config(config: DictConfig) -> None:
    """Make RUN_DIR (``trainer.default_local_dir``) absolute: Ray workers do not share the driver's cwd."""
    with open_dict(config):
        config.trainer.default_local_dir = str(Path(config.trainer.default_local_dir).expanduser().resolve())


def load_in_ray_processes(config: DictConfig, module: str) -> None:
    """Add ``module`` to ``VERL_USE_EXTERNAL_MODULES`` of the Ray runtime environment (``import verl`` imports it)."""
    with open_dict(config):
        runtime_env = config.ray_kwargs.ray_init.runtime_env
        env_vars = dict(runtime_env.get("env_vars") or {})
        modules = [
            name
            for name in env_vars.get(EXTERNAL_MODULES_ENV, os.environ.get(EXTERNAL_MODULES_ENV, "")).split(",")
            if name
        ]
        if module not in modules:
            env_vars[EXTERNAL_MODULES_ENV] = ",".join([*modules, module])
        runtime_env.env_vars = env_vars


def register_recipe_trainers() -> None:
    """Import recipe.nouscoder.training.trainer so that its `register_trainer` decorators run in this process."""
    import recipe.nouscoder.training.trainer  # noqa: F401


class _NousCoderTaskRunner(TaskRunnerV1.__ray_actor_class__):
    """verl's V1 TaskRunner, run with the recipe's trainers registered and the metrics file in RUN_DIR."""

    def __init__(self) -> None:
        super().__init__()
        register_recipe_trainers()  # this actor's process is where verl's get_trainer_cls looks the trainer up

    def run(self, config: DictConfig) -> None:
        check_cluster(config, ray.nodes(), get_resource_name())
        if "file" in config.trainer.logger:
            os.environ["VERL_FILE_LOGGER_PATH"] = str(rotate_metrics_file(config.trainer.default_local_dir))
        super().run(config)


NousCoderTaskRunner = ray.remote(num_cpus=1)(_NousCoderTaskRunner)


def run(config: DictConfig) -> None:
    """Validate the composed config with verl's own checks and run verl's trainer flow, with the console that
    ``nouscoder.console`` asks for (``recipe.nouscoder.run.console``)."""
    register_recipe_trainers()
    prepare_config(config)
    mode = console_mode(config.nouscoder.console, is_cpu_mode(config))
    if mode == "progress" and "file" not in config.trainer.logger:
        print("recipe.nouscoder.main: nouscoder.console=progress follows the file logger; add 'file' to trainer.logger")
        mode = "full"
    if mode == "full":
        run_verl(config)
        return
    with progress_console(Path(config.trainer.default_local_dir), config.trainer.total_training_steps, PROG):
        run_verl(config)


def run_verl(config: DictConfig) -> None:
    """Check the config (required values, verl's own checks), prepare a CPU run, and run verl's trainer flow."""
    check_required_values(config)  # a ${required:...} value left unset fails here, naming the override to pass
    if is_cpu_mode(config):
        prepare_cpu_run(config)
    if uses_multi_turn(config):
        load_in_ray_processes(config, AGENT_LOOP_MODULE)
    check_validation_coverage(config)  # no LiveCodeBench problem silently dropped for its prompt length
    auto_set_device(config)
    validate_config(config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    run_ppo(config, task_runner_class=NousCoderTaskRunner)


@hydra.main(config_path=str(config_dir()), config_name="dapo_32k", version_base=None)
def main(config: DictConfig) -> None:
    try:
        run(config)
    except ValidationProblemsDropped as error:
        print(f"recipe.nouscoder.main: error: {error}", file=sys.stderr)
        sys.exit(2)
    except ray.exceptions.RayTaskError as error:
        if not isinstance(error.cause, ClusterTooSmall):
            raise
        print(f"{PROG}: error: {error.cause}", file=sys.stderr)
        sys.exit(2)


def cli() -> None:
    """``python -m recipe.nouscoder.main``: the experiment name checked, then hydra."""
    check_config_name(sys.argv[1:])
    main()


if __name__ == "__main__":
    cli()
