"""Check the cluster's GPU dependency set, as `pip install --dry-run --report` resolved it, and print its versions.

    pip install --dry-run --ignore-installed --report REPORT '.[gpu]'
    python launch/check_gpu_deps.py REPORT --flash-attn 'flash-attn==2.8.3'

`make gpu-deps-check` (part of `make test`) runs both. The resolution itself catches pin conflicts (pip fails);
this adds what pip cannot know: that the flash-attn `make setup-gpu` builds afterwards is the one verl 0.9.1 pins
for the torch the resolution picked (verl's extra `flash-attn-cu<CUDA>torch<MAJOR><MINOR>`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from importlib.metadata import requires
from pathlib import Path

SHOWN = ("verl", "vllm", "torch", "transformers", "ray", "numpy")
FLASH_ATTN_EXTRA = re.compile(r'^flash-attn==(\S+); extra == "flash-attn-cu(\d+)torch(\d)(\d+)"$')


def picked_versions(report: Path) -> dict[str, str]:
    """{package name (lower case): version} of everything the dry run would install."""
    return {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }


def verl_flash_attn_pins() -> dict[str, tuple[str, str]]:
    """{torch major.minor: (flash-attn version, CUDA tag)} from verl's own extras."""
    pins = {}
    for requirement in requires("verl") or []:
        match = FLASH_ATTN_EXTRA.match(requirement.strip())
        if match:
            version, cuda, major, minor = match.groups()
            pins[f"{major}.{minor}"] = (version, cuda)
    return pins


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
    shown = ", ".join(f"{name} {picked[name]}" for name in SHOWN if name in picked)
    print(
        f"GPU dependency set resolves ({len(picked)} packages): {shown}; then {args.flash_attn} "
        f"(verl's pin for torch {torch_minor}, CUDA {cuda[:-1]}.{cuda[-1]})"
    )


if __name__ == "__main__":
    main()
