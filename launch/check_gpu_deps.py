"""Check the cluster's GPU dependency set, as `pip install --dry-run --report` resolved it, and print its versions.

    pip install --dry-run --ignore-installed --report REPORT '.[gpu]'
    python launch/check_gpu_deps.py REPORT --flash-attn 'flash-attn==2.8.3'

`make gpu-deps-check` (part of `make test`) runs both. The resolution itself catches pin conflicts (pip fails);
this adds what pip cannot know:
- every distribution the GPU experiment configs need (their bill of materials, `launch/bill_of_materials.py`: vLLM
  for `rollout.name=vllm`, cupy for the NCCL checkpoint engine, flash-attn for flash_attention_2, ...) is in the
  resolution, at the version verl 0.9.1's own extras pin;
- the flash-attn `make setup-gpu` builds afterwards is the one verl 0.9.1 pins for the torch the resolution picked
  (verl's extra `flash-attn-cu<CUDA>torch<MAJOR><MINOR>`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import cache
from pathlib import Path

from bill_of_materials import Entry, gpu_experiment_configs, manifest_of, verl_extra_pins

SHOWN = ("verl", "vllm", "torch", "transformers", "ray", "numpy", "cupy-cuda13x")
FLASH_ATTN_EXTRA = re.compile(r"^flash-attn-cu(\d+)torch(\d)(\d+)$")


def picked_versions(report: Path) -> dict[str, str]:
    """{package name (lower case): version} of everything the dry run would install."""
    return {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }


def verl_flash_attn_pins() -> dict[str, tuple[str, str]]:
    """{torch major.minor: (flash-attn version, CUDA tag)} from verl's own extras."""
    pins = {}
    for extra, distributions in verl_extra_pins().items():
        match = FLASH_ATTN_EXTRA.match(extra)
        if match and "flash-attn" in distributions:
            cuda, major, minor = match.groups()
            pins[f"{major}.{minor}"] = (distributions["flash-attn"], cuda)
    return pins


def extra_pinning(distribution: str) -> str:
    """The verl extras that pin `distribution`, as a hint for the fix."""
    extras = sorted(extra for extra, pins in verl_extra_pins().items() if distribution in pins)
    return f"verl's extra {' / '.join(f'`{extra}`' for extra in extras)} pins it" if extras else "verl pins it nowhere"


def missing_distributions(entries: list[Entry], picked: dict[str, str]) -> list[str]:
    """One line per part whose distribution the resolution lacks or picks at another version than verl's pin."""
    problems = []
    for entry in entries:
        part = entry.part
        if not part.distribution:
            continue
        name = part.distribution.lower()
        where = f"{part.name}, needed by {part.selected_by} in {', '.join(entry.configs)}"
        if name not in picked:
            problems.append(f"{part.distribution} is not in the resolution ({where}); {extra_pinning(name)}")
        elif part.pin and picked[name].split("+")[0] != part.pin:
            problems.append(f"{part.distribution} resolves to {picked[name]}, verl pins {part.pin} ({where})")
    return problems


@cache
def gpu_bill_of_materials() -> tuple[tuple[str, ...], tuple[Entry, ...]]:
    """The GPU experiment configs and their merged bill of materials (composed once per process)."""
    configs = gpu_experiment_configs([])
    return tuple(configs), tuple(manifest_of(configs))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python launch/check_gpu_deps.py", description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="the JSON report of pip install --dry-run --report")
    parser.add_argument("--flash-attn", required=True, help="the flash-attn requirement make setup-gpu installs")
    args = parser.parse_args(argv)
    picked = picked_versions(args.report)
    torch_minor = ".".join(picked["torch"].split("+")[0].split(".")[:2])
    pins = verl_flash_attn_pins()
    if torch_minor not in pins:
        sys.exit(f"check_gpu_deps: verl pins no flash-attn for torch {torch_minor} (it does for {sorted(pins)})")
    version, cuda = pins[torch_minor]
    if args.flash_attn != f"flash-attn=={version}":
        sys.exit(
            f"check_gpu_deps: FLASH_ATTN_SPEC={args.flash_attn}, but verl pins flash-attn=={version} for torch "
            f"{torch_minor}: set FLASH_ATTN_SPEC in the Makefile to that"
        )
    configs, entries = gpu_bill_of_materials()
    problems = missing_distributions(list(entries), {**picked, "flash-attn": version})
    if problems:
        sys.exit(
            "check_gpu_deps: the [gpu] extra does not install what the GPU configs need "
            "(their bill of materials, launch/bill_of_materials.py):\n"
            + "\n".join(f"  - {problem}" for problem in problems)
            + "\nAdd it to setup.py's `gpu` extra (verl's own extras pin these versions), then rerun make gpu-deps-check."
        )
    shown = ", ".join(f"{name} {picked[name]}" for name in SHOWN if name in picked)
    print(
        f"GPU dependency set resolves ({len(picked)} packages): {shown}; then {args.flash_attn} "
        f"(verl's pin for torch {torch_minor}, CUDA {cuda[:-1]}.{cuda[-1]}); the bill of materials of "
        f"{len(configs)} GPU configs ({len(entries)} parts) is covered"
    )


if __name__ == "__main__":
    main()
