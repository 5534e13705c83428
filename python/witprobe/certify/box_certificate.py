"""A layer's box certificate data: what the per-run box theorem hands the kernel's checker.

The checker (``coq/Witprobe/BoxCheck.v``, ``check_layer``) decides ``TV <= B`` for a layer from:

- the **cap** ``C``: every row not shipped has all its radii at most ``C``, and the kernel proves
  ``tanh(C/2) <= B`` (``interval``). ``C`` is the largest ``c_max`` of the rows the meter did
  not keep (``run.json`` ``box_rows.dropped_c_max``), times ``1 + 2**-30`` (the radius margin of
  :mod:`witprobe.probe.box_sup`), rounded up to units of ``2**-48``;
- the **shipped rows** (``box_rows.rows``), each as binary64 literals (:func:`row_literal`):
  the trusted, measured part is per bucket ``U_j >= e^{r_t}`` for its keys and ``[lo_j, hi_j]``
  around its served mass; the untrusted hints are the grid and the lambdas.

Trust boundary (``docs/TRUST_BOUNDARY.md`` 3.7): a recorded bucket mass ``m`` is a float64 sum of
at most ``T`` float64 probabilities whose own relative error is ``boxsup_rel`` (the centre's error,
:func:`witprobe.calculus.float_error.boxsup_rel`); so the real mass lies in
``m (1 -+ (rel + gamma_T))``, ``gamma_T = T u / (1 - T u)``, plus ``T 2**-1021`` above for
probabilities that underflow to ``0`` in float64, rounded outward. A recorded radius is
already ``c_t (1 + 2**-30)``, which dominates ``c_t``'s float64 error; ``U = e^{radius}`` is rounded
up with ``exp``'s relative error (assumption A1, ``4u``) and one more ulp. Everything else the
kernel computes itself, with directed rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import torch

from witprobe.calculus import rounding
from witprobe.certify.run_record import BoxRow, BoxRows
from witprobe.probe.box_sup import RADIUS_MARGIN, box_hints

U64 = 2.0 ** -53
EXP_REL = 4 * U64  # assumption A1: exp's relative error
UNDERFLOW = 2.0 ** -1021  # a probability that underflows to 0 in float64 is below this


class BoxDataError(ValueError):
    """The recorded rows cannot be turned into checker data (the message names the row)."""


@dataclass(frozen=True)
class BoxLayerData:
    """One layer's checker data: the Coq literal of its shipped rows and its cap ``C``.

    ``rows_coq``: a Coq term of type ``list row``; ``cap_units``: ``C`` in units of ``2**-48``;
    ``shipped`` rows of ``seen``; ``literals``: the binary64 literals of ``rows_coq``.
    """

    rows_coq: str
    cap_units: int
    shipped: int
    seen: int
    literals: int


def _hex(x: float) -> str:
    """A binary64 literal Coq's ``float_scope`` reads exactly."""
    if not math.isfinite(x) or x < 0:
        raise BoxDataError(f"box data: {x!r} is not a finite nonnegative float")
    return float.hex(x) + "%float"


def exp_up(x: float) -> float:
    """A float at least ``e^x`` (A1: ``exp`` within ``4u``; one more ulp for the product)."""
    return math.nextafter(math.exp(x) * (1 + 2 * EXP_REL), math.inf)


def mass_interval(m: float, rel: float, floor: float) -> tuple[float, float]:
    """``[lo, hi]`` around a recorded mass ``m`` with relative error at most ``rel``, plus ``floor``
    above (the probabilities that underflow to ``0`` in float64 but are positive in reality)."""
    lo = math.nextafter(m * (1 - rel), 0.0) if m > 0 else 0.0
    hi = math.nextafter(m * (1 + rel) + floor, math.inf)
    return max(lo, 0.0), hi


@dataclass(frozen=True)
class _RowNumbers:
    """A shipped row's trusted numbers (``U_j``, ``[lo_j, hi_j]``, heavy key first) and the
    pooled row in the meter's order (buckets, then the heavy key) that its hints are built from."""

    u: list[float]
    lo: list[float]
    hi: list[float]
    mass: list[float]
    rad: list[float]
    intervals: int


def _row_numbers(row: BoxRow, rel: float, floor: float, where: str) -> _RowNumbers:
    pooled = [row.heavy] + row.buckets
    for j, pair in enumerate(pooled):
        if len(pair) != 2 or not all(isinstance(v, float) and math.isfinite(v) and v >= 0 for v in pair):
            raise BoxDataError(f"{where}: bucket {j} must be [mass, radius], finite and nonnegative, got {pair!r}")
    u = [exp_up(r) for _, r in pooled]
    bounds = [mass_interval(m, rel, floor) for m, _ in pooled]
    lo, hi = [b[0] for b in bounds], [b[1] for b in bounds]
    if not math.fsum(lw / uj for lw, uj in zip(lo, u)) > 0:
        raise BoxDataError(f"{where}: the row's served mass has no positive lower bound")
    meter_order = pooled[1:] + pooled[:1]
    return _RowNumbers(u, lo, hi, [m for m, _ in meter_order], [r for _, r in meter_order], row.intervals)


def _hints(rows: list[_RowNumbers]) -> list[tuple[list[float], list[float], list[float]]]:
    """``(grid, lam_up, lam_down)`` per row: the hints the meter builds
    (:func:`witprobe.probe.box_sup.box_hints` on the recorded masses and radii, heavy key last),
    computed portably (``portable=True``: scalar C-library ``exp`` and ``pow``, sums in index
    order), so every machine renders the same ``run.v`` from the same ``run.json``.
    The grid's ends ``(1 -+ 2**-20)/Z`` bracket the checker's outward sums while the masses'
    relative error stays below ``2**-21`` (``float_error.boxsup_problems``). Rows of one shape
    (buckets, intervals) are computed in one batch; every operation is row-wise, so a row's hints
    do not depend on its batch (``tests/test_box_certificate.py`` holds them bit for bit)."""
    out: list[tuple[list[float], list[float], list[float]] | None] = [None] * len(rows)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault((len(r.mass), r.intervals), []).append(i)
    for (width, intervals), idx in groups.items():
        mass_t = torch.tensor([rows[i].mass for i in idx], dtype=torch.float64)
        rad_t = torch.tensor([rows[i].rad for i in idx], dtype=torch.float64)
        h = box_hints(mass_t, rad_t, width - 1, intervals, portable=True)
        grid, lam = h.grid.tolist(), h.lam[:, :, :, 0].clamp(0.0, 1.0).tolist()
        for k, i in enumerate(idx):
            out[i] = (grid[k], lam[k][1], lam[k][0])
    return out  # type: ignore[return-value]


def _literal(n: _RowNumbers, grid: list[float], lam_up: list[float], lam_down: list[float]) -> tuple[str, int]:
    def bucket(j: int) -> str:
        return f"Bucket {_hex(n.u[j])} {_hex(n.lo[j])} {_hex(n.hi[j])}"

    text = (f"Row ({bucket(0)}) [{'; '.join(bucket(j) for j in range(1, len(n.u)))}]\n    "
            f"[{'; '.join(map(_hex, grid))}]\n    [{'; '.join(map(_hex, lam_up))}] [{'; '.join(map(_hex, lam_down))}]")
    return text, 3 * len(n.u) + len(grid) + len(lam_up) + len(lam_down)


def row_literal(row: BoxRow, rel: float, floor: float, where: str) -> tuple[str, int]:
    """The Coq ``row`` literal of one shipped row, and its number of float literals."""
    n = _row_numbers(row, rel, floor, where)
    return _literal(n, *_hints([n])[0])


def layer_data(rows: BoxRows, rel: Fraction, keys: int, where: str, bound: Fraction) -> BoxLayerData:
    """The checker data of a layer's recorded rows at the suggested bound ``bound`` (``rel``: the
    centre's relative error; ``keys``: the most keys a row sees, for ``gamma_T``).

    A kept row whose own centred cap fits under ``bound`` (``tanh(c_max (1 + 2**-30) / 2)`` at least
    ``2**-40`` below it, a margin the kernel's ``interval`` proof resolves) joins the cap instead of
    being shipped: its box bound may exceed ``bound`` (the meter took the centred cap for it)."""
    if not math.isfinite(rows.dropped_c_max) or rows.dropped_c_max < 0:
        raise BoxDataError(f"{where}.dropped_c_max: {rows.dropped_c_max!r} is not a finite nonnegative radius")
    tu = keys * U64
    if not tu < 0.5:
        raise BoxDataError(f"{where}: {keys} keys are too many for the float64 mass analysis")
    rel_f = math.nextafter(float(rel) + tu / (1 - tu), math.inf) * (1 + 2.0 ** -40)
    cap_c, numbers = rows.dropped_c_max, []
    for i, row in enumerate(rows.rows):
        if not (math.isfinite(row.c_max) and row.c_max >= 0):
            raise BoxDataError(f"{where}.rows[{i}].c_max: {row.c_max!r} is not a finite nonnegative radius")
        if math.tanh(row.c_max * (1 + RADIUS_MARGIN) / 2) * (1 + 2.0 ** -40) <= float(bound):
            cap_c = max(cap_c, row.c_max)
            continue
        numbers.append(_row_numbers(row, rel_f, UNDERFLOW * keys, f"{where}.rows[{i}]"))
    made = [_literal(n, *h) for n, h in zip(numbers, _hints(numbers))]
    parts, literals, shipped = [text for text, _ in made], sum(k for _, k in made), len(made)
    cap = rounding.up(cap_c) * (1 + Fraction(RADIUS_MARGIN)) if cap_c > 0 else Fraction(0)
    return BoxLayerData("[" + ";\n  ".join(parts) + "]", rounding.to_units_up(cap), shipped, rows.rows_seen,
                        literals)
