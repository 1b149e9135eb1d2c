"""`import verl` alone registers every verl_ext name (setup.py entry point), in a fresh interpreter."""

import json
import os
import subprocess
import sys

import pytest

import verl_ext  # noqa: F401  (registers every verl_ext name in this process, whatever the plugin policy)
from verl_ext.registered import registered_estimators, registered_losses

ESTIMATORS = registered_estimators("verl_ext.")
LOSSES = registered_losses("verl_ext.")

PROBE = """
import json, sys
import verl
from verl.trainer.ppo import core_algos

def lookup(getter, names):
    modules = {}
    for name in names:
        try:
            modules[name] = getter(name).__module__
        except ValueError:
            modules[name] = None
    return modules

estimators, losses, import_verl_ext_after = json.loads(sys.argv[1])
result = {
    "loaded": "verl_ext" in sys.modules,
    "estimators": lookup(core_algos.get_adv_estimator_fn, estimators),
    "losses": lookup(core_algos.get_policy_loss_fn, losses),
    "heavy_modules": [m for m in ("verl.trainer.ppo.ray_trainer", "verl.workers.engine") if m in sys.modules],
}
if import_verl_ext_after:
    import verl_ext
    result["after_import"] = {
        **lookup(core_algos.get_adv_estimator_fn, estimators), **lookup(core_algos.get_policy_loss_fn, losses)
    }
print(json.dumps(result))
"""


def run_probe(plugins_policy: str | None, import_verl_ext_after: bool = False) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "VERL_USE_EXTERNAL_PLUGINS"}
    if plugins_policy is not None:
        env["VERL_USE_EXTERNAL_PLUGINS"] = plugins_policy
    arguments = json.dumps([ESTIMATORS, LOSSES, import_verl_ext_after])
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, arguments], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.mark.integration  # a fresh interpreter importing verl: ~5 s
def test_import_verl_alone_registers_every_name():
    result = run_probe(plugins_policy=None)
    assert result["loaded"]
    assert all(module and module.startswith("verl_ext.") for module in result["estimators"].values()), result
    assert all(module and module.startswith("verl_ext.") for module in result["losses"].values()), result
    assert result["heavy_modules"] == [], "the plugin import must stay cheap"


@pytest.mark.integration  # a fresh interpreter importing verl: ~5 s
def test_plugins_switched_off_then_import_verl_ext_registers():
    result = run_probe(plugins_policy="none", import_verl_ext_after=True)
    assert not result["loaded"]
    assert set(result["estimators"].values()) == {None} and set(result["losses"].values()) == {None}
    assert all(module and module.startswith("verl_ext.") for module in result["after_import"].values()), result
