"""``${required:"what to pass"}``: a config value the user must give, which fails loudly when left unset.

A ``???`` in one of our YAML files cannot mark a value as required: OmegaConf keeps the earlier value when a
``???`` is merged over it (and verl's own config gives almost every key a default), so ``model.path: ???`` over a
base that names a model silently keeps that model. Write ``key: ${required:"hint"}`` instead: composing and
printing the config (``--cfg job``) still work, and any read of the value raises ``MissingRequiredValue``
naming the key, the hint and the override to pass. A command-line override replaces the interpolation.
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

RESOLVER_NAME = "required"


class MissingRequiredValue(ValueError):
    """A ``${required:...}`` value was read without the user having set it."""


def _required(hint: str, _node_) -> None:  # noqa: ANN001  (OmegaConf passes the interpolating node)
    key = _node_._get_full_key(None)
    raise MissingRequiredValue(f"{key} is required and was not given: {hint}. Pass {key}=VALUE as an override.")


def register_required_resolver() -> None:
    """Register ``${required:...}`` with OmegaConf (idempotent; every process that resolves configs calls it)."""
    if not OmegaConf.has_resolver(RESOLVER_NAME):
        OmegaConf.register_new_resolver(RESOLVER_NAME, _required)


def check_required_values(config: DictConfig) -> None:
    """Raise ``MissingRequiredValue`` for the first required value left unset, before anything starts."""
    OmegaConf.to_container(config, resolve=True)


register_required_resolver()
