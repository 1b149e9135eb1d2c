"""The experiment configs of configs/, composed as `python -m recipe.nouscoder.main --config-name NAME` composes them."""

from __future__ import annotations

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from recipe.nouscoder.main import config_dir


def compose_config(name: str, overrides: list[str]) -> DictConfig:
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        return compose(config_name=name, overrides=overrides)


def experiment_names() -> list[str]:
    """Every primary config of configs/: files starting with `_` and nouscoder_base.yaml are building blocks."""
    return sorted(
        path.stem
        for path in config_dir().glob("*.yaml")
        if not path.stem.startswith("_") and path.stem != "nouscoder_base"
    )
