"""The rows a layer ships to the kernel's box checker (``coq/Witprobe/BoxCheck.v``).

A per-run box theorem states ``TV <= B`` for every read row of a layer. The kernel decides it
from data: a row whose radii are all at most a cap ``C`` with ``tanh(C/2) <= B`` needs none
(the centred cap, checked once per layer); every other row is shipped as its pooled buckets
(:func:`witprobe.probe.box_sup.box_pool`: the served mass and the largest inflated radius of
each bucket, and the heaviest key on its own), and the checker recomputes its box bound from them.

Which rows must be shipped depends on ``B``, the maximum over the layer's rows of their bound,
known only at the end. :class:`BoxRowKeeper` keeps every row whose centred cap
``tanh(c_max/2)`` exceeds the running maximum of the row bounds divided by ``1 + SLACK``; a row
below it can never need shipping (``B`` only grows), so it is dropped, and only the largest
``c_max`` of the dropped rows is kept (it sets the layer's cap ``C``).

Shipping costs the kernel time per literal, so :meth:`BoxRowKeeper.record` pools each kept row
as coarsely as its own slack allows: consecutive buckets merged (masses added, radii maximised,
which keeps the row's hypothesis true) and the fewest grid intervals whose float64 box bound
stays below ``B (1 - 2**-16)``; the row that sets ``B`` keeps the meter's resolution. Shapes:
``mass``, ``rad`` ``(R, J)`` float64 (``J`` = buckets + the heavy key, last), ``bound``,
``c_max`` ``(R,)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from witprobe.probe.box_sup import DEFAULT_SPEC, box_hints, pooled_bound

SLACK = 2.0 ** -10  # rows within this relative margin of the running bound are kept, not dropped
COARSE_TARGET = 1 - 2.0 ** -16  # a coarsened row's float64 bound stays below B times this
POOLS = (1, 2, 4, 8, 16, 32)  # bucket counts tried, coarsest first (then the meter's own)
INTERVALS = (1, 2, 4, 8)  # grid intervals tried (then the meter's own)


def merge_buckets(mass: torch.Tensor, rad: torch.Tensor, groups: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge the ``G`` bucket columns of pooled rows (heavy key last, kept) into ``groups``
    consecutive groups: masses added, radii maximised. ``(R, G + 1)`` -> ``(R, groups + 1)``."""
    g = mass.shape[-1] - 1
    idx = (torch.arange(g, device=mass.device) * groups // g).expand(mass.shape[0], g)
    shape = (mass.shape[0], groups)
    m = torch.zeros(shape, dtype=mass.dtype, device=mass.device).scatter_add_(-1, idx, mass[:, :-1])
    r = torch.zeros(shape, dtype=rad.dtype, device=rad.device).scatter_reduce_(-1, idx, rad[:, :-1], "amax")
    return torch.cat([m, mass[:, -1:]], -1), torch.cat([r, rad[:, -1:]], -1)


@dataclass
class BoxRowKeeper:
    """The shipped-row candidates of one layer (see the module docstring)."""

    threshold: float = 0.0
    dropped_c_max: float = 0.0
    rows_seen: int = 0
    chunks: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = field(default_factory=list)

    def offer(self, bound: torch.Tensor, c_max: torch.Tensor, mass: torch.Tensor, rad: torch.Tensor) -> None:
        """Fold one chunk of rows: keep those that may need shipping, drop the rest."""
        if bound.numel() == 0:
            return
        bound, c_max = bound.reshape(-1).to(torch.float64), c_max.reshape(-1).to(torch.float64)
        mass = mass.reshape(bound.shape[0], -1).to(torch.float64)
        rad = rad.reshape(bound.shape[0], -1).to(torch.float64)
        if not (torch.isfinite(bound).all() and torch.isfinite(c_max).all()):
            raise ValueError("box rows: a row bound or radius is not finite")
        self.rows_seen += int(bound.numel())
        grew = float(bound.max()) > self.threshold
        self.threshold = max(self.threshold, float(bound.max()))
        if grew:  # a higher cut: every kept row is tested again
            self.chunks.append((c_max, bound, mass, rad))
            self._prune(self.threshold / (1 + SLACK))
        else:  # the kept rows already passed this cut: only the new chunk is tested (the same rows survive)
            self._prune(self.threshold / (1 + SLACK), [(c_max, bound, mass, rad)])
        if len(self.chunks) > 64:  # one tensor per field again: the next full prune is a few operations
            self.chunks = [tuple(torch.cat(x) for x in zip(*self.chunks))]  # type: ignore[misc]

    def _prune(self, cut: float, new: list | None = None) -> None:
        """Drop the rows whose centred cap is at most ``cut`` (their ``c_max`` joins ``dropped_c_max``):
        of every kept chunk, or only of ``new`` (then appended to the kept ones)."""
        kept = [] if new is None else self.chunks
        for c_max, bound, mass, rad in (self.chunks if new is None else new):
            keep = torch.tanh(c_max / 2) > cut
            if not keep.all():
                self.dropped_c_max = max(self.dropped_c_max, float(c_max[~keep].max()))
            if keep.any():
                kept.append((c_max[keep], bound[keep], mass[keep], rad[keep]))
        self.chunks = kept

    def record(self) -> dict:
        """The layer's shipped-row record of ``run.json`` (``read.box_rows``), rows coarsened."""
        rows = []
        self._prune(self.threshold * (1 - 2.0 ** -20))  # the cap's kernel check keeps this much slack
        if self.chunks:
            c_max, bound, mass, rad = (torch.cat(x) for x in zip(*self.chunks))
            pools, intervals = _coarsest(mass, rad, self.threshold * COARSE_TARGET)
            for i in range(mass.shape[0]):
                g = int(pools[i])
                mi, ri = (mass[i:i + 1], rad[i:i + 1]) if g == mass.shape[-1] - 1 else merge_buckets(
                    mass[i:i + 1], rad[i:i + 1], g)
                # a bucket with keys has a radius > 0 or a mass > 0 (its keys may all underflow to 0 in
                # float64); keys of radius 0 fit any bucket (U >= 1), so one bucket at least is kept
                nz = torch.nonzero((mi[0, :-1] > 0) | (ri[0, :-1] > 0)).flatten()
                buckets = torch.stack([mi[0, :-1][nz], ri[0, :-1][nz]], -1).tolist() or [[0.0, 0.0]]
                rows.append({"c_max": float(c_max[i]), "bound": float(bound[i]), "intervals": int(intervals[i]),
                             "heavy": [float(mi[0, -1]), float(ri[0, -1])], "buckets": buckets})
        return {"rows_seen": self.rows_seen, "dropped_c_max": self.dropped_c_max, "rows": rows}


def _coarsest(mass: torch.Tensor, rad: torch.Tensor, target: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row, the cheapest (buckets, intervals) whose float64 box bound is at most ``target``;
    the meter's own resolution where none is."""
    full_g, full_k = mass.shape[-1] - 1, DEFAULT_SPEC.intervals
    best_cost = torch.full((mass.shape[0],), float("inf"), dtype=torch.float64)
    pools = torch.full((mass.shape[0],), full_g, dtype=torch.int64)
    intervals = torch.full((mass.shape[0],), full_k, dtype=torch.int64)
    for g in POOLS:
        if g >= full_g:
            break
        m, r = merge_buckets(mass, rad, g)
        for k in INTERVALS:
            ok = (pooled_bound(m, box_hints(m, r, g, k)) <= target)
            cost = torch.full_like(best_cost, float(3 * g + 5 * k))
            better = ok & (cost < best_cost)
            best_cost = torch.where(better, cost, best_cost)
            pools = torch.where(better, g, pools)
            intervals = torch.where(better, k, intervals)
    return pools, intervals
