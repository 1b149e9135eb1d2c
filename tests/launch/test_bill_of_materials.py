"""launch/bill_of_materials.py: what each composed config needs on a node, checked here with verl's own lookups.

The expected pins are written out from verl 0.9.1's package metadata (`importlib.metadata.requires("verl")`):
`vllm==0.24.0; extra == "vllm"`, `cupy-cuda13x==14.0.1; extra == "cupy-cu130"`,
`flash-attn==2.8.3; extra == "flash-attn-cu130torch211"`. This CPU machine has verl, Ray and TransferQueue but no
vLLM, cupy or flash-attn: the CPU mode's config is complete here, the NousCoder config is not, and the check must say
exactly which pieces are missing and which key asks for them. The CPU mode's check runs in a subprocess: its plugin,
once imported, patches verl for the rest of the process (what tests/test_verl_contract.py reads). The node check through srun, with one node made
incomplete, is tests/launch/test_slurm_chain.py::test_a_node_without_what_the_configs_import_fails_the_job_before_ray_naming_it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bill_of_materials as bom
import pytest

from recipe.nouscoder.configs import compose_experiment

NCCL_KEY = "actor_rollout_ref.rollout.checkpoint_engine.backend=nouscoder_nccl"
ENGINE_MODULE = "recipe.nouscoder.training.nccl_release"


def parts_of(name: str, *overrides: str) -> dict[str, bom.Part]:
    return {part.name: part for part in bom.bill_of_materials(compose_experiment(name, list(overrides)))}


def test_the_nouscoder_config_needs_vllm_cupy_and_flash_attn_at_verls_pins():
    parts = parts_of("dapo_32k")
    cupy = parts["cupy (verl's NCCL weight sync)"]
    assert (cupy.module, cupy.distribution, cupy.pin, cupy.selected_by) == ("cupy", "cupy-cuda13x", "14.0.1", NCCL_KEY)
    assert (parts["vLLM"].distribution, parts["vLLM"].pin) == ("vllm", "0.24.0")
    assert (parts["flash-attn"].module, parts["flash-attn"].pin) == ("flash_attn", "2.8.3")
    assert parts["checkpoint engine nouscoder_nccl"].lookup == ("checkpoint_engine", "nouscoder_nccl")
    assert parts["checkpoint-engine module"].module == ENGINE_MODULE  # imported before the lookup, as verl does
    assert parts["rollout backend vllm"].lookup == ("rollout", "vllm:async")
    assert parts["trainer nouscoder_separate_async"].lookup == ("trainer", "nouscoder_separate_async")
    assert parts["policy loss dapo"].lookup == ("policy_loss", "dapo")
    assert "wandb" not in parts  # only with the wandb logger
    assert "wandb" in parts_of("dapo_32k", "trainer.logger=[console,file,wandb]")


def test_a_colocated_config_needs_no_cupy_and_the_multi_turn_config_its_agent_loop():
    assert "cupy (verl's NCCL weight sync)" not in parts_of("microcoder_4k", "data.train_files=x.parquet")
    loop = parts_of("dapo_32k_multi_turn")["the multi-turn agent loop"]
    assert loop.module == "recipe.nouscoder.multi_turn.agent_loop"


def test_the_gpu_config_names_what_this_cpu_machine_lacks():
    entries = bom.manifest_of(
        {"dapo_32k": compose_experiment("dapo_32k", []), "dapo_40k": compose_experiment("dapo_40k", [])}
    )
    problems = {entry.part.name: problem for entry, problem in bom.check(entries)}
    missing = {name for name, problem in problems.items() if problem}
    assert missing == {
        "cupy (verl's NCCL weight sync)",
        "vLLM",
        "flash-attn",
        "rollout backend vllm",
        "checkpoint-engine module",
        "checkpoint engine nouscoder_nccl",
    }
    assert problems["cupy (verl's NCCL weight sync)"] == "ModuleNotFoundError: No module named 'cupy'"
    assert problems["checkpoint-engine module"] == "ModuleNotFoundError: No module named 'cupy'"
    # verl's registry swallowed the ImportError at import; its lookup names the backend and the module that failed
    assert "Checkpoint engine nouscoder_nccl not registered" in problems["checkpoint engine nouscoder_nccl"]
    assert "nccl_checkpoint_engine: No module named 'cupy'" in problems["checkpoint engine nouscoder_nccl"]
    lines = bom.report(bom.check(entries), "node7")
    assert (
        f"node node7: cupy (verl's NCCL weight sync) (cupy-cuda13x==14.0.1), needed by {NCCL_KEY} in dapo_32k, "
        "dapo_40k: ModuleNotFoundError: No module named 'cupy'" in lines
    )
    # what both configs need is listed once, with both names
    (verl,) = [entry for entry in entries if entry.part.name == "verl"]
    assert verl.configs == ("dapo_32k", "dapo_40k")


def test_a_version_other_than_verls_pin_is_a_problem(monkeypatch):
    part = bom.Part("Ray", "every config", module="ray", distribution="ray", pin="0.0.1")
    assert bom.problem_of(part).endswith("is installed; verl 0.9.1 pins 0.0.1")
    module_from_elsewhere = bom.Part("pytest", "test", module="pytest", distribution="not-pytest", pin="1.0")
    assert "pytest imports, but from ['pytest'], not not-pytest==1.0" == bom.problem_of(module_from_elsewhere)


def test_the_manifest_round_trips(tmp_path):
    entries = bom.manifest_of({"dapo_40k": compose_experiment("dapo_40k", [])})
    path = tmp_path / "bill_of_materials.json"
    path.write_text(json.dumps([entry.to_json() for entry in entries]))
    assert [bom.Entry.from_json(item) for item in json.loads(path.read_text())] == entries


@pytest.mark.integration  # subprocesses: the CPU mode's plugin patches verl in the process that imports it
def test_the_setup_gpu_check_passes_for_the_cpu_mode_and_exits_1_naming_the_gpu_pieces():
    """`make setup-gpu` ends with `launch/bill_of_materials.py check`; on this CPU machine the CPU mode's config is
    complete and dapo_32k's is not. ~25 s (two processes importing verl)."""
    script = [sys.executable, str(Path(bom.__file__)), "check", "--node", "here", "--config"]
    complete = subprocess.run([*script, "debug_cpu"], capture_output=True, text=True, timeout=300)
    assert complete.returncode == 0, complete.stderr[-2000:]
    assert "bill_of_materials: node here has all 11 parts" in complete.stdout
    incomplete = subprocess.run([*script, "dapo_32k"], capture_output=True, text=True, timeout=300)
    assert incomplete.returncode == 1
    assert "bill_of_materials: 6 of 14 parts missing on node here:" in incomplete.stderr
    assert "[missing] vLLM (vllm==0.24.0), needed by actor_rollout_ref.rollout.name=vllm" in incomplete.stdout
