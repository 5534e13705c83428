"""Render a run's claim theorems to a Lean file (jinja2 template ``templates/run_real.lean.j2``).

The sibling of :mod:`witprobe.formal.render_coq`: it consumes the same
:class:`~witprobe.formal.claim_theorems.ClaimTheorem` records (their ``lean_statement`` and
``lean_proof``), so each Lean theorem has the name, hypotheses, conclusion and constants of the
Coq theorem of ``obligations/run.v``, in the namespace ``Run_<sha>`` of the Coq module. Nothing
from input text reaches the file; the output is byte-stable for a fixed list of theorems, so
``certify check`` compares it with the stored file. The file needs the ``analytic/`` package
(Mathlib) and has never been compiled (``LEAN_STATUS.md``).
"""

from __future__ import annotations

from typing import Sequence

from witprobe.version import __version__
from witprobe.formal.claim_theorems import UNIT_DEN, ClaimTheorem
from witprobe.formal.lint import lint_text
from witprobe.formal.obligations import ObligationError
from witprobe.formal.render import add_axiom_lines, template
from witprobe.formal.render_coq import check_theorem_list, coq_module

LEAN_REAL_FILE = "obligations/run_real.lean"
_CLAIM_MARK = "-- claim "


def render_lean_real(theorems: Sequence[ClaimTheorem], run_sha: str) -> str:
    """The ``.lean`` text of a run's claim theorems (refuses duplicates and forbidden tokens)."""
    check_theorem_list(theorems)
    if any(not t.lean_statement or not t.lean_proof for t in theorems):
        raise ObligationError("a claim theorem has no Lean statement or proof")
    text = template("run_real.lean.j2").render(version=__version__, run_sha=run_sha, module=coq_module(run_sha),
                              theorems=list(theorems), unit_den=UNIT_DEN)
    bad = lint_text(text)
    if bad:
        raise ObligationError(f"rendered Lean claim theorems contain forbidden tokens: {bad}")
    return text


def theorem_spans(text: str, run_sha: str) -> tuple[dict[str, list[tuple[int, int]]], dict[str, str]]:
    """Line ranges of each theorem in a rendered file (its ``-- claim`` comment to the line before
    the next one, plus its ``#print axioms`` line), and its fully qualified name, keyed by the
    theorem name; :func:`witprobe.formal.lean_runner.statuses_from_check` maps Lean's messages
    onto them."""
    module = coq_module(run_sha)
    lines = text.splitlines()
    end_line = next((i + 1 for i, ln in enumerate(lines) if ln == f"end {module}"), len(lines))
    marks = [i for i, ln in enumerate(lines) if ln.startswith(_CLAIM_MARK)]  # 0-based
    spans: dict[str, list[tuple[int, int]]] = {}
    qualified: dict[str, str] = {}
    for k, i in enumerate(marks):
        stop = marks[k + 1] if k + 1 < len(marks) else end_line - 1  # 1-based line before the next mark
        decl = next((ln for ln in lines[i:stop] if ln.startswith("theorem ")), None)
        if decl is None:
            continue
        name = decl[len("theorem "):].split(" ", 1)[0]
        spans[name] = [(i + 1, stop)]
        qualified[name] = f"{module}.{name}"
    add_axiom_lines(lines, qualified, spans)
    return spans, qualified
