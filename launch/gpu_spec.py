"""The GPU the planner plans for: memory, dense bf16 peak and the HBM bandwidth a decode step's reads reach.

Datasheet figures (NVIDIA H100 SXM, H200 SXM, A100 SXM 80 GB, B200 datasheets): memory, dense (not sparse) bf16
TFLOP/s, peak HBM TB/s. What share of them a run reaches (MFU, decode bandwidth) is an assumption of the planner
(launch/run_plan.py `Assumptions`), which a measured re-plan replaces. Another GPU: `--gpu-memory-gb`,
`--gpu-tflops`, `--gpu-tbps` override the kind's figures.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class GPUSpec:
    """One GPU kind's figures: bytes of memory, dense bf16 FLOP/s, peak HBM bytes/s."""

    name: str
    memory_bytes: float
    peak_flops: float
    hbm_bytes_per_s: float

    def describe(self) -> str:
        return (
            f"{self.name}: {self.memory_bytes / 1e9:.0f} GB, {self.peak_flops / 1e12:.0f} TFLOP/s bf16, "
            f"{self.hbm_bytes_per_s / 1e12:.2f} TB/s"
        )


GPUS = {
    "h100": GPUSpec("H100 SXM 80 GB", 80e9, 989e12, 3.35e12),
    "h200": GPUSpec("H200 SXM 141 GB", 141e9, 989e12, 4.8e12),
    "a100": GPUSpec("A100 SXM 80 GB", 80e9, 312e12, 2.039e12),
    "b200": GPUSpec("B200 180 GB", 180e9, 2250e12, 8.0e12),
}
DEFAULT_GPU = "h100"


def add_gpu_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("GPU")
    group.add_argument("--gpu", choices=sorted(GPUS), default=DEFAULT_GPU, help="GPU kind (default: %(default)s)")
    group.add_argument("--gpu-memory-gb", type=float, default=None, help="memory per GPU, GB (default: the kind's)")
    group.add_argument("--gpu-tflops", type=float, default=None, help="dense bf16 TFLOP/s (default: the kind's)")
    group.add_argument("--gpu-tbps", type=float, default=None, help="peak HBM TB/s (default: the kind's)")


def gpu_from_args(args: argparse.Namespace) -> GPUSpec:
    gpu = GPUS[args.gpu]
    if args.gpu_memory_gb:
        gpu = replace(gpu, name=f"{gpu.name} ({args.gpu_memory_gb:.0f} GB)", memory_bytes=args.gpu_memory_gb * 1e9)
    if args.gpu_tflops:
        gpu = replace(gpu, peak_flops=args.gpu_tflops * 1e12)
    if args.gpu_tbps:
        gpu = replace(gpu, hbm_bytes_per_s=args.gpu_tbps * 1e12)
    return gpu
