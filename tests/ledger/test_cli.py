"""Exit codes and clear errors of ``python -m witprobe.ledger``."""

import subprocess
import sys

PY = [sys.executable, "-m", "witprobe.ledger"]


def _run(*args):
    return subprocess.run([*PY, *args], capture_output=True, text=True)


def test_usage_errors(tmp_path):
    p = _run("verify", str(tmp_path / "missing.sqlite"))
    assert p.returncode == 2 and "no such file" in p.stderr
    p = _run("gate", str(tmp_path / "nodir"))
    assert p.returncode == 2 and "not a directory" in p.stderr
    p = _run("simulate", "--out", str(tmp_path / "o"), "--fault", "nonsense")
    assert p.returncode == 2 and "invalid choice" in p.stderr
    p = _run("simulate", "--out", str(tmp_path / "o"), "--trace", str(tmp_path))
    assert p.returncode == 2 and "manifest.json not found" in p.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    p = _run("simulate", "--out", str(tmp_path / "full"))
    assert p.returncode == 2 and "--force" in p.stderr
    p = _run("simulate", "--out", str(tmp_path / "o2"), "--auth-thr", "key=abc")
    assert p.returncode == 2


def test_gate_on_an_empty_directory_fails_closed(tmp_path):
    p = _run("gate", str(tmp_path))
    assert p.returncode == 1 and '"passed": false' in p.stdout
