"""Eight accounts, eight workers, two replicas over one shared pool; the gate as the verdict."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from witprobe.ledger.gate import evaluate, run_gate

PY = [sys.executable, "-m", "witprobe.ledger"]


def _simulate(out: Path, *extra: str) -> tuple[int, dict]:
    proc = subprocess.run([*PY, "simulate", "--accounts", "8", "--workers", "8", "--out", str(out), "--quiet", *extra],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    gate = json.loads((out / "gate.json").read_text())
    assert json.loads(proc.stdout)["passed"] == gate["passed"]
    return proc.returncode, gate


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ledger") / "run"
    rc, gate = _simulate(out)
    return out, rc, gate


def test_concurrent_run_passes_every_criterion(good_run):
    out, rc, gate = good_run
    failed = {k: c for k, c in gate["criteria"].items() if not c["ok"]}
    assert rc == 0 and gate["passed"], failed
    assert {"n_user_requests==8", "all_budgets<=delta_req", "foreign_reads==0", "read_unwritten==0", "auth_violations==0",
            "uid_group_fallbacks==0", "identity_fail_closed==0", "eprocess_has_factors", "eprocess_logM_present",
            "eprocess_not_crossed", "n_ranks_seen==2", "replica_coupling_identical"} <= set(gate["criteria"])
    for r in (0, 1):
        snap = json.loads((out / f"ledger.rank{r}.json").read_text())
        users = [a for a in snap["accounts"] if a["kind"] == "user"]
        assert len(users) == 8
        user_reads = sum(a["read"]["n_reads"] for a in users)
        assert user_reads >= 1_000_000, user_reads
        for a in users:
            rd = a["read"]
            assert rd["n_read_foreign_unattributed"] == rd["n_read_unwritten"] == rd["n_read_out_of_generation"] == 0
            assert rd["n_served_over_radius"] == 0
            assert 0 <= a["delta_spent_float"] <= 0.01 and a["n_prob_events"] > 0
            assert a["eprocess"]["n_factors"] > 0 and a["eprocess"]["crossed"] is False
            # reads: every check lands in exactly one class
            assert rd["n_reads"] == (rd["n_read_masked"] + rd["n_read_kept_exact"] + rd["n_read_restored_exact"]
                                     + rd["n_read_unwritten"] + rd["n_read_out_of_generation"])
        # shared system-prompt pages are read by every user and attributed to their writer (warmup)
        assert sum(a["read"]["n_read_foreign_attributed"] for a in users) > 0
        assert snap["eprocess_global"]["n_factors"] == sum(a["eprocess"]["n_factors"] for a in snap["accounts"])
        assert max(snap["batch_rows"], key=int) != "1", "batches must mix requests"
    coupling = json.loads((out / "coupling.json").read_text())
    assert coupling["identical"] and coupling["world_size"] == 2


def test_gate_cli_agrees(good_run):
    out, _, _ = good_run
    proc = subprocess.run([*PY, "gate", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["passed"]
    proc = subprocess.run([*PY, "verify", str(out / "journal.rank0.sqlite")], capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["ok"]


def test_missing_or_null_readings_fail(good_run, tmp_path):
    out, _, _ = good_run
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(out, d)
    p = d / "ledger.rank1.json"
    snap = json.loads(p.read_text())
    snap["identity"]["identity_fail_closed"] = None
    snap["identity"]["uid_group_fallbacks"] = None
    snap["eprocess_global"]["log_M_max"] = None
    del snap["accounts"][3]["read"]["n_read_unwritten"]
    p.write_text(json.dumps(snap))
    c = evaluate(d).criteria
    for k in ("identity_fail_closed==0", "uid_group_fallbacks==0", "eprocess_logM_present", "read_unwritten==0"):
        assert not c[k].ok, k
    (d / "ledger.rank1.json").unlink()
    c = evaluate(d).criteria
    assert not c["n_ranks_seen==2"].ok and not c["replica_coupling_identical"].ok
    (d / "manifest.json").unlink()
    assert not run_gate(d).passed


def test_account_split_and_merge_are_detected(good_run, tmp_path):
    out, _, _ = good_run
    import shutil

    for how in ("split", "merge"):
        d = tmp_path / how
        shutil.copytree(out, d)
        for r in (0, 1):
            p = d / f"ledger.rank{r}.json"
            snap = json.loads(p.read_text())
            users = [a for a in snap["accounts"] if a["kind"] == "user"]
            if how == "split":  # one request appears as two accounts, and the last one is gone
                users[-1]["rid"] = users[0]["rid"]
            else:
                snap["accounts"].remove(users[-1])
            p.write_text(json.dumps(snap))
        assert not evaluate(d).criteria["n_user_requests==8"].ok, how


def test_slot_reuse_without_invalidation_fails_the_gate(tmp_path):
    rc, gate = _simulate(tmp_path / "noinv", "--fault", "no-reuse-invalidation")
    c = gate["criteria"]
    assert rc == 1 and not gate["passed"]
    assert not c["read_out_of_generation==0"]["ok"] or not c["foreign_reads==0"]["ok"]


@pytest.mark.parametrize("fault,criteria", [
    # the collision is caught at run time by the owner ledger (which reading trips first depends
    # on thread timing: a foreign owner, or a generation moved by the other family's writes)
    ("family-collision", ("foreign_reads==0", "read_out_of_generation==0")),
    ("split-accounts", ("n_user_requests==8",)),
    ("drop-plan", ("identity_fail_closed==0",)),
    ("sr-coarse", ("eprocess_not_crossed",)),
])
def test_injected_faults_fail_their_criterion(tmp_path, fault, criteria):
    rc, gate = _simulate(tmp_path / fault, "--fault", fault, "--ranks", "1", "--decode-steps", "16")
    c = gate["criteria"]
    assert rc == 1 and any(not c[k]["ok"] for k in criteria), {k: c[k] for k in criteria}
    if fault == "family-collision":
        assert not c["pool_namespaces_disjoint"]["ok"]


def test_single_rank_cannot_show_coupling(tmp_path):
    rc, gate = _simulate(tmp_path / "one", "--ranks", "1", "--decode-steps", "8")
    c = gate["criteria"]
    assert rc == 1 and not c["replica_coupling_identical"]["ok"]
    assert all(v["ok"] for k, v in c.items() if k != "replica_coupling_identical"), c


def test_coupling_compares_the_union_of_accounts(good_run, tmp_path):
    out, _, _ = good_run
    import shutil

    for how in ("digest", "only-on-rank-1"):
        d = tmp_path / how
        shutil.copytree(out, d)
        p = d / "ledger.rank1.json"
        snap = json.loads(p.read_text())
        if how == "digest":  # one replica drew different bits for one account
            snap["accounts"][2]["draw_digest"] = "0" * 64
        else:  # an account that rank 0 never saw: comparing only rank 0's ids would miss it
            extra = dict(snap["accounts"][1], rid="req-extra", uid=99)
            snap["accounts"].append(extra)
        p.write_text(json.dumps(snap))
        c = evaluate(d).criteria["replica_coupling_identical"]
        assert not c.ok, how
