"""launch/site_check.py and launch/site_collective.py off Slurm: the job's verdict from node reports, the probes on
this CPU machine with stand-ins at the process boundary (stand_ins/nvidia-smi on PATH, a cupy package on PYTHONPATH
whose NCCL does not load, a Hugging Face cache in HF_HOME, unreachable endpoints), and a node that never joins the
all-reduce. The jobs of test_slurm_chain.py / test_rehearsal.py run them through srun on two nodes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import site_check
import site_collective

REPO = Path(__file__).resolve().parents[2]
STAND_INS = REPO / "tests" / "launch" / "stand_ins"
CPU_BUILD_CUDA = "13.0"  # site_check.PINNED_CUDA: the GPU set's CUDA, what the driver must serve
CUPY_WITHOUT_NCCL = {
    "__init__.py": "__version__ = '14.0.1'\n",
    "cuda/__init__.py": "",
    "cuda/nccl.py": "raise ImportError('libnccl.so.2: cannot open shared object file: No such file or directory')\n",
}


def closed_url() -> str:
    """An address nothing listens on: a connection is refused at once, as on a node without a route."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def run_node(tmp_path, manifest: dict, node: str, **env: str) -> tuple[int, dict]:
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    report = tmp_path / f"site_{node}.json"
    command = [
        sys.executable,
        str(REPO / "launch" / "site_check.py"),
        "node",
        "--manifest",
        str(tmp_path / "manifest.json"),
    ]
    result = subprocess.run(
        [*command, "--node", node, "--report", str(report)],
        env={**os.environ, "PATH": f"{STAND_INS}:{os.environ['PATH']}", "SLURMD_NODENAME": node, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return result.returncode, json.loads(report.read_text())


def findings(report: dict) -> dict[str, tuple[str, str]]:
    return {item["probe"]: (item["level"], item["detail"]) for item in report["findings"]}


@pytest.mark.integration  # the check as a program, importing torch and ray
def test_each_probe_names_what_is_wrong_on_the_node_it_runs_on(tmp_path, stand_in_hub):
    """node7: driver 535 (too old for CUDA 13), one GPU listed for an allocation of 2, torch without CUDA (this CPU
    machine's build), a cupy whose NCCL library is missing, a model directory without its weights, a hub id not in
    the cache with the hub offline. node8: all it needs (no GPU, the hub id from the cache)."""
    gpus = tmp_path / "nvidia_smi"
    gpus.mkdir()
    (gpus / "node7.csv").write_text("0, GPU-0000, NVIDIA H100 80GB HBM3, 535.104.05, 81559\n")
    cupy = tmp_path / "shim" / "cupy"
    for name, text in CUPY_WITHOUT_NCCL.items():
        (cupy / name).parent.mkdir(parents=True, exist_ok=True)
        (cupy / name).write_text(text)
    weightless = tmp_path / "weightless"
    weightless.mkdir()
    (weightless / "config.json").write_text("{}")
    manifest = {
        "gpus_per_node": 2,
        "allocation_gpus": 2,
        "device": "cuda",
        "nccl": True,
        "models": [str(weightless), "Qwen/Qwen3-8B"],
        "wandb": True,
    }
    endpoints = {"HF_ENDPOINT": closed_url(), "WANDB_BASE_URL": closed_url()}
    status, report = run_node(
        tmp_path,
        manifest,
        "node7",
        NVIDIA_SMI_STAND_IN_DIR=str(gpus),
        CUDA_VISIBLE_DEVICES="0,1",
        PYTHONPATH=str(cupy.parent),
        HF_HOME=str(stand_in_hub),
        HF_HUB_OFFLINE="1",
        **endpoints,
    )
    assert status == 1
    found = findings(report)
    assert found["driver"] == (
        "error",
        f'NVIDIA driver 535.104.05 is older than 580, the oldest that runs CUDA {CPU_BUILD_CUDA} (torch\'s build; NVIDIA "CUDA Compatibility")',
    )
    assert found["gpus"][0] == "error" and found["gpus"][1].startswith("1 GPU(s) visible to the job (0: NVIDIA H100")
    assert found["torch_cuda"][0] == "error" and found["torch_cuda"][1].startswith("CUDA is not usable by torch ")
    assert found["nccl"] == (
        "error",
        "cupy's NCCL does not work: ImportError: libnccl.so.2: cannot open shared object file: No such file or directory",
    )
    models = [item for item in report["findings"] if item["probe"] == "model"]
    assert models[0]["level"] == "error" and "missing model.safetensors" in models[0]["detail"]
    assert models[1]["level"] == "error" and models[1]["detail"].endswith("and this node cannot reach the hub")
    assert "HF_HOME=/path/on/shared/storage hf download Qwen/Qwen3-8B" in models[1]["fix"]
    assert report["facts"]["hub_reachable"] is False and report["facts"]["wandb_reachable"] is False
    # Ray's collective library sees the same cupy as unusable for NCCL, silently (ray/util/collective/collective.py)
    ray_view = subprocess.run(
        [sys.executable, "-c", "from ray.util.collective import nccl_available; print(nccl_available())"],
        env={**os.environ, "PYTHONPATH": str(cupy.parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ray_view.stdout.strip() == "False", ray_view.stderr

    manifest |= {"allocation_gpus": 0, "device": "cpu", "nccl": False, "models": ["Qwen/Qwen3-14B"], "wandb": False}
    status, healthy = run_node(tmp_path, manifest, "node8", HF_HOME=str(stand_in_hub), **endpoints)
    assert status == 0, healthy
    assert (
        findings(healthy)["model"][0] == "ok" and "complete in the Hugging Face cache" in findings(healthy)["model"][1]
    )

    errors, warnings, decisions = site_check.verdict(
        {"wandb": True},
        site_check.read_reports([tmp_path / "site_node7.json", tmp_path / "site_node8.json"]),
        ["node7", "node8", "node9"],
    )
    assert errors[0] == "node node9: no site check report (the check did not run or died there; see its log)"
    assert all(line.startswith("node node7: ") for line in errors[1:]) and len(errors) == 1 + 6
    assert decisions == {"HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline"}
    assert any("the run logs to wandb offline" in line for line in warnings)


def test_bus_bandwidth_is_nccl_tests_definition():
    """NVIDIA/nccl-tests doc/PERFORMANCE.md, all-reduce: busbw = S / t x 2 (n - 1) / n."""
    assert site_collective.bus_bandwidth(1e9, 0.5, 8) == pytest.approx(2e9 * 14 / 8)
    assert site_collective.bus_bandwidth(1e9, 1.0, 2) == pytest.approx(1e9)


@pytest.mark.parametrize(
    "unique_id",
    [bytes(range(128)), tuple(range(-64, 64))],
    ids=["cupy 14: bytes", "cupy 13: signed chars"],
)
def test_the_nccl_id_crosses_the_store_in_the_type_cupy_gave(unique_id):
    """cupy 14's NcclCommunicator takes the bytes its get_unique_id gives and rejects a tuple (cupy/cupy PR 9438);
    cupy 13 gives and takes a tuple of C chars. Seen on an H200 with cupy 14.2: the tuple failed with "Argument
    'commId' has incorrect type (expected bytes, got tuple)"."""
    text = site_collective.nccl_id_text(unique_id)
    assert isinstance(text, str)
    assert site_collective.nccl_id_from_text(text) == unique_id
    assert type(site_collective.nccl_id_from_text(text)) is type(unique_id)


@pytest.mark.integration  # a program that starts worker processes
def test_a_node_that_never_joins_the_all_reduce_is_named(tmp_path):
    command = [sys.executable, str(REPO / "launch" / "site_collective.py"), "--node-rank", "0", "--nodes", "n1 n2"]
    command += ["--gpus-per-node", "1", "--host", "127.0.0.1", "--rendezvous", str(tmp_path), "--backend", "gloo"]
    result = subprocess.run([*command, "--timeout-s", "3"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "site_collective: node n1: node(s) n2 did not join the all-reduce within 3s" in result.stderr
