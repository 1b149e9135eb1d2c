"""Stop the rollout's vLLM engines at the end of a run, the way vLLM stops them, before Ray kills their servers.

verl 0.9.1 never shuts its vLLM servers down: when the run ends, Ray kills each ``vLLMHttpServer`` actor, and its
engine-core and worker processes die by their parent-death signal (which verl's worker extension sets), so each
replica leaves its shared-memory message queues behind on the node (``/dev/shm/psm_*``, one per engine core and
one per worker; found by the vLLM-on-CPU tier). ``shut_down_vllm_engines`` first calls vLLM's own
``AsyncLLM.shutdown`` in every server, in parallel: the engine core stops its workers, and each process unlinks the
segments it created. vLLM's default waits are shorter than a loaded machine needs (5 s for the engine core, then 5 s
for its workers before SIGTERM and 4 s more before SIGKILL): a process killed in teardown leaves its segments. So the
engine core gets ``ENGINE_SHUTDOWN_TIMEOUT_S`` here, and the CPU config gives the workers a longer grace
(``VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS`` in configs/cpu_rollout/vllm.yaml). A failure here is logged, never
raised: the run is over.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import ray

logger = logging.getLogger(__name__)
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "INFO"))

ENGINE_SHUTDOWN_TIMEOUT_S = 120.0
"""How long each engine core may take to stop its workers before vLLM kills it."""


def _shut_down_engine(server: Any, timeout_s: float) -> bool:
    """Runs inside a ``vLLMHttpServer`` actor (``__ray_call__``): vLLM's ``AsyncLLM.shutdown``."""
    engine = getattr(server, "engine", None)
    if engine is None:
        return False
    engine.shutdown(timeout=timeout_s)
    return True


def shut_down_vllm_engines(rollout_name: str, replicas: list[Any]) -> None:
    """Shut down the vLLM engine of every server of ``replicas`` (verl ``RolloutReplica``s); no-op for other
    rollout engines."""
    if rollout_name != "vllm":
        return
    servers = [server for replica in replicas for server in replica.servers]
    if not servers:
        return
    calls = [server.__ray_call__.remote(_shut_down_engine, ENGINE_SHUTDOWN_TIMEOUT_S) for server in servers]
    try:
        stopped = ray.get(calls, timeout=ENGINE_SHUTDOWN_TIMEOUT_S + 30)
        logger.info(f"shut down {sum(stopped)} of {len(servers)} vLLM engines")
    except Exception as error:  # the run has ended; leftovers are the only cost
        logger.warning(f"could not shut down every vLLM engine ({error!r}); /dev/shm may keep their segments")
