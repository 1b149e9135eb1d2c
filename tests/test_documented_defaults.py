"""Defaults written in the READMEs' option tables are the defaults of the dataclasses that read the options.

Each table (``| key | default | meaning |``) is matched to its dataclass by a key prefix; every documented key must be
a field with that default, and every field must be documented (the dataclass is the one source; the table follows).
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import pytest

from recipe.nouscoder.cpu.known_answers import KnownAnswerOptions
from recipe.nouscoder.cpu.rollout import CPUEngineOptions
from recipe.nouscoder.multi_turn.options import MultiTurnOptions
from reward_fns.ray_pool.config import PoolConfig
from verl_ext.estimator_options import GrpoPlusOptions, MicrocoderOptions

REPO = Path(__file__).resolve().parents[1]

TABLES = [
    # (document, key prefix in the table, dataclass, fields documented elsewhere)
    ("reward_fns/RAY_POOL.md", "pool_", PoolConfig, ()),
    ("verl_ext/README.md", "algorithm.grpo_plus.", GrpoPlusOptions, ("norm_by_std",)),
    ("verl_ext/README.md", "algorithm.microcoder_grpo.", MicrocoderOptions, ("norm_by_std",)),
    ("recipe/nouscoder/cpu/README.md", "known_answers.", KnownAnswerOptions, ()),
    ("recipe/nouscoder/cpu/README.md", "", CPUEngineOptions, ()),
    ("recipe/nouscoder/multi_turn/README.md", "", MultiTurnOptions, ()),
]
"""``norm_by_std`` is verl's ``algorithm.norm_adv_by_std_in_grpo`` (its own row)."""


def documented_defaults(document: str) -> dict[str, str]:
    """``key -> default`` cell of every ``| key | default | ... |`` table row of ``document`` (backticks removed)."""
    rows: dict[str, str] = {}
    in_table = False
    for line in (REPO / document).read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and cells[0].lower() == "key" and cells[1].lower() == "default":
            in_table = True
        elif not cells:
            in_table = False
        elif in_table and not set(cells[0]) <= set("-: "):
            rows[cells[0].strip("`")] = cells[1].strip("`")
    return rows


def same_value(documented: str, default: Any) -> bool:
    if default is dataclasses.MISSING:
        return documented == "required"
    if default is None:
        return documented == "null"
    if isinstance(default, bool):
        return documented == str(default).lower()
    if isinstance(default, tuple | list) and not default:
        return documented == "[]"
    if isinstance(default, int | float):
        try:
            return math.isclose(float(documented), float(default))
        except ValueError:
            return False
    return documented == str(default)


def field_default(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return field.default_factory()  # type: ignore[misc]
    return field.default


@pytest.mark.parametrize(
    ("document", "prefix", "cls", "elsewhere"), TABLES, ids=[f"{t[0]}:{t[2].__name__}" for t in TABLES]
)
def test_table_defaults_are_the_dataclass_defaults(document, prefix, cls, elsewhere):
    rows = documented_defaults(document)
    fields = {field.name: field for field in dataclasses.fields(cls) if field.name not in elsewhere}
    documented = {key[len(prefix) :]: value for key, value in rows.items() if key.startswith(prefix)}
    if not prefix:
        documented = {key: value for key, value in documented.items() if key in fields}
    undocumented = sorted(set(fields) - set(documented))
    assert not undocumented, f"{document}: no table row for {[prefix + name for name in undocumented]}"
    wrong = {
        prefix + name: (value, field_default(fields[name]))
        for name, value in documented.items()
        if name in fields and not same_value(value, field_default(fields[name]))
    }
    assert not wrong, f"{document}: documented default != {cls.__name__} default: {wrong}"
    stray = sorted(name for name in documented if name not in fields and "." not in name)
    assert not stray, f"{document}: table rows {stray} name no field of {cls.__name__}"


def test_a_wrong_documented_default_is_caught(tmp_path, monkeypatch):
    text = (REPO / "reward_fns/RAY_POOL.md").read_text(encoding="utf-8")
    planted = re.sub(r"\| `pool_tests_per_chunk` \| 8 \|", "| `pool_tests_per_chunk` | 16 |", text)
    assert planted != text
    (tmp_path / "reward_fns").mkdir()
    (tmp_path / "reward_fns/RAY_POOL.md").write_text(planted, encoding="utf-8")
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    with pytest.raises(AssertionError, match=r"pool_tests_per_chunk': \('16', 8\)"):
        test_table_defaults_are_the_dataclass_defaults("reward_fns/RAY_POOL.md", "pool_", PoolConfig, ())
