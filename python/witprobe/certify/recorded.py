"""What ``certify show`` and ``certify report`` verify before they print a certificate's verdict.

``certify check`` re-derives the certificate from ``run.json`` *and* re-runs the proof kernels,
which takes minutes. The readers cannot wait that long, but they must never print a certificate
``check`` would refuse as "certified, pass". :func:`verify_recorded` does everything ``check``
does except running the kernels:

- ``run.json`` is present, readable and is the run the certificate names (``run_json_sha256``);
- it derives (:func:`witprobe.certify.derive.derive`, the parser ``check`` uses);
- no claim's bound, nor any bound form marked unbeaten, is below its realized value;
- the certificate equals the one :func:`witprobe.certify.certificate.assemble` builds from the
  derivation and the kernel outcomes *as the certificate records them*: every bound, tier,
  verdict and summary line is a function of ``run.json`` and those outcomes, so an edited bound,
  tier or verdict is found.

What it cannot find is a forged kernel outcome (a theorem marked ``kernel_checked`` that no
kernel checked): only ``certify check`` re-runs the kernels. The readers say so.

A problem is one line of text; an empty list means the certificate is consistent with its run.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

VERIFIED_NOTE = ("verified: re-derived from run.json (kernel outcomes as recorded; "
                 "`certify check DIR` re-runs the kernels)")
"""The line the readers print under a certificate that :func:`verify_recorded` accepts."""


def verify_recorded(directory: Path, cert: dict[str, Any]) -> list[str]:
    """Problems that make ``certify check`` refuse ``directory``'s certificate ``cert`` (already
    read by :func:`witprobe.certify.certificate_record.load_certificate`), kernels aside."""
    from witprobe.certify.certificate import sha256_text
    from witprobe.cliutil import InputError, read_json_object, read_text_capped

    run_path = Path(directory) / "run.json"
    if not run_path.is_file():
        return ["run.json is missing: the certificate cannot be re-derived"]
    try:
        run_text = read_text_capped(run_path)
        run = read_json_object(run_path, schema_prefix="witprobe-run/")
    except InputError as e:
        return [f"run.json cannot be read ({e})"]
    run_sha = sha256_text(run_text)
    if cert.get("run_json_sha256") != run_sha:
        return [f"certificate.json run_json_sha256 is not the SHA-256 of run.json ({run_sha}): "
                "the certificate was not made from this run"]
    problems = bounds_below_realized(cert)
    return problems + rederive_problems(run, run_sha, cert)


def bounds_below_realized(cert: dict[str, Any]) -> list[str]:
    """Claims (and unbeaten forms) whose bound is below the realized value they bound: a bound
    that does not hold certifies nothing, whatever the rest of the certificate says."""
    from witprobe.calculus import rounding

    out = []
    for i, c in enumerate(cert.get("claims") or []):
        realized = c.get("realized_tv_max") if isinstance(c, dict) else None
        if isinstance(realized, bool) or not isinstance(realized, (int, float)) or realized != realized:
            continue
        bounds = [("bound", c.get("bound"), True)]
        bounds += [(f"forms.{k}.bound", f.get("bound"), not f.get("beaten_by_realized"))
                   for k, f in sorted((c.get("forms") or {}).items()) if isinstance(f, dict)]
        for where, b, claimed in bounds:
            if not claimed or not isinstance(b, dict):
                continue
            try:
                value = rounding.parse_fraction(b.get("exact"))
            except ValueError:
                continue  # a malformed bound is the re-derivation's to name
            if realized == float("inf") or value < Fraction(realized):
                out.append(f"claims[{i}] ({c.get('id')}) {where} {b.get('decimal_up')} is below its realized value "
                           f"{realized:.6g}")
    return out


def rederive_problems(run: dict[str, Any], run_sha: str, cert: dict[str, Any]) -> list[str]:
    """The certificate against the one assembled from ``run`` and the kernel outcomes it records."""
    from witprobe.certify.certificate import assemble, sha256_text
    from witprobe.certify.check import json_diff
    from witprobe.certify.derive import DeriveError, derive
    from witprobe.formal.render import render_run
    from witprobe.formal.render_coq import render_coq
    from witprobe.formal.render_lean_real import render_lean_real
    from witprobe.typed_json import RecordError

    try:
        deriv = derive(run)
    except DeriveError as e:
        return [f"run.json cannot be derived: {e}"]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        return [f"run.json is malformed ({type(e).__name__}: {e})"]
    lean_text = render_run(deriv.obligations, run_sha) if deriv.obligations else None
    coq_text = render_coq(deriv.theorems, run_sha) if deriv.theorems else None
    real_text = render_lean_real(deriv.lean_theorems, run_sha) if deriv.lean_theorems else None
    sha = lambda t: sha256_text(t) if t is not None else None  # noqa: E731
    try:
        rederived = assemble(run_sha, deriv, sha(lean_text), sha(coq_text), recorded_outcomes(cert, deriv),
                             sha(real_text))
    except (RecordError, KeyError, TypeError, ValueError, AttributeError) as e:
        return [f"the certificate's kernel outcomes cannot be re-assembled ({type(e).__name__}: {e})"]
    diffs = json_diff(rederived, cert)
    if not diffs:
        return []
    shown = ", ".join(diffs[:6]) + (f" (and {len(diffs) - 6} more)" if len(diffs) > 6 else "")
    return [f"certificate.json is not the certificate re-derived from run.json, at: {shown}"]


def recorded_outcomes(cert: dict[str, Any], deriv: Any) -> Any:
    """The kernels' outcomes as ``cert`` records them, per theorem of ``deriv`` (what
    :func:`witprobe.certify.pipeline.produce` passed to ``assemble``, if nothing was edited)."""
    from witprobe.calculus import rounding
    from witprobe.certify.kernels import KernelOutcomes, LeanOutcome
    from witprobe.formal.coq_runner import CoqOutcome, GuardOutcome, TheoremStatus
    from witprobe.formal.lean_runner import ObligationStatus

    kernels = cert["kernels"]
    claims = {c["id"]: c for c in cert["claims"]}
    coq_st, lean_st = {}, {}
    for t in deriv.theorems:
        ck = claims.get(t.claim_id, {}).get("kernels")
        if not ck:
            continue
        g = ck["coq"]["guard"]
        units = None if g["lowered"] is None else rounding.to_units_up(rounding.parse_fraction(g["lowered"]["exact"]))
        coq_st[t.theorem] = TheoremStatus(t.theorem, ck["coq"]["status"], ck["coq"]["reason"],
                                          tuple(kernels["coq"]["assumptions"]),
                                          GuardOutcome(g["status"], units, g["reason"]))
    for t in deriv.lean_theorems:
        ck = claims.get(t.claim_id, {}).get("kernels")
        if ck:
            lk = ck["lean"]
            lean_st[t.theorem] = ObligationStatus(t.theorem, lk["status"], lk["reason"], tuple(lk["axioms"]))
    arith = {o["ident"]: ObligationStatus(o["ident"], o["status"], o["reason"], tuple(o["axioms"]))
             for o in cert["obligations"]}

    def lean(k: dict[str, Any], statuses: dict[str, Any]) -> LeanOutcome:
        return LeanOutcome(k["mode"], k["status"], k["reason"], k["toolchain"], statuses)

    c = kernels["coq"]
    return KernelOutcomes(coq=CoqOutcome(c["mode"], c["status"], c["reason"], c["toolchain"], c["library_sha256"],
                                         coq_st),
                          lean=lean(kernels["lean"], lean_st), lean_arithmetic=lean(kernels["lean_arithmetic"], arith))
