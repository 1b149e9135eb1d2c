"""launch/check_gpu_deps.py (`make gpu-deps-check`) on pip's resolution of the cluster extra, without the network.

`data/gpu_resolution_verl_vllm.json` is the real `pip install --dry-run --ignore-installed --report` of the old
`[gpu]` extra, `verl[vllm]==0.9.1` (names and versions of its 263 packages, resolved against PyPI on 2026-11-26;
pip's other metadata left out). The same resolution of the fixed extra, `verl[vllm,cupy-cu130]==0.9.1`, differed from
it by exactly one package, `cupy-cuda13x 14.0.1`, which the second report below adds. `make gpu-deps-check` itself
resolves the current setup.py against PyPI in `make test`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import check_gpu_deps
import pytest

REPO = Path(__file__).resolve().parents[2]
OLD_RESOLUTION = Path(__file__).parent / "data" / "gpu_resolution_verl_vllm.json"


def report_with(tmp_path: Path, *extra: tuple[str, str]) -> Path:
    report = json.loads(OLD_RESOLUTION.read_text())
    report["install"] += [{"metadata": {"name": name, "version": version}} for name, version in extra]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    return path


def test_the_old_extra_fails_naming_cupy_and_the_verl_extra_that_pins_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        check_gpu_deps.main([str(report_with(tmp_path)), "--flash-attn", "flash-attn==2.8.3"])
    message = str(exit_info.value.code)
    assert message.startswith("check_gpu_deps: the [gpu] extra does not install what the GPU configs need")
    (problem,) = [line for line in message.splitlines() if line.startswith("  - ")]
    assert problem.startswith(
        "  - cupy-cuda13x is not in the resolution (cupy (verl's NCCL weight sync), needed by "
        "actor_rollout_ref.rollout.checkpoint_engine.backend=nouscoder_nccl in dapo_32k, dapo_32k_multi_turn, dapo_40k, "
    )
    assert problem.endswith("; verl's extra `cupy-cu130` pins it")


def test_the_fixed_extra_passes(tmp_path, capsys):
    check_gpu_deps.main([str(report_with(tmp_path, ("cupy-cuda13x", "14.0.1"))), "--flash-attn", "flash-attn==2.8.3"])
    printed = capsys.readouterr().out
    assert "cupy-cuda13x 14.0.1; then flash-attn==2.8.3 (verl's pin for torch 2.11, CUDA 13.0)" in printed
    assert re.search(r"the bill of materials of \d+ GPU configs \(\d+ parts\) is covered", printed)


def test_a_cupy_other_than_verls_pin_fails(tmp_path):
    with pytest.raises(SystemExit, match=r"cupy-cuda13x resolves to 13\.6\.0, verl pins 14\.0\.1"):
        check_gpu_deps.main(
            [str(report_with(tmp_path, ("cupy-cuda13x", "13.6.0"))), "--flash-attn", "flash-attn==2.8.3"]
        )


def test_setup_py_names_verls_cupy_extra():
    """What `make setup-gpu` installs (the resolution above needs the network: `make gpu-deps-check`)."""
    assert '"gpu": ["verl[vllm,cupy-cu130]==0.9.1"]' in (REPO / "setup.py").read_text()
