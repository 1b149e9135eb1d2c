"""What every process of a CPU-mode run imports: ``VERL_USE_EXTERNAL_MODULES=recipe.nouscoder.cpu.plugin``.

``import verl`` imports the modules named in ``VERL_USE_EXTERNAL_MODULES`` (``verl/__init__.py``), and the CPU
mode puts that variable in the Ray runtime environment, so the driver, the TaskRunner and every worker, rollout
server and reward actor run this once, before any verl engine module is imported. It:

1. registers the ``cpu`` platform (selected by ``VERL_PLATFORM=cpu``, also in the runtime environment);
2. makes verl's default process-group backend valid on CPU: ``initialize_global_process_group_ray`` builds
   ``"cpu:gloo,{device}:{backend}"``, which on this platform is ``"cpu:gloo,cpu:gloo"`` and torch rejects the
   duplicate device type (``verl/utils/distributed.py``); with no backend given it now uses ``"cpu:gloo"``;
3. registers the rollout backend ``hf_cpu`` (``actor_rollout_ref.rollout.name=hf_cpu``) in verl's two rollout
   registries, lazily, so that the rollout module is imported only where a rollout is built;
4. makes the separate-async trainer's pi_old snapshot a copy on CPU (``snapshots.py``).

The checkpoint engine ``cpu_gloo`` is registered by ``recipe.nouscoder.cpu.checkpoint_engine``, which verl imports
itself through ``actor_rollout_ref.rollout.checkpoint_engine.custom_backend_module``.
"""

from __future__ import annotations

import functools
import importlib

import verl.utils.distributed as verl_distributed
from verl.plugin.platform.platform_manager import PlatformRegistry
from verl.workers.rollout import base as rollout_base
from verl.workers.rollout.replica import RolloutReplicaRegistry

from recipe.nouscoder.cpu.platform import CPUPlatform
from recipe.nouscoder.cpu.snapshots import use_copying_snapshots

PLATFORM_NAME = "cpu"
ROLLOUT_NAME = "hf_cpu"
ROLLOUT_MODULE = "recipe.nouscoder.cpu.rollout"
CPU_PROCESS_GROUP_BACKEND = "cpu:gloo"


def _register_platform() -> None:
    if PlatformRegistry.get(PLATFORM_NAME) is not CPUPlatform:
        PlatformRegistry.register(platform=PLATFORM_NAME)(CPUPlatform)


def _use_single_gloo_backend() -> None:
    original = verl_distributed.initialize_global_process_group_ray
    if getattr(original, "nouscoder_cpu", False):
        return

    @functools.wraps(original)  # inspect.unwrap finds verl's function (tests/test_verl_contract.py reads its source)
    def initialize_global_process_group_ray(timeout_second=None, backend=None):
        return original(timeout_second=timeout_second, backend=backend or CPU_PROCESS_GROUP_BACKEND)

    initialize_global_process_group_ray.nouscoder_cpu = True  # type: ignore[attr-defined]  # a mark on the function object
    verl_distributed.initialize_global_process_group_ray = initialize_global_process_group_ray


def _register_rollout() -> None:
    RolloutReplicaRegistry.register(ROLLOUT_NAME, lambda: importlib.import_module(ROLLOUT_MODULE).CPUReplica)
    rollout_base._ROLLOUT_REGISTRY[(ROLLOUT_NAME, "async")] = f"{ROLLOUT_MODULE}.CPUServerAdapter"


_register_platform()
_use_single_gloo_backend()
_register_rollout()
use_copying_snapshots()
