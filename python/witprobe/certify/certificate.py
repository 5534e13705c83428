"""The certificate (schema ``witprobe-certificate/4``): claims with machine-decided tiers.

A claim is ``certified`` only when a proof kernel checked a theorem whose statement *is* the
claim, against a library built (or its build verified) in the same check: Coq's kernel on
``obligations/run.v``, or Lean's on ``obligations/run_real.lean`` (the same theorems, same names,
in Lean; no Lean toolchain exists where witprobe is developed, so in practice Coq). Each claim
records ``kernels``:

- ``coq``: ``kernel_checked``, ``rejected`` (the kernel or the assumption audit refused the
  theorem), ``unchecked`` (with the reason: no ``coqc``, build failure, timeout) or ``none`` (no
  theorem states this claim), with the fully qualified theorem name. The audited assumptions of
  the checked theorems (``Print Assumptions`` of their conjunction, each within
  ``assumptions_allowlist``) are recorded once, in ``kernels.coq.assumptions``;
- ``lean``: the same for the Lean theorem: ``kernel_checked`` (accepted, ``#print axioms``
  within the standard three, recorded in ``axioms``), ``failed``, ``unchecked`` with the reason
  (no Lean toolchain, the analytic package did not build, timeout) or ``none``;
- ``lean_arithmetic``: the status of the claim's arithmetic obligations in
  ``obligations/run.lean`` (``arithmetic_checked`` when Lean's kernel accepted them, which does
  *not* certify).

``tier`` is the registered tier only if the bound is not vacuous and the Coq or the Lean theorem
was kernel-checked, else ``empirical``, with ``tier_reason``. Each claim also lists its theorem's
statement, the measured constants it rests on (the trust boundary) and the library theorems the
proof applies. The certificate is a deterministic function of ``run.json``, the rendered files and
the kernels' outcomes, so ``certify check`` can re-derive it byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from witprobe.calculus import rounding
from witprobe.calculus.tiers import Tier
from witprobe.certify import verdict
from witprobe.certify.certificate_record import CERT_SCHEMA, parse_certificate
from witprobe.certify.derive import Claim, Derivation
from witprobe.certify.kernels import KernelOutcomes
from witprobe.formal import coq_runner
from witprobe.formal.claim_theorems import ClaimTheorem
from witprobe.formal.lean_runner import FAILED, KERNEL_CHECKED, UNCHECKED, ObligationStatus
from witprobe.formal.render_coq import COQ_FILE, qualified
from witprobe.self_checks import meaning as self_check_meaning
from witprobe.formal.render_lean_real import LEAN_REAL_FILE

OBLIGATIONS_FILE = "obligations/run.lean"
ARITHMETIC_CHECKED = "arithmetic_checked"


def canonical_json(obj: Any) -> str:
    """Stable JSON text: sorted keys, one-space indent, ASCII, trailing newline."""
    return json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False) + "\n"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _claim_lean_status(claim: Claim, statuses: dict[str, ObligationStatus]) -> tuple[str, str]:
    """Status of the claim's Lean arithmetic obligations (``arithmetic_checked`` when all passed)."""
    obs = claim.obligations
    if not obs:
        return "none", "no obligation"
    sts = [statuses.get(o) for o in obs]
    if any(s is None for s in sts):
        return UNCHECKED, "obligation has no Lean status"
    if all(s.status == KERNEL_CHECKED for s in sts):  # type: ignore[union-attr]
        return ARITHMETIC_CHECKED, ""
    worst = next(s for s in sts if s.status != KERNEL_CHECKED)  # type: ignore[union-attr]
    return worst.status, f"obligation {worst.ident} {worst.status}: {worst.reason}"  # type: ignore[union-attr]


def effective_tier(claim: Claim, coq_status: str, coq_reason: str, lean_status: str,
                   lean_reason: str) -> tuple[Tier, str]:
    """The tier a claim may print: registered only if not vacuous and its theorem was kernel-checked
    (by Coq or by Lean)."""
    if claim.kind == "recurrent":
        return Tier.EMPIRICAL, "observation only: no certificate is claimed for a recurrent state"
    if claim.kind == "pooling":
        return Tier.EMPIRICAL, "pooling profile: readings of the gate weights (pooling is not an error source)"
    if claim.kind in ("attn_out", "attn_out_proj"):
        if claim.vacuous:
            return Tier.EMPIRICAL, "uses the trivial TV <= 1 (the layer's TV bound is vacuous)"
        return Tier.EMPIRICAL, "no kernel-checked theorem states this bound (exact Python arithmetic on measured maxima)"
    if claim.value is None and not claim.forms:
        return Tier.EMPIRICAL, "no reads observed on this layer"
    if claim.vacuous:
        return Tier.EMPIRICAL, "vacuous: the TV bound is >= 1"
    if claim.registered_tier is Tier.EMPIRICAL:
        return Tier.EMPIRICAL, "the composition includes an empirical step (a paired measurement, no theorem)"
    if coq_status == "none" and lean_status == "none":
        return Tier.EMPIRICAL, "no kernel-checked theorem states this claim (exact Python arithmetic only)"
    by = [k for k, st in (("Coq", coq_status), ("Lean", lean_status)) if st == KERNEL_CHECKED]
    if not by:
        return Tier.EMPIRICAL, f"not kernel-checked (Coq: {coq_reason}; Lean: {lean_reason})"
    return claim.registered_tier, f"its theorem (statement = the claim) was kernel-checked by {' and '.join(by)}"


def _frac(x) -> dict[str, str] | None:
    if x is None:
        return None
    return {"decimal_up": rounding.decimal_up(x, 6), "exact": rounding.fraction_text(x)}


def _guard_json(g: coq_runner.GuardOutcome) -> dict[str, Any]:
    lowered = None if g.lowered_units is None else rounding.from_units(g.lowered_units)
    return {"status": g.status, "lowered": _frac(lowered), "reason": g.reason}


def claim_json(claim: Claim, run_sha: str, theorem: ClaimTheorem | None, outcomes: KernelOutcomes) -> dict[str, Any]:
    arith_status, arith_reason = _claim_lean_status(claim, outcomes.lean_arithmetic.statuses)
    if theorem is None:
        coq = {"status": "none", "theorem": None, "reason": "no theorem states this claim",
               "guard": {"status": "not_run", "lowered": None, "reason": "no theorem states this claim"}}
        lean: dict[str, Any] = {"status": "none", "theorem": None, "reason": "no theorem states this claim", "axioms": []}
    else:
        st = outcomes.coq.statuses.get(theorem.theorem)
        coq = {
            "status": st.status if st else coq_runner.UNCHECKED,
            "theorem": qualified(run_sha, theorem.theorem),
            "reason": st.reason if st else "no Coq status (fail closed)",
            "guard": _guard_json(st.guard if st else coq_runner.GUARD_NOT_RUN),
        }
        lst = outcomes.lean.statuses.get(theorem.theorem)
        lean = {
            "status": lst.status if lst else UNCHECKED,
            "theorem": qualified(run_sha, theorem.theorem),
            "reason": lst.reason if lst else "no Lean status (fail closed)",
            "axioms": list(lst.axioms) if lst else [],
        }
    tier, reason = effective_tier(claim, coq["status"], coq["reason"], lean["status"], lean["reason"])
    forms = {}
    for name, f in claim.forms.items():
        st = outcomes.lean_arithmetic.statuses.get(f.obligation) if f.obligation else None
        forms[name] = {
            "bound": _frac(f.bound),
            "vacuous": f.vacuous,
            "beaten_by_realized": f.beaten,
            "obligation": f.obligation,
            "lean_status": (ARITHMETIC_CHECKED if st.status == KERNEL_CHECKED else st.status) if st else "none",
            "proofs": list(f.proofs),
            "note": f.reason,
        }
    return {
        "id": claim.id,
        "kind": claim.kind,
        "extra": claim.extra,
        "layer": claim.layer,
        "metric": str(claim.metric),
        "form": claim.form,
        "bound": _frac(claim.value),
        "vacuous": claim.vacuous,
        "registered_tier": claim.registered_tier.value,
        "kernels": {"coq": coq, "lean": lean,
                    "lean_arithmetic": {"status": arith_status, "reason": arith_reason,
                                        "obligations": claim.obligations}},
        "theorem": theorem.to_json() if theorem else None,
        "tier": tier.value,
        "tier_reason": reason,
        "proofs": list(claim.forms[claim.form].proofs) if claim.form in claim.forms else list(claim.proofs),
        "realized_tv_max": claim.realized_max,
        "tightness": claim.tightness,
        "forms": forms,
    }


def assemble(run_sha: str, deriv: Derivation, obligations_sha: str | None, coq_sha: str | None,
             outcomes: KernelOutcomes, lean_sha: str | None) -> dict[str, Any]:
    """The certificate dictionary (``*_sha``: SHA-256 of the rendered ``run.lean``, ``run.v``,
    ``run_real.lean``, ``None`` where the run renders no such file)."""
    by_claim = {t.claim_id: t for t in deriv.theorems}
    claims = [claim_json(c, run_sha, by_claim.get(c.id), outcomes) for c in deriv.claims]
    self_checks = {
        k: {"count": v, "ok": v == 0, "meaning": self_check_meaning(k)} for k, v in sorted(deriv.self_checks.items())
    }
    tiers = {t.value: sum(1 for c in claims if c["tier"] == t.value) for t in sorted(Tier, key=lambda t: t.value)}  # the order JSON stores (sort_keys)
    ok = not deriv.failures and all(v["ok"] for v in self_checks.values())
    attn = [c for c in claims if c["kind"] == "attn_tv"]
    bounds = [c for c in attn if c["bound"] is not None and not c["vacuous"]]
    worst = max(bounds, key=lambda c: rounding.parse_fraction(c["bound"]["exact"]), default=None)
    lean_st = outcomes.lean_arithmetic.statuses
    lean_checked = [c["kernels"]["lean"]["theorem"] for c in claims if c["kernels"]["lean"]["status"] == KERNEL_CHECKED]
    lean_failed = [c["kernels"]["lean"]["theorem"] for c in claims if c["kernels"]["lean"]["status"] == FAILED]
    coq_checked = sum(1 for c in claims if c["kernels"]["coq"]["status"] == coq_runner.KERNEL_CHECKED)
    coq_rejected = [c["kernels"]["coq"]["theorem"] for c in claims if c["kernels"]["coq"]["status"] == coq_runner.REJECTED]
    cert = {
        "schema": CERT_SCHEMA,
        "run_json_sha256": run_sha,
        "coq_file": COQ_FILE if coq_sha else None,
        "coq_sha256": coq_sha,
        "lean_file": LEAN_REAL_FILE if lean_sha else None,
        "lean_sha256": lean_sha,
        "obligations_file": OBLIGATIONS_FILE if obligations_sha else None,
        "obligations_sha256": obligations_sha,
        "kernels": {"coq": outcomes.coq.to_json(), "lean": outcomes.lean.to_json(),
                    "lean_arithmetic": outcomes.lean_arithmetic.to_json()},
        "assumptions_allowlist": sorted(coq_runner.ALLOWED_ASSUMPTIONS),
        "obligations": [
            {
                "ident": ob.ident,
                "claim_id": ob.claim_id,
                "status": lean_st[ob.ident].status if ob.ident in lean_st else UNCHECKED,
                "reason": lean_st[ob.ident].reason if ob.ident in lean_st else "",
                "axioms": list(lean_st[ob.ident].axioms) if ob.ident in lean_st else [],
                "obligation": ob.to_json(),
            }
            for ob in deriv.obligations
        ],
        "claims": claims,
        "self_checks": self_checks,
        "failures": list(deriv.failures),
        "readings": deriv.readings,
        "coverage": deriv.coverage,
        "summary": {
            "verdict": "pass" if ok else "fail",
            "layers": len(attn),
            "non_vacuous_layers": len(bounds),
            "tiers": tiers,
            "worst_bound": {"claim": worst["id"], "bound": worst["bound"]} if worst else None,
            "coq": {"theorems": len(deriv.theorems), "kernel_checked": coq_checked, "rejected": coq_rejected},
            "lean": {"theorems": len(deriv.lean_theorems), "kernel_checked": len(lean_checked), "failed": lean_failed},
            **verdict.scope_summary(ok, claims, deriv.scope),
        },
    }
    parse_certificate(cert, "assembled certificate.json")  # the producer holds to the types it documents
    return cert
