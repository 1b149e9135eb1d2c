"""What every node of a job must have before a GPU-hour is spent, checked on each node through srun before Ray starts.

    python launch/site_check.py node --manifest LOG_DIR/site_check.json --node NODE --report LOG_DIR/site_NODE.json
    python launch/site_check.py verdict --manifest LOG_DIR/site_check.json LOG_DIR/site_*.json

`node` runs on one node (launch/lib/ray_node.sh site-check) the probes the manifest asks for (launch/preflight.py writes
it from the composed configs), and writes what it found to --report; `verdict` reads every node's report and either
fails naming each node, what is wrong there and the fix, or prints the job's decisions as KEY=VALUE lines for the
launcher to export (HF_HUB_OFFLINE=1 where the hub cannot be reached, WANDB_MODE=offline where wandb cannot).

The probes, each skipped when the job does not need it (or named in SITE_CHECK_SKIP):
- driver: nvidia-smi's driver version is at least what the CUDA major of torch needs (NVIDIA, "CUDA Compatibility":
  CUDA 12.x runs on >= 525.60.13, CUDA 13.x on >= 580); needed when the allocation has GPUs or a config trains on CUDA;
- gpus: the GPUs the driver lists that the job may use (CUDA_VISIBLE_DEVICES, by index or UUID) against the allocation's
  per node (GPUS_PER_NODE): a GPU that fell off the bus is missing from nvidia-smi's list (more than that: outside
  Slurm, a machine whose GPUs the job uses part of);
- torch_cuda: `torch.cuda.is_available()`, `torch.cuda.device_count()` = the allocation's per node, and a matmul
  on each device (configs that train on CUDA);
- nccl: `cupy.cuda.nccl.get_version()` and a one-GPU NCCL communicator's all-reduce through cupy (what verl's NCCL
  checkpoint engine uses), and `ray.util.collective.nccl_available()`: Ray registers its NCCL backend only when cupy's
  NCCL imports (ray/util/collective/collective.py), so a node whose cupy loads but not its NCCL fails at the first
  weight sync (configs whose checkpoint_engine.backend is nccl);
- model: the weights of the job's model readable on this node: a directory with config.json and every weight file its
  index names, or a complete snapshot in this node's Hugging Face cache (HF_HOME); a hub id not in the cache fails at
  once where the hub cannot be reached, with the `hf download` command to run;
- hub, wandb: whether this node reaches HF_ENDPOINT and (with WANDB_API_KEY set) WANDB_BASE_URL, for the decisions.
The check across nodes (an all-reduce over every GPU of the job, its bus bandwidth) is launch/site_collective.py.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

# NVIDIA "CUDA Compatibility" (minor version compatibility): the oldest driver each CUDA major runs on.
MIN_DRIVER_FOR_CUDA_MAJOR = {12: "525.60.13", 13: "580"}
# The CUDA of the GPU environment (setup.py's [gpu] extra: verl[vllm,cupy-cu130], torch built for CUDA 13.0): what the
# driver must serve when the interpreter running the check is a CPU build.
PINNED_CUDA = "13.0"
PROBE_TIMEOUT_S = 5.0
NVIDIA_SMI_TIMEOUT_S = 30.0
HF_ENDPOINT = "https://huggingface.co"
WANDB_BASE_URL = "https://api.wandb.ai"
# The checkpoint-engine backends that broadcast the weights with cupy's NCCL: verl's, and ours that frees cupy's pool
# after each sync (recipe/nouscoder/training/nccl_release.py, which imports cupy and so cannot name it here).
NCCL_BACKENDS = ("nccl", "nouscoder_nccl")
PROBES = (
    "driver",
    "gpus",
    "torch_cuda",
    "nccl",
    "model",
    "hub",
    "wandb",
    "collective",
)  # collective: site_collective.py


@dataclass
class Finding:
    """One probe's outcome on one node: `level` is ok, warning or error; `fix` says what to do about it."""

    probe: str
    level: str
    detail: str
    fix: str = ""


@dataclass
class NodeReport:
    node: str
    findings: list[Finding] = field(default_factory=list)
    facts: dict = field(default_factory=dict)

    def add(self, probe: str, level: str, detail: str, fix: str = "") -> None:
        self.findings.append(Finding(probe, level, detail, fix))


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def site_needs(
    configs: list[DictConfig], gpus_per_node: int, allocation_gpus: int, models: list[str], wandb: bool
) -> dict:
    """The manifest of what a job's composed configs need from every node (preflight.py writes it)."""
    backends = {OmegaConf.select(config, "actor_rollout_ref.rollout.checkpoint_engine.backend") for config in configs}
    device = "cpu" if all(str(config.trainer.get("device", "cuda")) == "cpu" for config in configs) else "cuda"
    return {
        "gpus_per_node": gpus_per_node,
        "allocation_gpus": allocation_gpus,
        "device": device,
        "nccl": device == "cuda" and bool(backends & set(NCCL_BACKENDS)),
        "models": models,
        "wandb": wandb,
    }


# ------------------------------------------------------------------ the probes


def nvidia_smi_gpus() -> list[dict[str, str]]:
    """The GPUs the driver lists: index, uuid, name, driver_version, memory.total (MiB)."""
    fields = ["index", "uuid", "name", "driver_version", "memory.total"]
    command = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` exited {result.returncode}: {result.stderr.strip()[-300:]}")
    return [
        dict(zip(fields, (cell.strip() for cell in line.split(",")), strict=True))
        for line in result.stdout.splitlines()
        if line.strip()
    ]


def job_visible(gpus: list[dict[str, str]], visible: str | None) -> list[dict[str, str]]:
    """The listed GPUs this job's processes may use: CUDA_VISIBLE_DEVICES names them by index or UUID (unset: all)."""
    if visible is None:
        return gpus
    wanted = [item.strip() for item in visible.split(",") if item.strip()]
    return [gpu for gpu in gpus if gpu["index"] in wanted or gpu["uuid"] in wanted]


def torch_cuda_major() -> tuple[str, int]:
    import torch

    cuda = torch.version.cuda or PINNED_CUDA
    return cuda, int(cuda.split(".")[0])


def probe_driver_and_gpus(report: NodeReport, gpus_per_node: int, skip: set[str]) -> None:
    node = report.node
    try:
        listed = nvidia_smi_gpus()
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
        report.add(
            "driver",
            "error",
            f"nvidia-smi failed ({error})",
            f"the NVIDIA driver is missing or broken on {node}: repair it, or exclude the node (sbatch --exclude={node})",
        )
        return
    report.facts["gpus_listed"] = listed
    if "driver" not in skip:
        driver = listed[0]["driver_version"] if listed else "unknown"
        cuda, major = torch_cuda_major()
        minimum = MIN_DRIVER_FOR_CUDA_MAJOR.get(major, MIN_DRIVER_FOR_CUDA_MAJOR[max(MIN_DRIVER_FOR_CUDA_MAJOR)])
        report.facts["driver"] = driver
        if not listed or version_tuple(driver) < version_tuple(minimum):
            report.add(
                "driver",
                "error",
                f"NVIDIA driver {driver} is older than {minimum}, the oldest that runs CUDA {cuda} (torch's build; "
                'NVIDIA "CUDA Compatibility")',
                f"update the driver on {node} to >= {minimum}, or exclude the node (sbatch --exclude={node})",
            )
        else:
            report.add("driver", "ok", f"NVIDIA driver {driver} (>= {minimum} for CUDA {cuda})")
    if "gpus" not in skip:
        visible_env = os.environ.get("CUDA_VISIBLE_DEVICES")
        visible = job_visible(listed, visible_env)
        report.facts["gpus_visible"] = len(visible)
        names = ", ".join(f"{gpu['index']}: {gpu['name']} {gpu['memory.total']} MiB" for gpu in visible)
        if len(visible) < gpus_per_node:
            report.add(
                "gpus",
                "error",
                f"{len(visible)} GPU(s) visible to the job ({names or 'none'}; nvidia-smi lists {len(listed)}, "
                f"CUDA_VISIBLE_DEVICES={visible_env}), but the allocation has {gpus_per_node} per node",
                f"a GPU of {node} is missing or failed (nvidia-smi -q there): drain or exclude the node "
                f"(sbatch --exclude={node})",
            )
        else:
            report.add("gpus", "ok", f"{len(visible)} GPU(s): {names}")


def probe_torch_cuda(report: NodeReport, gpus_per_node: int) -> None:
    import torch

    node, build = report.node, f"torch {torch.__version__} (CUDA build {torch.version.cuda})"
    fix = (
        f'activate the GPU environment (make setup-gpu, README.md "GPU cluster set-up") before sbatch, and check '
        f"the driver and GPUs of {node} (nvidia-smi there)"
    )
    if not torch.cuda.is_available():
        report.add("torch_cuda", "error", f"CUDA is not usable by {build}", fix)
        return
    count = torch.cuda.device_count()
    if count != gpus_per_node:
        report.add(
            "torch_cuda", "error", f"{build} sees {count} CUDA device(s), the allocation has {gpus_per_node}", fix
        )
        return
    try:
        for index in range(count):
            matrix = torch.ones(256, 256, device=f"cuda:{index}")
            total = float((matrix @ matrix).sum())
            torch.cuda.synchronize(index)
            if total != 256.0**3:
                raise RuntimeError(f"cuda:{index} computed {total} for a 256 x 256 ones matmul, not {256.0**3}")
    except RuntimeError as error:
        report.add("torch_cuda", "error", f"{build}: a matmul failed: {error}", fix)
        return
    report.add("torch_cuda", "ok", f"{build}: {count} device(s), a matmul on each")


def probe_nccl(report: NodeReport) -> None:
    """cupy's NCCL (the version, a one-GPU communicator's all-reduce) and Ray's view of it."""
    node = report.node
    fix = (
        f"install verl's cupy build with its NCCL on {node} (make setup-gpu: cupy-cuda13x and nvidia-nccl), or exclude "
        f"the node (sbatch --exclude={node}); verl's NCCL weight sync (checkpoint_engine.backend=nccl) needs it"
    )
    try:
        import cupy
        from cupy.cuda import nccl

        version = nccl.get_version()
        with cupy.cuda.Device(0):
            communicator = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
            data = cupy.arange(4, dtype=cupy.float32)
            communicator.allReduce(
                data.data.ptr, data.data.ptr, data.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, cupy.cuda.Stream.null.ptr
            )
            cupy.cuda.Stream.null.synchronize()
            communicator.destroy()
    except Exception as error:  # ImportError, CUDARuntimeError, NcclError: any of them stops the weight sync
        report.add("nccl", "error", f"cupy's NCCL does not work: {type(error).__name__}: {error}", fix)
        return
    try:
        from ray.util.collective import nccl_available
    except ImportError as error:
        report.add(
            "nccl",
            "error",
            f"cupy's NCCL all-reduced, but Ray does not import here ({error}): verl's weight sync runs through Ray's "
            "collective library",
            f"activate the job's environment on {node} (make setup-gpu) before sbatch",
        )
        return
    if not nccl_available():
        report.add(
            "nccl",
            "error",
            "Ray's collective library reports NCCL unavailable (cupy imports, Ray's NCCL group does not)",
            fix,
        )
        return
    report.facts["nccl_version"] = version
    report.add(
        "nccl",
        "ok",
        f"cupy {cupy.__version__}, NCCL {version}: a one-GPU communicator all-reduced; Ray's NCCL available",
    )


def reachable(url: str) -> tuple[bool, str]:
    """Whether an HTTP(S) request to `url` gets any answer within PROBE_TIMEOUT_S (a 4xx answers too)."""
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=PROBE_TIMEOUT_S)
    except urllib.error.HTTPError as answer:
        return True, f"HTTP {answer.code}"
    except (urllib.error.URLError, OSError, ValueError) as error:
        return False, str(getattr(error, "reason", error))
    return True, "HTTP 200"


def probe_hub(report: NodeReport) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
        report.facts["hub_reachable"] = False
        report.add("hub", "ok", "HF_HUB_OFFLINE is set: the hub is not used")
        return False
    endpoint = os.environ.get("HF_ENDPOINT", HF_ENDPOINT)
    ok, answer = reachable(endpoint)
    report.facts["hub_reachable"] = ok
    report.add("hub", "ok", f"{endpoint} {'answers' if ok else 'is not reachable'} ({answer})")
    return ok


def probe_wandb(report: NodeReport) -> None:
    url = os.environ.get("WANDB_BASE_URL", WANDB_BASE_URL)
    ok, answer = reachable(url)
    report.facts["wandb_reachable"] = ok
    report.add("wandb", "ok", f"{url} {'answers' if ok else 'is not reachable'} ({answer})")


def weight_files(directory: Path) -> list[str]:
    """The weight files a model directory needs: those its safetensors / bin index names, else the single file."""
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = directory / index_name
        if index.is_file():
            return sorted(set(json.loads(index.read_text())["weight_map"].values()))
    for single in ("model.safetensors", "pytorch_model.bin"):
        if (directory / single).exists():
            return [single]
    return ["model.safetensors"]


def missing_model_files(directory: Path) -> list[str]:
    return [name for name in ["config.json", *weight_files(directory)] if not os.access(directory / name, os.R_OK)]


def is_hub_id(model: str) -> bool:
    return not (model.startswith(("/", ".", "~")) or Path(model).exists()) and model.count("/") == 1


def hf_download_command(model: str) -> str:
    return f"HF_HOME=/path/on/shared/storage hf download {model}"


def cached_snapshot(model: str) -> Path | None:
    """The snapshot directory of hub id `model` in this host's Hugging Face cache (HF_HOME), without the network."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(model, local_files_only=True))
    except Exception:  # LocalEntryNotFoundError and relatives: no snapshot of it in this cache
        return None


def local_model_dir(model: str) -> Path | None:
    """Where `model`'s files are on this host (the directory, or its cached snapshot), if they are all there."""
    directory = cached_snapshot(model) if is_hub_id(model) else Path(model).expanduser()
    if directory is None or not directory.is_dir() or missing_model_files(directory):
        return None
    return directory


def probe_model(report: NodeReport, model: str, hub_reachable: Callable[[], bool]) -> None:
    if not is_hub_id(model):
        directory = Path(model).expanduser()
        missing = missing_model_files(directory) if directory.is_dir() else ["the directory itself"]
        if missing:
            report.add(
                "model",
                "error",
                f"the model {model} is not readable here: missing {', '.join(missing)}",
                "put the model on storage every node mounts and pass that path (INIT_MODEL=/path or "
                f"actor_rollout_ref.model.path=/path); on a machine with hub access: hf download <id> --local-dir {model}",
            )
        else:
            report.add(
                "model", "ok", f"{model}: config.json and {len(weight_files(directory))} weight file(s) readable"
            )
        return
    from huggingface_hub.constants import HF_HOME as hf_home

    snapshot = cached_snapshot(model)
    missing = missing_model_files(snapshot) if snapshot is not None else ["the whole snapshot"]
    if not missing:
        report.add("model", "ok", f"{model}: complete in the Hugging Face cache of HF_HOME={hf_home} ({snapshot})")
        return
    stage = (
        f"on a machine with hub access run `{hf_download_command(model)}`, then `export "
        'HF_HOME=/path/on/shared/storage` before sbatch (launch/README.md "Offline nodes")'
    )
    detail = (
        f"{model} is not complete in this node's Hugging Face cache (HF_HOME={hf_home}; missing {', '.join(missing)})"
    )
    if hub_reachable():
        report.add("model", "warning", f"{detail}: each node downloads it when the trainer starts", stage)
    else:
        report.add("model", "error", f"{detail}, and this node cannot reach the hub", stage)


def check_node(manifest: dict, node: str, skip: set[str]) -> NodeReport:
    """Every probe the manifest asks for on this node, in order; a probe's exception is its error, not the check's."""
    report = NodeReport(node)
    started = time.monotonic()
    gpus = int(manifest["gpus_per_node"])
    hub: list[bool] = []

    def hub_reachable() -> bool:  # probed once, when first needed (skipped: taken as unreachable)
        if not hub:
            hub.append("hub" not in skip and probe_hub(report))
        return hub[0]

    steps: list[tuple[str, Callable[[], object]]] = []
    if manifest.get("allocation_gpus") or manifest.get("device") == "cuda":
        steps.append(("driver", lambda: probe_driver_and_gpus(report, gpus, skip)))
    if manifest.get("device") == "cuda":
        steps.append(("torch_cuda", lambda: probe_torch_cuda(report, gpus)))
    if manifest.get("nccl"):
        steps.append(("nccl", lambda: probe_nccl(report)))
    for model in manifest.get("models", []):
        steps.append(("model", functools.partial(probe_model, report, model, hub_reachable)))
    steps.append(("hub", hub_reachable))
    if manifest.get("wandb"):
        steps.append(("wandb", lambda: probe_wandb(report)))
    for probe, run in steps:
        skipped = {"driver", "gpus"} <= skip if probe == "driver" else probe in skip
        if skipped:
            report.add(probe, "ok", "skipped (SITE_CHECK_SKIP)")
            continue
        try:
            run()
        except Exception as error:
            report.add(probe, "error", f"the probe failed: {type(error).__name__}: {error}", "see the node's site log")
    report.facts["seconds"] = round(time.monotonic() - started, 1)
    return report


# ------------------------------------------------------------------ the job's verdict


def read_reports(paths: list[Path]) -> list[NodeReport]:
    reports = []
    for path in paths:
        raw = json.loads(path.read_text())
        findings = [Finding(**item) for item in raw["findings"]]
        reports.append(NodeReport(raw["node"], findings, raw["facts"]))
    return reports


def verdict(manifest: dict, reports: list[NodeReport], nodes: list[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """(errors, warnings, decisions): each error and warning names its node, what is wrong and the fix."""
    errors, warnings = [], []
    seen = {report.node for report in reports}
    for node in nodes:
        if node not in seen:
            errors.append(f"node {node}: no site check report (the check did not run or died there; see its log)")
    for report in reports:
        for finding in report.findings:
            line = f"node {report.node}: {finding.probe}: {finding.detail}" + (
                f"; fix: {finding.fix}" if finding.fix else ""
            )
            if finding.level == "error":
                errors.append(line)
            elif finding.level == "warning":
                warnings.append(line)
    decisions: dict[str, str] = {}
    if reports and not all(report.facts.get("hub_reachable", True) for report in reports):
        decisions["HF_HUB_OFFLINE"] = "1"
    unreachable = [report.node for report in reports if report.facts.get("wandb_reachable") is False]
    if manifest.get("wandb") and unreachable:
        decisions["WANDB_MODE"] = "offline"
        warnings.append(
            f"wandb: {os.environ.get('WANDB_BASE_URL', WANDB_BASE_URL)} is not reachable from node(s) "
            f"{' '.join(unreachable)}: the run logs to wandb offline (WANDB_MODE=offline)"
        )
    return errors, warnings, decisions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/site_check.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    node = commands.add_parser("node", help="run this node's probes and write its report")
    node.add_argument("--manifest", type=Path, required=True, help="what the job needs (written by preflight.py)")
    node.add_argument("--node", required=True, help="this node's name, for the messages")
    node.add_argument("--report", type=Path, required=True, help="where to write this node's report (JSON)")
    judge = commands.add_parser("verdict", help="the job's verdict from every node's report")
    judge.add_argument("--manifest", type=Path, required=True, help="what the job needs (written by preflight.py)")
    judge.add_argument("--nodes", required=True, help="the job's nodes, space-separated: a node without report fails")
    judge.add_argument("reports", nargs="*", type=Path, help="the nodes' reports")
    args = parser.parse_args(argv)
    manifest = json.loads(args.manifest.read_text())
    skip = set(os.environ.get("SITE_CHECK_SKIP", "").split())
    unknown = skip - set(PROBES)
    if unknown:
        sys.exit(f"site_check: SITE_CHECK_SKIP names {sorted(unknown)}, which are not probes ({', '.join(PROBES)})")
    if args.command == "node":
        report = check_node(manifest, args.node, skip)
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(
            json.dumps(
                {"node": report.node, "findings": [asdict(f) for f in report.findings], "facts": report.facts}, indent=1
            )
        )
        for finding in report.findings:
            print(f"site_check: node {report.node}: {finding.probe}: [{finding.level}] {finding.detail}", flush=True)
        sys.exit(1 if any(finding.level == "error" for finding in report.findings) else 0)
    errors, warnings, decisions = verdict(manifest, read_reports(args.reports), args.nodes.split())
    for line in warnings:
        print(f"WARNING: {line}", file=sys.stderr)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        sys.exit(1)
    for key, value in decisions.items():
        print(f"{key}={value}")


if __name__ == "__main__":
    main()
