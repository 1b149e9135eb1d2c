"""The verl 0.9.1 internals this package relies on, checked in one place.

verl is extended, not forked: the trainers override private verl methods, the dynamic-sampling buffer is verl's
own with its class swapped, the CPU mode registers itself in verl's registries. None of that is verl's public
API, so a verl upgrade can move any of it without notice; an override whose verl method was renamed is never
called again, silently. Each entry of ``CONTRACT`` below names one internal, the file of ours that relies on it
and what it needs; its check fails with that text when the internal moved. The same list, with the reasons, is
docs/DESIGN.md "verl internals we rely on" (``test_design_lists_every_internal`` keeps the two in step).

Upgrading verl: run this module first (``pytest tests/test_verl_contract.py``); every failure names what to
re-read in verl and which of our files to adapt.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import inspect
import logging
import os
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import verl
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]
DESIGN = REPO / "docs" / "DESIGN.md"
PACKAGES = ("verl_ext", "reward_fns", "data_prep", "recipe")
PINNED_VERL = "0.9.1"
VLLM_MODULES = "verl.workers.rollout.vllm_rollout"
"""verl's modules that import vLLM: checked in the vLLM-on-CPU venv (`make test-vllm-cpu` runs this module too)."""
HAS_VLLM = importlib.util.find_spec("vllm") is not None
CUPY_MODULES = ("verl.checkpoint_engine.nccl_checkpoint_engine",)
"""verl's modules that import cupy at module level: where cupy is missing (CPU), their names are read from the source."""
HAS_CUPY = importlib.util.find_spec("cupy") is not None


class ContractBroken(AssertionError):
    """A verl internal we rely on is gone or changed shape."""


@dataclass(frozen=True)
class Internal:
    """One verl internal: ``name`` (what of verl), ``used_by`` (our file: what breaks), ``check`` (raises
    ``ContractBroken`` saying what changed)."""

    name: str
    used_by: str
    check: Callable[[], None]
    needs_vllm: bool = False
    """Only importable where vLLM is installed (the vLLM-on-CPU venv)."""


# ------------------------------ how an internal is checked ------------------------------


def resolve(path: str):
    """``"verl.module:Attr.attr"`` -> the object; ``ContractBroken`` naming the missing piece."""
    module_name, _, attributes = path.partition(":")
    try:
        target = importlib.import_module(module_name)
    except ImportError as exc:
        raise ContractBroken(f"module {module_name} cannot be imported ({exc})") from exc
    walked = module_name
    for attribute in filter(None, attributes.split(".")):
        if not hasattr(target, attribute):
            raise ContractBroken(f"{walked} has no attribute {attribute!r}")
        target = getattr(target, attribute)
        walked = f"{walked}.{attribute}"
    return target


def module_text(module: str) -> str:
    """A module's source without importing it (its own imports may need what this machine lacks, as cupy)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ContractBroken(f"module {module} is gone")
    return Path(spec.origin).read_text(encoding="utf-8")


def parameter_names(path: str) -> list[str]:
    return [name for name in inspect.signature(inspect.unwrap(resolve(path))).parameters if name != "self"]


def require_parameters(path: str, *names: str) -> None:
    """The callable at ``path`` takes these parameters, in this order (others may follow)."""
    actual = parameter_names(path)
    if actual[: len(names)] != list(names):
        raise ContractBroken(f"{path} takes ({', '.join(actual)}), we call it with ({', '.join(names)})")


def source_of(path: str) -> str:
    return textwrap.dedent(inspect.getsource(inspect.unwrap(resolve(path))))


def require_source(path: str, *snippets: str) -> None:
    """The source of ``path`` still contains each snippet (a call shape or rule we mirror)."""
    source = source_of(path)
    missing = [snippet for snippet in snippets if snippet not in source]
    if missing:
        raise ContractBroken(f"{path} no longer contains {missing}")


def require_override(base: str, method: str, caller: str, *params: str) -> None:
    """verl's ``base.method`` exists with ``params`` and ``caller`` still calls ``self.method(``."""
    require_parameters(f"{base}.{method}", *params)
    if f"self.{method}(" not in source_of(caller):
        raise ContractBroken(f"{caller} no longer calls self.{method}(...): our override would never run")


def require_init_sets(path: str, *attributes: str) -> None:
    """``path.__init__`` assigns ``self.<attribute>`` for each attribute."""
    require_source(f"{path}.__init__", *(f"self.{attribute}" for attribute in attributes))


def require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractBroken(message)


def require_abstract_methods_within(base: str, ours: type) -> None:
    """Every abstract method of verl's ``base`` is implemented by our subclass (else it cannot be built)."""
    abstract = set(getattr(resolve(base), "__abstractmethods__", ()))
    missing = sorted(name for name in abstract if getattr(ours, name, None) is None or name in ours.__abstractmethods__)
    if missing:
        raise ContractBroken(f"{base} now has abstract methods {missing} that {ours.__qualname__} does not implement")


# ------------------------------ behavioural checks ------------------------------

TRAINER_BASE = "verl.trainer.ppo.v1.trainer_base:PPOTrainer"
SEPARATE_ASYNC = "verl.trainer.ppo.v1.trainer_separate_async:PPOTrainerSeparateAsync"
REPLAY_BUFFER = "verl.trainer.ppo.v1.replay_buffer:ReplayBuffer"
REPLAY_BUFFER_ASYNC = "verl.trainer.ppo.v1.replay_buffer:ReplayBufferAsync"


def resume_rule_matches_verl() -> None:
    """verl's ``_load_checkpoint`` and our ``_resumed_checkpoint_folder`` pick the same folder (auto + resume_path)."""
    import tempfile

    from recipe.nouscoder.training.trainer import NousCoderTrainerMixin

    load_checkpoint = resolve(f"{TRAINER_BASE}._load_checkpoint")
    with tempfile.TemporaryDirectory() as run_dir:
        (Path(run_dir) / "global_step_7").mkdir()
        (Path(run_dir) / "latest_checkpointed_iteration.txt").write_text("7")
        for mode, resume_path in (("auto", None), ("resume_path", os.path.join(run_dir, "global_step_7"))):
            loaded: list[str] = []
            trainer = SimpleNamespace(
                config=OmegaConf.create(
                    {
                        "trainer": {
                            "resume_mode": mode,
                            "resume_from_path": resume_path,
                            "default_local_dir": run_dir,
                            "del_local_ckpt_after_load": False,
                        }
                    }
                ),
                actor_rollout_wg=SimpleNamespace(
                    load_checkpoint=lambda local_path, _loaded=loaded, **_: _loaded.append(local_path)
                ),
                use_critic=False,
                trainer_mode="sync",
                train_dataloader=SimpleNamespace(load_state_dict=lambda _state: None),
            )
            load_checkpoint(trainer)
            verl_folder = os.path.dirname(loaded[0]) if loaded else None
            ours = NousCoderTrainerMixin._resumed_checkpoint_folder(trainer)
            if verl_folder is None or trainer.global_steps != 7 or os.path.normpath(ours) != verl_folder:
                raise ContractBroken(
                    f"resume_mode={mode}: verl resumed from {verl_folder} at step {trainer.global_steps}, "
                    f"our rule says {ours}"
                )


def buffer_class_can_be_swapped() -> None:
    """The capped buffers only add methods: the instance verl built keeps every attribute they read, and no
    ``__slots__`` pins its layout."""
    require_init_sets(REPLAY_BUFFER, "refill_fn", "filter_groups_metric", "partitions", "_dapo_classification_cache")
    for path in (REPLAY_BUFFER, REPLAY_BUFFER_ASYNC):
        require(
            all("__slots__" not in vars(cls) for cls in resolve(path).__mro__[:-1]),
            f"{path} declares __slots__: an instance cannot change class",
        )


def ray_actor_subclasses_define_init() -> None:
    """Ray pickles an inherited verl ``__init__`` by value; its zero-argument ``super()`` then names a copy of verl's
    class outside the actor's MRO. Every class of ours built on a ``__ray_actor_class__`` must define ``__init__``."""
    from recipe.nouscoder import main
    from recipe.nouscoder.training import temperature

    actor_bases = {
        resolve("verl.trainer.ppo.v1.agent_loop_tq:AgentLoopWorkerTQ").__ray_actor_class__,
        resolve("verl.trainer.main_ppo:TaskRunnerV1").__ray_actor_class__,
    }
    for module in (main, temperature):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and actor_bases & set(cls.__mro__[1:]) and "__init__" not in vars(cls):
                raise ContractBroken(
                    f"{cls.__module__}.{cls.__qualname__} subclasses a Ray actor class of verl "
                    "without defining __init__ (the actor fails to start)"
                )


def our_verl_imports() -> list[tuple[str, str]]:
    """``(module, name)`` of every ``from verl... import name`` / ``import verl...`` in our packages."""
    found: set[tuple[str, str]] = set()
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            if "sample/problems" in path.as_posix():
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "verl" and node.level == 0:
                    found.update((node.module, alias.name) for alias in node.names)
                elif isinstance(node, ast.Import):
                    found.update((alias.name, "") for alias in node.names if alias.name.split(".")[0] == "verl")
    return sorted(found)


# ------------------------------ the contract ------------------------------

TRAINER = "recipe/nouscoder/training/trainer.py"
DYNAMIC_SAMPLING = "recipe/nouscoder/training/dynamic_sampling.py"
CPU = "recipe/nouscoder/cpu/"
VLLM_SERVER = f"{VLLM_MODULES}.vllm_async_server:vLLMHttpServer"

CONTRACT = [
    # The seven private trainer methods the trainers override (called by verl's fit/step; renamed = never called).
    Internal(
        "PPOTrainer._build_replay_buffer",
        f"{TRAINER}: the buffer the dynamic-sampling cap specialises",
        lambda: (
            require_override(TRAINER_BASE, "_build_replay_buffer", f"{TRAINER_BASE}.__init__"),
            require_source(
                f"{TRAINER_BASE}._build_replay_buffer",
                'ReplayBuffer if self.trainer_mode == "sync" else ReplayBufferAsync',
                "refill_fn=self._add_prompts_to_generate",
            ),
        ),
    ),
    Internal(
        "PPOTrainer._init_dataloader",
        f"{TRAINER}: train dataloader rebuilt over the problem-filter sampler",
        lambda: (
            require_override(TRAINER_BASE, "_init_dataloader", f"{TRAINER_BASE}._setup"),
            require_source(
                f"{TRAINER_BASE}._init_dataloader",
                "self.train_dataloader = StatefulDataLoader(",
                "self.train_dataset",
                "self.total_training_steps =",
            ),
        ),
    ),
    Internal(
        "PPOTrainer._next_train_batch",
        f"{TRAINER}: the staged temperature written on every prompt",
        lambda: require_override(
            TRAINER_BASE, "_next_train_batch", f"{TRAINER_BASE}._add_prompts_to_generate", "num_prompts"
        ),
    ),
    Internal(
        "PPOTrainer._compute_advantage",
        f"{TRAINER}: microcoder_grpo's response ids around verl's advantage step",
        lambda: (
            require_override(TRAINER_BASE, "_compute_advantage", f"{TRAINER_BASE}._step_once", "batch", "metrics"),
            require_source(f"{TRAINER_BASE}._compute_advantage", "batch.keys"),
        ),
    ),
    Internal(
        "PPOTrainer._save_checkpoint",
        f"{TRAINER}: online-filter state saved in global_step_N/",
        lambda: (
            require_override(TRAINER_BASE, "_save_checkpoint", f"{TRAINER_BASE}.fit"),
            require_source(f"{TRAINER_BASE}._save_checkpoint", 'f"global_step_{self.global_steps}"'),
        ),
    ),
    Internal(
        "PPOTrainer._load_checkpoint",
        f"{TRAINER}: online-filter state restored from the resumed folder",
        lambda: require_override(TRAINER_BASE, "_load_checkpoint", f"{TRAINER_BASE}._setup"),
    ),
    Internal(
        "PPOTrainer._val_metrics_update -> metric_utils.bootstrap_metric",
        f"{TRAINER} and recipe/nouscoder/training/validation_bootstrap.py: verl's validation figures, vectorized",
        lambda: (
            require_override(TRAINER_BASE, "_val_metrics_update", f"{TRAINER_BASE}._validate"),
            require_source(f"{TRAINER_BASE}._val_metrics_update", "process_validation_metrics("),
            require_source(
                "verl.trainer.ppo.metric_utils:process_validation_metrics",
                "bootstrap_metric(",
                "reduce_fns=reduce_fns_best_worst",
                "n_bootstrap=n_bootstrap",
                "seed=seed",
            ),
            require_source(
                "verl.trainer.ppo.metric_utils:bootstrap_metric",
                "np.random.seed(seed)",
                "np.random.choice(n_data, size=(n_bootstrap, subset_size), replace=True)",
            ),
        ),
    ),
    # Public hooks and attributes the mixin leans on.
    Internal(
        "PPOTrainer.on_step_begin / step",
        f"{TRAINER}: per-step temperature, refill budget, step metrics",
        lambda: (
            require_override(TRAINER_BASE, "on_step_begin", f"{TRAINER_BASE}.fit"),
            require_override(TRAINER_BASE, "step", f"{TRAINER_BASE}.fit", "metrics", "timing_raw"),
        ),
    ),
    Internal(
        "trainer.v1.trainer_mode compared to 'sync'",
        f"{TRAINER}: reset to the base mode in __init__",
        lambda: (
            require_source(
                f"{TRAINER_BASE}.__init__",
                "self.trainer_mode = self.config.trainer.v1.trainer_mode",
                "self.parameter_sync_step =",
            ),
            resolve("verl.trainer.ppo.v1:register_trainer"),
        ),
    ),
    Internal(
        "PPOTrainerSeparateAsync.get_llm_client",
        "recipe/nouscoder/training/trainer.py: ExtraFieldsClient in its place",
        lambda: (
            require_source(f"{SEPARATE_ASYNC}.get_llm_client", "self.standalone_server_manager.get_client(client_cls="),
            require_parameters("verl.workers.rollout.llm_server:LLMServerManager.get_client", "client_cls"),
        ),
    ),
    Internal(
        "resume rule of PPOTrainer._load_checkpoint",
        f"{TRAINER}: _resumed_checkpoint_folder re-implements it",
        resume_rule_matches_verl,
    ),
    Internal(
        "trainer_separate_async.logger",
        f"{TRAINER}: wrapped to drop print's flush= keyword",
        lambda: require(
            isinstance(
                resolve("verl.trainer.ppo.v1.trainer_separate_async:logger"), logging.Logger | logging.LoggerAdapter
            ),
            "it is no longer a module logger",
        ),
    ),
    # buffer.__class__ swap and the dynamic-sampling internals.
    Internal(
        "buffer.__class__ swap (ReplayBuffer / ReplayBufferAsync)",
        f"{DYNAMIC_SAMPLING}: the built buffer becomes CappedReplayBuffer[Async] in place",
        lambda: buffer_class_can_be_swapped(),
    ),
    Internal(
        "ReplayBuffer._evict_terminal_groups",
        f"{DYNAMIC_SAMPLING}: dropped zero-variance groups counted",
        lambda: (
            require_parameters(
                f"{REPLAY_BUFFER}._evict_terminal_groups", "global_steps", "partition_id", "eviction_reasons"
            ),
            require_source(
                f"{REPLAY_BUFFER}._evict_terminal_groups",
                "stale_uids, dapo_uids, failed_uids, dapo_counts = eviction_reasons",
            ),
            require_source(REPLAY_BUFFER, "self._evict_terminal_groups("),
        ),
    ),
    Internal(
        "ReplayBuffer.filter_groups_metric / refill_fn",
        f"{DYNAMIC_SAMPLING}: the cap pauses filtering",
        lambda: require_source(REPLAY_BUFFER, "self.filter_groups_metric is None", "self.refill_fn("),
    ),
    Internal(
        "ReplayBuffer._dapo_classification_cache / partitions",
        f"{DYNAMIC_SAMPLING}: solved groups' problem ids",
        lambda: require_source(
            REPLAY_BUFFER, "classification_cache = self._dapo_classification_cache[partition_id]", 'key.split("_")[0]'
        ),
    ),
    # Ray actor classes.
    Internal(
        "AgentLoopWorkerTQ.__ray_actor_class__._run_agent_loop",
        "recipe/nouscoder/training/temperature.py: the prompt's staged temperature into sampling_params",
        lambda: (
            require_parameters(
                "verl.trainer.ppo.v1.agent_loop_tq:AgentLoopWorkerTQ.__ray_actor_class__._run_agent_loop",
                "sampling_params",
                "trajectory",
                "agent_name",
                "trace",
            ),
            require_source(
                "verl.trainer.ppo.v1.agent_loop_tq:AgentLoopWorkerTQ.__ray_actor_class__._run_prompt", "**prompt"
            ),
        ),
    ),
    Internal(
        "AgentLoopManagerTQ.agent_loop_workers_class",
        "recipe/nouscoder/training/temperature.py: the manager starts our worker class",
        lambda: (
            require_init_sets("verl.trainer.ppo.v1.agent_loop_tq:AgentLoopManagerTQ", "agent_loop_workers_class"),
            require_source(
                "verl.experimental.agent_loop.agent_loop:AgentLoopManager._init_agent_loop_workers",
                "self.agent_loop_workers_class.options(",
            ),
            require_source(
                "verl.trainer.main_ppo:TaskRunnerV1.__ray_actor_class__.init_agent_loop_manager",
                '.get("agent_loop_manager_class")',
            ),
        ),
    ),
    Internal(
        "TaskRunnerV1.__ray_actor_class__ + run_ppo(task_runner_class=)",
        "recipe/nouscoder/main.py: our TaskRunner registers the trainers where verl looks them up",
        lambda: (
            require_parameters("verl.trainer.main_ppo:TaskRunnerV1.__ray_actor_class__.run", "config"),
            require_parameters("verl.trainer.main_ppo:run_ppo", "config", "task_runner_class"),
        ),
    ),
    Internal(
        "super().__init__ Ray-pickling pitfall",
        "recipe/nouscoder/training/temperature.py, main.py: explicit __init__",
        ray_actor_subclasses_define_init,
    ),
    Internal(
        "VERL_FILE_LOGGER_PATH",
        "recipe/nouscoder/main.py: metrics.jsonl in the run directory",
        lambda: require_source("verl.utils.tracking:FileLogger.__init__", 'os.getenv("VERL_FILE_LOGGER_PATH"'),
    ),
    Internal(
        "extra_fields['reward_extra_info']",
        "recipe/nouscoder/training/step_metrics.py: grading/* from each rollout",
        lambda: require_source(
            "verl.experimental.agent_loop.agent_loop:AgentLoopWorker",
            'extra_fields["reward_extra_info"] = result["reward_extra_info"]',
        ),
    ),
    Internal(
        "FullyAsyncLLMServerClient.generate's super() call",
        "recipe/nouscoder/extra_fields.py: the server's extra_fields recorded below it in the MRO",
        lambda: require_source(
            "verl.workers.rollout.llm_server:FullyAsyncLLMServerClient.generate", "await super().generate("
        ),
    ),
    Internal(
        "rollout_corr_helper._parse_rollout_is_threshold",
        "verl_ext/policy_loss_common.py: the TIS cap C",
        lambda: require_parameters(
            "verl.trainer.ppo.rollout_corr_helper:_parse_rollout_is_threshold", "threshold_spec"
        ),
    ),
    Internal(
        "policy-loss call keywords",
        "verl_ext/policy_loss_*.py: the signature verl calls a loss with",
        lambda: require_source(
            "verl.workers.utils.losses:ppo_loss",
            "old_log_prob=old_log_prob",
            "response_mask=response_mask",
            "loss_agg_mode=loss_agg_mode",
            "config=config",
            "rollout_is_weights=rollout_is_weights",
        ),
    ),
    # The multi-turn agent loop.
    Internal(
        "AgentLoopBase + register",
        "recipe/nouscoder/multi_turn/agent_loop.py: the loop in verl's agent registry",
        lambda: (
            require_parameters("verl.experimental.agent_loop.agent_loop:register", "agent_name"),
            require_parameters("verl.experimental.agent_loop.agent_loop:AgentLoopBase.run", "sampling_params"),
        ),
    ),
    Internal(
        "extra_fields -> tool_extra_fields -> extra_info (naive, limited, remote)",
        "reward_fns/multi_turn.py: the reward reads the trajectory record from extra_info",
        lambda: (
            require_source(
                "verl.experimental.agent_loop.agent_loop:AgentLoopWorker",
                '"tool_extra_fields": np.array([o.extra_fields for o in outputs]',
            ),
            *(
                require_source(
                    f"verl.experimental.reward_loop.reward_manager.{name}",
                    "extra_info.update(tool_extra_fields.items())",
                )
                for name in ("naive", "limited", "remote")
            ),
        ),
    ),
    # The CPU mode.
    Internal(
        "verl.utils.distributed.initialize_global_process_group_ray",
        f"{CPU}plugin.py: single gloo backend",
        lambda: (
            require_parameters(
                "verl.utils.distributed:initialize_global_process_group_ray", "timeout_second", "backend"
            ),
            require_source(
                "verl.utils.distributed:initialize_global_process_group_ray",
                'backend or f"cpu:gloo,{get_device_name()}:{get_nccl_backend()}"',
            ),
        ),
    ),
    Internal(
        "RolloutReplicaRegistry.register",
        f"{CPU}plugin.py: the hf_cpu replica",
        lambda: require_parameters("verl.workers.rollout.replica:RolloutReplicaRegistry.register", "name", "loader"),
    ),
    Internal(
        "rollout base _ROLLOUT_REGISTRY",
        f"{CPU}plugin.py: the hf_cpu server adapter by (name, mode)",
        lambda: (
            require(isinstance(resolve("verl.workers.rollout.base:_ROLLOUT_REGISTRY"), dict), "no longer a dict"),
            require_source("verl.workers.rollout.base:get_rollout_class", "_ROLLOUT_REGISTRY[(rollout_name, mode)]"),
        ),
    ),
    Internal(
        "RolloutReplica / BaseRollout internals",
        f"{CPU}rollout.py: CPUReplica.launch_servers, CPUServerAdapter",
        lambda: (
            require_init_sets(
                "verl.workers.rollout.replica:RolloutReplica",
                "world_size",
                "workers",
                "replica_rank",
                "name_suffix",
                "servers",
                "_server_address",
                "_server_handle",
            ),
            resolve("verl.workers.rollout.replica:RolloutReplica.max_concurrency"),
            require_parameters(
                "verl.workers.rollout.base:BaseRollout.__init__", "config", "model_config", "device_mesh"
            ),
        ),
    ),
    Internal(
        "CheckpointEngineRegistry + split/merge_weight_chunks",
        f"{CPU}checkpoint_engine.py: cpu_gloo",
        lambda: (
            require_parameters("verl.checkpoint_engine.base:CheckpointEngineRegistry.register", "backend"),
            require_parameters("verl.checkpoint_engine.base:split_weight_chunks", "weights", "bucket_size"),
            resolve("verl.checkpoint_engine.base:merge_weight_chunks"),
            resolve("verl.checkpoint_engine.base:TensorMeta"),
            require_abstract_methods_within(
                "verl.checkpoint_engine.base:CheckpointEngine",
                resolve("recipe.nouscoder.cpu.checkpoint_engine:GlooCheckpointEngine"),
            ),
        ),
    ),
    Internal(
        "EngineRegistry + VERL_ENGINE_DEVICE",
        f"{CPU}__init__.py: verl's FSDP engine selected on CPU",
        lambda: require_source(
            "verl.workers.engine.base:EngineRegistry.get_engine_cls", 'os.getenv("VERL_ENGINE_DEVICE")'
        ),
    ),
    Internal(
        "PlatformRegistry / set_platform",
        f"{CPU}plugin.py, platform.py: the cpu platform",
        lambda: (
            require_parameters("verl.plugin.platform.platform_manager:PlatformRegistry.register", "platform"),
            require_parameters("verl.plugin.platform.platform_manager:PlatformRegistry.get", "name"),
            require_parameters("verl.plugin.platform.platform_manager:set_platform", "platform"),
            require_source("verl.plugin.platform.platform_manager", 'os.environ.get("VERL_PLATFORM"'),
            require_abstract_methods_within(
                "verl.plugin.platform.platform_base:PlatformBase", resolve("recipe.nouscoder.cpu.platform:CPUPlatform")
            ),
        ),
    ),
    Internal(
        "PPOTrainer._rollout_server_managers + vLLMHttpServer.engine",
        "recipe/nouscoder/training/rollout_shutdown.py: the vLLM engines shut down at the end of a run",
        lambda: (
            require_parameters(f"{TRAINER_BASE}._rollout_server_managers"),
            require_source(f"{SEPARATE_ASYNC}._rollout_server_managers", "standalone_server_manager"),
            require_source(f"{VLLM_SERVER}.generate", "self.engine.generate("),
        ),
        needs_vllm=True,
    ),
    Internal(
        "vLLMColocateWorkerExtension.update_weights_from_ipc",
        f"{CPU}vllm_weight_sync.py: the weight sync into vLLM on CPU overrides it",
        lambda: (
            require_parameters(
                f"{VLLM_MODULES}.utils:vLLMColocateWorkerExtension.update_weights_from_ipc",
                "peft_config",
                "base_sync_done",
                "use_shm",
            ),
            require_source(f"{VLLM_MODULES}.utils:vLLMColocateWorkerExtension._get_zmq_handle", "replica"),
            require_parameters(
                f"{VLLM_MODULES}.bucketed_weight_transfer:BucketedWeightReceiver.receive_weights", "on_bucket_received"
            ),
        ),
        needs_vllm=True,
    ),
    Internal(
        "extract_prompt_logprobs",
        f"{CPU}known_answer_client.py and rollout.py: the prompt log-probs format both engines return",
        lambda: require_source(
            f"{VLLM_MODULES}.utils:extract_prompt_logprobs",
            "output.prompt_logprobs[1:]",
            'result_dict["prompt_logprobs"] = prompt_logprobs_ls',
            'result_dict["prompt_ids"] = prompt_ids_ls',
        ),
        needs_vllm=True,
    ),
    Internal(
        "fsdp2_sharded_save_to_cpu as DetachActorWorker's pi_old snapshot",
        f"{CPU}snapshots.py: the snapshot copied on CPU",
        lambda: (
            require_parameters("verl.utils.fsdp_utils:fsdp2_sharded_save_to_cpu", "model"),
            require_source(
                "verl.experimental.separation.engine_workers:DetachActorWorker._get_strategy_handlers",
                "from verl.utils.fsdp_utils import (",
                "fsdp2_sharded_save_to_cpu,",
            ),
        ),
    ),
    Internal(
        "VERL_USE_EXTERNAL_MODULES",
        f"{CPU}__init__.py: every Ray process imports the CPU plugin",
        lambda: require(
            'os.getenv("VERL_USE_EXTERNAL_MODULES"' in Path(verl.__file__).read_text(encoding="utf-8"),
            "verl/__init__.py no longer reads it",
        ),
    ),
    # The cluster path (launch/).
    Internal(
        "NCCL checkpoint engine imports cupy; checkpoint_engine/__init__ swallows the ImportError",
        "launch/bill_of_materials.py: cupy for the NCCL backends, the lookup's error read; setup.py's gpu extra",
        lambda: (
            require("import cupy as cp" in module_text("verl.checkpoint_engine.nccl_checkpoint_engine"), "no cupy"),
            require_source("verl.checkpoint_engine", 'record_import_error("nccl_checkpoint_engine", e)'),
            require_source("verl.checkpoint_engine.base:CheckpointEngineRegistry.get", "Engine modules that failed"),
            require(
                'cupy-cuda13x==14.0.1; extra == "cupy-cu130"' in (importlib.metadata.requires("verl") or []),
                "verl's cupy-cu130 extra no longer pins cupy-cuda13x==14.0.1",
            ),
        ),
    ),
    Internal(
        "NCCL engine's buffers from cupy's pool, finalize empties torch's cache only",
        "recipe/nouscoder/training/nccl_release.py: frees cupy's pool after finalize (unneeded once verl does)",
        lambda: (
            require(
                "self.send_buf = cp.zeros(self.bucket_size, dtype=cp.uint8)"
                in module_text("verl.checkpoint_engine.nccl_checkpoint_engine"),
                "prepare no longer allocates rank 0's buckets through cupy",
            ),
            require(
                "free_all_blocks" not in module_text("verl.checkpoint_engine.nccl_checkpoint_engine"),
                "verl now frees cupy's pool itself: drop nccl_release.py",
            ),
            require_source("verl.checkpoint_engine.base:CheckpointEngineWorker.__init__", "custom_backend_module"),
        ),
    ),
    Internal(
        "workers refuse ROCR_VISIBLE_DEVICES beside CUDA_VISIBLE_DEVICES",
        "launch/lib/ray_node.sh: unsets the ROCR_VISIBLE_DEVICES Slurm's gres/gpu exports before ray start",
        lambda: require_source(
            "verl.single_controller.base.worker:Worker._setup_env_cuda_visible_devices",
            "Please don't set ROCR_VISIBLE_DEVICES when HIP/CUDA_VISIBLE_DEVICES is set.",
        ),
    ),
    Internal(
        "get_rollout_replica_class + get_rollout_class + _agent_loop_registry",
        "launch/bill_of_materials.py: the rollout backend and agent loop looked up as verl looks them up",
        lambda: (
            require_parameters("verl.workers.rollout.replica:get_rollout_replica_class", "rollout"),
            require_parameters("verl.workers.rollout.base:get_rollout_class", "rollout_name", "mode"),
            require(isinstance(resolve("verl.experimental.agent_loop.agent_loop:_agent_loop_registry"), dict), "gone"),
        ),
    ),
    Internal(
        "attn_implementation default flash_attention_2",
        "launch/bill_of_materials.py: flash-attn needed unless the config names another attention",
        lambda: require_source(
            "verl.workers.config.model:HFModelConfig.__post_init__",
            'self.override_config.get("attn_implementation", "flash_attention_2")',
        ),
    ),
    Internal(
        "fsdp_size mesh + a checkpoint shard per rank",
        "launch/run_plan.py, disk_plan.py: HSDP replicas, each saved (checkpoint size, save time, retention)",
        lambda: (
            require_source(
                "verl.workers.engine.fsdp.utils:create_device_mesh",
                "mesh_shape=(world_size // fsdp_size, fsdp_size)",
            ),
            require_source(
                "verl.utils.checkpoint.fsdp_checkpoint_manager:FSDPCheckpointManager.save_checkpoint",
                'f"optim_world_size_{self.world_size}_rank_{self.rank}.pt"',
            ),
        ),
    ),
    Internal(
        "val_before_train on every fit + the validation dump's keys",
        "launch/stage_chain.sh: off on a resume; launch/offline_filter.py: the reward's verdict and problem_id per line",
        lambda: (
            require_source(f"{TRAINER_BASE}.fit", 'self.config.trainer.get("val_before_train", True)'),
            require_source(f"{TRAINER_BASE}._write_generations", '"gts": gts', "for k, v in reward_extra_infos_dict"),
        ),
    ),
    Internal(
        "_validate keeps reward_model.ground_truth, never fetches extra_info",
        "launch/offline_filter.py prepare + recipe/nouscoder/training/stage0_reward.py: stage 0's tests in extra_info",
        lambda: require_source(
            f"{TRAINER_BASE}._validate",
            'fields = ["uid", "rm_scores", "num_turns", "reward_model", "data_source", "extra_fields"]',
            'sample_gts.extend([item.get("ground_truth", None) for item in reward_model.tolist()])',
        ),
    ),
    Internal(
        "fit: on_step_end after the step's save, the loop while global_steps <= total_training_steps",
        "recipe/nouscoder/training/trainer.py on_step_end: the stop before the time limit saves and ends the loop",
        lambda: (
            require_source(f"{TRAINER_BASE}.fit", "self.global_steps <= self.total_training_steps"),
            require(
                0
                < (fit := source_of(f"{TRAINER_BASE}.fit")).find("self._save_checkpoint()")
                < fit.find("self.on_step_end()"),
                "fit no longer saves the step before on_step_end",
            ),
        ),
    ),
    Internal(
        "create_rl_dataset + filter_overlong_prompts",
        "recipe/nouscoder/run/validation_coverage.py: the validation set built as the trainer builds it",
        lambda: (
            require_parameters(
                "verl.trainer.ppo.utils:create_rl_dataset",
                "data_paths",
                "data_config",
                "tokenizer",
                "processor",
                "is_train",
                "max_samples",
            ),
            require_source(
                "verl.utils.dataset.rl_dataset:RLHFDataset.maybe_filter_out_long_prompts",
                "if self.filter_overlong_prompts:",
            ),
        ),
    ),
]


def where_importable(value, needs_vllm: bool):
    """A parameter, skipped in a venv without vLLM (the vLLM-on-CPU tier checks it, with ``make test-vllm-cpu``)."""
    skip = pytest.mark.skipif(needs_vllm and not HAS_VLLM, reason="needs vLLM: checked by make test-vllm-cpu")
    return pytest.param(value, marks=skip)


@pytest.mark.parametrize(
    "internal",
    [where_importable(internal, internal.needs_vllm) for internal in CONTRACT],
    ids=[internal.name for internal in CONTRACT],
)
def test_verl_internal_is_where_we_rely_on_it(internal: Internal):
    try:
        internal.check()
        broken = None
    except ContractBroken as exc:
        broken = str(exc)
    if broken is not None:
        pytest.fail(
            f"verl {verl.__version__}: {internal.name} moved ({broken}).\n"
            f"  relied on by {internal.used_by}\n"
            f'  adapt that code to the new verl, then this entry (docs/DESIGN.md "verl internals we rely on")',
            pytrace=False,
        )


def names_defined_in(module: str) -> set[str]:
    """The top-level names a module's source binds (classes, functions, assignments, imports), without importing it."""
    names = set()
    for node in ast.parse(module_text(module)).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.With):  # verl imports cupy inside a `with patch(...)` block
            names.update(name for inner in node.body for name in names_of_import(inner))
    return names


def names_of_import(node: ast.stmt) -> list[str]:
    return [alias.asname or alias.name for alias in node.names] if isinstance(node, ast.Import | ast.ImportFrom) else []


@pytest.mark.parametrize(
    "imported",
    [where_importable(imported, imported[0].startswith(VLLM_MODULES)) for imported in our_verl_imports()],
    ids=lambda imported: f"{imported[0]}-{imported[1] or '-'}",
)
def test_every_verl_name_we_import_resolves(imported: tuple[str, str]):
    module, name = imported
    try:
        if module in CUPY_MODULES and not HAS_CUPY:  # importing it needs cupy: read its source instead
            require(name in names_defined_in(module), f"{module} no longer defines {name}")
        else:
            resolve(f"{module}:{name}")
        broken = None
    except ContractBroken as exc:
        broken = str(exc)
    if broken is not None:
        pytest.fail(f"verl {verl.__version__}: `from {module} import {name}` fails ({broken})", pytrace=False)


def test_verl_is_the_pinned_version():
    assert verl.__version__ == PINNED_VERL, (
        f"verl {verl.__version__} is installed, the contract was checked against {PINNED_VERL} (setup.py pin)"
    )


def test_design_lists_every_internal():
    design = DESIGN.read_text(encoding="utf-8")
    missing = [internal.name for internal in CONTRACT if f"`{internal.name}`" not in design]
    assert not missing, f'docs/DESIGN.md "verl internals we rely on" lacks {missing}'


def test_a_renamed_internal_fails_naming_it_and_its_user(monkeypatch):
    """The contract can fail: verl renaming ``_next_train_batch`` is reported with the file that overrides it."""
    base = resolve(TRAINER_BASE)
    monkeypatch.setattr(base, "_next_train_batch_v2", base._next_train_batch, raising=False)
    monkeypatch.delattr(base, "_next_train_batch")
    entry = next(internal for internal in CONTRACT if internal.name == "PPOTrainer._next_train_batch")
    with pytest.raises(ContractBroken, match="PPOTrainer has no attribute '_next_train_batch'"):
        entry.check()
    with pytest.raises(pytest.fail.Exception, match="relied on by recipe/nouscoder/training/trainer.py"):
        test_verl_internal_is_where_we_rely_on_it(entry)
