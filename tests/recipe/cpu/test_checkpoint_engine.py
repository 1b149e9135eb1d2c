"""recipe.nouscoder.cpu.checkpoint_engine: trainer rank 0 broadcasts full weights to rollout workers over gloo,
as verl's CheckpointEngineManager drives it (prepare -> build_topology -> init_process_group -> send/receive ->
finalize), in separate processes."""

import asyncio
import multiprocessing
from unittest import mock

import torch

from recipe.nouscoder.cpu.checkpoint_engine import GlooCheckpointEngine

BUCKET_BYTES = 1000  # smaller than some tensors: they are split over buckets and merged again


def weights() -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return {
        "model.embed_tokens.weight": torch.randn(40, 8, generator=generator),  # 1280 bytes: two buckets
        "model.norm.weight": torch.randn(8, generator=generator),
        "lm_head.weight": torch.randn(3, 5, generator=generator).double(),
        "steps": torch.arange(12),
    }


def topology(metadata: dict) -> tuple[dict, dict]:
    """What CheckpointEngineManager.build_process_group computes: 2 trainer ranks, 2 rollout workers."""
    return GlooCheckpointEngine.build_topology(2, 2, [metadata, {}, {}, {}])


def trainer_rank(rank: int, metadata_queue, results) -> None:
    """Rank 0 sends; rank 1 only walks the weight generator (FSDP's full-tensor gathers need every trainer rank)."""
    with mock.patch("ray.util.get_node_ip_address", return_value="127.0.0.1"):
        engine = GlooCheckpointEngine(bucket_size=BUCKET_BYTES, is_master=rank == 0)
        metadata = engine.prepare()
    if rank == 0:
        for _ in range(2):
            metadata_queue.put(metadata)
        actor_kwargs, _ = topology(metadata)
    else:
        actor_kwargs = {"rank": [0, -1], "world_size": [3, 3], "store": [None, None]}
    engine.init_process_group(
        rank=actor_kwargs["rank"][rank], world_size=actor_kwargs["world_size"][rank], store=actor_kwargs["store"][rank]
    )
    walked = []

    def generator():
        for name, tensor in weights().items():
            walked.append(name)
            yield name, tensor

    sync_metrics = asyncio.run(engine.send_weights(generator(), global_steps=3))
    engine.finalize()
    results.put(("trainer", rank, walked, sync_metrics))


def rollout_rank(index: int, metadata_queue, results) -> None:
    _, rollout_kwargs = topology(metadata_queue.get(timeout=60))
    engine = GlooCheckpointEngine(bucket_size=BUCKET_BYTES)
    engine.init_process_group(
        rank=rollout_kwargs["rank"][index],
        world_size=rollout_kwargs["world_size"][index],
        store=rollout_kwargs["store"][index],
    )

    async def receive():
        return {name: tensor.clone() async for name, tensor in engine.receive_weights(global_steps=3)}

    received = asyncio.run(receive())
    engine.finalize()
    # numpy arrays: torch would pass tensors to the parent as shared memory that dies with this process
    results.put(("rollout", index, {name: tensor.numpy() for name, tensor in received.items()}, None))


def test_every_rollout_worker_receives_every_tensor_bit_for_bit():
    context = multiprocessing.get_context("fork")  # the spawned children could not import this test module
    metadata_queue, results = context.Queue(), context.Queue()
    processes = [
        context.Process(target=trainer_rank, args=(0, metadata_queue, results)),
        context.Process(target=trainer_rank, args=(1, metadata_queue, results)),
        context.Process(target=rollout_rank, args=(0, metadata_queue, results)),
        context.Process(target=rollout_rank, args=(1, metadata_queue, results)),
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    expected = weights()
    received = [outcome[2] for outcome in outcomes if outcome[0] == "rollout"]
    assert len(received) == 2
    for tensors in received:
        assert list(tensors) == list(expected)
        for name, tensor in expected.items():
            assert torch.equal(torch.from_numpy(tensors[name]), tensor), name
    trainers = {outcome[1]: outcome for outcome in outcomes if outcome[0] == "trainer"}
    assert trainers[0][2] == trainers[1][2] == list(expected)  # both trainer ranks walked every weight
    assert trainers[0][3]["cpu_gloo/weight_sync_mib"] > 0 and trainers[1][3] == {}


def test_topology_makes_trainer_rank_zero_the_only_sender():
    actor, rollout = GlooCheckpointEngine.build_topology(3, 2, [{"store": "addr"}, {}, {}, {}, {}])
    assert actor["rank"] == [0, -1, -1] and rollout["rank"] == [1, 2]
    assert set(actor["world_size"] + rollout["world_size"]) == {3}
