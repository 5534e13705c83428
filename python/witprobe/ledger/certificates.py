"""What may enter the ledger, and the entry-level deterministic read certificate (paper 5.1-5.2).

Three kinds of objects reach an account:

- **deterministic** certificates (runtime checks whose premises the machine decides) enter at
  ``delta = 0``;
- **probabilistic** certificates draw ``delta_i`` from the account's telescoping budget;
- **empirical** objects never enter: :func:`admit` refuses them with :class:`EmpiricalRefused`,
  and the caller falls back to exact bytes or marks the request degraded.

The read certificate is entry-level: an entry is served compressed iff its witness satisfies
``W_entry <= W_thr`` (deterministic, ``delta = 0``); a failing entry alone falls back to an exact
read. With every served entry inside the threshold, the attention distribution of a step obeys
``TV_step <= (exp(2 qn W_thr) - 1) / 2`` with ``qn = scale * max ||q||`` (the plain bridge).
"""

from __future__ import annotations

import enum
import math

import numpy as np

from witprobe.calculus.rounding import REL_MARGIN

_UP = 1.0 + float(REL_MARGIN)


class Kind(enum.Enum):
    """Kind of an object offered to an account."""

    DETERMINISTIC = "deterministic"
    PROBABILISTIC = "probabilistic"
    EMPIRICAL = "empirical"


class EmpiricalRefused(ValueError):
    """An empirical object was offered to the certified ledger (rule 1): fall back or degrade."""


def admit(kind: Kind, what: str) -> bool:
    """Whether ``kind`` spends budget (True: probabilistic, False: deterministic); empirical is refused."""
    if kind is Kind.EMPIRICAL:
        raise EmpiricalRefused(f"{what} is empirical and cannot enter the certified ledger; fall back to exact")
    if not isinstance(kind, Kind):
        raise TypeError(f"{what}: expected a ledger Kind, got {kind!r}")
    return kind is Kind.PROBABILISTIC


def entry_retained(witness: np.ndarray, w_thr: float) -> np.ndarray:
    """The deterministic entry certificate ``W_entry <= W_thr``, elementwise (True: serve compressed)."""
    if not (isinstance(w_thr, (int, float)) and math.isfinite(w_thr) and w_thr >= 0):
        raise ValueError(f"W_thr must be a finite nonnegative number, got {w_thr!r}")
    return np.asarray(witness) <= w_thr


def tv_step_bound(qn: float | np.ndarray, w_thr: float) -> float | np.ndarray:
    """``(exp(2 qn W_thr) - 1) / 2``, evaluated in float64 and inflated by ``1 + 2**-30`` (outward).

    ``qn = scale * max ||q||`` of the step; values at or above 1 are vacuous (TV <= 1 always).
    """
    return 0.5 * np.expm1(2.0 * np.asarray(qn, dtype=np.float64) * w_thr) * _UP


def radius_up(x: np.ndarray | float) -> np.ndarray | float:
    """Outward rounding of a float64 radius: ``x * (1 + 2**-30)``."""
    return x * _UP
