""".ci/uv_install.py: `make setup` installs with uv under the package indexes pip is configured with. pip's own
``pip config list`` reads a config file and PIP_* variables made here; a stand-in ``uv`` records what it was given."""

import json
import os
import stat
import sys
from pathlib import Path

from tests.ci_scripts import load_ci_script

uv_install = load_ci_script("uv_install")

PIP_CONFIG = """[global]
index-url = https://mirror.example/simple
extra-index-url = file:///opt/a/simple
    file:///opt/b/simple
find-links = /opt/wheels
timeout = 60

[install]
extra-index-url = file:///opt/install-only/simple
only-binary = :all:
"""


def isolated_pip(monkeypatch, tmp_path: Path, **pip_variables: str) -> None:
    """pip reads only a config file of this test's and the given PIP_* variables."""
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    config = tmp_path / "pip.conf"
    config.write_text(PIP_CONFIG)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    for name, value in pip_variables.items():
        monkeypatch.setenv(name, value)


def test_pip_settings_follow_pips_precedence(monkeypatch, tmp_path):
    isolated_pip(monkeypatch, tmp_path, PIP_FIND_LINKS="/env/wheels", PIP_NO_INDEX="1")
    settings = uv_install.pip_settings(sys.executable)
    assert settings["index-url"] == "https://mirror.example/simple"
    assert settings["extra-index-url"] == "file:///opt/install-only/simple"  # [install] over [global]
    assert settings["find-links"] == "/env/wheels"  # PIP_* over the files
    assert settings["no-index"] == "1"


def test_each_setting_becomes_uvs_flag_and_the_rest_is_named():
    flags, environment, not_carried = uv_install.uv_options(
        {
            "index-url": "https://mirror.example/simple",
            "extra-index-url": "file:///opt/a/simple file:///opt/b/simple",
            "find-links": "/opt/wheels",
            "constraint": "/etc/constraints.txt",
            "trusted-host": "mirror.example",
            "no-index": "false",
            "pre": "yes",
            "cert": "/etc/ssl/bundle.pem",
            "timeout": "60",
            "only-binary": ":all:",
        }
    )
    pairs = list(zip(flags[::2], flags[1::2], strict=True))
    assert pairs[0] == ("--index-strategy", "unsafe-best-match")  # pip's rule: best version across indexes
    assert set(pairs[1:]) == {
        ("--index-url", "https://mirror.example/simple"),
        ("--extra-index-url", "file:///opt/a/simple"),
        ("--extra-index-url", "file:///opt/b/simple"),
        ("--find-links", "/opt/wheels"),
        ("--constraint", "/etc/constraints.txt"),
        ("--allow-insecure-host", "mirror.example"),
        ("--prerelease", "allow"),
    }
    assert "--no-index" not in flags
    assert environment == {"SSL_CERT_FILE": "/etc/ssl/bundle.pem"}
    assert not_carried == ["only-binary=:all:"]


def test_main_runs_the_uv_beside_the_interpreter_with_the_flags(monkeypatch, tmp_path, capsys):
    isolated_pip(monkeypatch, tmp_path, PIP_CERT="/etc/ssl/bundle.pem")
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = venv_bin / "python"
    python.symlink_to(sys.executable)
    record = tmp_path / "uv_call.json"
    uv = venv_bin / "uv"
    uv.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'cert': os.environ.get('SSL_CERT_FILE')}}, open({str(record)!r}, 'w'))\n"
    )
    uv.chmod(uv.stat().st_mode | stat.S_IXUSR)
    assert uv_install.main(["--python", str(python), "--", "torch==2.13.0", "-e", ".[test]"]) == 0
    call = json.loads(record.read_text())
    assert call["argv"][:6] == ["pip", "install", "--quiet", "--compile-bytecode", "--python", str(python)]
    assert call["argv"][-3:] == ["torch==2.13.0", "-e", ".[test]"]
    assert "--find-links" in call["argv"] and "/opt/wheels" in call["argv"]
    assert call["cert"] == "/etc/ssl/bundle.pem"
    assert "only-binary=:all:" in capsys.readouterr().err
