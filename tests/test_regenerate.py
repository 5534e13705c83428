"""Every committed artifact has the documented command that regenerates it (scripts/regenerate.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _regenerate():
    spec = importlib.util.spec_from_file_location("regenerate", ROOT / "scripts" / "regenerate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["regenerate"] = mod  # dataclasses look their module up while the file runs
    spec.loader.exec_module(mod)
    return mod


def _committed(folder: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", folder], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if not line.endswith("README.md")]


def test_every_committed_artifact_belongs_to_a_regeneration_step():
    reg = _regenerate()
    files = _committed("artifacts") + _committed("bench/results")
    assert files, "git ls-files found the committed artifacts"
    orphans = [f for f in files if not reg.covered(f)]
    assert orphans == [], f"committed artifacts no step of scripts/regenerate.py writes: {orphans}"
    assert not reg.covered("bench/results/not_a_result.json")


def test_every_step_names_a_script_or_module_that_exists_and_the_docs_name_the_command():
    reg = _regenerate()
    for step in reg.STEPS:
        target = step.argv[1:3]
        if target[0] == "-m":
            assert importlib.util.find_spec(target[1]) is not None, step
        else:
            assert (ROOT / target[0]).is_file(), step
    docs = (ROOT / "artifacts" / "README.md").read_text()
    assert "python scripts/regenerate.py" in docs


def test_list_prints_every_step():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "regenerate.py"), "--list"],
                         capture_output=True, text=True, check=True).stdout
    assert [line.split("\t")[0] for line in out.splitlines()] == [s.name for s in _regenerate().STEPS]
