"""launch/disk_plan.py: the retention arithmetic of the NousCoder chain, recomputed here.

Qwen3-14B, 14.8e9 parameters; a checkpoint holds 12 B each (fp32 weights + Adam), saved by both copies of the
trainer's FSDP-within-a-node state (16 GPUs, fsdp_size 8): 355.2 GB; model shards alone 4 B x 2 copies = 118.4 GB;
a merged bf16 model 29.6 GB. The launcher's message for a too-small OUTPUT_ROOT is checked in
tests/launch/test_local_mode.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import disk_plan
import pytest
from chain import compose
from disk_plan import replicas

P = 14.8e9


def test_the_nouscoder_trainer_saves_both_copies_and_the_colocated_one_a_single_one():
    assert replicas(compose("dapo_32k", [])) == 2  # 16 GPUs / fsdp_size 8
    assert replicas(compose("dapo_32k", ["actor_rollout_ref.actor.fsdp_config.fsdp_size=-1"])) == 1
    assert replicas(compose("debug_64", [])) == 1


def test_the_chain_peaks_while_the_40k_stage_selects_beside_the_32k_remains():
    stages = [
        disk_plan.stage_disk("dapo_32k", compose("dapo_32k", []), P, keep_last=2, rescore_top_k=3),
        disk_plan.stage_disk("dapo_40k", compose("dapo_40k", []), P, keep_last=2, rescore_top_k=None),
    ]
    checkpoint, shards, merged = 12 * P * 2, 4 * P * 2, 2 * P
    assert stages[0].checkpoint_bytes == pytest.approx(checkpoint)  # 355.2 GB
    assert stages[0].training_bytes == pytest.approx(6 * checkpoint)  # 2 newest + 3 best + 1 being written
    assert stages[0].selecting_bytes == pytest.approx(6 * checkpoint + 3 * merged)  # 3 merged candidates
    kept = checkpoint + 4 * shards + merged  # the selected whole, 4 others without optimizer, the merged pick
    assert stages[0].selected_bytes == pytest.approx(kept)  # 858.4 GB
    need, phase, earlier = disk_plan.peak_bytes(stages, extra_bytes=6.3e9)
    assert phase == "selecting dapo_40k's model" and earlier == pytest.approx(kept)
    assert need == pytest.approx(kept + 4 * checkpoint + merged + 6.3e9)  # 2,315 GB
    assert disk_plan.gb(need) == "2,315 GB"


def test_the_free_space_of_a_path_not_created_yet(tmp_path, monkeypatch):
    """Asked of the nearest directory that exists (compared by the path asked, not by two readings of the free
    space, which other processes writing to the same disk change in between)."""
    asked = []
    statvfs = os.statvfs
    monkeypatch.setattr(os, "statvfs", lambda path: asked.append(Path(path)) or statvfs(path))
    assert disk_plan.free_bytes(tmp_path / "not" / "yet") > 0
    assert asked == [tmp_path]
    monkeypatch.undo()
    (tmp_path / "held").write_bytes(b"x" * 10_000)
    assert disk_plan.used_bytes(tmp_path) >= 10_000 and disk_plan.used_bytes(tmp_path / "none") == 0


def test_a_local_model_is_sized_from_its_config_and_a_missing_one_is_unknown(tmp_path):
    from transformers import Qwen2Config

    Qwen2Config(
        vocab_size=100,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        tie_word_embeddings=True,
    ).save_pretrained(tmp_path)
    # embedding 100 x 16 (tied), per layer q 16x16+16, k/v 2 x (8x16+8), o 16x16, MLP 3 x 16x32, 2 norms, final norm
    layer = (16 * 16 + 16) + 2 * (8 * 16 + 8) + 16 * 16 + 3 * 16 * 32 + 2 * 16
    assert disk_plan.model_params(str(tmp_path)) == 100 * 16 + 2 * layer + 16
    assert disk_plan.model_params(str(tmp_path / "absent")) is None


def test_the_cli_prints_each_checkpoint_and_the_peak(capsys):
    with pytest.raises(SystemExit) as exit_info:
        disk_plan.main(["--help"])
    assert exit_info.value.code == 0
    usage = capsys.readouterr().out
    for flag in ("--stages", "--nodes", "--model-config", "--keep-last", "--output-root", "--config-overrides"):
        assert flag in usage
    disk_plan.main(["--nodes", "4", "--stages", "deepcoder_16k deepcoder_32k", "--offline-filter-config", "none"])
    out = capsys.readouterr().out
    # DeepSeek-R1-Distill-Qwen-14B, fully sharded over 32 GPUs: one copy, 12 B x 14.77e9 = 177 GB per checkpoint
    assert (
        "- a checkpoint of deepcoder_16k: 177 GB" in out and "disk at the peak (selecting deepcoder_32k's model)" in out
    )
