"""The order in which the integration tier starts its tests (Makefile ``INTEGRATION_TIER``: two pytest-xdist
workers, ``--dist loadscope --no-loadscope-reorder``: a test module is one unit of work, so its module fixtures are
built once, and the units go to the workers in collection order). The modules marked ``long(rank)`` come first, by
rank: each worker starts on minutes of work and the short modules fill in behind them, instead of one worker taking
the long ones last. Every module's tests keep their own order."""

from __future__ import annotations

import math

import pytest


def start_rank(item: pytest.Item) -> float:
    mark = item.get_closest_marker("long")
    return mark.args[0] if mark else math.inf


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=start_rank)  # a stable sort: the rest keep their collection order
