"""The kernels a run's claims go to: Coq and Lean (claim theorems over the reals), Lean (arithmetic).

- **Coq** checks one theorem per claim whose statement is the claim (``obligations/run.v``,
  :mod:`witprobe.formal.render_coq`), against the library built, or its build verified, in the
  same check (:mod:`witprobe.formal.coq_runner`). A kernel-checked theorem certifies its claim.
- **Lean** checks the same theorems, stated in Lean (``obligations/run_real.lean``,
  :mod:`witprobe.formal.render_lean_real`), in the analytic package (``analytic/``, Mathlib),
  after ``lake build`` there; each ``#print axioms`` is audited. A kernel-checked theorem
  certifies its claim too (:func:`lean_real_check`).
- **Lean** also checks the run's arithmetic obligations (``obligations/run.lean``: exact-integer
  chain certificates, core library). Their success is ``arithmetic_checked``; it does not certify.

Modes for either kernel: ``auto`` (check if found), ``required`` (the CLI exits 3 without it),
``off``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from witprobe.formal import coq_runner, lean_runner
import dataclasses
from concurrent.futures import ThreadPoolExecutor

from witprobe.formal.claim_theorems import ClaimTheorem, ClaimTheoremError, guard_units, lowered_theorem
from witprobe.formal.coq_runner import UNCHECKED as COQ_UNCHECKED, CoqOutcome, TheoremStatus
from witprobe.formal.lean_runner import UNCHECKED, ObligationStatus
from witprobe.formal.obligations import ChainObligation
from witprobe.formal.render import obligation_spans
from witprobe.formal.render_coq import render_coq, render_guard
from witprobe.formal.render_lean_real import theorem_spans

KERNEL_MODES = ("auto", "required", "off")
LEAN_MODES = KERNEL_MODES


@dataclass
class LeanOutcome:
    """What Lean said about one run's obligation file."""

    mode: str
    status: str  # "checked" | "unavailable" | "off" | "build_failed" | "no_obligations" | "no_theorems"
    reason: str
    toolchain: str | None
    statuses: dict[str, ObligationStatus] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "status": self.status, "reason": self.reason, "toolchain": self.toolchain}


def _named(names: Sequence[str], status: str, reason: str) -> dict[str, ObligationStatus]:
    return {n: ObligationStatus(n, status, reason) for n in names}


@dataclass(frozen=True)
class _LeanTarget:
    """What one Lean file is checked in: the project holding its imports, and how to find it."""

    library: str  # the library ``lake build`` must build first
    find: Callable[[], Path | None]
    missing: str  # why, when ``find`` finds nothing
    spans: Callable[[str, str], tuple[dict[str, list[tuple[int, int]]], dict[str, str]]]


_CORE = _LeanTarget("Witprobe", lambda: lean_runner.find_project(),
                    "Lean project not found (a lakefile.lean declaring package witprobe); set WITPROBE_LEAN_PROJECT",
                    obligation_spans)
_ANALYTIC = _LeanTarget("WitprobeAnalytic", lambda: lean_runner.find_analytic_project(),
                        "the analytic Lean package (analytic/lakefile.lean, package witprobeAnalytic) was not found; "
                        "set WITPROBE_LEAN_ANALYTIC", theorem_spans)


def _lean_file_check(mode: str, target: _LeanTarget, lean_file: Path, lean_text: str, run_sha: str,
                     names: Sequence[str], timeout_s: float) -> LeanOutcome:
    """Build ``target``'s library, check ``lean_file`` in it, one status per name (fail closed)."""
    if mode == "off":
        reason = "Lean checking is off (--lean off)"
        return LeanOutcome(mode, "off", reason, None, _named(names, UNCHECKED, reason))
    toolchain, why = lean_runner.find_toolchain()
    if toolchain is None:
        return LeanOutcome(mode, "unavailable", why, None, _named(names, UNCHECKED, why))
    project = target.find()
    if project is None:
        return LeanOutcome(mode, "unavailable", target.missing, toolchain.version,
                           _named(names, UNCHECKED, target.missing))
    runner = lean_runner.LeanRunner(toolchain, project, timeout_s=timeout_s)
    ok, out = runner.build()
    if not ok:
        why = f"the {target.library} library did not build: " + " | ".join(out.strip().splitlines()[-5:])
        return LeanOutcome(mode, "build_failed", why, toolchain.version, _named(names, UNCHECKED, why))
    check = runner.check_file(lean_file)
    spans, qualified = target.spans(lean_text, run_sha)
    statuses = lean_runner.statuses_from_check(check, spans, qualified)
    for n in names:  # every name must have a status (fail closed)
        statuses.setdefault(n, ObligationStatus(n, lean_runner.FAILED, "not found in the Lean output"))
    return LeanOutcome(mode, "checked", "", toolchain.version, statuses)


def lean_check(
    mode: str, lean_file: Path, lean_text: str, run_sha: str, obligations: list[ChainObligation],
    timeout_s: float = 600.0,
) -> LeanOutcome:
    """Check the rendered arithmetic obligations (``run.lean``) with Lean, or record why they stay
    unchecked. Statuses are keyed by obligation identifier."""
    if mode not in LEAN_MODES:
        raise ValueError(f"--lean must be one of {LEAN_MODES}, got {mode!r}")
    if not obligations:
        return LeanOutcome(mode, "no_obligations", "no non-vacuous claim produced an obligation", None)
    return _lean_file_check(mode, _CORE, lean_file, lean_text, run_sha, [ob.ident for ob in obligations], timeout_s)


def lean_real_check(
    mode: str, lean_file: Path, lean_text: str, run_sha: str, theorems: Sequence[ClaimTheorem],
    timeout_s: float = 600.0,
) -> LeanOutcome:
    """Kernel-check the run's claim theorems in Lean (``run_real.lean``, in the analytic package),
    or record why not.

    Statuses are keyed by theorem name: ``kernel_checked`` (Lean accepted it and its axioms are
    the standard three), ``failed`` (an error in its lines, an error anywhere else in the file,
    a missing or non-standard axiom report), or ``unchecked`` with the reason.
    """
    if mode not in LEAN_MODES:
        raise ValueError(f"--lean must be one of {LEAN_MODES}, got {mode!r}")
    if not theorems:
        return LeanOutcome(mode, "no_theorems", "no non-vacuous claim to state as a theorem", None)
    return _lean_file_check(mode, _ANALYTIC, lean_file, lean_text, run_sha, [t.theorem for t in theorems], timeout_s)


def _coq_all(names: Sequence[str], status: str, reason: str) -> dict[str, TheoremStatus]:
    return {n: TheoremStatus(n, status, reason) for n in names}


def coq_check(mode: str, theorems: Sequence[ClaimTheorem], run_sha: str, timeout_s: float = 600.0) -> CoqOutcome:
    """Kernel-check a run's claim theorems with Coq (and their mutation guard), or record why they
    stay unchecked."""
    by_name = {t.theorem: t for t in theorems}
    return _coq_file_check(mode, [t.theorem for t in theorems],
                           lambda subset: render_coq([by_name[n] for n in subset], run_sha), timeout_s,
                           (by_name, run_sha))


def coq_check_text(mode: str, text: str, timeout_s: float = 600.0) -> CoqOutcome:
    """Kernel-check a ``.v`` text as it is (``certify check`` on the file on disk): every
    ``Theorem`` it declares, linted, compiled and audited like a rendered file."""
    return _coq_file_check(mode, list(coq_runner.theorem_spans(text)), lambda subset: text, timeout_s)


def _coq_file_check(mode: str, names: Sequence[str], render: Callable[[Sequence[str]], str],
                    timeout_s: float, guard: tuple[dict[str, ClaimTheorem], str] | None = None) -> CoqOutcome:
    if mode not in KERNEL_MODES:
        raise ValueError(f"--coq must be one of {KERNEL_MODES}, got {mode!r}")
    if not names:
        return CoqOutcome(mode, "no_theorems", "no non-vacuous claim to state as a theorem", None)
    if mode == "off":
        reason = "Coq checking is off (--coq off)"
        return CoqOutcome(mode, "off", reason, None, None, _coq_all(names, COQ_UNCHECKED, reason))
    tc, why = coq_runner.find_coqc()
    if tc is None:
        return CoqOutcome(mode, "unavailable", why, None, None, _coq_all(names, COQ_UNCHECKED, why))
    lib = coq_runner.find_library()
    if lib is None:
        why = "the witprobe Coq library (coq/_CoqProject) was not found; set WITPROBE_COQ_LIB"
        return CoqOutcome(mode, "unavailable", why, tc.version, None, _coq_all(names, COQ_UNCHECKED, why))
    try:
        build = coq_runner.build_library(tc, lib, timeout_s=timeout_s)
    except coq_runner.CoqError as e:
        why = f"the witprobe Coq library did not build: {e}"
        return CoqOutcome(mode, "build_failed", why, tc.version, None, _coq_all(names, COQ_UNCHECKED, why))
    if guard is None:
        statuses = coq_runner.check_theorems(tc, build, render, names, timeout_s=timeout_s)
    else:  # the check and the guard of every theorem run side by side (two coqc processes)
        by_name, run_sha = guard
        with ThreadPoolExecutor(max_workers=2) as pool:
            checked = pool.submit(coq_runner.check_theorems, tc, build, render, names, timeout_s=timeout_s)
            guarded = pool.submit(guard_results, tc, build, by_name, list(names), run_sha, timeout_s)
            statuses, (results, units) = checked.result(), guarded.result()
        ok = [n for n, st in statuses.items() if st.status == coq_runner.KERNEL_CHECKED]
        if len(ok) < len(names) and any(results.get(n, "error").startswith("error") for n in ok):
            # a theorem the check refused can stop the guard's file: guard the accepted ones alone
            results, units = guard_results(tc, build, by_name, ok, run_sha, timeout_s)
        statuses = apply_guard(statuses, results, units)
    return CoqOutcome(mode, "checked", "", tc.version, build.source_sha256, statuses)


def guard_results(tc: coq_runner.CoqToolchain, build: coq_runner.LibraryBuild, by_name: dict[str, ClaimTheorem],
                  names: Sequence[str], run_sha: str, timeout_s: float) -> tuple[dict[str, str], dict[str, int]]:
    """Run the mutation guard on ``names``: each theorem's bound lowered (:func:`guard_units`), its
    own proof must fail (:func:`witprobe.formal.coq_runner.guard_theorems`). Returns the outcome per
    name (``rejected``, ``accepted`` or ``error: why``) and the lowered bound's units."""
    lowered: dict[str, ClaimTheorem] = {}
    results: dict[str, str] = {}
    for n in names:
        try:
            lowered[n] = lowered_theorem(by_name[n], guard_units(by_name[n]))
        except ClaimTheoremError as e:
            results[n] = f"error: {e}"
    if lowered:
        results.update(coq_runner.guard_theorems(
            tc, build, lambda subset: render_guard([lowered[n] for n in subset], run_sha), list(lowered), timeout_s))
    units = {n: next(c.units for c in th.constants if c.name == "B") for n, th in lowered.items()}
    return results, units


def apply_guard(statuses: dict[str, TheoremStatus], results: dict[str, str],
                units: dict[str, int]) -> dict[str, TheoremStatus]:
    """The statuses after the guard: a kernel-checked theorem whose lowered statement the kernel also
    accepted is ``lemma_checked`` (it holds, but does not decide its number, so it certifies
    nothing); one whose guard could not run is ``unchecked`` (fail closed)."""
    out = dict(statuses)
    for n, st in statuses.items():
        if st.status != coq_runner.KERNEL_CHECKED:
            continue
        r, u = results.get(n, "error: no guard result"), units.get(n)
        if r == "rejected":
            out[n] = dataclasses.replace(st, guard=coq_runner.GuardOutcome("rejected", u, ""))
        elif r == "accepted":
            why = (f"the kernel also accepted the statement with B lowered to {u}/2^48: the theorem does not "
                   "decide its bound (mutation guard)")
            out[n] = dataclasses.replace(st, status=coq_runner.LEMMA_CHECKED, reason=why,
                                         guard=coq_runner.GuardOutcome("accepted", u, why))
        else:
            why = r.removeprefix("error: ")
            out[n] = dataclasses.replace(st, status=COQ_UNCHECKED, reason=f"mutation guard could not run: {why}",
                                         guard=coq_runner.GuardOutcome("error", u, why))
    return out


def mutation_guard(tc: coq_runner.CoqToolchain, build: coq_runner.LibraryBuild, by_name: dict[str, ClaimTheorem],
                   statuses: dict[str, TheoremStatus], run_sha: str, timeout_s: float) -> dict[str, TheoremStatus]:
    """The guard of the kernel-checked theorems of ``statuses``, applied (:func:`apply_guard`)."""
    ok = [n for n, st in statuses.items() if st.status == coq_runner.KERNEL_CHECKED]
    return apply_guard(statuses, *guard_results(tc, build, by_name, ok, run_sha, timeout_s))


@dataclass
class KernelOutcomes:
    """The kernels' outcomes for one run: Coq and Lean on the claim theorems (either certifies),
    Lean on the arithmetic obligations (never certifies)."""

    coq: CoqOutcome
    lean: LeanOutcome
    lean_arithmetic: LeanOutcome
