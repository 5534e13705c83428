"""Per-request risk budgets (paper section 5.1): exact rationals, mirroring ``Witprobe.Budget``.

Probabilistic certificates draw from a telescoping budget

    ``delta_i = delta_req / ((i + 1)(i + 2))``, ``i = 0, 1, 2, ...``,

so after ``k`` probabilistic events the spend is exactly ``delta_req * k / (k + 1) < delta_req``,
at every request length and without knowing the length in advance. Deterministic certificates
spend 0 and do not advance the counter (the two-layer budget, Lean ``two_layer_budget_le``).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction


def _check_delta_req(delta_req: Fraction) -> Fraction:
    d = Fraction(delta_req)
    if not 0 < d <= 1:
        raise ValueError(f"delta_req must lie in (0, 1], got {d}")
    return d


def telescoping_delta(delta_req: Fraction, i: int) -> Fraction:
    """``delta_i = delta_req / ((i+1)(i+2))``: the budget of the ``i``-th probabilistic event (from 0)."""
    if isinstance(i, bool) or not isinstance(i, int) or i < 0:
        raise ValueError(f"event index must be a nonnegative integer, got {i!r}")
    return _check_delta_req(delta_req) / ((i + 1) * (i + 2))


def telescoping_spend(delta_req: Fraction, k: int) -> Fraction:
    """``sum_{i<k} delta_i = delta_req * k / (k + 1)`` (closed form of the telescoping sum)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"event count must be a nonnegative integer, got {k!r}")
    return _check_delta_req(delta_req) * k / (k + 1)


def two_layer_spend(delta_req: Fraction, events: Iterable[bool]) -> Fraction:
    """Spend of a sequence of events, ``True`` = probabilistic, ``False`` = deterministic.

    Deterministic events cost 0; the ``j``-th probabilistic event costs ``delta_j`` where ``j``
    counts only earlier probabilistic events.
    """
    spent = Fraction(0)
    j = 0
    for probabilistic in events:
        if probabilistic:
            spent += telescoping_delta(delta_req, j)
            j += 1
    return spent
