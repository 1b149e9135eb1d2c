"""Peak memory per role (trainer, rollout), logged by the trainer every step, so that a rehearsal and the real run
report it alike (``nouscoder/memory/<role>_peak_gb``: the largest of the role's devices since the step before, in GB).

- On GPUs (``gpu``): the device memory NVML reports in use on each GPU the role's workers hold: everything on it,
  torch's allocator, NCCL's and cupy's buffers (the weight sync's), vLLM's weights and KV cache, which verl's own
  ``perf/max_memory_allocated_gb`` (torch's allocator of the trainer) leaves out. The role's GPUs are found by their
  UUIDs inside its worker actors (``ActorHandle.__ray_call__``), so CUDA_VISIBLE_DEVICES and device order do not matter.
- In the CPU mode: the resident memory of the role's worker processes and their children (psutil), under the same key.

One sampler actor per node (no CPU, no GPU reserved) reads them every ``SAMPLE_S`` and keeps the peak until the
trainer takes it. Roles that share their workers (the colocated sync trainer) are reported once, as ``trainer``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

logger = logging.getLogger(__name__)
SAMPLE_S = 0.5
MEMORY_KEY = "nouscoder/memory/{role}_peak_gb"


def where(actor: Any) -> dict:
    """Run inside a worker actor (through ``__ray_call__``): its node, process and the UUIDs of its CUDA devices."""
    import torch

    uuids = []
    if torch.cuda.is_available():
        uuids = [f"GPU-{torch.cuda.get_device_properties(index).uuid}" for index in range(torch.cuda.device_count())]
    return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid(), "uuids": uuids}


def process_tree_rss(pid: int) -> int:
    import psutil

    try:
        root = psutil.Process(pid)
        return sum(process.memory_info().rss for process in [root, *root.children(recursive=True)])
    except psutil.Error:
        return 0


def gpu_used(uuid: str) -> int:
    import pynvml

    return int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByUUID(uuid)).used)


@ray.remote(num_cpus=0)
class MemorySampler:
    """Samples this node's part of each role every SAMPLE_S; `take_peaks` returns {role: peak bytes} and resets."""

    def __init__(self, watched: dict[str, dict[str, list]], interval_s: float = SAMPLE_S) -> None:
        self.watched = watched  # {role: {"uuids": [...], "pids": [...]}}
        self.peaks: dict[str, int] = {}
        self.lock = threading.Lock()
        if any(parts["uuids"] for parts in watched.values()):
            import pynvml

            pynvml.nvmlInit()
        self.interval_s = interval_s
        threading.Thread(target=self._run, daemon=True).start()

    def _sample(self) -> dict[str, int]:
        now = {}
        for role, parts in self.watched.items():
            if parts["uuids"]:  # on GPUs the largest device of the role; else the largest process tree
                now[role] = max(gpu_used(uuid) for uuid in parts["uuids"])
            else:
                now[role] = max((process_tree_rss(pid) for pid in parts["pids"]), default=0)
        return now

    def _run(self) -> None:
        while True:
            try:
                sample = self._sample()
            except Exception as error:  # a process that just ended, NVML hiccups: skip this sample
                logger.debug(f"memory sample failed: {error}")
                sample = {}
            with self.lock:
                for role, used in sample.items():
                    self.peaks[role] = max(self.peaks.get(role, 0), used)
            time.sleep(self.interval_s)

    def take_peaks(self) -> dict[str, int]:
        with self.lock:
            peaks, self.peaks = self.peaks, {}
        return peaks


class RoleMemory:
    """The samplers of a run, one per node holding some role's workers; `step_metrics` gathers their peaks."""

    def __init__(self, samplers: list) -> None:
        self.samplers = samplers

    @classmethod
    def start(cls, roles: dict[str, list]) -> RoleMemory:
        """`roles`: {role: worker actor handles}; a role whose actors another role already lists is left out."""
        seen: set = set()
        placed: dict[str, dict[str, dict[str, list]]] = {}  # {node: {role: {"uuids", "pids"}}}
        for role, actors in roles.items():
            actors = [actor for actor in actors if actor._actor_id not in seen]
            seen.update(actor._actor_id for actor in actors)
            for place in ray.get([actor.__ray_call__.remote(where) for actor in actors]):
                parts = placed.setdefault(place["node"], {}).setdefault(role, {"uuids": [], "pids": []})
                parts["uuids"] += [uuid for uuid in place["uuids"] if uuid not in parts["uuids"]]
                parts["pids"].append(place["pid"])
        on_node = MemorySampler.options  # type: ignore[attr-defined]  # ray.remote's ActorClass, unseen by mypy
        samplers = [
            on_node(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(watched)
            for node, watched in placed.items()
        ]
        return cls(samplers)

    def step_metrics(self) -> dict[str, float]:
        peaks: dict[str, int] = {}
        for sampled in ray.get([sampler.take_peaks.remote() for sampler in self.samplers]):
            for role, used in sampled.items():
                peaks[role] = max(peaks.get(role, 0), used)
        return {MEMORY_KEY.format(role=role): used / 1e9 for role, used in peaks.items()}
