"""The live gate re-derives every criterion from the journal (synthetic journals, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from witprobe.ledger.journal import Journal
from witprobe.serving.live_gate import evaluate, failing

EP = {"n_factors": 4, "log_M": -1.0, "log_M_max": -0.5, "crossed": False}


def _run(d: Path, *, reads: dict | None = None, extra: list | None = None, uids: tuple[int, ...] = (1,), close: bool = True,
         manifest: bool = True, disjoint: bool = True, ep: dict | None = None) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    if manifest:
        (d / "manifest.json").write_text(json.dumps({"expected": {"user_requests": ["req-0"]}}))
    j = Journal(d / "journal.sqlite", header={"delta_req": "1/100", "pool": {"namespaces_disjoint": disjoint}})
    recs = []
    r = {"n_reads": 10, "n_read_foreign_unattributed": 0, "n_read_foreign_attributed": 2, "n_read_unwritten": 0,
         "n_read_out_of_generation": 0, "n_served_over_radius": 0, "n_read_not_certified": 0, **(reads or {})}
    for u in uids:
        recs += [("account_open", {"uid": u, "rid": "req-0", "kind": "user"}),
                 ("write", {"uid": u, "write_id": u, "counter": 0, "delta": "1/200", "spent": "1/200", "n_live_rewritten": 0,
                            "n_violations": 0, "eprocess": ep or EP, "eprocess_global": ep or EP}),
                 ("reads", {"uid": u, **r})]
    recs += extra or []
    recs += [("account_close", {"uid": u, "n_write_events": 1, "n_prob_events": 1, "delta_spent": "1/200", "n_reads": 10}) for u in uids]
    j.append_many(recs)
    if close:
        j.close({})
    return d


def test_clean_journal_passes(tmp_path):
    rep = evaluate(_run(tmp_path / "ok"))
    assert rep.passed, failing(rep)
    assert rep.criteria["foreign_reads==0"].value["attributed_to_writer"] == 2


@pytest.mark.parametrize("kw, criterion", [
    ({"reads": {"n_read_out_of_generation": 3}}, "read_out_of_generation==0"),
    ({"reads": {"n_read_foreign_unattributed": 1}}, "foreign_reads==0"),
    ({"reads": {"n_read_unwritten": 1}}, "read_unwritten==0"),
    ({"reads": {"n_read_not_certified": 5}}, "reads_certified_bytes"),
    ({"uids": (1, 2)}, "n_user_requests==1"),
    ({"close": False}, "journal_verified"),
    ({"manifest": False}, "n_user_requests==?"),
    ({"disjoint": False}, "pool_namespaces_disjoint"),
    ({"extra": [("fail_closed", {"n_entries": 6})]}, "identity_fail_closed==0"),
    ({"extra": [("block_alloc", {"block": 3, "reused": True, "live_before": True, "invalidated": False})]}, "reuse_invalidated"),
    ({"extra": [("alarm", {"scope": "global"})]}, "eprocess_not_crossed"),
    ({"ep": {**EP, "log_M_max": 5.0}}, "eprocess_has_factors"),  # log M above ln 100 but not marked crossed
])
def test_each_violation_names_its_criterion(tmp_path, kw, criterion):
    rep = evaluate(_run(tmp_path / "bad", **kw))
    assert not rep.passed
    assert criterion in failing(rep)


def test_reads_record_without_a_field_fails_closed(tmp_path):
    d = _run(tmp_path / "r")
    rep = evaluate(d)
    assert rep.passed
    d2 = tmp_path / "r2"
    d2.mkdir()
    (d2 / "manifest.json").write_text((d / "manifest.json").read_text())
    j = Journal(d2 / "journal.sqlite", header={"delta_req": "1/100", "pool": {"namespaces_disjoint": True}})
    j.append_many([("account_open", {"uid": 1, "rid": "req-0", "kind": "user"}),
                   ("write", {"uid": 1, "write_id": 1, "counter": 0, "delta": "1/200", "n_live_rewritten": 0, "eprocess": EP, "eprocess_global": EP}),
                   ("reads", {"uid": 1, "n_reads": 10}),
                   ("account_close", {"uid": 1, "n_write_events": 1, "n_prob_events": 1, "delta_spent": "1/200", "n_reads": 10})])
    j.close({})
    rep2 = evaluate(d2)
    assert "foreign_reads==0" in failing(rep2) and "reads_certified_bytes" in failing(rep2)


def test_fault_names_match_simulate():
    from witprobe.ledger.simulate import DEFAULT_AUTH_THR, FAULTS
    from witprobe.serving import config

    assert config.FAULTS == FAULTS and config.DEFAULT_AUTH_THR == DEFAULT_AUTH_THR


def _attention_body(n_layers: int = 3, **kw):
    body = {"bound_max_per_layer": [0.1] * n_layers, "bound_beaten": 0, "audit": {"rows": 10, "mismatches": 0}}
    body.update(kw)
    return body


@pytest.mark.parametrize("case, failing", [
    ("clean", []),
    ("missing request", ["attention_bound_every_request"]),
    ("layer not read", ["attention_bound_every_request"]),
    ("too few layers", ["attention_bound_every_request"]),
    ("bound above 1", ["attention_bound_every_request"]),
    ("audit mismatch", ["kernel_audit_mismatches==0"]),
    ("bound beaten", ["live_bound_not_beaten"]),
    ("beaten missing", ["live_bound_not_beaten"]),
])
def test_read_meter_criteria_fail_on_each_gap(case, failing):
    """The live gate's read-meter criteria, decided from journal bodies: each gap fails its criterion."""
    from witprobe.ledger.acceptance import Criterion
    from witprobe.serving.live_gate import _attention_criteria

    rm = {"metered_layers": [0, 1, 2], "exact_side_pool": True}
    att = {"r1": _attention_body(), "r2": _attention_body()}
    mism: list = []
    if case == "missing request":
        del att["r2"]
    elif case == "layer not read":
        att["r2"]["bound_max_per_layer"][1] = None
    elif case == "too few layers":
        att["r2"]["bound_max_per_layer"] = [0.1, 0.1]
    elif case == "bound above 1":
        att["r2"]["bound_max_per_layer"][0] = 1.5
    elif case == "audit mismatch":
        mism = [{"rid": "r1", "layer": 1, "head": 0, "position": 7}]
    elif case == "bound beaten":
        att["r1"]["bound_beaten"] = 2
    elif case == "beaten missing":
        del att["r1"]["bound_beaten"]
    C: dict[str, Criterion] = {}
    _attention_criteria(C, rm, ["r1", "r2"], att, mism)
    assert set(C) == {"attention_bound_every_request", "kernel_audit_mismatches==0", "live_bound_not_beaten"}
    assert sorted(k for k, c in C.items() if not c.ok) == failing


def test_unsigned_run_lists_the_signature_as_not_evaluated(tmp_path):
    """Without a key the gate says it did not check a signature (a local variable once shadowed the key,
    so the note was never given)."""
    rep = evaluate(_run(tmp_path / "r"))
    assert "journal_signature" in rep.not_evaluated
