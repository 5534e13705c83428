"""A certificate's claims as flat rows: what ``certify show --format csv|json`` prints and what
``certify compare`` lines up, one row per claim.

A row is a :class:`ClaimRow`: the claim's id, kind, layer, metric and form; its bound as
the exact rational (``bound_exact``, ``num/den``) and its 6-place decimal rounded *up*
(``bound_decimal_up``); ``vacuous``; the realized value it bounds (``realized``, a float64
reading, empty when unknown) and ``tightness`` (bound over realized); ``tier`` and
``tier_reason``. A certificate that does not re-derive from its run
(:mod:`witprobe.certify.recorded`) has every ``tier`` printed as ``UNVERIFIED``: its tiers are
not witprobe's.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, fields
from fractions import Fraction
from typing import Any

from witprobe.calculus import rounding
from witprobe.certify.report import require_claims


@dataclass(frozen=True)
class ClaimRow:
    """One claim, flat (see the module docstring for the units)."""

    id: str
    kind: str
    layer: int
    metric: str
    form: str
    bound_exact: str
    bound_decimal_up: str
    vacuous: bool
    realized: float | None
    tightness: float | None
    tier: str
    tier_reason: str


COLUMNS = tuple(f.name for f in fields(ClaimRow))


def claim_rows(cert: dict[str, Any], verified: bool = True) -> list[ClaimRow]:
    """The rows of ``cert``'s claims, in the certificate's order (tracked reads: a missing field
    names its JSON path)."""
    require_claims(cert)
    out = []
    for c in cert["claims"]:
        b = c["bound"]
        exact = "" if b is None else str(b["exact"])
        out.append(ClaimRow(
            id=c["id"], kind=c["kind"], layer=c["layer"], metric=c.get("metric") or "",
            form=c.get("form") or "", bound_exact=exact,
            bound_decimal_up=rounding.decimal_up(rounding.parse_fraction(exact), 6) if exact else "",
            vacuous=bool(c["vacuous"]), realized=c.get("realized_tv_max"), tightness=c.get("tightness"),
            tier=c["tier"] if verified else "UNVERIFIED", tier_reason=c.get("tier_reason") or ""))
    return out


def rows_csv(rows: list[ClaimRow]) -> str:
    """RFC 4180 CSV with a header row (:data:`COLUMNS`); empty cells for unknown values."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow(["" if v is None else (repr(v) if isinstance(v, float) else v) for v in asdict(r).values()])
    return buf.getvalue()


def rows_json(rows: list[ClaimRow], problems: list[str]) -> str:
    """``{"verified", "problems", "claims": [row, ...]}`` as indented JSON."""
    return json.dumps({"verified": not problems, "problems": problems, "claims": [asdict(r) for r in rows]},
                      indent=1, allow_nan=False) + "\n"


@dataclass(frozen=True)
class ComparedClaim:
    """One claim id present in both runs: bounds (exact), realized readings and differences
    ``b - a`` (the bound difference exact, printed rounded to 6 places)."""

    id: str
    a: ClaimRow
    b: ClaimRow

    @property
    def bound_diff(self) -> Fraction | None:
        if not self.a.bound_exact or not self.b.bound_exact:
            return None
        return rounding.parse_fraction(self.b.bound_exact) - rounding.parse_fraction(self.a.bound_exact)

    @property
    def realized_diff(self) -> float | None:
        return None if self.a.realized is None or self.b.realized is None else self.b.realized - self.a.realized


def compare_rows(a: list[ClaimRow], b: list[ClaimRow]) -> tuple[list[ComparedClaim], list[str], list[str]]:
    """Claims of both runs by id (in ``a``'s order), and the ids only in ``a`` and only in ``b``."""
    by_b = {r.id: r for r in b}
    both = [ComparedClaim(r.id, r, by_b[r.id]) for r in a if r.id in by_b]
    ids_a = {r.id for r in a}
    return both, [r.id for r in a if r.id not in by_b], [r.id for r in b if r.id not in ids_a]


def compare_text(both: list[ComparedClaim], only_a: list[str], only_b: list[str], label_a: str, label_b: str) -> str:
    """The comparison table: per claim, each run's bound (rounded up), realized value and tier, and
    the differences ``B - A``."""
    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.6f}"

    def bd(r: ClaimRow) -> str:
        return "-" if not r.bound_decimal_up else r.bound_decimal_up + ("*" if r.vacuous else "")

    head = (f"{'claim':<18} {'bound A':>9} {'bound B':>9} {'B-A':>10} {'real A':>9} {'real B':>9} {'B-A':>10} "
            f"{'tier A':>11} {'tier B':>11}")
    lines = [f"A = {label_a}", f"B = {label_b}", head, "-" * len(head)]
    for c in both:
        d = c.bound_diff
        lines.append(f"{c.id:<18} {bd(c.a):>9} {bd(c.b):>9} {'-' if d is None else f'{float(d):+.6f}':>10} "
                     f"{f(c.a.realized):>9} {f(c.b.realized):>9} "
                     f"{'-' if c.realized_diff is None else f'{c.realized_diff:+.6f}':>10} {c.a.tier:>11} {c.b.tier:>11}")
    lines.append("(* = vacuous; bounds rounded up at 6 places; B-A of the bounds from their exact values; "
                 "realized values are readings)")
    if only_a:
        lines.append(f"only in A: {', '.join(only_a)}")
    if only_b:
        lines.append(f"only in B: {', '.join(only_b)}")
    return "\n".join(lines) + "\n"
