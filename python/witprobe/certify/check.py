"""``certify check DIR``: re-derive a certificate from its ``run.json`` and compare.

Checks, in order: the SHA-256 of ``run.json`` against the certificate; the re-rendered
obligations against ``obligations/run.lean`` byte for byte; the reference checker on every
obligation; Lean, where a toolchain exists, on every obligation the certificate says was
kernel-checked or failed (without a toolchain, a certificate that claims kernel-checked
obligations cannot be confirmed and is refused); finally the whole certificate re-assembled from
these against ``certificate.json``, naming every JSON path that differs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from witprobe.certify.certificate import (
    CERT_SCHEMA,
    LEAN_MODES,
    OBLIGATIONS_FILE,
    LeanOutcome,
    assemble,
    lean_check,
    sha256_text,
)
from witprobe.certify.derive import DeriveError, derive
from witprobe.formal.lean_runner import FAILED, KERNEL_CHECKED, UNCHECKED, ObligationStatus
from witprobe.formal.obligations import ObligationError, reference_check
from witprobe.formal.render import render_run


@dataclass
class CheckResult:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def json_diff(a: Any, b: Any, path: str = "") -> list[str]:
    """JSON paths where ``a`` (re-derived) and ``b`` (stored) differ."""
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return [path or "(root)"]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}" if path else k)
            else:
                out.extend(json_diff(a[k], b[k], f"{path}.{k}" if path else k))
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path} (length {len(b)} stored, {len(a)} re-derived)"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(json_diff(x, y, f"{path}[{i}]"))
        return out
    return [] if a == b else [path or "(root)"]


def _first_diff_line(a: str, b: str) -> int:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb), start=1):
        if x != y:
            return i
    return min(len(la), len(lb)) + 1


def check_dir(directory: Path) -> CheckResult:
    res = CheckResult()
    d = Path(directory)
    run_path, cert_path = d / "run.json", d / "certificate.json"
    for p in (run_path, cert_path):
        if not p.is_file():
            res.problems.append(f"{p} is missing")
    if res.problems:
        return res
    run_text = run_path.read_text(encoding="utf-8")
    try:
        cert = json.loads(cert_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        res.problems.append(f"certificate.json is not valid JSON: {e}")
        return res
    if not isinstance(cert, dict) or cert.get("schema") != CERT_SCHEMA:
        res.problems.append(f"certificate.json: schema is not {CERT_SCHEMA!r}")
        return res
    run_sha = sha256_text(run_text)
    if cert.get("run_json_sha256") != run_sha:
        res.problems.append(
            f"run.json sha256 {run_sha} differs from certificate.json run_json_sha256 {cert.get('run_json_sha256')}"
        )
    try:
        run = json.loads(run_text)
        deriv = derive(run)
    except (json.JSONDecodeError, DeriveError, ValueError) as e:
        res.problems.append(f"run.json cannot be re-derived: {e}")
        return res
    lean_text = render_run(deriv.obligations, run_sha) if deriv.obligations else None
    lean_path = d / OBLIGATIONS_FILE
    if lean_text is not None:
        if not lean_path.is_file():
            res.problems.append(f"{OBLIGATIONS_FILE} is missing")
        else:
            stored = lean_path.read_text(encoding="utf-8")
            if stored != lean_text:
                res.problems.append(
                    f"{OBLIGATIONS_FILE} differs from the rendering of run.json (first at line {_first_diff_line(lean_text, stored)})"
                )
    for i, entry in enumerate(cert.get("obligations") or []):
        try:
            from witprobe.formal.obligations import ChainObligation

            ob = ChainObligation.from_json(entry.get("obligation", {}))
        except (ObligationError, AttributeError) as e:
            res.problems.append(f"obligations[{i}] is malformed: {e}")
            continue
        errs = reference_check(ob)
        if errs:
            res.problems.append(f"obligations[{i}] ({ob.ident}) is false: {'; '.join(errs)}")
    stored_lean = cert.get("lean") or {}
    mode = stored_lean.get("mode", "auto")
    if mode not in LEAN_MODES:
        res.problems.append(f"certificate.json lean.mode {mode!r} is not one of {LEAN_MODES}")
        mode = "auto"
    stored_status = {
        e.get("ident"): ObligationStatus(e.get("ident"), e.get("status"), e.get("reason", ""), tuple(e.get("axioms", [])))
        for e in cert.get("obligations") or []
        if isinstance(e, dict)
    }
    fresh = lean_check(mode, lean_path, lean_text or "", run_sha, deriv.obligations)
    claimed = [i for i, st in stored_status.items() if st.status in (KERNEL_CHECKED, FAILED)]
    outcome = fresh
    if fresh.status == "checked" and not claimed and stored_lean.get("status") in ("unavailable", "off", "build_failed"):
        # A conservative certificate made without Lean: keep its (uniform) unchecked statuses and
        # report what Lean says here as a note; an edited reason still shows up in the diff.
        reason = str(stored_lean.get("reason", ""))
        outcome = LeanOutcome(
            mode, str(stored_lean.get("status")), reason, stored_lean.get("toolchain"),
            {ob.ident: ObligationStatus(ob.ident, UNCHECKED, reason) for ob in deriv.obligations},
        )
        n_ok = sum(1 for st in fresh.statuses.values() if st.status == KERNEL_CHECKED)
        res.notes.append(
            f"the certificate was made without Lean; Lean here kernel-checks {n_ok}/{len(fresh.statuses)} obligations "
            "(re-run `certify run` to certify)"
        )
    elif claimed and fresh.status != "checked":
        res.problems.append(
            f"certificate records Lean results for {len(claimed)} obligations that cannot be re-verified here: {fresh.reason}"
        )
    elif not claimed:
        res.notes.append("no obligation was kernel-checked in this certificate")
    rederived = assemble(run_sha, deriv, sha256_text(lean_text) if lean_text is not None else None, outcome)
    diffs = json_diff(rederived, cert)
    if diffs:
        shown = ", ".join(diffs[:12]) + (f" (and {len(diffs) - 12} more)" if len(diffs) > 12 else "")
        res.problems.append(f"certificate.json differs from the certificate re-derived from run.json at: {shown}")
    return res
