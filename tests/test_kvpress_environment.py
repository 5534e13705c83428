"""kvpress in a second environment, from the main suite: ``pip install -e '.[kvpress]'`` for real.

kvpress 0.5.5 declares ``transformers<5.3``; this environment has 5.24 (the ``test`` and ``serve``
extras). The test builds a virtual environment with ``scripts/kvpress_env.py`` (``pip install
-e '.[kvpress]'`` on top of this environment's packages: kvpress 0.5.5 and transformers 5.2 ahead
of them) and runs ``tests/with_kvpress/kvpress_checks.py`` in it (docs/KVPRESS.md). Every check
there must pass; a skip is a failure. The environment is cached per checkout and
``pyproject.toml``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from repo_scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
CHECKS = "tests/with_kvpress/kvpress_checks.py"


def _kvpress_env():
    return load_script("scripts/kvpress_env.py").ensure()


def test_kvpress_presses_certify_in_an_environment_with_kvpress_installed():
    py = _kvpress_env()
    versions = subprocess.run([str(py), "-c", "import importlib.metadata as m; "
                               "print(m.version('kvpress'), m.version('transformers'))"],
                              check=True, capture_output=True, text=True).stdout.split()
    assert versions[0].startswith("0.5.") and versions[1].startswith("5.2."), versions
    r = subprocess.run([str(py), "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", CHECKS],
                       cwd=ROOT, capture_output=True, text=True, timeout=1800)
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert re.search(r"\b\d+ passed\b", summary) and "skipped" not in summary and "failed" not in summary, summary
