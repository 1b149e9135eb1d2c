"""Checkpoint engine ``cpu_gloo``: weight sync from the trainer to standalone rollout replicas without NCCL.

verl's separate-async trainer pushes new weights to its standalone rollout through a checkpoint engine
(``verl/checkpoint_engine/base.py``: ``CheckpointEngineManager.update_weights``); every engine verl 0.9.1 ships for
that path needs CUDA (nccl via cupy, nixl, mooncake, hccl). This one does what verl's ``nccl`` engine does, over a
private gloo group on CPU tensors:

- ``prepare``: the trainer's rank 0 (``is_master``) opens a TCP store and reports its address;
- ``build_topology``: actor rank 0 is group rank 0 (the sender), the other actor ranks stay out (rank -1, they only
  walk the weight generator, whose FSDP all-gathers need every trainer rank), rollout workers are ranks 1..R;
- ``init_process_group``: a ``ProcessGroupGloo`` of its own (verl's FSDP group is left alone);
- ``send_weights`` / ``receive_weights``: buckets of at most ``bucket_size`` bytes (verl's
  ``update_weights_bucket_megabytes``), each broadcast as a header (three int64: metadata bytes, payload bytes,
  last-bucket flag), the pickled chunk metadata, and the payload; chunking and reassembly are verl's own
  ``split_weight_chunks`` / ``merge_weight_chunks``;
- ``finalize``: the group and store are dropped; each sync builds a new one, as the manager rebuilds topology.

Blocking gloo calls run in a worker thread so the actor's event loop keeps serving. Selected with
``actor_rollout_ref.rollout.checkpoint_engine.backend=cpu_gloo`` and ``custom_backend_module`` naming this module.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import ray
import torch
import torch.distributed as dist
from verl.checkpoint_engine.base import (
    CheckpointEngine,
    CheckpointEngineRegistry,
    TensorMeta,
    merge_weight_chunks,
    split_weight_chunks,
)

logger = logging.getLogger(__name__)
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "INFO"))

BACKEND_NAME = "cpu_gloo"
SENDER_RANK = 0


@dataclass(frozen=True)
class StoreAddress:
    host: str
    port: int


@dataclass
class _Bucket:
    chunks: list[tuple[TensorMeta, torch.Tensor]]
    size: int = 0


@CheckpointEngineRegistry.register(BACKEND_NAME)
class GlooCheckpointEngine(CheckpointEngine):
    """Broadcast the trainer's full weights to every standalone rollout worker over a private gloo group."""

    def __init__(self, bucket_size: int, is_master: bool = False, timeout_s: float = 600.0):
        self.bucket_size = int(bucket_size)
        self.is_master = is_master
        self.timeout = timedelta(seconds=float(timeout_s))
        self.rank = -1
        self.world_size = 0
        self.syncs = 0
        self._store: dist.TCPStore | None = None
        self._group: dist.ProcessGroupGloo | None = None

    # ------------------------------ group set-up ------------------------------

    def prepare(self) -> dict[str, Any]:
        if not self.is_master:
            return {}
        host = ray.util.get_node_ip_address().strip("[]")
        # port 0: the store binds a free port itself (no window for another process to take it)
        self._store = dist.TCPStore(host, 0, is_master=True, wait_for_workers=False, timeout=self.timeout)
        return {"store": StoreAddress(host, self._store.port)}

    @classmethod
    def build_topology(
        cls, actor_wg_world_size: int, rollout_world_size: int, metadata: list[dict[str, Any]]
    ) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        store = metadata[0].get("store")
        if store is None:
            raise RuntimeError("cpu_gloo: actor rank 0 must be the checkpoint engine master (is_master=True)")
        world_size = 1 + rollout_world_size
        actor_kwargs = {
            "rank": [SENDER_RANK] + [-1] * (actor_wg_world_size - 1),
            "world_size": [world_size] * actor_wg_world_size,
            "store": [store] * actor_wg_world_size,
        }
        rollout_kwargs = {
            "rank": list(range(1, world_size)),
            "world_size": [world_size] * rollout_world_size,
            "store": [store] * rollout_world_size,
        }
        return actor_kwargs, rollout_kwargs

    def init_process_group(self, rank: int, world_size: int, store: StoreAddress) -> None:
        self.rank, self.world_size = rank, world_size
        if rank < 0:
            return
        if rank != SENDER_RANK:
            self._store = dist.TCPStore(store.host, store.port, is_master=False, timeout=self.timeout)
        prefixed = dist.PrefixStore(f"nouscoder_cpu_gloo/{self.syncs}", self._store)
        self._group = dist.ProcessGroupGloo(prefixed, rank, world_size, self.timeout)

    def finalize(self) -> None:
        self._group = None
        self._store = None
        self.syncs += 1

    # ------------------------------ transfer ------------------------------

    def _broadcast(self, tensor: torch.Tensor) -> None:
        self._group.broadcast([tensor], dist.BroadcastOptions()).wait()

    def _broadcast_bucket(self, bucket: _Bucket, is_last: bool) -> None:
        payload = torch.empty(bucket.size, dtype=torch.uint8)
        offset = 0
        for meta, chunk in bucket.chunks:
            payload[offset : offset + meta.chunk_size] = chunk
            meta.offset = offset
            offset += meta.chunk_size
        metadata = pickle.dumps([meta for meta, _ in bucket.chunks])
        self._broadcast(torch.tensor([len(metadata), bucket.size, int(is_last)], dtype=torch.int64))
        self._broadcast(torch.frombuffer(bytearray(metadata), dtype=torch.uint8))
        self._broadcast(payload)

    def _receive_bucket(self) -> tuple[list[TensorMeta], torch.Tensor, bool]:
        header = torch.zeros(3, dtype=torch.int64)
        self._broadcast(header)
        metadata_size, payload_size, is_last = (int(value) for value in header)
        metadata = torch.empty(metadata_size, dtype=torch.uint8)
        self._broadcast(metadata)
        payload = torch.empty(payload_size, dtype=torch.uint8)
        self._broadcast(payload)
        return pickle.loads(metadata.numpy().tobytes()), payload, bool(is_last)

    @torch.no_grad()
    async def send_weights(self, weights: Any, global_steps: int | None = None) -> dict[str, float]:
        if self.rank < 0:
            for _ in weights:  # FSDP full tensors are gathered collectively: every trainer rank walks the generator
                pass
            return {}
        start, sent_bytes = time.perf_counter(), 0
        bucket = _Bucket(chunks=[])
        async for meta, chunk in split_weight_chunks(weights, self.bucket_size):
            if bucket.chunks and bucket.size + meta.chunk_size > self.bucket_size:
                await asyncio.to_thread(self._broadcast_bucket, bucket, False)
                sent_bytes += bucket.size
                bucket = _Bucket(chunks=[])
            bucket.chunks.append((meta, chunk.detach().to("cpu", copy=True)))
            bucket.size += meta.chunk_size
        await asyncio.to_thread(self._broadcast_bucket, bucket, True)
        sent_bytes += bucket.size
        seconds = time.perf_counter() - start
        logger.info(f"cpu_gloo: sent {sent_bytes / 2**20:.1f} MiB of weights (step {global_steps}) in {seconds:.2f}s")
        return {"cpu_gloo/weight_sync_mib": sent_bytes / 2**20, "cpu_gloo/weight_sync_s": seconds}

    async def receive_weights(self, global_steps: int | None = None) -> AsyncGenerator[tuple[str, torch.Tensor], None]:
        async for name, tensor in merge_weight_chunks(self._receive_chunks(), self.bucket_size):
            yield name, tensor

    async def _receive_chunks(self) -> AsyncGenerator[tuple[TensorMeta, torch.Tensor], None]:
        is_last = False
        while not is_last:
            metas, payload, is_last = await asyncio.to_thread(self._receive_bucket)
            for meta in metas:
                yield meta, payload[meta.offset : meta.offset + meta.chunk_size]
