"""The separate-async trainer's pi_old snapshot on CPU (recipe/nouscoder/cpu/snapshots.py): verl's FSDP2 save aliases
the live shards on the CPU platform (the bug the CPU learning run exposed), the CPU plugin's save copies them."""

import socket

import pytest
import torch
import torch.distributed as dist
import verl.utils.fsdp_utils as verl_fsdp_utils
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

from recipe.nouscoder.cpu.snapshots import copying, use_copying_snapshots


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def fsdp2_model():
    """A two-layer model sharded by FSDP2 over a one-process gloo group on CPU, as the CPU mode's trainer rank."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))
        fully_shard(model, mesh=init_device_mesh("cpu", (1,)))
        yield model
    finally:
        dist.destroy_process_group()


def step_in_place(model: torch.nn.Module) -> None:
    """What the optimizer does between the snapshot and the next mini-batch's pi_old: update the shards in place."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(1.0)


def test_verls_fsdp2_save_aliases_the_live_shards_on_cpu(fsdp2_model):
    installed = verl_fsdp_utils.fsdp2_sharded_save_to_cpu  # the plugin's, if another test imported the plugin
    save = installed.__wrapped__ if getattr(installed, "nouscoder_cpu", False) else installed
    state, _ = save(fsdp2_model)
    before = {name: tensor.clone() for name, (tensor, _) in state.items()}
    step_in_place(fsdp2_model)
    # the "snapshot" moved with the model: pi_old == pi_theta (if verl copies one day, drop snapshots.py)
    assert all(not torch.equal(state[name][0], before[name]) for name in state)


def test_the_copying_save_keeps_pi_old_while_the_model_trains(fsdp2_model):
    installed = verl_fsdp_utils.fsdp2_sharded_save_to_cpu
    save = installed if getattr(installed, "nouscoder_cpu", False) else copying(installed)
    state, spec = save(fsdp2_model)
    before = {name: tensor.clone() for name, (tensor, _) in state.items()}
    step_in_place(fsdp2_model)
    assert all(torch.equal(state[name][0], before[name]) for name in state)
    verl_fsdp_utils.fsdp2_sharded_load_from_cpu(fsdp2_model, state, spec)  # verl's restore brings pi_old back
    restored = {name: parameter.to_local() for name, parameter in fsdp2_model.named_parameters()}
    assert all(torch.equal(restored[name], before[name]) for name in state)


def test_installing_twice_wraps_once(monkeypatch):
    installed = verl_fsdp_utils.fsdp2_sharded_save_to_cpu
    verls_own = installed.__wrapped__ if getattr(installed, "nouscoder_cpu", False) else installed
    monkeypatch.setattr(verl_fsdp_utils, "fsdp2_sharded_save_to_cpu", verls_own)
    use_copying_snapshots()
    installed = verl_fsdp_utils.fsdp2_sharded_save_to_cpu
    use_copying_snapshots()
    assert verl_fsdp_utils.fsdp2_sharded_save_to_cpu is installed and installed.nouscoder_cpu
    assert not getattr(installed.__wrapped__, "nouscoder_cpu", False)
