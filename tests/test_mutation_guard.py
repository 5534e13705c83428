"""The kernel decides the bound: the mutation guard and the reflective box checker.

A per-run theorem certifies its claim only if the kernel decided the number ``B``: the same
statement with ``B`` lowered (to ``max(realized, B/2)``) must be rejected. These tests run the guard
(``certify.kernels.mutation_guard``) on three theorems: an honest centred claim and a box claim
decided by ``BoxCheck.check_layer`` (both must stay ``kernel_checked`` with the guard ``rejected``),
and the hollow box claim witprobe shipped before (its hypothesis was the certificate at level ``B``
itself, so it held for every ``B``: the guard must mark it ``lemma_checked``). The guard itself is
broken once (a "lowering" that lowers nothing) and the honest theorems then fail it.

They need ``coqc``; under CI a missing Coq is a failure, never a skip.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from witprobe.calculus import rounding
from witprobe.certify import kernels
from witprobe.certify.box_certificate import layer_data
from witprobe.certify.run_record import BoxRow, BoxRows
from witprobe.formal import coq_runner
from witprobe.formal.claim_theorems import (UNIT_DEN, ClaimTheorem, ClaimTheoremError, Constant, LeanSide,
                                            boxsup_theorem, guard_units, lowered_theorem)

COQC, COQ_WHY = coq_runner.find_coqc()
if COQC is None and os.environ.get("CI"):
    raise RuntimeError(f"CI must run the Coq tests, but {COQ_WHY}")
needs_coq = pytest.mark.skipif(COQC is None, reason=f"no Coq here: {COQ_WHY}")
RUN_SHA = "ab" * 32


def _units(x: float) -> int:
    return rounding.to_units_up(rounding.up(x))


def centred_theorem(c: float, b: float, realized: float | None = None) -> ClaimTheorem:
    cc, bb = Constant("C", _units(c), "test radius"), Constant("B", _units(b), "test bound")
    stmt = (f"forall (n : nat) (s s' : nat -> R),\n  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= {cc.coq}) ->\n"
            f"  tv n (softmax n s) (softmax n s') <= {bb.coq}")
    return ClaimTheorem("L00.attn_tv", "L00_attn_tv", "centred", "score", stmt,
                        "apply centred_claim; [lra | unfold tanh; interval with (i_prec 60)].", (cc, bb), ("C",),
                        ("Witprobe.Claims.centred_claim",), "", "", (), LeanSide("evict", 0, bb.value),
                        realized_units=None if realized is None else _units(realized))


def hollow_box_theorem(b: float) -> ClaimTheorem:
    """The box claim as witprobe stated it before this guard: the certificate at level ``B`` is
    the hypothesis, so the theorem is the library lemma and holds for every ``B``."""
    bb = Constant("B", _units(b), "test bound")
    stmt = ("forall (n : nat) (s s' r : nat -> R),\n  (0 < n)%nat ->\n"
            "  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= r t) ->\n"
            f"  box_certificate n (softmax n s') r {bb.coq} ->\n  tv n (softmax n s) (softmax n s') <= {bb.coq}")
    return ClaimTheorem("L01.attn_tv", "L01_attn_tv", "boxsup", "boxsup", stmt,
                        "intros n s s' r Hn Hd Hc; exact (tv_le_box n s s' r _ Hn Hd Hc).", (bb,), ("B",),
                        ("Witprobe.BoxSup.tv_le_box",), "", "", (), LeanSide("evict", 0, bb.value))


def checked_box_theorem(b: float) -> ClaimTheorem:
    """A box claim decided by the checker: one row (heavy key of mass 0.9 at radius 0.1, the other
    keys' mass 0.1 at radius 2: box bound 0.413 at 4 grid intervals in float64, centred cap
    tanh(1) = 0.76, so the row is shipped), and a cap of 0.1 for every other row."""
    rows = BoxRows(rows_seen=10, dropped_c_max=0.1,
                   rows=[BoxRow(c_max=2.0, bound=0.42, intervals=4, heavy=[0.9, 0.1], buckets=[[0.1, 2.0]])])
    data = layer_data(rows, rounding.up(1e-12), 2, "test", rounding.up(b))
    assert data.shipped == 1
    return boxsup_theorem("L02.attn_tv", _units(b), "banded", data.rows_coq, data.cap_units)


def test_guard_units_lower_to_realized_or_half_and_refuse_when_impossible():
    th = centred_theorem(0.2, 0.1)
    b = th.constants[1].units
    assert guard_units(th) == b // 2
    assert guard_units(dataclasses.replace(th, realized_units=b - 5)) == b - 5
    assert guard_units(dataclasses.replace(th, realized_units=b // 4)) == b // 2
    with pytest.raises(ClaimTheoremError, match="within one unit"):
        guard_units(dataclasses.replace(th, realized_units=b))


def test_lowered_theorem_replaces_b_in_the_statement_and_the_proof_only():
    th = checked_box_theorem(0.42)
    b, cap = th.constants
    low = lowered_theorem(th, 7)
    assert f"(7 / {UNIT_DEN})" in low.statement and b.coq not in low.statement
    assert f"7%Z {UNIT_DEN}%Z" in low.proof and f"{b.units}%Z" not in low.proof
    assert cap.coq in low.statement and low.definitions == th.definitions
    assert [c.units for c in low.constants] == [7, cap.units]


@needs_coq
def test_the_guard_keeps_decided_claims_and_demotes_a_hollow_one():
    ths = [centred_theorem(0.2, math_tanh_up(0.1)), hollow_box_theorem(0.3), checked_box_theorem(0.42)]
    out = kernels.coq_check("auto", ths, RUN_SHA)
    st = out.statuses
    assert st["L00_attn_tv"].status == coq_runner.KERNEL_CHECKED, st["L00_attn_tv"]
    assert st["L00_attn_tv"].guard.status == "rejected"
    assert st["L02_attn_tv"].status == coq_runner.KERNEL_CHECKED, st["L02_attn_tv"]
    assert st["L02_attn_tv"].guard.status == "rejected"
    assert st["L02_attn_tv"].guard.lowered_units == ths[2].constants[0].units // 2
    assert st["L01_attn_tv"].status == coq_runner.LEMMA_CHECKED, st["L01_attn_tv"]
    assert st["L01_attn_tv"].guard.status == "accepted" and "does not decide its bound" in st["L01_attn_tv"].reason


@needs_coq
def test_the_checker_rejects_a_box_bound_its_rows_do_not_support():
    """0.40 is below the row's box bound at 4 intervals (0.413): the kernel computes false."""
    out = kernels.coq_check("auto", [checked_box_theorem(0.40)], RUN_SHA)
    st = out.statuses["L02_attn_tv"]
    assert st.status == coq_runner.REJECTED, st


@needs_coq
def test_a_broken_guard_that_lowers_nothing_fails_the_honest_claims(monkeypatch):
    monkeypatch.setattr(kernels, "lowered_theorem", lambda th, units: th)
    out = kernels.coq_check("auto", [centred_theorem(0.2, math_tanh_up(0.1))], RUN_SHA)
    st = out.statuses["L00_attn_tv"]
    assert st.status == coq_runner.LEMMA_CHECKED and st.guard.status == "accepted", st


def math_tanh_up(x: float) -> float:
    import math

    return math.tanh(x) * (1 + 1e-9)


# ---- the committed default run (artifacts/coverage/smollm2-int8) ----

import json  # noqa: E402
import re  # noqa: E402
from fractions import Fraction  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "artifacts" / "coverage" / "smollm2-int8"
QA48 = ROOT / "artifacts" / "query_aligned" / "smollm2-int8-qa48"
V4 = ROOT / "artifacts" / "coverage" / "v4-int8"  # DeepSeek-V4: sink theorems over the banded witness


@pytest.mark.parametrize("art", [DEFAULT, QA48, V4], ids=["default", "qa48", "v4"])
def test_every_certified_claim_of_a_committed_run_passed_the_guard_at_max_realized_half_b(art):
    """Re-derived from the primary record: each certified claim's guard lowered B to
    max(realized rounded up, B/2) and the kernel rejected it; every TV claim is certified."""
    cert = json.loads((art / "certificate.json").read_text())
    tv = [c for c in cert["claims"] if c["kind"] == "attn_tv"]
    assert tv and all(c["tier"] == "certified" for c in tv), [c["id"] for c in tv if c["tier"] != "certified"]
    for c in tv:
        g = c["kernels"]["coq"]["guard"]
        assert c["kernels"]["coq"]["status"] == "kernel_checked" and g["status"] == "rejected", (c["id"], g)
        b = Fraction(c["bound"]["exact"])
        realized_units = rounding.to_units_up(rounding.up(c["realized_tv_max"]))
        want = max(realized_units, rounding.to_units_up(b) // 2)
        assert Fraction(g["lowered"]["exact"]) == rounding.from_units(want) < b, c["id"]


@pytest.mark.parametrize("art", [DEFAULT, QA48, V4], ids=["default", "qa48", "v4"])
def test_each_theorem_states_its_claims_bound_as_one_literal_anyone_can_lower(art):
    """Open to outside checks: the rendered theorem's conclusion is ``<= (N / 2^48)`` with
    ``N / 2^48`` the claim's ``bound.exact``, and a box theorem hands the same ``N`` to its checker."""
    text = (art / "obligations" / "run.v").read_text()
    cert = json.loads((art / "certificate.json").read_text())
    for c in cert["claims"]:
        if c["theorem"] is None or c["kind"] != "attn_tv":
            continue
        name = c["kernels"]["coq"]["theorem"].rsplit(".", 1)[1]
        b = Fraction(c["bound"]["exact"])
        n = b * UNIT_DEN
        assert n.denominator == 1, c["id"]
        body = text[text.index(f"Theorem {name} :"):]
        body = body[:body.index("Qed.")]
        assert f"<= ({n.numerator} / {UNIT_DEN})." in body, name
        if c["form"] in ("boxsup", "qa_boxsup"):
            assert f"{n.numerator}%Z {UNIT_DEN}%Z" in body and re.search(rf"Definition {name}_rows : list row", text)


@needs_coq
def test_a_doctored_run_whose_box_bound_was_lowered_is_not_certified(tmp_path):
    """Lower layer 0's recorded box bound below what its rows support and re-derive: the checker
    (or the cap's tanh) refuses it, so the claim is not certified; the other layers still are."""
    from witprobe.certify.pipeline import write_run_dir

    run = json.loads((DEFAULT / "run.json").read_text())
    stat = run["layers"][0]["read"]["boxsup_bound"]
    realized = run["layers"][0]["read"]["tv_realized"]["max"]
    stat["max"] = max(realized * 1.05, stat["max"] / 6)
    assert stat["max"] < json.loads((DEFAULT / "run.json").read_text())["layers"][0]["read"]["boxsup_bound"]["max"]
    cert = write_run_dir(run, tmp_path / "forged", "off", coq_mode="auto").certificate
    l0 = next(c for c in cert["claims"] if c["id"] == "L00.attn_tv")
    assert l0["form"] == "boxsup" and l0["tier"] != "certified", l0["kernels"]["coq"]
    assert l0["kernels"]["coq"]["status"] == "rejected"
    others = [c for c in cert["claims"] if c["kind"] == "attn_tv" and c["id"] != "L00.attn_tv"]
    assert all(c["tier"] == "certified" for c in others)


@needs_coq
def test_a_broken_guard_on_the_committed_default_run_demotes_every_claim(monkeypatch):
    """The committed default run, re-derived and kernel-checked with the guard broken to lower
    nothing: every theorem then also "holds lower", and no claim keeps the kernel_checked status.
    The theorems of six layers (every claim of the default run is a box claim, one shape), not all
    30: the whole run is kernel-checked twice in about two minutes, six layers in under half."""
    from witprobe.certify.derive import derive

    deriv = derive(json.loads((DEFAULT / "run.json").read_text()))
    theorems = [th for th in deriv.theorems if int(th.claim_id[1:3]) < 6]
    assert len({th.claim_id[:3] for th in theorems}) == 6
    monkeypatch.setattr(kernels, "lowered_theorem", lambda th, units: th)
    out = kernels.coq_check("auto", theorems, "cd" * 32)
    assert len(out.statuses) == len(theorems)
    assert {s.status for s in out.statuses.values()} == {coq_runner.LEMMA_CHECKED}
