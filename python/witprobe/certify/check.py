"""``certify check DIR``: re-derive a certificate from its ``run.json``, re-run the kernels, compare.

Checks, in order: the SHA-256 of ``run.json`` against the certificate; the re-rendered files
(``obligations/run.v``, ``obligations/run_real.lean``, ``obligations/run.lean``) against the
stored ones byte for byte; the reference checker on every Lean obligation; Coq, where ``coqc``
exists, on every claim theorem (any theorem the kernel rejects is named, and the check fails; a
certificate that records kernel-checked theorems cannot be confirmed without Coq and is
refused), and on ``obligations/run.v`` as it is on disk where it differs from the rendering (each
theorem of that file the kernel or the audit refuses is named too); Lean, where a toolchain exists, likewise on the claim theorems of ``run_real.lean``,
and on the arithmetic obligations; the certificate's verdict (a ``fail`` verdict fails the check); finally
the whole certificate re-assembled from these against ``certificate.json``, naming every JSON path
that differs.

A file that cannot be read at all (not JSON, not an object, a foreign schema, a ``run.json`` the
derivation cannot parse) raises :class:`witprobe.cliutil.InputError` (exit 2), naming the file
and the field; a well-formed file that differs is a problem (exit 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from witprobe.certify.certificate import OBLIGATIONS_FILE, assemble, sha256_text
from witprobe.certify.certificate_record import load_certificate
from witprobe.certify.derive import Derivation, DeriveError, derive
from witprobe.cliutil import InputError, read_json_object, read_text_capped
from witprobe.certify.kernels import (KERNEL_MODES, KernelOutcomes, LeanOutcome, coq_check, coq_check_text, lean_check,
                                      lean_real_check)
from witprobe.formal import coq_runner
from witprobe.formal.coq_runner import CoqOutcome, TheoremStatus
from witprobe.memory.codec_plugins import changed_sources
from witprobe.formal.lean_runner import FAILED, KERNEL_CHECKED, UNCHECKED, ObligationStatus
from witprobe.formal.obligations import ObligationError, reference_check
from witprobe.formal.render import render_run
from witprobe.formal.render_coq import COQ_FILE, render_coq
from witprobe.formal.render_lean_real import LEAN_REAL_FILE, render_lean_real


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


def _check_codec_code(run: dict[str, Any], res: CheckResult) -> None:
    """Re-hash the source of every module that built the run's codec (``config.codec_provenance``).

    A plugin codec (an entry point or an import path) whose code changed, or cannot be found here,
    is a problem naming it: the run's numbers came from other code. A built-in codec's module
    changes with witprobe itself (the run records witprobe's version): a note. A run recorded
    before schema /6 has no provenance: a note saying so.
    """
    config = run.get("config") if isinstance(run.get("config"), dict) else {}
    prov = config.get("codec_provenance")
    if not isinstance(prov, dict):
        res.notes.append(f"run.json records no codec provenance (before schema witprobe-run/6): which code built "
                         f"codec {config.get('codec')!r} is not known")
        return
    if prov.get("spec") != config.get("codec"):
        res.problems.append(f"run.json config.codec {config.get('codec')!r} is not the codec its provenance records "
                            f"({prov.get('spec')!r})")
    sources = prov.get("sources") if isinstance(prov.get("sources"), list) else []
    changed = changed_sources([x for x in sources if isinstance(x, dict)])
    if not changed:
        return
    who = f"codec {prov.get('spec')!r} ({prov.get('origin')}, {prov.get('object')})"
    if prov.get("origin") == "builtin":
        res.notes.append(f"{who}: witprobe's own code changed since the run: {'; '.join(changed)}")
    else:
        res.problems.append(f"{who}: its code is not the code that ran: {'; '.join(changed)}")


def check_dir(directory: Path) -> CheckResult:
    res = CheckResult()
    d = Path(directory)
    run_path, cert_path = d / "run.json", d / "certificate.json"
    for p in (run_path, cert_path):
        if not p.is_file():
            res.problems.append(f"{p} is missing")
    if res.problems:
        return res
    run_text = read_text_capped(run_path)
    cert = load_certificate(cert_path)
    run_sha = sha256_text(run_text)
    if cert.get("run_json_sha256") != run_sha:
        res.problems.append(
            f"run.json sha256 {run_sha} differs from certificate.json run_json_sha256 {cert.get('run_json_sha256')}"
        )
    run = read_json_object(run_path, schema_prefix="witprobe-run/")
    _check_codec_code(run, res)
    try:
        deriv = derive(run)
    except DeriveError as e:  # the message names the field (e.g. "layers[3].read: ...")
        raise InputError(run_path, "", f"cannot be derived: {e}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise InputError(run_path, "", f"malformed ({type(e).__name__}: {e})") from None
    lean_text = render_run(deriv.obligations, run_sha) if deriv.obligations else None
    coq_text = render_coq(deriv.theorems, run_sha) if deriv.theorems else None
    real_text = render_lean_real(deriv.lean_theorems, run_sha) if deriv.lean_theorems else None
    for rel, text in ((COQ_FILE, coq_text), (LEAN_REAL_FILE, real_text), (OBLIGATIONS_FILE, lean_text)):
        _compare_file(d / rel, rel, text, res)
    lean_path = d / OBLIGATIONS_FILE
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
    kernels = cert.get("kernels") if isinstance(cert.get("kernels"), dict) else {}
    coq = _recheck_coq(kernels.get("coq") or {}, deriv, run_sha, res)
    _check_coq_on_disk(kernels.get("coq") or {}, d / COQ_FILE, coq_text, res)
    lean = _recheck_lean_real(kernels.get("lean") or {}, deriv, run_sha, d / LEAN_REAL_FILE, real_text, res)
    arith = _recheck_lean(kernels.get("lean_arithmetic") or {}, deriv, run_sha, lean_path, lean_text, cert, res)
    verdict = (cert.get("summary") or {}).get("verdict")
    if verdict != "pass":
        res.problems.append(f"the certificate's verdict is {verdict!r}: {'; '.join(deriv.failures) or 'a self-check failed'}")
    rederived = assemble(run_sha, deriv, sha256_text(lean_text) if lean_text is not None else None,
                         sha256_text(coq_text) if coq_text is not None else None,
                         KernelOutcomes(coq=coq, lean=lean, lean_arithmetic=arith),
                         sha256_text(real_text) if real_text is not None else None)
    diffs = json_diff(rederived, cert)
    if diffs:
        shown = ", ".join(diffs[:12]) + (f" (and {len(diffs) - 12} more)" if len(diffs) > 12 else "")
        sections = sorted({p.split(".")[0].split("[")[0].split(" ")[0] for p in diffs})
        res.problems.append(f"certificate.json differs from the certificate re-derived from run.json in "
                            f"{', '.join(sections)}; at: {shown}")
    return res


def _compare_file(path: Path, rel: str, text: str | None, res: CheckResult) -> None:
    """The stored rendering must equal the rendering of ``run.json`` byte for byte."""
    if text is None:
        if path.exists():
            res.problems.append(f"{rel} exists but run.json renders no such file")
        return
    if not path.is_file():
        res.problems.append(f"{rel} is missing")
        return
    try:
        stored = read_text_capped(path)
    except InputError as e:
        res.problems.append(f"{rel} {e.problem}")
        return
    if stored != text:
        res.problems.append(f"{rel} differs from the rendering of run.json (first at line {_first_diff_line(text, stored)})")


def _mode(stored: dict[str, Any], kernel: str, res: CheckResult) -> str:
    mode = stored.get("mode", "auto")
    if mode not in KERNEL_MODES:
        res.problems.append(f"certificate.json kernels.{kernel}.mode {mode!r} is not one of {KERNEL_MODES}")
        return "auto"
    return mode


def _recheck_coq(stored: dict[str, Any], deriv: Derivation, run_sha: str, res: CheckResult) -> CoqOutcome:
    """Re-run Coq on the claim theorems; name every theorem the kernel rejects here."""
    mode = _mode(stored, "coq", res)
    fresh = coq_check(mode, deriv.theorems, run_sha)
    for st in fresh.statuses.values():
        if st.status == coq_runner.REJECTED:
            res.problems.append(f"Coq rejects theorem {st.theorem}: {st.reason}")
    conservative = stored.get("status") in ("unavailable", "off", "build_failed")
    if fresh.status == "checked" and not conservative:
        return fresh
    if fresh.status == "checked":
        n_ok = sum(1 for st in fresh.statuses.values() if st.status == coq_runner.KERNEL_CHECKED)
        res.notes.append(f"the certificate was made without Coq; Coq here kernel-checks {n_ok}/{len(fresh.statuses)} "
                         "claim theorems (re-run `certify run` to certify)")
    elif stored.get("status") == "checked":
        res.problems.append(f"the certificate records Coq results that cannot be re-verified here: {fresh.reason}")
        return fresh
    if not conservative:
        return fresh
    # made without Coq (unavailable/off/build failure): every claim is empirical; keep its statuses
    reason = str(stored.get("reason", ""))
    return CoqOutcome(mode, str(stored.get("status")), reason, stored.get("toolchain"), stored.get("library_sha256"),
                      {t.theorem: TheoremStatus(t.theorem, coq_runner.UNCHECKED, reason) for t in deriv.theorems})


def _check_coq_on_disk(stored: dict[str, Any], path: Path, rendered: str | None, res: CheckResult) -> None:
    """Compile the ``.v`` on disk as well, where it is not the rendering byte for byte (an equal
    file was just compiled as the rendering): every theorem it declares that Coq rejects here, or
    that the audit refuses, is named (a file edited by hand, e.g. with a lowered bound, is reported
    on its own terms as well as by its difference from the rendering)."""
    if not path.is_file() or stored.get("mode", "auto") == "off":
        return
    try:
        text = read_text_capped(path)
    except InputError as e:
        res.problems.append(f"{COQ_FILE} on disk {e.problem}")
        return
    if text == rendered:
        return
    outcome = coq_check_text(stored.get("mode", "auto") if stored.get("mode") in KERNEL_MODES else "auto", text)
    if outcome.status == "no_theorems":
        res.problems.append(f"{COQ_FILE} on disk declares no theorem")
    elif outcome.status != "checked":
        res.notes.append(f"{COQ_FILE} on disk was not compiled: {outcome.reason}")
    for st in outcome.statuses.values():
        if st.status != coq_runner.KERNEL_CHECKED:
            res.problems.append(f"{COQ_FILE} on disk: Coq {'rejects' if st.status == coq_runner.REJECTED else 'did not check'} "
                                f"theorem {st.theorem}: {st.reason}")
    if outcome.status == "checked" and all(st.status == coq_runner.KERNEL_CHECKED for st in outcome.statuses.values()):
        res.notes.append(f"{COQ_FILE} on disk differs from the rendering, and Coq accepts its "
                         f"{len(outcome.statuses)} theorems as written")


def _recheck_lean_real(stored: dict[str, Any], deriv: Derivation, run_sha: str, path: Path,
                       text: str | None, res: CheckResult) -> LeanOutcome:
    """Re-run Lean on the claim theorems of ``run_real.lean``; name every theorem it rejects here.

    As for Coq: a certificate made without Lean (unavailable, off, build failure) keeps its
    uniform ``unchecked`` statuses (what Lean says here is a note); one that records Lean results
    that cannot be re-verified here is refused.
    """
    mode = _mode(stored, "lean", res)
    fresh = lean_real_check(mode, path, text or "", run_sha, deriv.lean_theorems)
    for name, st in fresh.statuses.items():
        if st.status == FAILED:
            res.problems.append(f"Lean rejects theorem {name}: {st.reason}")
    conservative = stored.get("status") in ("unavailable", "off", "build_failed")
    if fresh.status == "checked" and conservative:
        n_ok = sum(1 for st in fresh.statuses.values() if st.status == KERNEL_CHECKED)
        res.notes.append(f"the certificate was made without Lean; Lean here kernel-checks {n_ok}/{len(fresh.statuses)} "
                         "claim theorems (re-run `certify run` to certify)")
    elif fresh.status != "checked" and stored.get("status") == "checked":
        res.problems.append(f"the certificate records Lean results that cannot be re-verified here: {fresh.reason}")
        return fresh
    if not conservative:
        return fresh
    reason = str(stored.get("reason", ""))
    return LeanOutcome(mode, str(stored.get("status")), reason, stored.get("toolchain"),
                       {t.theorem: ObligationStatus(t.theorem, UNCHECKED, reason) for t in deriv.lean_theorems})


def _recheck_lean(stored_lean: dict[str, Any], deriv: Derivation, run_sha: str, lean_path: Path,
                  lean_text: str | None, cert: dict[str, Any], res: CheckResult) -> LeanOutcome:
    """Re-run Lean on the arithmetic obligations (where a toolchain exists)."""
    mode = _mode(stored_lean, "lean_arithmetic", res)
    stored_status = {
        e.get("ident"): ObligationStatus(e.get("ident"), e.get("status"), e.get("reason", ""), tuple(e.get("axioms", [])))
        for e in cert.get("obligations") or []
        if isinstance(e, dict)
    }
    fresh = lean_check(mode, lean_path, lean_text or "", run_sha, deriv.obligations)
    claimed = [i for i, st in stored_status.items() if st.status in (KERNEL_CHECKED, FAILED)]
    if fresh.status == "checked" and not claimed and stored_lean.get("status") in ("unavailable", "off", "build_failed"):
        # A conservative certificate made without Lean: keep its (uniform) unchecked statuses and
        # report what Lean says here as a note; an edited reason still shows up in the diff.
        reason = str(stored_lean.get("reason", ""))
        n_ok = sum(1 for st in fresh.statuses.values() if st.status == KERNEL_CHECKED)
        res.notes.append(
            f"the certificate was made without Lean; Lean here checks {n_ok}/{len(fresh.statuses)} arithmetic obligations"
        )
        return LeanOutcome(mode, str(stored_lean.get("status")), reason, stored_lean.get("toolchain"),
                           {ob.ident: ObligationStatus(ob.ident, UNCHECKED, reason) for ob in deriv.obligations})
    if claimed and fresh.status != "checked":
        res.problems.append(
            f"certificate records Lean results for {len(claimed)} obligations that cannot be re-verified here: {fresh.reason}"
        )
    return fresh
