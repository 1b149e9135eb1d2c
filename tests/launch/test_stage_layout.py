"""launch/stage_layout.py: an FSDP group size that does not divide the trainer's GPUs fails before Ray starts."""

from __future__ import annotations

import pytest
from stage_layout import LayoutError, layout_overrides

from recipe.nouscoder.configs import compose_experiment


def test_fsdp_within_a_node_needs_groups_that_tile_the_trainer():
    assert layout_overrides(compose_experiment("dapo_32k", []), "dapo_32k", 6, 8) == []  # 16 GPUs in groups of 8
    uneven = [
        "trainer.nnodes=3",
        "trainer.n_gpus_per_node=4",
        "actor_rollout_ref.rollout.nnodes=3",
        "actor_rollout_ref.rollout.n_gpus_per_node=4",
    ]
    with pytest.raises(LayoutError, match=r"fsdp_config.fsdp_size=8 does not divide the trainer's 12 GPUs"):
        layout_overrides(compose_experiment("dapo_32k", uneven), "dapo_32k", 6, 4)
