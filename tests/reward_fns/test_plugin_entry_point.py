"""`import verl` alone loads verl_ext through setup.py's "verl.plugins" entry point (checked in a fresh interpreter).

verl 0.9.1 (`verl/__init__.py`) loads every entry point of the group and logs a failure only at debug level, so the
probe records every log message and the test asserts that none reports a failed plugin.
"""

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, logging, sys

messages = []

class Keep(logging.Handler):
    def emit(self, record):
        messages.append(record.getMessage())

logging.getLogger().addHandler(Keep())
logging.getLogger().setLevel(logging.DEBUG)
import verl  # noqa: F401  (nothing else is imported: the plugin must come in through the entry point)

print(json.dumps({
    "verl_ext_loaded": "verl_ext" in sys.modules,
    "plugin_failures": [message for message in messages if "plugin" in message.lower()],
}))
"""


def import_verl_in_fresh_interpreter(plugins_policy: str | None) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "VERL_USE_EXTERNAL_PLUGINS"}
    if plugins_policy is not None:
        env["VERL_USE_EXTERNAL_PLUGINS"] = plugins_policy
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True, timeout=300, cwd="/"
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


@pytest.mark.integration  # a fresh interpreter importing verl: ~5 s
def test_import_verl_loads_verl_ext_through_the_entry_point():
    probe = import_verl_in_fresh_interpreter(plugins_policy=None)
    assert probe["verl_ext_loaded"]
    assert probe["plugin_failures"] == []


@pytest.mark.integration  # a fresh interpreter importing verl: ~5 s
def test_without_plugins_verl_ext_is_not_imported():
    """Control: with verl's plugin discovery off, nothing else pulls verl_ext in, so the entry point is the cause."""
    probe = import_verl_in_fresh_interpreter(plugins_policy="none")
    assert not probe["verl_ext_loaded"]
