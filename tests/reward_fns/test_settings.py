"""reward_fns.settings: keyword arguments, then the environment, then defaults, parsed by each field's type."""

from dataclasses import dataclass
from typing import Literal

import pytest

from reward_fns.settings import parse_setting, settings_from


@dataclass(frozen=True)
class Example:
    enabled: bool = True
    count: int = 3
    ratio: float = 0.5
    cap_s: float | None = None
    mode: Literal["fast", "safe"] = "safe"
    name: str = "pool"


def example(given=None, environ=None, **kwargs):
    return settings_from(Example, given, environ or {}, env_prefix="EX_", label="example", **kwargs)


@pytest.mark.parametrize("text", ["false", "False", "0", "no", "OFF", " false "])
def test_false_spellings_parse_to_false(text):
    assert example(environ={"EX_ENABLED": text}).enabled is False


@pytest.mark.parametrize("text", ["true", "TRUE", "1", "yes", "on"])
def test_true_spellings_parse_to_true(text):
    assert example({"enabled": text}, environ={"EX_ENABLED": "false"}).enabled is True


def test_keyword_beats_environment_beats_default_and_none_means_not_given():
    environ = {"EX_COUNT": "7", "EX_RATIO": "0.25", "EX_MODE": "fast"}
    assert example({"count": 9, "ratio": None}, environ) == Example(count=9, ratio=0.25, mode="fast")
    assert example() == Example()


def test_optional_fields_take_none_spellings_and_values():
    assert example(environ={"EX_CAP_S": "null"}).cap_s is None
    assert example({"cap_s": "2.5"}).cap_s == 2.5


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"enabled": "maybe"}, r"example setting enabled='maybe' must be a boolean"),
        ({"enabled": 2}, "must be a boolean"),
        ({"count": "3.5"}, r"count='3.5' must be an integer"),
        ({"count": 2.5}, "must be an integer"),
        ({"count": True}, "must be an integer"),
        ({"ratio": "half"}, "must be a number"),
        ({"mode": "fastest"}, r"must be one of \['fast', 'safe'\]"),
        ({"name": 3}, "must be a string"),
        ({"cuont": 3}, r"unknown example setting\(s\) \['cuont'\]"),
    ],
)
def test_bad_values_name_the_setting_and_what_it_must_be(given, message):
    with pytest.raises(ValueError, match=message):
        example(given)


def test_environment_errors_name_the_variable():
    with pytest.raises(ValueError, match="EX_COUNT='lots' must be an integer"):
        example(environ={"EX_COUNT": "lots"})


def test_key_prefix_is_required_and_stripped():
    assert example({"ex_count": 4}, key_prefix="ex_").count == 4
    with pytest.raises(ValueError, match=r"\['count'\]"):
        example({"count": 4}, key_prefix="ex_")


def test_integers_written_as_whole_floats_are_integers():
    assert parse_setting(int, 4096.0, "x") == 4096
    assert parse_setting(float, 3, "x") == 3.0


def test_a_misspelt_variable_is_an_error_naming_the_field_it_resembles():
    with pytest.raises(ValueError, match=r"EX_CONUT \(did you mean EX_COUNT\?\)"):
        example(environ={"EX_CONUT": "4"})
    assert example(environ={"EX_UNRELATED_THING": "1", "OTHER_COUNT": "9"}).count == 3  # no field resembled


def test_the_pool_variables_are_not_taken_for_misspelt_grader_settings():
    """Both families share the prefix REWARD_FNS_: every pool variable set at once leaves the grader's reading alone,
    and a misspelt one is caught by the pool's reading."""
    import dataclasses

    from reward_fns.ray_pool.config import ENV_PREFIX, PoolConfig, pool_config
    from reward_fns.score import grader_config

    pool_variables = {ENV_PREFIX + field.name.upper(): "1" for field in dataclasses.fields(PoolConfig)}
    assert grader_config({}, pool_variables).time_limit_s > 0
    with pytest.raises(ValueError, match=r"REWARD_FNS_POOL_WORKER \(did you mean REWARD_FNS_POOL_WORKERS\?\)"):
        pool_config({}, {"REWARD_FNS_POOL_WORKER": "4"})
    with pytest.raises(ValueError, match=r"REWARD_FNS_TIME_LIMT_S \(did you mean REWARD_FNS_TIME_LIMIT_S\?\)"):
        grader_config({}, {"REWARD_FNS_TIME_LIMT_S": "5"})
