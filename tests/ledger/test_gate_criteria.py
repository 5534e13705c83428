"""The ledger gate's self-check criteria, one reading at a time: nonzero fails, missing fails.

A synthetic two-rank run directory (no simulation, no journals) in which every criterion but
``journal_verified`` passes; each test breaks one reading of one account of one rank and asks
that exactly its criterion fails. The gate must never read a missing or null count as 0.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import pytest

from witprobe.ledger.accounts import WRITE_KEYS
from witprobe.ledger.gate import evaluate

RIDS = ["req-0", "req-1", "req-2"]
DELTA = Fraction(1, 100)


def _account(uid: int, rid: str | None, kind: str = "user") -> dict:
    k = 3
    spent = DELTA * k / (k + 1)
    acc = {
        "uid": uid, "rid": rid, "kind": kind,
        "delta_spent": f"{spent.numerator}/{spent.denominator}", "n_prob_events": k,
        "n_authorized": 5, "n_factors_skipped_no_randomness": 1, "n_auth_violations": 0,
        "eprocess": {"n_factors": 4, "log_M_max": -0.5, "crossed": False},
        "read": {"n_reads": 100, "n_read_foreign_unattributed": 0, "n_read_foreign_attributed": 2,
                 "n_read_unwritten": 0, "n_served_over_radius": 0, "n_read_out_of_generation": 0},
    }
    for key in WRITE_KEYS:
        acc.setdefault(key, 0 if key != "draw_digest" else f"{uid:064x}")
    return acc


def _rank() -> dict:
    accounts = [_account(i, rid) for i, rid in enumerate(RIDS)] + [_account(9, None, kind="system")]
    return {
        "accounts": accounts,
        "identity": {"uid_group_fallbacks": 0, "identity_fail_closed": 0},
        "eprocess_global": {"n_factors": 16, "log_M_max": -0.2, "crossed": False},
        "pool": {"namespaces_disjoint": True},
        "n_read_checks": 400,
        "journal": {"head_seq": 0},
    }


def _write(d: Path, ranks: dict[int, dict]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_text(json.dumps(
        {"expected": {"user_requests": RIDS, "ranks": len(ranks), "delta_req": f"{DELTA.numerator}/{DELTA.denominator}"}}))
    for r, snap in ranks.items():
        (d / f"ledger.rank{r}.json").write_text(json.dumps(snap))
    (d / "coupling.json").write_text(json.dumps({"identical": True, "world_size": len(ranks), "backend": "gloo"}))
    return d


def _failed(d: Path) -> set[str]:
    return {k for k, c in evaluate(d).criteria.items() if not c.ok}


def test_the_synthetic_run_passes_every_criterion_but_the_absent_journals(tmp_path):
    d = _write(tmp_path / "ok", {0: _rank(), 1: _rank()})
    rep = evaluate(d)
    assert _failed(d) == {"journal_verified"}, {k: c.why for k, c in rep.criteria.items() if not c.ok}
    assert "no such journal file" in rep.criteria["journal_verified"].why
    assert not rep.passed


def _set(path: tuple, value):
    """An edit of rank 1: ``path`` into the snapshot (ints index lists), set to ``value`` or deleted."""
    def edit(snap: dict) -> None:
        obj = snap
        for p in path[:-1]:
            obj = obj[p]
        if value is _DELETE:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value
    return edit


_DELETE = object()
READINGS = {
    "foreign_reads==0": ("accounts", 1, "read", "n_read_foreign_unattributed"),
    "read_unwritten==0": ("accounts", 2, "read", "n_read_unwritten"),
    "read_out_of_generation==0": ("accounts", 0, "read", "n_read_out_of_generation"),
    "auth_violations==0": ("accounts", 3, "n_auth_violations"),
    "uid_group_fallbacks==0": ("identity", "uid_group_fallbacks"),
    "identity_fail_closed==0": ("identity", "identity_fail_closed"),
}
SERVED = ("accounts", 0, "read", "n_served_over_radius")


@pytest.mark.parametrize("value", [1, None, _DELETE, "0", 0.5], ids=["one", "null", "missing", "string", "float"])
@pytest.mark.parametrize("criterion", sorted(READINGS) + ["auth_violations==0/served"])
def test_a_self_check_reading_that_is_nonzero_or_missing_fails_its_criterion(tmp_path, criterion, value):
    name, path = (criterion.split("/")[0], SERVED) if "/" in criterion else (criterion, READINGS[criterion])
    bad = _rank()
    _set(path, value)(bad)
    d = _write(tmp_path / "bad", {0: _rank(), 1: bad})
    failed = _failed(d)
    assert name in failed, (criterion, value)
    # auth violations are a write-side field: the replicas then also disagree on it
    assert failed - {name, "journal_verified"} <= ({"replica_coupling_identical"} if path[-1] in WRITE_KEYS else set())


@pytest.mark.parametrize("edit,criterion", [
    (_set(("eprocess_global", "crossed"), True), "eprocess_not_crossed"),
    (_set(("accounts", 1, "eprocess", "crossed"), None), "eprocess_not_crossed"),
    (_set(("accounts", 1, "eprocess", "log_M_max"), None), "eprocess_logM_present"),
    (_set(("eprocess_global", "log_M_max"), float("nan")), "eprocess_logM_present"),
    (_set(("accounts", 2, "eprocess", "n_factors"), 3), "eprocess_has_factors"),
    (_set(("eprocess_global", "n_factors"), 0), "eprocess_has_factors"),
    (_set(("pool", "namespaces_disjoint"), None), "pool_namespaces_disjoint"),
    (_set(("n_read_checks",), 0), "read_checks_present"),
    (_set(("n_read_checks",), _DELETE), "read_checks_present"),
    (_set(("accounts", 0, "delta_spent"), "1/50"), "all_budgets<=delta_req"),
    (_set(("accounts", 0, "n_prob_events"), None), "all_budgets<=delta_req"),
], ids=["global-crossed", "crossed-null", "logM-null", "logM-nan", "factors-short", "global-no-factors",
        "pool-null", "no-read-checks", "read-checks-missing", "overspent", "events-null"])
def test_other_readings_fail_their_criterion(tmp_path, edit, criterion):
    bad = _rank()
    edit(bad)
    d = _write(tmp_path / "bad", {0: _rank(), 1: bad})
    assert criterion in _failed(d)


def test_accounts_must_match_the_submitted_requests_on_every_rank(tmp_path):
    bad = _rank()
    bad["accounts"] = [a for a in bad["accounts"] if a["rid"] != "req-2"]
    assert "n_user_requests==3" in _failed(_write(tmp_path / "a", {0: _rank(), 1: bad}))
    bad = _rank()
    bad["accounts"].append(_account(7, "req-9"))
    assert "n_user_requests==3" in _failed(_write(tmp_path / "b", {0: _rank(), 1: bad}))


def test_a_missing_rank_or_manifest_fails_closed(tmp_path):
    d = _write(tmp_path / "one", {0: _rank(), 1: _rank()})
    (d / "ledger.rank1.json").unlink()
    failed = _failed(d)
    assert {"n_ranks_seen==2", "replica_coupling_identical"} <= failed
    (d / "manifest.json").unlink()
    failed = _failed(d)
    assert "n_user_requests==?" in failed and "all_budgets<=delta_req" in failed and "n_ranks_seen==?" in failed


def test_replicas_that_disagree_on_a_write_field_fail_coupling(tmp_path):
    bad = copy.deepcopy(_rank())
    bad["accounts"][1]["n_entries_written"] = 1
    assert "replica_coupling_identical" in _failed(_write(tmp_path / "c", {0: _rank(), 1: bad}))
