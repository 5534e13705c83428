"""The certificate (schema ``witprobe-certificate/1``): claims with machine-decided tiers.

Each claim carries ``registered_tier`` (what the tier registry grants its metric and chain),
``lean_status`` (what happened to the obligations behind it) and ``tier``: the registered tier
only if every obligation behind the claim was kernel-checked and the bound is not vacuous, else
``empirical``, with ``tier_reason`` saying why. The certificate is a deterministic function of
``run.json``, the rendered obligations and the Lean outcome, so ``certify check`` can re-derive it
byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from witprobe.calculus import rounding
from witprobe.calculus.tiers import Tier
from witprobe.certify.derive import Claim, Derivation, self_check_meaning
from witprobe.formal import lean_runner
from witprobe.formal.lean_runner import KERNEL_CHECKED, UNCHECKED, ObligationStatus
from witprobe.formal.obligations import ChainObligation
from witprobe.formal.render import obligation_spans

CERT_SCHEMA = "witprobe-certificate/1"
OBLIGATIONS_FILE = "obligations/run.lean"
LEAN_MODES = ("auto", "required", "off")


def canonical_json(obj: Any) -> str:
    """Stable JSON text: sorted keys, one-space indent, ASCII, trailing newline."""
    return json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False) + "\n"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class LeanOutcome:
    """What Lean said about one run's obligation file."""

    mode: str
    status: str  # "checked" | "unavailable" | "off" | "build_failed" | "no_obligations"
    reason: str
    toolchain: str | None
    statuses: dict[str, ObligationStatus] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "status": self.status, "reason": self.reason, "toolchain": self.toolchain}


def _all(obligations: list[ChainObligation], status: str, reason: str) -> dict[str, ObligationStatus]:
    return {ob.ident: ObligationStatus(ob.ident, status, reason) for ob in obligations}


def lean_check(
    mode: str, lean_file: Path, lean_text: str, run_sha: str, obligations: list[ChainObligation],
    timeout_s: float = 600.0,
) -> LeanOutcome:
    """Check the rendered obligations with Lean, or record why they stay unchecked."""
    if mode not in LEAN_MODES:
        raise ValueError(f"--lean must be one of {LEAN_MODES}, got {mode!r}")
    if not obligations:
        return LeanOutcome(mode, "no_obligations", "no non-vacuous claim produced an obligation", None)
    if mode == "off":
        reason = "Lean checking is off (--lean off)"
        return LeanOutcome(mode, "off", reason, None, _all(obligations, UNCHECKED, reason))
    toolchain, why = lean_runner.find_toolchain()
    if toolchain is None:
        return LeanOutcome(mode, "unavailable", why, None, _all(obligations, UNCHECKED, why))
    project = lean_runner.find_project()
    if project is None:
        why = "Lean project not found (a lakefile.lean declaring package witprobe); set WITPROBE_LEAN_PROJECT"
        return LeanOutcome(mode, "unavailable", why, toolchain.version, _all(obligations, UNCHECKED, why))
    runner = lean_runner.LeanRunner(toolchain, project, timeout_s=timeout_s)
    ok, out = runner.build()
    if not ok:
        why = "the Witprobe library did not build: " + " | ".join(out.strip().splitlines()[-5:])
        return LeanOutcome(mode, "build_failed", why, toolchain.version, _all(obligations, UNCHECKED, why))
    check = runner.check_file(lean_file)
    spans, theorems = obligation_spans(lean_text, run_sha)
    statuses = lean_runner.statuses_from_check(check, spans, theorems)
    for ob in obligations:  # every obligation must have a status (fail closed)
        statuses.setdefault(ob.ident, ObligationStatus(ob.ident, lean_runner.FAILED, "not found in the Lean output"))
    return LeanOutcome(mode, "checked", "", toolchain.version, statuses)


def _claim_lean_status(claim: Claim, statuses: dict[str, ObligationStatus]) -> tuple[str, str]:
    obs = claim.obligations
    if not obs:
        return "none", "no obligation"
    sts = [statuses.get(o) for o in obs]
    if any(s is None for s in sts):
        return UNCHECKED, "obligation has no Lean status"
    if all(s.status == KERNEL_CHECKED for s in sts):  # type: ignore[union-attr]
        return KERNEL_CHECKED, ""
    worst = next(s for s in sts if s.status != KERNEL_CHECKED)  # type: ignore[union-attr]
    return worst.status, f"obligation {worst.ident} {worst.status}: {worst.reason}"  # type: ignore[union-attr]


def effective_tier(claim: Claim, lean_status: str, lean_reason: str) -> tuple[Tier, str]:
    """The tier a claim may print: registered only if kernel-checked and not vacuous."""
    if claim.kind == "recurrent":
        return Tier.EMPIRICAL, "observation only: no certificate is claimed for a recurrent state"
    if claim.kind == "pooling":
        return Tier.EMPIRICAL, "pooling profile: readings of the gate weights (pooling is not an error source)"
    if claim.value is None and not claim.forms:
        return Tier.EMPIRICAL, "no reads observed on this layer"
    if claim.vacuous:
        return Tier.EMPIRICAL, "vacuous: the TV bound is >= 1"
    if claim.registered_tier is Tier.EMPIRICAL:
        return Tier.EMPIRICAL, "the composition includes an empirical step (a paired measurement, no theorem)"
    if lean_status == "none":
        return Tier.EMPIRICAL, "no kernel-checked obligation covers this claim (exact Python arithmetic only)"
    if lean_status != KERNEL_CHECKED:
        return Tier.EMPIRICAL, f"not kernel-checked ({lean_reason})"
    return claim.registered_tier, "every obligation kernel-checked"


def _frac(x) -> dict[str, str] | None:
    if x is None:
        return None
    return {"decimal_up": rounding.decimal_up(x, 6), "exact": rounding.fraction_text(x)}


def claim_json(claim: Claim, statuses: dict[str, ObligationStatus]) -> dict[str, Any]:
    lean_status, lean_reason = _claim_lean_status(claim, statuses)
    tier, reason = effective_tier(claim, lean_status, lean_reason)
    forms = {}
    for name, f in claim.forms.items():
        st = statuses.get(f.obligation) if f.obligation else None
        forms[name] = {
            "bound": _frac(f.bound),
            "vacuous": f.vacuous,
            "beaten_by_realized": f.beaten,
            "obligation": f.obligation,
            "lean_status": st.status if st else "none",
            "proofs": list(f.proofs),
            "note": f.reason,
        }
    tight = claim.tightness
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
        "lean_status": lean_status,
        "tier": tier.value,
        "tier_reason": reason,
        "obligations": claim.obligations,
        "proofs": list(claim.forms[claim.form].proofs) if claim.form in claim.forms else list(claim.proofs),
        "realized_tv_max": claim.realized_max,
        "tightness": tight,
        "forms": forms,
    }


def assemble(
    run_sha: str, deriv: Derivation, obligations_sha: str | None, outcome: LeanOutcome
) -> dict[str, Any]:
    """The certificate dictionary."""
    claims = [claim_json(c, outcome.statuses) for c in deriv.claims]
    self_checks = {
        k: {"count": v, "ok": v == 0, "meaning": self_check_meaning(k)} for k, v in sorted(deriv.self_checks.items())
    }
    tiers = {t.value: sum(1 for c in claims if c["tier"] == t.value) for t in Tier}
    ok = not deriv.failures and all(v["ok"] for v in self_checks.values())
    attn = [c for c in claims if c["kind"] == "attn_tv"]
    bounds = [c for c in attn if c["bound"] is not None and not c["vacuous"]]
    worst = max(bounds, key=lambda c: rounding.parse_fraction(c["bound"]["exact"]), default=None)
    return {
        "schema": CERT_SCHEMA,
        "run_json_sha256": run_sha,
        "obligations_file": OBLIGATIONS_FILE if obligations_sha else None,
        "obligations_sha256": obligations_sha,
        "lean": outcome.to_json(),
        "obligations": [
            {
                "ident": ob.ident,
                "claim_id": ob.claim_id,
                "status": outcome.statuses[ob.ident].status if ob.ident in outcome.statuses else UNCHECKED,
                "reason": outcome.statuses[ob.ident].reason if ob.ident in outcome.statuses else "",
                "axioms": list(outcome.statuses[ob.ident].axioms) if ob.ident in outcome.statuses else [],
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
        },
    }
