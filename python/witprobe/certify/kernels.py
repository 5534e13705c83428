"""The kernels a run's claims go to: Coq (claim theorems over the reals) and Lean (arithmetic).

- **Coq** checks one theorem per claim whose statement is the claim (``obligations/run.v``,
  :mod:`witprobe.formal.render_coq`), against the library built, or its build verified, in the
  same check (:mod:`witprobe.formal.coq_runner`). A kernel-checked theorem certifies its claim.
- **Lean** checks the run's arithmetic obligations (``obligations/run.lean``: exact-integer
  chain certificates). Its success is reported as ``arithmetic_checked``; it does not certify.

Modes for either kernel: ``auto`` (check if found), ``required`` (the CLI exits 3 without it),
``off``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from witprobe.formal import coq_runner, lean_runner
from witprobe.formal.claim_theorems import ClaimTheorem
from witprobe.formal.coq_runner import UNCHECKED as COQ_UNCHECKED, CoqOutcome, TheoremStatus
from witprobe.formal.lean_runner import UNCHECKED, ObligationStatus
from witprobe.formal.obligations import ChainObligation
from witprobe.formal.render import obligation_spans
from witprobe.formal.render_coq import render_coq

KERNEL_MODES = ("auto", "required", "off")
LEAN_MODES = KERNEL_MODES


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


def _coq_all(names: Sequence[str], status: str, reason: str) -> dict[str, TheoremStatus]:
    return {n: TheoremStatus(n, status, reason) for n in names}


def coq_check(mode: str, theorems: Sequence[ClaimTheorem], run_sha: str, timeout_s: float = 600.0) -> CoqOutcome:
    """Kernel-check a run's claim theorems with Coq, or record why they stay unchecked."""
    if mode not in KERNEL_MODES:
        raise ValueError(f"--coq must be one of {KERNEL_MODES}, got {mode!r}")
    names = [t.theorem for t in theorems]
    if not theorems:
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
    by_name = {t.theorem: t for t in theorems}
    statuses = coq_runner.check_theorems(
        tc, build, lambda subset: render_coq([by_name[n] for n in subset], run_sha), names, timeout_s=timeout_s)
    return CoqOutcome(mode, "checked", "", tc.version, build.source_sha256, statuses)


@dataclass
class KernelOutcomes:
    """Both kernels' outcomes for one run."""

    coq: CoqOutcome
    lean: LeanOutcome
