"""A kvpress environment beside this one: ``pip install -e '.[kvpress]'`` into a second venv.

kvpress 0.5.5 declares ``transformers<5.3``; witprobe's test and serve extras pin 5.24. This builds
(once) a virtual environment that sees the current interpreter's packages (torch, pytest, ...)
through a ``.pth`` file and installs ``-e '.[kvpress]'`` into it, which puts kvpress and
transformers 5.2 there, ahead of the current environment's. It lives in
``~/.cache/witprobe/kvpress-env-<hash>`` (per checkout, interpreter and ``pyproject.toml``) and is
reused while those do not change. Used by ``tests/test_kvpress_environment.py`` and
``bench/kvpress_presses.py``; users install the extra in their own environment (docs/KVPRESS.md).

``python scripts/kvpress_env.py`` builds it and prints its interpreter's path.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ensure() -> Path:
    """The kvpress environment's interpreter, built first if needed (raises ``RuntimeError`` with
    pip's output when the install fails)."""
    key = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + str(ROOT).encode() + sys.executable.encode())
    env = Path.home() / ".cache" / "witprobe" / f"kvpress-env-{key.hexdigest()[:12]}"
    py = env / "bin" / "python"
    if (env / ".complete").exists():
        return py
    shutil.rmtree(env, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    parents = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    Path(site, "_witprobe_parent_env.pth").write_text("".join(f"{p}\n" for p in parents))
    done = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e",
                           ".[kvpress]"], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"pip install -e '.[kvpress]' failed in {env}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    (env / ".complete").write_text("")
    return py


if __name__ == "__main__":
    print(ensure())
