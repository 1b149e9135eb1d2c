"""verl's NCCL checkpoint engine (the separate-async weight sync), with cupy's buffers given back after each sync.

verl 0.9.1's ``NCCLCheckpointEngine`` (verl/checkpoint_engine/nccl_checkpoint_engine.py) allocates the send and
receive buckets of the trainer's rank 0 through cupy in ``prepare`` (lines 168-170: 2 x
``update_weights_bucket_megabytes``, 2 x 2 GiB in our configs) and in ``finalize`` (lines 182-193) drops its references
and empties torch's cache only: the blocks go back to cupy's default memory pool, which keeps them, so rank 0 holds
4 GiB more than its training state for the whole run. ``multi_sender`` (line 142, default True) is not the cause: the
relays it admits (rank 0's node peers) hold torch buffers, which that ``torch.cuda.empty_cache`` returns. This engine
runs verl's ``finalize`` and then frees the unused blocks of cupy's pool, so the buffers live only during the sync.

Registered under ``nouscoder_nccl`` through verl's ``custom_backend_module`` (imported by the checkpoint-engine
workers and manager before the lookup, verl/checkpoint_engine/base.py ``CheckpointEngineWorker``):

    actor_rollout_ref.rollout.checkpoint_engine.backend=nouscoder_nccl
    actor_rollout_ref.rollout.checkpoint_engine.custom_backend_module=recipe.nouscoder.training.nccl_release
"""

from verl.checkpoint_engine.base import CheckpointEngineRegistry
from verl.checkpoint_engine.nccl_checkpoint_engine import NCCLCheckpointEngine, cp

BACKEND = "nouscoder_nccl"


@CheckpointEngineRegistry.register(BACKEND)
class PoolReleasingNCCLCheckpointEngine(NCCLCheckpointEngine):
    """verl's NCCL engine whose ``finalize`` also returns cupy's cached blocks to the device."""

    def finalize(self):
        super().finalize()
        cp.get_default_memory_pool().free_all_blocks()
