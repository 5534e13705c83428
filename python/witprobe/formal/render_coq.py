"""Render a run's claim theorems to a ``.v`` file (jinja2 template ``templates/run.v.j2``).

Nothing from input text reaches the file: theorem names are generated and validated
(:func:`witprobe.formal.obligations.check_ident`), constants are integers, statements and proof
scripts come from the fixed shapes of :mod:`witprobe.formal.claim_theorems`. The output is
byte-stable for a fixed list of theorems, so ``certify check`` can compare it with the stored file.
"""

from __future__ import annotations

import re
from typing import Sequence

from witprobe.version import __version__
from witprobe.formal.claim_theorems import ClaimTheorem
from witprobe.formal.coq_runner import lint_source
from witprobe.formal.obligations import ObligationError
from witprobe.formal.render import template

_HEX = re.compile(r"^[0-9a-f]{64}$")
COQ_FILE = "obligations/run.v"


def check_theorem_list(theorems: Sequence[ClaimTheorem]) -> list[str]:
    """The theorem names, refusing an empty list and duplicates (either file would not compile)."""
    if not theorems:
        raise ObligationError("no claim theorems to render")
    names = [t.theorem for t in theorems]
    if len(set(names)) != len(names):
        raise ObligationError(f"duplicate theorem names in {names}")
    return names


def coq_module(run_sha: str) -> str:
    """The Coq module of a run: ``Run_`` + the first 16 hex digits of ``run.json``'s SHA-256."""
    if not isinstance(run_sha, str) or not _HEX.match(run_sha):
        raise ObligationError(f"run sha256 must be 64 lower-case hex digits, got {run_sha!r}")
    return "Run_" + run_sha[:16]


def qualified(run_sha: str, theorem: str) -> str:
    """Fully qualified name of a run theorem, as ``Print Assumptions`` and users name it."""
    return f"{coq_module(run_sha)}.{theorem}"


# the library modules (beyond Sum Softmax SoftmaxTV Claims) each theorem shape's proof needs,
# imported in one fixed order (earlier runs' files keep their bytes)
SHAPE_IMPORTS: dict[str, tuple[str, ...]] = {
    "banded": ("ScoreBridge", "ClaimsBanded"),
    "latent": ("LatentBridge", "ClaimsLatent"),
    "evict": ("ScoreBridge", "Selection", "Eviction"),
    "boxsup": ("ScoreBridge", "ClaimsBanded", "BoxSup", "FloatBounds", "BoxCheck"),
    "boxsup_latent": ("LatentBridge", "ClaimsLatent", "BoxSup", "FloatBounds", "BoxCheck"),
    "boxsup_qa": ("ScoreBridge", "LatentBridge", "BoxSup", "QueryAligned", "BoxQueryAligned", "FloatBounds", "BoxCheck"),
    "sink": ("ScoreBridge", "ClaimsBanded", "ClaimsSink"),
    "score": (),
}
LIBRARY_ORDER = ("ScoreBridge", "ClaimsBanded", "ClaimsSink", "LatentBridge", "ClaimsLatent", "Selection", "Eviction", "BoxSup",
                 "QueryAligned", "BoxQueryAligned", "FloatBounds", "BoxCheck")


def _imports(theorems: Sequence[ClaimTheorem]) -> str:
    needed = [m for t in theorems for m in SHAPE_IMPORTS[t.shape]]
    return "".join(f" {m}" for m in LIBRARY_ORDER if m in needed)


def render_coq(theorems: Sequence[ClaimTheorem], run_sha: str) -> str:
    """The ``.v`` text of a run's claim theorems (refuses duplicates and forbidden tokens)."""
    names = check_theorem_list(theorems)
    bundle = "I"
    for name in reversed(names):
        bundle = f"conj {name} ({bundle})" if bundle != "I" else f"conj {name} I"
    text = template("run.v.j2").render(version=__version__, run_sha=run_sha, module=coq_module(run_sha),
                              theorems=list(theorems), bundle=bundle, extra_imports=_imports(theorems),
                              checked=any(t.definitions for t in theorems))
    bad = lint_source(text)
    if bad:
        raise ObligationError(f"rendered claim theorems contain {bad}")
    return text


def render_guard(lowered: Sequence[ClaimTheorem], run_sha: str) -> str:
    """The mutation guard's ``.v`` text: for each theorem (its bound already lowered, see
    :func:`witprobe.formal.claim_theorems.lowered_theorem`), its definitions, then its statement as
    a ``Goal`` whose original proof script must fail (``Fail (proof).``)."""
    check_theorem_list(lowered)
    text = template("guard.v.j2").render(version=__version__, run_sha=run_sha, module=coq_module(run_sha) + "_guard",
                                theorems=[(t, t.proof.rstrip().rstrip(".")) for t in lowered],
                                extra_imports=_imports(lowered), checked=any(t.definitions for t in lowered))
    bad = lint_source(text)
    if bad:
        raise ObligationError(f"rendered guard contains {bad}")
    return text
