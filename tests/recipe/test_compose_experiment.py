"""recipe.nouscoder.configs.compose_experiment: the same config as hydra's own composition through the experiment's
``pkg://`` search path, without importing the package that search path names (verl)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from recipe.nouscoder.configs import compose_experiment, config_dir, package_directory, searchpath_override

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("dapo_32k", []),
        ("debug_cpu_learn_async", ["trainer.total_training_steps=2"]),
        ("eval_lcb_80k", ["actor_rollout_ref.model.path=/models/best"]),
    ],
)
def test_the_composed_config_is_hydras_through_the_pkg_search_path(name, overrides):
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        through_pkg = compose(config_name=name, overrides=overrides)
    ours = compose_experiment(name, overrides)
    assert OmegaConf.to_container(ours) == OmegaConf.to_container(through_pkg)


def test_composing_does_not_import_verl():
    probe = (
        "import sys; from recipe.nouscoder.configs import compose_experiment; "
        "config = compose_experiment('dapo_32k'); "
        "assert config.actor_rollout_ref.actor.policy_loss.loss_mode, config; "
        "print(sorted(m for m in sys.modules if m == 'verl' or m.startswith(('verl.', 'torch'))))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


def test_pkg_entries_become_the_installed_directory_and_others_stay():
    import verl

    assert (
        package_directory("pkg://verl.trainer.config") == f"file://{Path(verl.__file__).parent / 'trainer' / 'config'}"
    )
    assert package_directory("file:///somewhere") == "file:///somewhere"
    assert package_directory("pkg://no_such_package_here.config") == "pkg://no_such_package_here.config"
    assert package_directory("pkg://verl.no_such_directory") == "pkg://verl.no_such_directory"


def test_a_search_path_given_as_an_override_is_left_to_hydra():
    assert searchpath_override("dapo_32k", ["hydra.searchpath=[pkg://verl.trainer.config]"]) == []
    (override,) = searchpath_override("dapo_32k", ["trainer.nnodes=1"])
    assert override.startswith("hydra.searchpath=['file://") and override.endswith("/verl/trainer/config']")
