"""argparse pieces shared by the package's command lines: the grader flags and a help formatter.

Grader flags are named after their ``GraderConfig`` field (``time_limit_s`` -> ``--time-limit-s``) and default to
None, so that a flag not given falls back to ``REWARD_FNS_<FIELD>`` and then to the dataclass default
(``reward_fns.score.grader_config``); their help text states that default, read from ``GraderConfig``.
"""

from __future__ import annotations

import argparse
from typing import Any, Literal, get_args, get_origin, get_type_hints

from reward_fns.types import GRADER_ENV_PREFIX, GraderConfig

GRADER_FLAG_HELP = {
    "time_limit_s": "wall-clock seconds per test",
    "memory_limit_mb": "memory per test in MB",
    "compare_mode": "output comparison (rules: reward_fns/compare.py)",
    "isolation": "auto: every mechanism the host allows (warns for each missing one); strict: refuse to run without "
    "all of them; none: rlimits only, for trusted code (reward_fns/README.md)",
}
"""The grader settings every grading CLI offers, with their help text (the default is appended)."""


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends ``(default: X)`` to a flag's help once: not when the help already states its default, and not when
    there is none to show (None, False, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        nothing_to_show = default is None or default is False or default == argparse.SUPPRESS
        if nothing_to_show or "default" in text or (isinstance(default, list | tuple | dict) and not default):
            return text
        return super()._get_help_string(action) or text


def add_grader_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--time-limit-s``, ``--memory-limit-mb``, ``--compare-mode``, ``--isolation`` (``GRADER_FLAG_HELP``)."""
    defaults = GraderConfig()
    hints = get_type_hints(GraderConfig)
    for name, text in GRADER_FLAG_HELP.items():
        hint = hints[name]
        kind: dict[str, Any] = {"choices": get_args(hint)} if get_origin(hint) is Literal else {"type": hint}
        parser.add_argument(
            "--" + name.replace("_", "-"),
            default=None,
            help=f"{text} (default: {getattr(defaults, name)}, or ${GRADER_ENV_PREFIX}{name.upper()})",
            **kind,
        )


def grader_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The grader flags of ``args`` as ``grader_config`` overrides (None = not given)."""
    return {name: getattr(args, name) for name in GRADER_FLAG_HELP}
