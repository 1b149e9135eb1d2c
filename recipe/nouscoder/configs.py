"""Where the experiment configs live and how they are composed: the one source for both.

The config directory is ``$NOUSCODER_CONFIG_DIR`` if set, else ``configs/`` of this repository (two levels above
this file; an editable install). A user's own directory (a copy of ``configs/`` with their experiments) is selected
by that variable, which the launcher, preflight and ``recipe.nouscoder.main`` all read.

An experiment is a top-level YAML file of the directory; files starting with ``_`` and ``nouscoder_base.yaml`` are
building blocks. :func:`compose_experiment` composes one as ``python -m recipe.nouscoder.main --config-name NAME``
does (hydra's compose API over the same directory), without running anything.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig

CONFIG_DIR_ENV = "NOUSCODER_CONFIG_DIR"
BASE_CONFIG = "nouscoder_base"


def config_dir() -> Path:
    """The hydra config directory: $NOUSCODER_CONFIG_DIR, else the repository's configs/."""
    configured = os.environ.get(CONFIG_DIR_ENV)
    directory = (
        Path(configured).expanduser().resolve() if configured else Path(__file__).resolve().parents[2] / "configs"
    )
    if not (directory / f"{BASE_CONFIG}.yaml").is_file():
        raise FileNotFoundError(
            f"no {BASE_CONFIG}.yaml in {directory}: install this repository editable (pip install -e .) "
            f"or set {CONFIG_DIR_ENV} to a copy of its configs/ directory."
        )
    return directory


def experiment_names(directories: Sequence[Path] | None = None) -> list[str]:
    """The configs one can run: top-level YAML files of the config directories, but the building blocks."""
    names = {
        path.stem
        for directory in (directories or [config_dir()])
        for path in directory.glob("*.yaml")
        if not path.stem.startswith("_") and path.stem != BASE_CONFIG
    }
    return sorted(names)


class UnknownExperiment(ValueError):
    """A config name that is no experiment of the config directory."""


def check_experiment(name: str, directories: Sequence[Path] | None = None) -> None:
    """Raise :class:`UnknownExperiment` naming the closest experiment when ``name`` is none of them."""
    directories = list(directories or [config_dir()])
    if any((directory / f"{name.removesuffix('.yaml')}.yaml").is_file() for directory in directories):
        return
    names = experiment_names(directories)
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    where = ", ".join(str(directory) for directory in directories)
    raise UnknownExperiment(f"no experiment config {name!r} in {where}{hint}. Experiments: {', '.join(names)}")


def package_directory(entry: str) -> str:
    """A hydra search-path entry ``pkg://a.b.c`` as the ``file://`` path of that directory when package ``a`` is
    installed as plain files (else the entry unchanged). hydra reads a ``pkg://`` source through importlib.resources,
    which imports the package: for ``verl`` that is verl, tensordict and torch (~3.5 s of CPU), which composing a
    config does not need. ``importlib.util.find_spec`` of the top-level package locates it without running it."""
    if not entry.startswith("pkg://"):
        return entry
    top, _, rest = entry.removeprefix("pkg://").partition(".")
    spec = importlib.util.find_spec(top)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        directory = Path(location, *rest.split(".")) if rest else Path(location)
        if directory.is_dir():
            return f"file://{directory}"
    return entry


def searchpath_override(name: str, overrides: Sequence[str]) -> list[str]:
    """``hydra.searchpath=[...]``: the experiment file's own search path with its ``pkg://`` entries as directories
    (:func:`package_directory`); none when the overrides set the search path or the file declares none."""
    import yaml

    if any(item.lstrip("+").startswith("hydra.searchpath=") for item in overrides):
        return []
    experiment = yaml.safe_load((config_dir() / f"{name.removesuffix('.yaml')}.yaml").read_text()) or {}
    declared = (experiment.get("hydra") or {}).get("searchpath")
    if not declared:
        return []
    return ["hydra.searchpath=[" + ",".join(repr(package_directory(entry)) for entry in declared) + "]"]


def compose_experiment(name: str, overrides: Sequence[str] = ()) -> DictConfig:
    """The composed config of experiment ``name`` with hydra ``overrides`` (unknown names: UnknownExperiment)."""
    from hydra import compose, initialize_config_dir

    check_experiment(name)
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        return compose(config_name=name, overrides=[*searchpath_override(name, overrides), *overrides])
