"""verl platform ``cpu``: run verl's FSDP engine and Ray worker groups on CPU only.

verl 0.9.1 ships CUDA, NPU and ROCm platforms and falls back to CUDA when no accelerator is found
(``verl/plugin/platform/platform_manager.py``). This platform is selected with ``VERL_PLATFORM=cpu`` once
``recipe.nouscoder.cpu.plugin`` has registered it (the CPU mode sets both for every Ray process).

Devices are *logical*: verl's placement groups and worker groups count the Ray resource named by
``ray_resource_name()`` ("GPU"), so the CPU mode starts Ray with ``num_gpus=N`` logical GPUs that no code uses as a
GPU; each one is a slot for one FSDP rank or one rollout server. Collectives use gloo.
"""

from __future__ import annotations

import resource
from contextlib import contextmanager
from types import ModuleType

import psutil
import torch
from verl.plugin.platform.platform_base import PlatformBase

RAY_DEVICE_RESOURCE = "GPU"


def _peak_rss_bytes(*_args, **_kwargs) -> int:
    """Peak resident memory of this process (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _current_rss_bytes(*_args, **_kwargs) -> int:
    return psutil.Process().memory_info().rss


def _host_memory_info(*_args, **_kwargs) -> tuple[int, int]:
    memory = psutil.virtual_memory()
    return memory.available, memory.total


class CPUDeviceModule(ModuleType):
    """``torch.cpu`` plus the ``torch.cuda``-style calls verl makes on its device module.

    Memory statistics report host memory of this process: ``max_memory_allocated`` is its peak RSS and
    ``memory_allocated`` its current RSS, so verl's ``perf/max_memory_*`` metrics show each worker's RSS.
    """

    def __init__(self) -> None:
        super().__init__("nouscoder_cpu_device")

    def __getattr__(self, name: str):
        return getattr(torch.cpu, name)

    is_available = staticmethod(lambda: True)
    current_device = staticmethod(lambda: "cpu")
    device_count = staticmethod(lambda: 1)
    set_device = staticmethod(lambda _index: None)
    synchronize = staticmethod(lambda *_args: None)
    is_initialized = staticmethod(lambda: True)
    manual_seed = staticmethod(torch.manual_seed)
    manual_seed_all = staticmethod(torch.manual_seed)
    get_rng_state = staticmethod(torch.get_rng_state)
    set_rng_state = staticmethod(torch.set_rng_state)
    empty_cache = staticmethod(lambda: None)
    reset_peak_memory_stats = staticmethod(lambda *_args: None)
    get_device_name = staticmethod(lambda *_args: "CPU")
    max_memory_allocated = staticmethod(_peak_rss_bytes)
    max_memory_reserved = staticmethod(_peak_rss_bytes)
    memory_allocated = staticmethod(_current_rss_bytes)
    memory_reserved = staticmethod(_current_rss_bytes)
    mem_get_info = staticmethod(_host_memory_info)


class CPUPlatform(PlatformBase):
    """The verl platform of the CPU mode: device ``cpu``, gloo collectives, logical Ray "GPU" slots."""

    device_name = "cpu"
    vendor_name = "cpu"
    device_module = CPUDeviceModule()

    def is_available(self) -> bool:
        return True

    def current_device(self) -> str:
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        pass

    def synchronize(self, device_index: int | None = None) -> None:
        pass

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        pass

    def empty_cache(self) -> None:
        pass

    def get_device_capability(self, device_index: int = 0) -> tuple[None, None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"  # what Ray sets for the logical "GPU" resource; nothing reads it on CPU

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        pass

    def profiler_stop(self) -> None:
        pass

    def ray_resource_name(self) -> str:
        return RAY_DEVICE_RESOURCE

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> None:
        return None
