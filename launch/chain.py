"""A job's chain of configs (stages, re-scoring, final evaluation, stage 0), composed once and fitted to the job.

The launcher (`stage_chain.sh`), the preflight and the planner describe a chain with the same arguments
(`add_chain_arguments`): the stage configs in order, the re-scored stages, the final evaluation, stage 0, the hydra
overrides every config runs with, and each config's own overrides (`--config-overrides NAME="k=v ..."`, the
launcher's `STAGE_OVERRIDES_<NAME>`). `compose_chain` composes each config once through
`recipe.nouscoder.configs` (the user's config directory: `--config-dir` / `$NOUSCODER_CONFIG_DIR`) and fits its GPU
layout to the allocation (`stage_layout.py`); whatever stops it is a `ChainError` with a one-line message.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict
from stage_layout import LayoutError, layout_overrides

from recipe.nouscoder.configs import CONFIG_DIR_ENV, UnknownExperiment, compose_experiment, config_dir

DEFAULT_STAGES = "dapo_32k dapo_40k"
DEFAULT_RESCORE = "dapo_32k=eval_lcb_40k"


class ChainError(Exception):
    """What stops the chain before anything starts; `status` is the exit code (2: configs, 3: disk)."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Chain:
    """The configs a job runs and the overrides of each."""

    stages: list[str]
    rescore: dict[str, str] = field(default_factory=dict)
    eval_config: str | None = None
    offline_filter_config: str | None = None
    others: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    config_overrides: dict[str, list[str]] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        extra = [*self.others, *self.rescore.values(), *filter(None, [self.eval_config, self.offline_filter_config])]
        return list(dict.fromkeys([*self.stages, *extra]))

    def overrides_of(self, name: str) -> list[str]:
        return [*self.overrides, *self.config_overrides.get(name, [])]


def add_chain_arguments(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """The chain's arguments; with `defaults`, the NousCoder DAPO chain (the planner's), else required (preflight's)."""
    group = parser.add_argument_group("the chain (the launcher's STAGES, RESCORE, EVAL_CONFIG, OFFLINE_FILTER)")
    group.add_argument("--nodes", type=int, default=6 if defaults else None, required=not defaults, help="nodes")
    group.add_argument(
        "--gpus-per-node", type=int, default=8 if defaults else None, required=not defaults, help="GPUs per node"
    )
    group.add_argument(
        "--stages",
        default=DEFAULT_STAGES if defaults else None,
        required=not defaults,
        help="the training stage configs in order" + (" (default: %(default)s)" if defaults else ""),
    )
    group.add_argument(
        "--rescore",
        action="append",
        default=None if defaults else [],
        help="STAGE=CONFIG: a stage picked by CONFIG's score (repeatable)"
        + (f" (default: {DEFAULT_RESCORE} when dapo_32k is a stage)" if defaults else ""),
    )
    group.add_argument("--rescore-top-k", type=int, default=3, help="candidates re-scored per stage (RESCORE_TOP_K)")
    group.add_argument(
        "--eval-config",
        default="eval_lcb_80k" if defaults else None,
        help="the final evaluation" + (" (default: %(default)s; 'none' for no evaluation)" if defaults else ""),
    )
    group.add_argument(
        "--offline-filter-config",
        default="offline_filter" if defaults else None,
        help="stage 0's config" + (" (default: %(default)s; 'none' for no stage 0)" if defaults else ""),
    )
    group.add_argument("--config", action="append", default=[], help="another config the job runs (repeatable)")
    group.add_argument(
        "--config-overrides",
        action="append",
        default=[],
        metavar='NAME="KEY=VALUE ..."',
        help="overrides of one config only, after the common ones (the launcher's STAGE_OVERRIDES_<NAME>)",
    )
    group.add_argument(
        "--config-dir",
        type=Path,
        default=None,
        help=f"the experiment config directory (default: ${CONFIG_DIR_ENV}, else this repository's configs/)",
    )
    group.add_argument("overrides", nargs="*", help="hydra overrides every config runs with")


def chain_from_args(args: argparse.Namespace) -> Chain:
    if args.config_dir is not None:
        os.environ[CONFIG_DIR_ENV] = str(args.config_dir.expanduser().resolve())
        try:
            config_dir()
        except FileNotFoundError as missing:
            raise ChainError(f"--config-dir: {missing}") from None
    stages = args.stages.split()
    if not stages:
        raise ChainError("no stages: pass --stages (the launcher's STAGES), e.g. --stages 'dapo_32k dapo_40k'")
    pairs = args.rescore
    if pairs is None:  # the planner's default: the NousCoder re-scoring when its 32k stage is planned
        pairs = [DEFAULT_RESCORE] if "dapo_32k" in stages else []
    rescore = {}
    for pair in pairs:
        stage, equals, config = pair.partition("=")
        if not equals or stage not in stages:
            raise ChainError(f"--rescore {pair}: write STAGE=CONFIG for a stage of --stages ({' '.join(stages)})")
        rescore[stage] = config
    config_overrides: dict[str, list[str]] = {}
    for item in args.config_overrides:
        name, equals, words = item.partition("=")
        if not equals:
            raise ChainError(f'--config-overrides {item}: write NAME="KEY=VALUE ..."')
        config_overrides.setdefault(name, []).extend(words.split())

    def optional(value: str | None) -> str | None:
        return None if value in (None, "", "none") else value

    chain = Chain(
        stages=stages,
        rescore=rescore,
        eval_config=optional(args.eval_config),
        offline_filter_config=optional(args.offline_filter_config),
        others=list(args.config),
        overrides=list(args.overrides),
        config_overrides=config_overrides,
    )
    unknown = sorted(set(config_overrides) - set(chain.names))
    if unknown:
        raise ChainError(
            f"overrides for {', '.join(unknown)}, which this job does not run (its configs: {' '.join(chain.names)}): "
            "check the name after STAGE_OVERRIDES_"
        )
    return chain


def compose(name: str, overrides: list[str]) -> DictConfig:
    """`compose_experiment`, with an unknown name or a bad override as a one-line ChainError."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        return compose_experiment(name, overrides)
    except UnknownExperiment as unknown:
        raise ChainError(str(unknown)) from None
    except (HydraException, OmegaConfBaseException) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ChainError(f"{name} with overrides {' '.join(overrides) or '(none)'}: {first}") from None


def parse_value(value: str) -> object:
    """A hydra override's value as YAML reads it (2.5, 8, true, {}, yarn)."""
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        return value


def with_overrides(config: DictConfig, overrides: list[str]) -> DictConfig:
    """`config` with simple overrides applied: `key=value`, `++key=value`, `~key` (what the chain itself emits)."""
    config = config.copy()
    with open_dict(config):
        for override in overrides:
            if override.startswith("~"):
                parent, _, leaf = override[1:].rpartition(".")
                node = OmegaConf.select(config, parent) if parent else config
                if node is not None and leaf in node:
                    node.pop(leaf)
                continue
            key, _, value = override.lstrip("+").partition("=")
            OmegaConf.update(config, key, parse_value(value), force_add=True)
    return config


def compose_chain(chain: Chain, nodes: int, gpus_per_node: int) -> tuple[dict[str, list[str]], dict[str, DictConfig]]:
    """Each config's layout overrides for the allocation and its composed config with them applied."""
    layouts, fitted, errors = {}, {}, []
    for name in chain.names:
        config = compose(name, chain.overrides_of(name))
        try:
            layouts[name] = layout_overrides(config, name, nodes, gpus_per_node)
        except LayoutError as misfit:
            errors.append(str(misfit))
            continue
        fitted[name] = with_overrides(config, layouts[name])
    if errors:
        raise ChainError("\n".join(errors))
    return layouts, fitted
