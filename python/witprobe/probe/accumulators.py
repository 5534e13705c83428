"""Device-resident accumulators: statistics and counters that survive graph replay.

Every statistic is a set of tensors on the probe's device: ``n`` (int64 element count), ``sum``,
``min``, ``max`` (float64) and ``calls`` (int64, +1 per fold). Counters are int64 tensors too: a
host-side Python integer would freeze at graph capture while sums keep growing (paper section
7.2, trap 1). :meth:`Accumulator.finalize` is the only host synchronisation.

A :class:`StatBlock` packs a fixed set of statistics and counters into three contiguous tensors
so that a fused kernel can update all of them through three pointers. The per-key views that
:meth:`Accumulator.fold` and :meth:`Accumulator.count` update are views into the same storage:
the fused and the unfused meter fill the same keys of the same accumulator.
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


STAT_FIELDS = ("sum", "min", "max")
STAT_COUNTS = ("n", "calls")


@dataclass
class StatBlock:
    """A packed, preallocated set of statistics and counters (one kernel argument each).

    Attributes
    ----------
    stat_keys, counter_keys:
        Names, in storage order.
    fstats:
        ``(len(stat_keys), 3)`` float64: per statistic ``sum``, ``min``, ``max`` (identity values
        ``0``, ``+inf``, ``-inf``).
    istats:
        ``(len(stat_keys), 2)`` int64: per statistic ``n`` (elements folded) and ``calls``.
    counters:
        ``(len(counter_keys),)`` int64.
    """

    stat_keys: tuple[str, ...]
    counter_keys: tuple[str, ...]
    fstats: torch.Tensor
    istats: torch.Tensor
    counters: torch.Tensor

    def stat_index(self, key: str) -> int:
        return self.stat_keys.index(key)

    def counter_index(self, key: str) -> int:
        return self.counter_keys.index(key)


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

    def declare_block(self, stat_keys: tuple[str, ...], counter_keys: tuple[str, ...]) -> StatBlock:
        """Allocate a packed block for these keys and register each key as a view into it.

        Raises ``ValueError`` if a key is already declared (a key belongs to one storage only) or
        repeated. Call before graph capture: this allocates.
        """
        names = list(stat_keys) + list(counter_keys)
        if len(set(names)) != len(names):
            raise ValueError(f"declare_block: repeated key in {names}")
        clash = [k for k in names if k in self._stats or k in self._counters]
        if clash:
            raise ValueError(f"declare_block: keys already declared: {clash}")
        k = len(stat_keys)
        fstats = torch.zeros((k, 3), dtype=torch.float64, device=self.device)
        fstats[:, 1] = math.inf
        fstats[:, 2] = -math.inf
        istats = torch.zeros((k, 2), dtype=torch.int64, device=self.device)
        counters = torch.zeros((len(counter_keys),), dtype=torch.int64, device=self.device)
        for i, key in enumerate(stat_keys):
            self._stats[key] = _Stat(
                n=istats[i, 0], total=fstats[i, 0], lo=fstats[i, 1], hi=fstats[i, 2], calls=istats[i, 1]
            )
        for i, key in enumerate(counter_keys):
            self._counters[key] = counters[i]
        return StatBlock(tuple(stat_keys), tuple(counter_keys), fstats, istats, counters)

    def stat_keys(self) -> tuple[str, ...]:
        return tuple(sorted(self._stats))

    def counter_keys(self) -> tuple[str, ...]:
        return tuple(sorted(self._counters))

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
