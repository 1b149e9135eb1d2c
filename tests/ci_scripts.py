"""The scripts in `.ci/` (a folder of scripts, not a package), imported by path for their tests."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

CI_DIR = Path(__file__).resolve().parents[1] / ".ci"


def load_ci_script(name: str) -> ModuleType:
    """`.ci/<name>.py` as the module ``name`` (registered in sys.modules, as dataclasses and pickling expect)."""
    spec = importlib.util.spec_from_file_location(name, CI_DIR / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
