"""Device-resident accumulators: statistics and counters that survive graph replay.

Every statistic is a set of tensors on the probe's device: ``n`` (int64 element count), ``sum``,
``min``, ``max`` (float64) and ``calls`` (int64, +1 per fold). Counters are int64 tensors too: a
host-side Python integer would freeze at graph capture while sums keep growing (paper section
7.2, trap 1). :meth:`Accumulator.finalize` is the only host synchronisation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass
class _Stat:
    n: torch.Tensor
    total: torch.Tensor
    lo: torch.Tensor
    hi: torch.Tensor
    calls: torch.Tensor


class Accumulator:
    """Keyed statistics and counters, all tensors on ``device``.

    Keys may be declared up front (:meth:`declare_stat`, :meth:`declare_counter`) so that nothing
    is allocated later; folding into an undeclared key allocates it on first use.
    """

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self._stats: dict[str, _Stat] = {}
        self._counters: dict[str, torch.Tensor] = {}

    def declare_stat(self, key: str) -> None:
        if key not in self._stats:
            z = lambda dt, v: torch.full((), v, dtype=dt, device=self.device)  # noqa: E731
            self._stats[key] = _Stat(
                n=z(torch.int64, 0), total=z(torch.float64, 0.0), lo=z(torch.float64, math.inf),
                hi=z(torch.float64, -math.inf), calls=z(torch.int64, 0),
            )

    def declare_counter(self, key: str) -> None:
        if key not in self._counters:
            self._counters[key] = torch.zeros((), dtype=torch.int64, device=self.device)

    def fold(self, key: str, values: torch.Tensor) -> None:
        """Fold every element of ``values`` into statistic ``key`` (in place, no host sync)."""
        self.declare_stat(key)
        s = self._stats[key]
        v = values.detach().reshape(-1).to(device=self.device, dtype=torch.float64)
        s.calls.add_(1)
        if v.numel() == 0:
            return
        s.n.add_(v.numel())
        s.total.add_(v.sum())
        torch.minimum(s.lo, v.min(), out=s.lo)
        torch.maximum(s.hi, v.max(), out=s.hi)

    def count(self, key: str, flags: torch.Tensor) -> None:
        """Add the number of true (nonzero) elements of ``flags`` to counter ``key``."""
        self.declare_counter(key)
        self._counters[key].add_(flags.detach().reshape(-1).to(self.device).bool().sum())

    def bump(self, key: str, amount: int = 1) -> None:
        """Add a host-known amount to counter ``key`` (outside graph capture only)."""
        self.declare_counter(key)
        self._counters[key].add_(int(amount))

    def finalize(self) -> dict[str, dict[str, float | int | None] | int]:
        """Read everything back to the host: stats become ``{n, mean, min, max, sum, calls}``."""
        out: dict[str, dict[str, float | int | None] | int] = {}
        for key, s in sorted(self._stats.items()):
            n = int(s.n.item())
            out[key] = {
                "n": n,
                "calls": int(s.calls.item()),
                "sum": float(s.total.item()),
                "mean": float(s.total.item()) / n if n else None,
                "min": float(s.lo.item()) if n else None,
                "max": float(s.hi.item()) if n else None,
            }
        for key, c in sorted(self._counters.items()):
            out[key] = int(c.item())
        return out
