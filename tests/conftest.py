"""Suite-wide collection rules.

The integration tier runs on two pytest-xdist workers with ``--dist loadgroup`` (Makefile ``INTEGRATION_TIER``): a
whole-program test keeps about one core busy (measured: 1.1 cores on average over the tier), so two of them share a
2-core machine. The tests that use the launch tests' Slurm cluster (the session fixture ``local_slurm``) form one
group, run by one worker, so that one cluster serves them all.
"""

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "local_slurm" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("local_slurm"))
