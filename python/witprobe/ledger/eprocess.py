"""Anytime-valid drift sentinel: an e-process on the certified writer's own object (paper 5.5).

For each authorized entry with realized witness ``W``, pre-draw mean term ``m`` (mean + clamp
shift) and bounded-difference constant ``C > 0``:

    ``g = exp(lambda (W - m) - lambda**2 C / 8)``,  ``lambda = 4 kappa / sqrt(C)``,  ``kappa = 0.5``.

With ``z = (W - m) / sqrt(C)`` this is ``log g = 4 kappa z - 2 kappa**2 = 2 z - 0.5``.
``E[g | past] <= 1`` (McDiarmid's MGF bound and ``m >= E W``), so ``M_t = prod g`` is a
nonnegative supermartingale with ``M_0 = 1`` and by Ville ``P(exists t: M_t >= 1/delta_e) <=
delta_e``. The alarm fires when ``log M >= ln(1/delta_e)`` (``ln 100 = 4.60517`` for
``delta_e = 0.01``). Entries with ``C = 0`` carry no randomness and give no factor.

Values are float64 *readings* (the decision is the crossing); ``log_m_max`` is the maximum over
post-update values and is ``None`` until the first factor (a missing reading, never 0).

**Journal summaries.** One write event's factors are journaled as :class:`FactorSummary`
``(n, sum, prefix_max)`` of their running sum ``cumsum(log g)``. Folding a summary
(:meth:`EProcess.add_summary`) reproduces :meth:`EProcess.add` bit for bit: the path is
``log_M + cumsum``, and ``fl(a + x)`` is monotone in ``x``, so its maximum is
``fl(log_M + prefix_max)`` and its end ``fl(log_M + sum)``. The gate re-derives every e-process
from the journal this way, in journal order.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KAPPA = 0.5
DELTA_E = 0.01


def log_factors(w: np.ndarray, m: np.ndarray, c: np.ndarray, kappa: float = KAPPA) -> np.ndarray:
    """``log g = lambda (W - m) - lambda**2 C / 8`` with ``lambda = 4 kappa / sqrt(C)``, for ``C > 0``."""
    c = np.asarray(c, dtype=np.float64)
    if (c <= 0).any():
        raise ValueError("e-process factors need C > 0 (entries without randomness give no factor)")
    lam = 4.0 * kappa / np.sqrt(c)
    return lam * (np.asarray(w, np.float64) - np.asarray(m, np.float64)) - lam * lam * c / 8.0


@dataclass(frozen=True)
class FactorSummary:
    """One event's factors: count, ``cumsum(log g)[-1]`` and ``max(cumsum(log g))`` (``None`` if n = 0)."""

    n: int
    total: float | None
    prefix_max: float | None

    @classmethod
    def of(cls, log_g: np.ndarray) -> "FactorSummary":
        log_g = np.asarray(log_g, dtype=np.float64).ravel()
        if log_g.size == 0:
            return cls(0, None, None)
        cs = np.cumsum(log_g)
        return cls(int(log_g.size), float(cs[-1]), float(cs.max()))


@dataclass
class EProcess:
    """One test supermartingale (per account, or global). Thread-safe."""

    delta_e: float = DELTA_E
    kappa: float = KAPPA
    log_m: float = 0.0
    log_m_max: float | None = None
    n_factors: int = 0
    crossed: bool = False
    first_cross_factor: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.delta_e, bool) or not 0 < self.delta_e < 1:  # NaN fails too
            raise ValueError(f"delta_e must lie in (0, 1), got {self.delta_e!r}")
        if isinstance(self.kappa, bool) or not 0 < self.kappa < math.inf:
            raise ValueError(f"kappa must be a finite number > 0, got {self.kappa!r}")

    @property
    def threshold(self) -> float:
        """``ln(1/delta_e)``."""
        return math.log(1.0 / self.delta_e)

    def add(self, log_g: np.ndarray) -> None:
        """Fold factors in order (their logs)."""
        log_g = np.asarray(log_g, dtype=np.float64).ravel()
        if log_g.size == 0:
            return
        if not np.isfinite(log_g).all():
            raise ValueError("e-process factor is not finite")
        with self._lock:
            path = self.log_m + np.cumsum(log_g)
            top = float(path.max())
            self.log_m_max = top if self.log_m_max is None else max(self.log_m_max, top)
            if not self.crossed:
                hit = np.nonzero(path >= self.threshold)[0]
                if hit.size:
                    self.crossed = True
                    self.first_cross_factor = self.n_factors + int(hit[0]) + 1
            self.log_m = float(path[-1])
            self.n_factors += int(log_g.size)

    def add_summary(self, s: FactorSummary) -> None:
        """Fold one event from its :class:`FactorSummary` (equal to :meth:`add` of its factors)."""
        if s.n == 0:
            return
        if s.total is None or s.prefix_max is None or not (math.isfinite(s.total) and math.isfinite(s.prefix_max)):
            raise ValueError("e-process summary of a nonempty event needs finite sum and prefix maximum")
        with self._lock:
            top = self.log_m + s.prefix_max
            self.log_m_max = top if self.log_m_max is None else max(self.log_m_max, top)
            if not self.crossed and top >= self.threshold:
                self.crossed = True  # the factor index inside the event is not journaled
            self.log_m = self.log_m + s.total
            self.n_factors += s.n

    def record(self) -> dict[str, Any]:
        return {
            "kappa": self.kappa,
            "delta_e": self.delta_e,
            "threshold": self.threshold,
            "n_factors": self.n_factors,
            "log_M": self.log_m,
            "log_M_max": self.log_m_max,
            "crossed": self.crossed,
            "first_cross_factor": self.first_cross_factor,
        }
