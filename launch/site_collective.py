"""An all-reduce over every GPU of the job, across its nodes, before Ray starts: the collective the trainer's FSDP mesh
and the weight sync need, with its bus bandwidth.

    python launch/site_collective.py --node-rank R --nodes "n1 n2 ..." --gpus-per-node G --host NODE_IP \\
        --rendezvous LOG_DIR/collective --backend nccl [--cupy] [--size-mb 256]

One process per node (launch/lib/ray_node.sh site-collective, through srun on every node at once) starts one worker per
GPU; worker `local` of node R is rank R x G + local of the world of N x G ranks. Node 0 serves a torch TCPStore on its
address (a free port, written to the rendezvous directory, which every node mounts) and waits until every node has
registered there, naming the nodes that did not. Each worker then joins `torch.distributed` with the backend (nccl on
GPUs, gloo in the CPU mode, whose "GPUs" are logical slots), all-reduces a buffer filled with its rank + 1 (every
element must come back as N G (N G + 1) / 2), then times ITERATIONS more. With --cupy it does the same through cupy's
NCCL communicator, the library verl's weight sync uses (verl/checkpoint_engine/nccl_checkpoint_engine.py, through
ray.util.collective).

Bus bandwidth as nccl-tests defines it (NVIDIA/nccl-tests, doc/PERFORMANCE.md): algbw = S / t for S bytes in t
seconds, busbw = algbw x 2 (n - 1) / n for an all-reduce over n ranks, comparable with the links' bandwidth.
Exit 0 when every rank of this node got the right sum; 1 naming this node otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ITERATIONS = 5
STORE_FILE = "store.json"


@dataclass(frozen=True)
class World:
    node_rank: int
    nodes: tuple[str, ...]
    gpus_per_node: int
    backend: str
    size_bytes: int
    timeout_s: float
    cupy: bool

    @property
    def size(self) -> int:
        return len(self.nodes) * self.gpus_per_node

    def expected_sum(self) -> float:
        return self.size * (self.size + 1) / 2


def bus_bandwidth(size_bytes: float, seconds: float, ranks: int) -> float:
    """nccl-tests' bus bandwidth of an all-reduce, bytes per second."""
    return size_bytes / seconds * 2 * (ranks - 1) / ranks


def store(world: World, host: str, port: int, master: bool):
    import torch.distributed as dist

    return dist.TCPStore(
        host, port, None, master, timeout=datetime.timedelta(seconds=world.timeout_s), wait_for_workers=False
    )


def open_rendezvous(world: World, host: str, rendezvous: Path):
    """Node 0 serves the store and publishes it; the others wait for it. Returns (store, host, port)."""
    published = rendezvous / STORE_FILE
    if world.node_rank == 0:
        server = store(world, host, 0, master=True)
        rendezvous.mkdir(parents=True, exist_ok=True)
        (rendezvous / f"{STORE_FILE}.tmp").write_text(json.dumps({"host": host, "port": server.port}))
        os.replace(rendezvous / f"{STORE_FILE}.tmp", published)
        return server, host, server.port
    deadline = time.monotonic() + world.timeout_s
    while not published.is_file():
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"node {world.nodes[0]} (rank 0) did not publish its store in {published} within {world.timeout_s:.0f}s"
            )
        time.sleep(0.5)
    address = json.loads(published.read_text())
    return store(world, address["host"], address["port"], master=False), address["host"], address["port"]


def wait_for_nodes(world: World, server) -> None:
    """On node 0: every node registered, or TimeoutError naming those that did not."""
    keys = [f"node/{rank}" for rank in range(len(world.nodes))]
    deadline = time.monotonic() + world.timeout_s
    while not server.check(keys):
        if time.monotonic() > deadline:
            missing = [world.nodes[rank] for rank, key in enumerate(keys) if not server.check([key])]
            raise TimeoutError(f"node(s) {' '.join(missing)} did not join the all-reduce within {world.timeout_s:.0f}s")
        time.sleep(0.2)


def timed(run, synchronize) -> float:
    synchronize()
    started = time.perf_counter()
    for _ in range(ITERATIONS):
        run()
    synchronize()
    return (time.perf_counter() - started) / ITERATIONS


def torch_allreduce(world: World, rank: int, device: str) -> dict:
    import torch
    import torch.distributed as dist

    count = world.size_bytes // 4
    buffer = torch.full((count,), float(rank + 1), dtype=torch.float32, device=device)
    dist.all_reduce(buffer)
    got = (float(buffer.min()), float(buffer.max()))
    if got != (world.expected_sum(),) * 2:
        raise RuntimeError(f"all-reduce over {world.size} ranks gave {got}, not {world.expected_sum()} everywhere")
    synchronize = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    seconds = timed(lambda: dist.all_reduce(buffer), synchronize)
    return {"library": f"torch.distributed ({world.backend})", "seconds": seconds}


def nccl_id_text(unique_id: bytes | tuple[int, ...]) -> str:
    """cupy's NCCL unique id as text for the store: bytes from cupy 14 on, a tuple of C chars before (cupy/cupy
    PR 9438), each given back in its own type by `nccl_id_from_text`."""
    if isinstance(unique_id, bytes):
        return json.dumps({"bytes": unique_id.hex()})
    return json.dumps({"chars": list(unique_id)})


def nccl_id_from_text(text: str) -> bytes | tuple[int, ...]:
    value = json.loads(text)
    return bytes.fromhex(value["bytes"]) if "bytes" in value else tuple(value["chars"])


def cupy_allreduce(world: World, rank: int, local: int, server) -> dict:
    """The same through cupy's NCCL communicator, its unique id shared through the store."""
    import cupy
    from cupy.cuda import nccl

    if rank == 0:
        server.set("cupy_nccl_id", nccl_id_text(nccl.get_unique_id()))
    unique_id = nccl_id_from_text(server.get("cupy_nccl_id").decode())
    with cupy.cuda.Device(local):
        communicator = nccl.NcclCommunicator(world.size, unique_id, rank)
        count = world.size_bytes // 4
        buffer = cupy.full(count, rank + 1, dtype=cupy.float32)
        stream = cupy.cuda.Stream.null

        def run() -> None:
            communicator.allReduce(
                buffer.data.ptr, buffer.data.ptr, count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr
            )

        run()
        stream.synchronize()
        got = (float(buffer.min()), float(buffer.max()))
        if got != (world.expected_sum(),) * 2:
            raise RuntimeError(f"cupy's NCCL all-reduce gave {got}, not {world.expected_sum()} everywhere")
        seconds = timed(run, stream.synchronize)
        communicator.destroy()
    return {"library": f"cupy {cupy.__version__} NCCL {nccl.get_version()}", "seconds": seconds}


def worker(world: World, local: int, host: str, port: int, results) -> None:
    import torch
    import torch.distributed as dist

    rank = world.node_rank * world.gpus_per_node + local
    try:
        server = store(world, host, port, master=False)
        device = "cpu"
        if world.backend == "nccl":
            torch.cuda.set_device(local)
            device = f"cuda:{local}"
        dist.init_process_group(
            world.backend,
            store=dist.PrefixStore("torch", server),
            rank=rank,
            world_size=world.size,
            timeout=datetime.timedelta(seconds=world.timeout_s),
        )
        outcome = [torch_allreduce(world, rank, device)]
        if world.cupy:
            outcome.append(cupy_allreduce(world, rank, local, server))
        results.put({"rank": rank, "ok": True, "runs": outcome})
    except Exception as error:
        results.put({"rank": rank, "ok": False, "error": f"{type(error).__name__}: {error}"})
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_node(world: World, host: str, rendezvous: Path) -> list[dict]:
    """This node's part: the rendezvous, then one worker per GPU; their results, by rank."""
    server, store_host, port = open_rendezvous(world, host, rendezvous)
    server.set(f"node/{world.node_rank}", socket.gethostname())
    if world.node_rank == 0:
        wait_for_nodes(world, server)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [
        context.Process(target=worker, args=(world, local, store_host, port, results))
        for local in range(world.gpus_per_node)
    ]
    for process in workers:
        process.start()
    outcomes: list[dict] = []
    deadline = time.monotonic() + 2 * world.timeout_s
    while len(outcomes) < len(workers):
        remaining = deadline - time.monotonic()
        try:
            outcomes.append(results.get(timeout=max(1.0, remaining)))
        except Exception:
            if remaining <= 0 or not any(process.is_alive() for process in workers):
                break
    for process in workers:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
    done = {outcome["rank"] for outcome in outcomes}
    for local in range(world.gpus_per_node):
        rank = world.node_rank * world.gpus_per_node + local
        if rank not in done:
            outcomes.append({"rank": rank, "ok": False, "error": "the worker died or hung without a result"})
    if world.node_rank == 0:  # keep the store up until every node's workers are done with it
        server.set(f"done/{world.node_rank}", "1")
        keys = [f"done/{rank}" for rank in range(1, len(world.nodes))]
        deadline = time.monotonic() + world.timeout_s
        while keys and not server.check(keys) and time.monotonic() < deadline:
            time.sleep(0.2)
    else:
        server.set(f"done/{world.node_rank}", "1")
    return sorted(outcomes, key=lambda outcome: outcome["rank"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/site_collective.py", description=__doc__.splitlines()[0])
    parser.add_argument("--node-rank", type=int, required=True, help="this node's index in --nodes")
    parser.add_argument("--nodes", required=True, help="the job's nodes in order, space-separated")
    parser.add_argument("--gpus-per-node", type=int, required=True, help="workers per node: one per GPU (slot)")
    parser.add_argument("--host", required=True, help="this node's address (node 0 serves the store on it)")
    parser.add_argument("--rendezvous", type=Path, required=True, help="a directory every node reads (the job's logs)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), required=True, help="nccl on GPUs, gloo in CPU mode")
    parser.add_argument("--cupy", action="store_true", help="also all-reduce through cupy's NCCL (the weight sync's)")
    parser.add_argument("--size-mb", type=float, default=None, help="buffer size [256 with nccl, 8 with gloo]")
    parser.add_argument("--timeout-s", type=float, default=120.0, help="bound of the rendezvous and of each collective")
    args = parser.parse_args(argv)
    size_mb = args.size_mb if args.size_mb is not None else (256.0 if args.backend == "nccl" else 8.0)
    nodes = tuple(args.nodes.split())
    world = World(
        args.node_rank,
        nodes,
        args.gpus_per_node,
        args.backend,
        int(size_mb * 2**20) // 4 * 4,
        args.timeout_s,
        args.cupy,
    )
    node = nodes[args.node_rank]
    try:
        outcomes = run_node(world, args.host, args.rendezvous)
    except (TimeoutError, RuntimeError, OSError) as error:
        sys.exit(f"site_collective: node {node}: {error}")
    failed = [outcome for outcome in outcomes if not outcome["ok"]]
    for outcome in failed:
        print(f"site_collective: node {node}: rank {outcome['rank']}: {outcome['error']}", file=sys.stderr)
    for index, run in enumerate(outcomes[0]["runs"] if not failed else []):
        slowest = max(outcome["runs"][index]["seconds"] for outcome in outcomes)
        print(
            f"site_collective: node {node}: all-reduce of {world.size_bytes / 2**20:.0f} MiB over {world.size} ranks "
            f"({len(nodes)} node(s) x {world.gpus_per_node}) with {run['library']}: {slowest * 1e3:.1f} ms, "
            f"bus bandwidth {bus_bandwidth(world.size_bytes, slowest, world.size) / 1e9:.2f} GB/s",
            flush=True,
        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
