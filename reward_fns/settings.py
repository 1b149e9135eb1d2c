"""Settings dataclasses filled from keyword arguments, then environment variables, then their defaults.

The one routine behind ``reward_fns.score.grader_config`` (``GraderConfig``: verl ``reward_kwargs`` or CLI flags,
then ``REWARD_FNS_<FIELD>``) and ``reward_fns.ray_pool.config.pool_config`` (``PoolConfig``: ``pool_<field>``
keys, then ``REWARD_FNS_POOL_<FIELD>``). First match wins; a ``None`` argument counts as not given.

Values are parsed by the field's annotated type, explicitly (``bool("false")`` would be ``True``):
``bool`` takes true/false, 1/0, yes/no, on/off in any case; ``int`` an integer (``"4096"``, ``4096``, ``4096.0``);
``float`` any number; a ``Literal`` one of its choices; ``X | None`` also ``none`` / ``null``. Anything else is a
``ValueError`` naming the setting, the value and what it must be.

A variable under the prefix whose name is close to a field's but is none (``REWARD_FNS_TIME_LIMT_S``) is a
``ValueError`` too, naming the field it resembles: a misspelt limit would otherwise be ignored without a word. Names
that resemble no field are left alone (``REWARD_FNS_POOL_*`` share the grader's prefix, and other tools may define
variables of their own).
"""

from __future__ import annotations

import dataclasses
import difflib
import types
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

SettingsT = TypeVar("SettingsT")

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_NONE = frozenset({"none", "null"})
MISSPELLING_CUTOFF = 0.75
"""``difflib`` similarity from which an unknown variable counts as a misspelt field name (``TIME_LIMT_S`` vs
``TIME_LIMIT_S``: 0.96; the pool's ``POOL_*`` names against the grader's fields: at most 0.6)."""


def settings_from(
    cls: type[SettingsT],
    given: Mapping[str, Any] | None,
    environ: Mapping[str, str],
    *,
    env_prefix: str,
    key_prefix: str = "",
    label: str,
) -> SettingsT:
    """An instance of the dataclass ``cls`` from ``given`` (keys ``key_prefix + field``), then ``environ``
    (``env_prefix + FIELD``), then the field defaults.

    Raises:
        ValueError: a key of ``given`` names no field, or a value does not parse as its field's type.
    """
    hints = get_type_hints(cls)
    fields = {field.name for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
    given = dict(given or {})
    unknown = sorted(key for key in given if not key.startswith(key_prefix) or key[len(key_prefix) :] not in fields)
    if unknown:
        raise ValueError(f"unknown {label} setting(s) {unknown}; valid: {sorted(key_prefix + name for name in fields)}")
    misspelt = misspelt_variables(environ, env_prefix, fields)
    if misspelt:
        raise ValueError(
            f"unknown {label} environment variable(s): {'; '.join(misspelt)}. Correct the name or unset it "
            f"(valid: {', '.join(sorted(env_prefix + name.upper() for name in fields))})"
        )
    given = {key[len(key_prefix) :]: value for key, value in given.items()}
    values: dict[str, Any] = {}
    for name in fields:
        variable = env_prefix + name.upper()
        if given.get(name) is not None:
            values[name] = parse_setting(hints[name], given[name], f"{label} setting {key_prefix}{name}")
        elif variable in environ:
            values[name] = parse_setting(hints[name], environ[variable], f"{label} setting {variable}")
    return cls(**values)


def misspelt_variables(environ: Mapping[str, str], env_prefix: str, fields: set[str]) -> list[str]:
    """``"NAME (did you mean FIELD?)"`` for each variable under ``env_prefix`` that names no field but resembles one."""
    names = sorted(name.upper() for name in fields)
    found = []
    for variable in sorted(environ):
        rest = variable[len(env_prefix) :] if variable.startswith(env_prefix) else None
        if rest is None or rest in names:
            continue
        close = difflib.get_close_matches(rest, names, n=1, cutoff=MISSPELLING_CUTOFF)
        if close:
            found.append(f"{variable} (did you mean {env_prefix}{close[0]}?)")
    return found


def parse_setting(hint: Any, value: Any, source: str) -> Any:
    """``value`` (a string from the environment or a CLI, or an already typed value) as type ``hint``."""
    if get_origin(hint) in (Union, types.UnionType):
        options = [option for option in get_args(hint) if option is not type(None)]
        if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
            return None
        if len(options) == 1:
            return parse_setting(options[0], value, source)
        raise TypeError(f"{source}: unions other than `X | None` are not supported ({hint})")
    if get_origin(hint) is Literal:
        choices = get_args(hint)
        if value not in choices:
            raise ValueError(f"{source}={value!r} must be one of {list(choices)}")
        return value
    parser = _PARSERS.get(hint)
    if parser is None:
        raise TypeError(f"{source}: no parser for fields of type {hint}")
    try:
        return parser(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{source}={value!r} must be {_DESCRIPTIONS[hint]}") from exc


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(value)


def _parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(value)
        return int(value)
    return int(value)


def _parse_float(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(value)
    return float(value)


def _parse_str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


_PARSERS = {bool: _parse_bool, int: _parse_int, float: _parse_float, str: _parse_str}
_DESCRIPTIONS = {
    bool: "a boolean (true/false, 1/0, yes/no, on/off)",
    int: "an integer",
    float: "a number",
    str: "a string",
}
