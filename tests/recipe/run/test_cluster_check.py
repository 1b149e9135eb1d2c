"""recipe.nouscoder.run.cluster_check: a config that the Ray cluster cannot hold fails at once, naming what is missing."""

import pytest

from recipe.nouscoder.configs import compose_experiment
from recipe.nouscoder.run.cluster_check import ClusterTooSmall, check_cluster, device_pools


def composed(name: str, *overrides: str):
    return compose_experiment(name, overrides)


def node(gpus: float, cpus: float, alive: bool = True) -> dict:
    return {"Alive": alive, "Resources": {"CPU": cpus, "GPU": gpus} if gpus else {"CPU": cpus}}


def test_the_48_gpu_config_fits_six_8_gpu_nodes():
    check_cluster(composed("dapo_32k"), [node(8, 64) for _ in range(6)])


def test_a_machine_without_gpus_is_told_the_keys_and_the_cpu_mode():
    with pytest.raises(ClusterTooSmall) as error:
        check_cluster(composed("dapo_32k"), [node(0, 2)])
    message = str(error.value)
    assert "trainer pool: 2 node(s) with 8 free GPU(s) each (trainer.nnodes, trainer.n_gpus_per_node)" in message
    assert "standalone rollout pool: 4 node(s)" in message and "actor_rollout_ref.rollout.nnodes" in message
    assert "--config-name debug_cpu" in message


def test_one_node_short_names_the_pool_that_does_not_fit():
    with pytest.raises(ClusterTooSmall, match="standalone rollout pool: 4 node.*only 3 such node"):
        check_cluster(composed("dapo_32k"), [node(8, 64) for _ in range(5)] + [node(8, 64, alive=False)])


def test_transfer_queue_cpus_count():
    """debug_cpu's local cluster: 2 trainer slots x 3 CPUs + TaskRunner + TQ controller + 1 unit + 1 spare = 10."""
    config = composed("debug_cpu")
    check_cluster(config, [node(2, 10)])
    with pytest.raises(ClusterTooSmall, match="CPUs: 10 are reserved .*num_data_storage_units=1.*the cluster has 9"):
        check_cluster(config, [node(2, 9)])


def test_pools_of_both_layouts():
    sync = device_pools(composed("debug_cpu"))
    separate = device_pools(composed("debug_cpu", "cpu_layout=separate_async"))
    assert [(pool.name, pool.devices) for pool in sync] == [("trainer pool", 2)]
    assert [(pool.name, pool.devices) for pool in separate] == [("trainer pool", 1), ("standalone rollout pool", 1)]
