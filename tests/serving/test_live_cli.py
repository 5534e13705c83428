"""``python -m witprobe.ledger live``: usage errors, a passing run, and every fault failing its criterion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--requests", "6", "--concurrency", "3", "--max-new-tokens", "3", "--quiet"]


def live(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "witprobe.ledger", "live", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


@pytest.mark.parametrize("args, msg", [
    (["--requests", "0"], "--requests"),
    (["--concurrency", "0"], "--concurrency"),
    (["--timeout", "-1"], "--timeout"),
    (["--max-new-tokens", "0"], "--max-new-tokens"),
])
def test_usage_errors_exit_2_and_write_nothing(tmp_path, args, msg):
    out = tmp_path / "run"
    r = live("--out", str(out), *args)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_unknown_fault_is_usage(tmp_path):
    r = live("--out", str(tmp_path / "x"), "--fault", "nope")
    assert r.returncode == 2 and not (tmp_path / "x").exists()


def test_existing_output_needs_force_and_foreign_files_are_kept(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    r = live("--out", str(out))
    assert r.returncode == 2 and "--force" in r.stderr
    r = live("--out", str(out), "--force")
    assert r.returncode == 2 and "notes.txt" in r.stderr
    assert (out / "notes.txt").read_text() == "mine"


def test_live_passes_and_refuses_a_tampered_summary(tmp_path):
    out = tmp_path / "run"
    r = live("--out", str(out), *SMALL)
    assert r.returncode == 0, r.stderr[-2000:]
    gate = json.loads((out / "gate.json").read_text())
    assert gate["passed"] and gate["failing"] == []
    verdicts = json.loads((out / "verdicts.json").read_text())
    assert sorted(verdicts) == [f"req-{i}" for i in range(6)] and all(v["ok"] for v in verdicts.values())
    assert "witprobe_ledger_ok 1" in (out / "metrics.prom").read_text()
    # the gate reads the journal, not the caches: editing the verdicts changes nothing; dropping a
    # submitted request from the journal's view (manifest) does
    from witprobe.serving.live_gate import evaluate, failing

    (out / "verdicts.json").write_text("{}")
    assert evaluate(out).passed
    man = json.loads((out / "manifest.json").read_text())
    man["expected"]["user_requests"].append("req-99")
    (out / "manifest.json").write_text(json.dumps(man))
    assert "n_user_requests==7" in failing(evaluate(out))


@pytest.mark.parametrize("fault, criterion, extra", [
    ("no-reuse-invalidation", "reuse_invalidated", ["--num-blocks", "16"]),
    ("drop-plan", "identity_fail_closed==0", []),
    ("split-accounts", "n_user_requests==6", ["--max-batch-tokens", "24"]),
    ("sr-coarse", "eprocess_not_crossed", []),
    ("family-collision", "pool_namespaces_disjoint", []),
])
def test_each_fault_fails_its_criterion(tmp_path, fault, criterion, extra):
    out = tmp_path / fault
    r = live("--out", str(out), "--fault", fault, *SMALL, *extra, "--no-live-bound")  # ledger faults: the read meter is not their subject
    assert r.returncode == 1, r.stderr[-2000:]
    gate = json.loads((out / "gate.json").read_text())
    assert criterion in gate["failing"], gate["failing"]
    assert criterion in r.stderr  # the failing criterion is named
