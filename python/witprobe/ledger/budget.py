"""Per-request risk budgets (paper section 5.1): exact rationals, mirroring ``Witprobe.Budget``.

Probabilistic certificates draw from a telescoping budget

    ``delta_i = delta_req / ((i + 1)(i + 2))``, ``i = 0, 1, 2, ...``,

so after ``k`` probabilistic events the spend is exactly ``delta_req * k / (k + 1) < delta_req``,
at every request length and without knowing the length in advance. Deterministic certificates
spend 0 and do not advance the counter (the two-layer budget, Lean ``two_layer_budget_le``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
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


class BudgetExceeded(AssertionError):
    """An account's spend left ``[0, delta_req]``: an implementation error, never clamped."""


@dataclass
class Budget:
    """The telescoping budget of one account: exact, per request, restarting at ``delta_req / 2``.

    ``n_prob_events`` counts probabilistic events only (the index ``i`` of the next one);
    ``n_det_events`` counts deterministic events, which spend 0 and do not move the counter.
    After ``k`` probabilistic events ``spent == delta_req * k / (k + 1)`` exactly (checked at
    every spend).
    """

    delta_req: Fraction
    n_prob_events: int = 0
    n_det_events: int = 0
    spent: Fraction = field(default_factory=Fraction)

    def __post_init__(self) -> None:
        self.delta_req = _check_delta_req(self.delta_req)

    def next_delta(self) -> Fraction:
        """``delta_i`` of the next probabilistic event (no state change): known before any draw."""
        return telescoping_delta(self.delta_req, self.n_prob_events)

    def spend(self) -> tuple[int, Fraction]:
        """Commit one probabilistic event; returns its index ``i`` (the RNG counter) and ``delta_i``."""
        i = self.n_prob_events
        d = telescoping_delta(self.delta_req, i)
        self.spent += d
        self.n_prob_events = i + 1
        if self.spent != telescoping_spend(self.delta_req, self.n_prob_events) or not 0 <= self.spent <= self.delta_req:
            raise BudgetExceeded(f"spend {self.spent} after {self.n_prob_events} events is not delta_req*k/(k+1)")
        return i, d

    def deterministic(self) -> None:
        """Record one deterministic event: ``delta = 0``, counter unchanged."""
        self.n_det_events += 1
