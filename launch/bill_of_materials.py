"""The cluster's bill of materials: what a node must import and construct to run an experiment config.

Derived from the composed config (the keys that select a package or a registry entry; `bill_of_materials`), and
checked three times, so that a missing piece fails before a GPU-hour is spent, not 10-15 minutes into a 48-GPU job:

1. in CI, against `make gpu-deps-check`'s pip resolution of the `[gpu]` extra (`launch/check_gpu_deps.py`): every
   distribution a GPU config needs must be in it, at verl 0.9.1's own pin;
2. at the end of `make setup-gpu`, on the machine just installed: `python launch/bill_of_materials.py check`;
3. on every node of a Slurm job through `srun`, before Ray starts (`launch/lib/ray_slurm.sh`, `BOM_CHECK`), from the
   manifest the launcher wrote for the job's configs: the job fails at once naming the node and the missing piece.

A check imports each module (a module verl imports lazily, or whose ImportError verl swallows, as
`verl/checkpoint_engine/__init__.py` does for cupy) and looks up each registry entry the config names (rollout
backend, checkpoint engine, trainer mode, estimator, loss, agent loop, reward function) with verl's own lookup.

    python launch/bill_of_materials.py check                       # every GPU experiment config of configs/
    python launch/bill_of_materials.py check --config dapo_32k [overrides...]
    python launch/bill_of_materials.py check --manifest FILE       # what the launcher wrote for a job
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import socket
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, packages_distributions, requires, version
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from site_check import NCCL_BACKENDS

# Requirement lines of verl's own metadata: `NAME==VERSION; extra == "EXTRA"`.
VERL_EXTRA_PIN = re.compile(r'^([A-Za-z0-9_.-]+)==(\S+); extra == "([^"]+)"$')
CUPY_EXTRA = re.compile(r"^cupy-cu\d+$")


@dataclass(frozen=True)
class Part:
    """One piece a config needs. `module` is imported; `lookup` = (registry, name) is looked up with verl's code;
    `distribution` is the pip distribution that provides `module`, pinned to `pin` where verl pins it."""

    name: str
    selected_by: str
    module: str | None = None
    distribution: str | None = None
    pin: str | None = None
    lookup: tuple[str, str] | None = None

    def describe(self) -> str:
        provided = f" ({self.distribution}{'==' + self.pin if self.pin else ''})" if self.distribution else ""
        return f"{self.name}{provided}, needed by {self.selected_by}"


@cache
def verl_extra_pins() -> dict[str, dict[str, str]]:
    """{verl extra: {distribution: pinned version}} from the installed verl's metadata (one source for the pins)."""
    pins: dict[str, dict[str, str]] = {}
    for requirement in requires("verl") or []:
        match = VERL_EXTRA_PIN.match(requirement.strip())
        if match:
            distribution, pinned, extra = match.groups()
            pins.setdefault(extra, {})[distribution.lower()] = pinned
    return pins


def verl_pin(distribution: str) -> str | None:
    """The version verl's extras pin `distribution` to (vllm, flash-attn, cupy-cuda13x, ...), if any."""
    found = {pins[distribution] for pins in verl_extra_pins().values() if distribution in pins}
    return found.pop() if len(found) == 1 else None


def cupy_distribution() -> str:
    """The cupy build of verl's `cupy-cu<CUDA>` extra (cupy-cuda13x for verl 0.9.1's CUDA 13.0 pin set)."""
    builds = {dist for extra, pins in verl_extra_pins().items() if CUPY_EXTRA.match(extra) for dist in pins}
    if len(builds) != 1:
        raise RuntimeError(f"verl's metadata names {sorted(builds) or 'no'} cupy build(s) in a cupy-cu* extra")
    return builds.pop()


def _package(distribution: str, module: str, name: str, selected_by: str, **extra) -> Part:
    return Part(name, selected_by, module=module, distribution=distribution, pin=verl_pin(distribution), **extra)


def _lookup(label: str, key: str, value: str, registry: str, name: str | None = None) -> Part:
    """A registry entry `key=value` selects, looked up in `registry` under `name` (default: the value)."""
    return Part(f"{label} {value}", f"{key}={value}", lookup=(registry, name or value))


def bill_of_materials(config: DictConfig) -> list[Part]:
    """What `config` needs on every node, modules before the registry lookups that need them."""
    from recipe.nouscoder.cpu import PLUGIN_MODULE, is_cpu_mode
    from recipe.nouscoder.multi_turn import AGENT_LOOP_MODULE, uses_multi_turn

    rollout = config.actor_rollout_ref.rollout
    backend, loop = rollout.checkpoint_engine.backend, rollout.agent.default_agent_loop
    parts = [
        _package("verl", "verl", "verl", "every config"),
        _package("ray", "ray", "Ray", "every config"),
        _package("transferqueue", "transfer_queue", "TransferQueue", "verl's V1 trainer (every config)"),
    ]
    # Modules verl loads by name in every process (VERL_USE_EXTERNAL_MODULES), as recipe.nouscoder.main sets them.
    if is_cpu_mode(config):
        parts.append(Part("the CPU mode's plugin", "trainer.device=cpu", module=PLUGIN_MODULE))
    if uses_multi_turn(config):
        key = f"actor_rollout_ref.rollout.agent.default_agent_loop={loop}"
        parts.append(Part("the multi-turn agent loop", key, module=AGENT_LOOP_MODULE))
    if backend in NCCL_BACKENDS:
        # verl/checkpoint_engine/nccl_checkpoint_engine.py imports cupy at module level; __init__ swallows the error.
        key = f"actor_rollout_ref.rollout.checkpoint_engine.backend={backend}"
        parts.append(_package(cupy_distribution(), "cupy", "cupy (verl's NCCL weight sync)", key))
    if rollout.checkpoint_engine.get("custom_backend_module"):
        module = rollout.checkpoint_engine.custom_backend_module
        parts.append(Part("checkpoint-engine module", "rollout.checkpoint_engine.custom_backend_module", module=module))
    if rollout.name == "vllm":
        parts.append(_package("vllm", "vllm", "vLLM", "actor_rollout_ref.rollout.name=vllm"))
    attention = OmegaConf.select(config, "actor_rollout_ref.model.override_config.attn_implementation")
    if (attention or "flash_attention_2") == "flash_attention_2":
        # verl's model config defaults to flash_attention_2 (verl/workers/config/model.py); transformers needs the
        # package for it, and verl's remove-padding / Ulysses paths use its kernels.
        key = "actor_rollout_ref.model.override_config.attn_implementation=flash_attention_2 (verl's default)"
        parts.append(_package("flash-attn", "flash_attn", "flash-attn", key))
    loss = OmegaConf.select(config, "actor_rollout_ref.actor.policy_loss.loss_mode")
    parts += [
        _lookup(
            "rollout backend",
            "actor_rollout_ref.rollout.name",
            rollout.name,
            "rollout",
            f"{rollout.name}:{rollout.mode}",
        ),
        _lookup(
            "checkpoint engine", "actor_rollout_ref.rollout.checkpoint_engine.backend", backend, "checkpoint_engine"
        ),
        _lookup("trainer", "trainer.v1.trainer_mode", config.trainer.v1.trainer_mode, "trainer"),
        _lookup("advantage estimator", "algorithm.adv_estimator", config.algorithm.adv_estimator, "adv_estimator"),
        _lookup("policy loss", "actor_rollout_ref.actor.policy_loss.loss_mode", loss, "policy_loss"),
        _lookup("agent loop", "actor_rollout_ref.rollout.agent.default_agent_loop", loop, "agent_loop"),
    ]
    reward = config.reward.custom_reward_function
    if reward.path:
        entry = f"{reward.path}:{reward.name}"
        parts.append(
            Part(f"reward function {entry}", "reward.custom_reward_function.path", lookup=("reward_function", entry))
        )
    if "wandb" in (OmegaConf.select(config, "trainer.logger") or []):
        parts.append(_package("wandb", "wandb", "wandb", "trainer.logger=[...wandb]"))
    return parts


# ----------------------------------------------------------------- lookups, each with verl's own code


def _rollout(name: str) -> None:
    from verl.workers.rollout.base import get_rollout_class
    from verl.workers.rollout.replica import get_rollout_replica_class

    backend, mode = name.split(":")
    get_rollout_replica_class(backend)
    get_rollout_class(backend, mode)


def _checkpoint_engine(name: str) -> None:
    from verl.checkpoint_engine import CheckpointEngineRegistry

    CheckpointEngineRegistry.get(name)


def _trainer(name: str) -> None:
    from verl.trainer.ppo.v1 import get_trainer_cls

    import recipe.nouscoder.training.trainer  # noqa: F401  registers nouscoder_sync / nouscoder_separate_async

    get_trainer_cls(name)


def _adv_estimator(name: str) -> None:
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    get_adv_estimator_fn(name)


def _policy_loss(name: str) -> None:
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    get_policy_loss_fn(name)


def _agent_loop(name: str) -> None:
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

    if name not in _agent_loop_registry:
        raise KeyError(f"agent loop {name!r} not registered; registered: {sorted(_agent_loop_registry)}")


def _reward_function(name: str) -> None:
    from verl.utils.import_utils import load_extern_object

    path, _, function = name.rpartition(":")
    load_extern_object(module_path=path, object_name=function)


LOOKUPS: dict[str, Callable[[str], None]] = {
    "rollout": _rollout,
    "checkpoint_engine": _checkpoint_engine,
    "trainer": _trainer,
    "adv_estimator": _adv_estimator,
    "policy_loss": _policy_loss,
    "agent_loop": _agent_loop,
    "reward_function": _reward_function,
}


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def problem_of(part: Part) -> str | None:
    """None when `part` is present here; else what is wrong, in one line."""
    try:
        if part.module:
            importlib.import_module(part.module)
        if part.lookup:
            registry, name = part.lookup
            LOOKUPS[registry](name)
    except Exception as error:  # anything a broken install raises: ImportError, OSError of a .so, ValueError, ...
        return _first_line(error)
    if part.distribution and part.pin:
        try:
            installed = version(part.distribution)
        except PackageNotFoundError:
            top = part.module.split(".")[0] if part.module else ""
            others = packages_distributions().get(top, [])
            return f"{part.module} imports, but from {others or 'an unknown distribution'}, not {part.distribution}=={part.pin}"
        if installed.split("+")[0] != part.pin:
            return f"{part.distribution} {installed} is installed; verl 0.9.1 pins {part.pin}"
    return None


@dataclass(frozen=True)
class Entry:
    """A part and the configs that need it: one line of the manifest the node check reads."""

    part: Part
    configs: tuple[str, ...]

    def to_json(self) -> dict:
        return {**asdict(self.part), "configs": list(self.configs)}

    @classmethod
    def from_json(cls, data: dict) -> Entry:
        fields = {key: value for key, value in data.items() if key != "configs"}
        lookup = tuple(fields["lookup"]) if fields.get("lookup") else None
        return cls(Part(**{**fields, "lookup": lookup}), tuple(data["configs"]))


def merged(per_config: dict[str, list[Part]]) -> list[Entry]:
    """One entry per distinct part, with the configs that need it, in first-seen order."""
    configs: dict[Part, list[str]] = {}
    for config_name, parts in per_config.items():
        for part in parts:
            configs.setdefault(part, []).append(config_name)
    return [Entry(part, tuple(names)) for part, names in configs.items()]


def check(entries: Iterable[Entry]) -> list[tuple[Entry, str | None]]:
    """Each entry with what is wrong with it here (None: present)."""
    return [(entry, problem_of(entry.part)) for entry in entries]


def report(results: list[tuple[Entry, str | None]], node: str) -> list[str]:
    """One line per missing part: `node N: NAME (DIST==PIN), needed by KEY in CONFIGS: PROBLEM`."""
    return [
        f"node {node}: {entry.part.describe()} in {', '.join(entry.configs)}: {problem}"
        for entry, problem in results
        if problem
    ]


def gpu_experiment_configs(overrides: list[str]) -> dict[str, DictConfig]:
    """The experiment configs that run on GPUs, composed: every one but the CPU mode's (`trainer.device=cpu`)."""
    from recipe.nouscoder.configs import (  # hydra, verl: only where configs are composed
        compose_experiment,
        experiment_names,
    )

    composed = {name: compose_experiment(name, overrides) for name in experiment_names()}
    return {name: config for name, config in composed.items() if config.trainer.get("device") != "cpu"}


def manifest_of(configs: dict[str, DictConfig]) -> list[Entry]:
    """The merged bill of materials of composed configs."""
    return merged({name: bill_of_materials(config) for name, config in configs.items()})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python launch/bill_of_materials.py",
        description="Import every module and look up every registry entry that experiment configs need, on this "
        "machine; exit 1 naming each missing piece.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    checker = sub.add_parser(
        "check", help="check this machine (default: every GPU experiment config of configs/)", description=__doc__
    )
    checker.add_argument("--config", action="append", help="an experiment config (repeatable); default: every GPU one")
    checker.add_argument("--manifest", type=Path, help="a manifest the launcher wrote (JSON), instead of --config")
    checker.add_argument("--node", default=None, help="the node name the messages give (default: this host's name)")
    checker.add_argument("overrides", nargs="*", help="hydra overrides of the configs (with --config)")
    args = parser.parse_args(argv)
    node = args.node or socket.gethostname().split(".")[0]
    if args.manifest:
        entries = [Entry.from_json(item) for item in json.loads(args.manifest.read_text())]
    else:
        from recipe.nouscoder.configs import compose_experiment

        configs = (
            {name: compose_experiment(name, args.overrides) for name in args.config}
            if args.config
            else gpu_experiment_configs(args.overrides)
        )
        entries = manifest_of(configs)
    results = check(entries)
    for entry, problem in results:
        print(f"bill_of_materials: [{'missing' if problem else 'ok'}] {entry.part.describe()}")
    problems = report(results, node)
    if problems:
        print(f"bill_of_materials: {len(problems)} of {len(entries)} parts missing on node {node}:", file=sys.stderr)
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"bill_of_materials: node {node} has all {len(entries)} parts")


if __name__ == "__main__":
    main()
