"""The advantage estimators and policy losses a package registered in verl's registries, found by where their
functions live, so that tests and tools list them without a hard-coded copy of the names."""

from __future__ import annotations

from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY


def _names(registry: dict, module_prefixes: tuple[str, ...]) -> list[str]:
    return sorted(
        str(name)
        for name, function in registry.items()
        if getattr(function, "__module__", "").startswith(module_prefixes)
    )


def registered_estimators(*module_prefixes: str) -> list[str]:
    """Names in verl's advantage-estimator registry whose function is defined under one of ``module_prefixes``."""
    return _names(ADV_ESTIMATOR_REGISTRY, module_prefixes)


def registered_losses(*module_prefixes: str) -> list[str]:
    """Names in verl's policy-loss registry whose function is defined under one of ``module_prefixes``."""
    return _names(POLICY_LOSS_REGISTRY, module_prefixes)
