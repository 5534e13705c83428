"""Load a script of this repository (``bench/``, ``scripts/``) as a module, by path: those folders
are not packages, and their scripts are tested without being run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relpath: str) -> ModuleType:
    """The module of ``ROOT / relpath`` (for example ``"bench/task_rank.py"``), executed once per call."""
    path = ROOT / relpath
    spec = importlib.util.spec_from_file_location("_".join(Path(relpath).with_suffix("").parts), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
