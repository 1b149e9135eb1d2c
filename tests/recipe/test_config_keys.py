"""Every key our configs set is read by verl 0.9.1 or by this package (configs/KEY_READERS.md).

A key nothing reads is a silent no-op: a misspelt key, a key of verl's legacy trainer, or a key of the other
trainer mode trains with verl's default instead of the value the config claims. The readers were found by
tracing verl's V1 path; each row names the file and the line that reads the key, and these tests check that
every key set by any YAML file under configs/ (present and future ones) or passed by launch/ has a row, that the
line is still in that file, and that mode-specific keys are only set for configs of that mode.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import verl
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, ListConfig, OmegaConf
from verl.trainer.ppo.v1 import get_trainer_cls

import recipe.nouscoder.training.trainer  # noqa: F401  registers nouscoder_sync / nouscoder_separate_async
from recipe.nouscoder.configs import config_dir

REPO = Path(__file__).resolve().parents[2]
CONFIGS = config_dir()
READERS_TABLE = CONFIGS / "KEY_READERS.md"
VERL_ROOT = Path(verl.__file__).resolve().parent.parent  # the directory holding the verl package
# Hydra overrides in the launch scripts: a top-level config group name, dotted keys, then "=".
LAUNCH_OVERRIDE = re.compile(
    r"(?<![\w.])\+{0,2}((?:actor_rollout_ref|algorithm|data|trainer|reward|ray_kwargs|nouscoder)(?:\.\w+)+)="
)
TABLE_ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| `([^`]+)` \| *(\w*) *\|$")


@dataclass(frozen=True)
class Reader:
    """One traced reader: the key (or `prefix.*`), the file, the verbatim reading line, the trainer mode it needs."""

    key: str
    path: str
    line: str
    only_mode: str

    def covers(self, key: str) -> bool:
        if self.key.endswith(".*"):
            return key.startswith(self.key[:-1])
        return key == self.key

    def source_file(self) -> Path:
        return VERL_ROOT / self.path if self.path.startswith("verl/") else REPO / self.path


def read_table(table: Path = READERS_TABLE) -> list[Reader]:
    rows = [TABLE_ROW.match(line) for line in table.read_text().splitlines() if line.startswith("| `")]
    assert all(rows), f"{table}: a row does not have the form | `key` | `file` | `line` | mode |"
    return [Reader(*row.groups()) for row in rows]


def package_of(yaml_file: Path, config_root: Path) -> str:
    """Where hydra places the file's content: `@package _global_` and top-level files at the root, else the group."""
    relative = yaml_file.relative_to(config_root)
    if len(relative.parts) == 1 or "# @package _global_" in yaml_file.read_text():
        return ""
    return ".".join(relative.parts[:-1]) + "."


def leaf_keys(node, prefix: str) -> list[str]:
    if isinstance(node, DictConfig):
        return [key for name in node for key in leaf_keys(node._get_node(name), f"{prefix}{name}.")]
    return [prefix[:-1]]


def keys_set_by(yaml_file: Path, config_root: Path = CONFIGS) -> list[str]:
    """Every dotted key a config file sets (hydra's own `defaults` and `hydra` nodes left out)."""
    content = OmegaConf.load(yaml_file)
    package = package_of(yaml_file, config_root)
    return [
        key
        for name in content
        if name not in ("defaults", "hydra")
        for key in leaf_keys(content._get_node(name), f"{package}{name}.")
    ]


def unread_keys(config_root: Path, readers: list[Reader]) -> list[str]:
    """`file: key` for every key set under config_root that no reader covers."""
    return [
        f"{yaml_file.relative_to(config_root)}: {key}"
        for yaml_file in sorted(config_root.rglob("*.yaml"))
        for key in keys_set_by(yaml_file, config_root)
        if not any(reader.covers(key) for reader in readers)
    ]


def launch_override_keys() -> dict[str, str]:
    """{key: script} for every hydra override written in launch/*.sh."""
    return {
        match.group(1): script.name
        for script in sorted((REPO / "launch").rglob("*.sh"))
        for match in LAUNCH_OVERRIDE.finditer(script.read_text())
    }


def included_files(config_file: Path) -> list[Path]:
    """The config file and every one of ours its defaults list pulls in, recursively (verl's are left out)."""
    files = [config_file]
    defaults = OmegaConf.load(config_file).get("defaults", ListConfig([]))
    for entry in defaults:
        if isinstance(entry, str):
            candidate = CONFIGS / f"{entry.lstrip('/')}.yaml"
        else:
            ((group, option),) = entry.items()
            candidate = CONFIGS / group / f"{option}.yaml"
        if entry != "_self_" and candidate.is_file():
            files += included_files(candidate)
    return files


def primary_configs() -> list[str]:
    return sorted(
        path.stem for path in CONFIGS.glob("*.yaml") if not path.stem.startswith("_") and path.stem != "nouscoder_base"
    )


@cache
def trainer_mode_of(name: str) -> str:
    """verl's trainer mode the config runs under (the recipe trainers run as their verl base mode)."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        mode = compose(config_name=name).trainer.v1.trainer_mode
    return getattr(get_trainer_cls(mode), "base_trainer_mode", mode)


def test_every_key_our_configs_set_has_a_traced_reader() -> None:
    unread = unread_keys(CONFIGS, read_table())
    assert unread == [], (
        "keys that nothing in verl 0.9.1 or this package reads (misspelt, legacy or dead): "
        f"{unread}; fix the key, or trace its reader and add a row to configs/KEY_READERS.md"
    )


def test_a_planted_misspelt_key_is_reported(tmp_path: Path) -> None:
    """The check above on a copy of configs/ with one typo (`clip_ratio_hihg`) planted in the DAPO objective."""
    planted = tmp_path / "configs"
    shutil.copytree(CONFIGS, planted)
    objective = planted / "objective" / "dapo.yaml"
    objective.write_text(objective.read_text().replace("clip_ratio_high:", "clip_ratio_hihg:"))
    assert unread_keys(planted, read_table()) == ["objective/dapo.yaml: actor_rollout_ref.actor.clip_ratio_hihg"]


def test_every_launch_override_has_a_traced_reader() -> None:
    readers = read_table()
    overrides = launch_override_keys()
    assert "trainer.default_local_dir" in overrides  # the pattern finds the chain's overrides
    unread = [f"{script}: {key}" for key, script in overrides.items() if not any(r.covers(key) for r in readers)]
    assert unread == [], f"launch/ passes overrides nothing reads: {unread}"


@pytest.mark.parametrize("reader", read_table(), ids=lambda reader: reader.key)
def test_reading_line_is_in_the_named_file(reader: Reader) -> None:
    source = reader.source_file()
    assert source.is_file(), f"{reader.key}: {source} does not exist (verl upgraded or file moved?)"
    assert reader.line in source.read_text(), f"{reader.key}: the line {reader.line!r} is no longer in {source}"


def test_every_row_is_used_by_a_config_or_the_launcher() -> None:
    used = {key for path in CONFIGS.rglob("*.yaml") for key in keys_set_by(path)} | set(launch_override_keys())
    stale = [reader.key for reader in read_table() if not any(reader.covers(key) for key in used)]
    assert stale == [], f"rows of configs/KEY_READERS.md no config or launch script sets: {stale}"


@pytest.mark.parametrize("name", primary_configs())
def test_mode_specific_keys_are_set_only_for_that_mode(name: str) -> None:
    mode = trainer_mode_of(name)
    readers = [reader for reader in read_table() if reader.only_mode]
    misplaced = [
        f"{path.relative_to(CONFIGS)}: {key} (read only by {reader.only_mode})"
        for path in included_files(CONFIGS / f"{name}.yaml")
        for key in keys_set_by(path)
        for reader in readers
        if reader.covers(key) and reader.only_mode != mode
    ]
    assert misplaced == [], f"{name} runs verl's {mode} trainer, which never reads {misplaced}"
