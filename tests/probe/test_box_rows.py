"""The box-row keeper keeps exactly the rows its specification names, however the rows arrive.

Specification (``witprobe.probe.box_rows`` docstring): after all offers, with ``B`` the largest row
bound, a row is kept iff its centred cap ``tanh(c_max/2)`` exceeds ``B / (1 + SLACK)``, in arrival
order; ``dropped_c_max`` is the largest ``c_max`` of the others. The keeper prunes incrementally
(only the new chunk while ``B`` does not grow, everything when it does, chunks merged now and
then), so this test draws chunk sequences whose bound grows, stalls and jumps.
"""

from __future__ import annotations

import math

import torch

from witprobe.probe.box_rows import SLACK, BoxRowKeeper


def _offers(seed: int, n_chunks: int = 150):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n_chunks):
        r = int(torch.randint(1, 12, (1,), generator=g))
        c = torch.rand(r, generator=g, dtype=torch.float64) * (0.05 + 0.3 * (i % 17 == 0))
        bound = torch.tanh(c / 2) * (0.5 + 0.5 * torch.rand(r, generator=g, dtype=torch.float64))
        mass = torch.rand(r, 5, generator=g, dtype=torch.float64)
        rad = torch.rand(r, 5, generator=g, dtype=torch.float64)
        out.append((bound, c, mass, rad))
    return out


def test_incremental_pruning_keeps_exactly_the_specified_rows():
    for seed in range(6):
        offers = _offers(seed)
        k = BoxRowKeeper()
        for bound, c, mass, rad in offers:
            k.offer(bound, c, mass, rad)
        b = max(float(o[0].max()) for o in offers)
        cut = b / (1 + SLACK)
        allc = torch.cat([o[1] for o in offers])
        keep = torch.tanh(allc / 2) > cut
        got = torch.cat([ch[0] for ch in k.chunks]) if k.chunks else allc[:0]
        assert torch.equal(got, allc[keep]), seed
        assert torch.equal(torch.cat([ch[2] for ch in k.chunks]), torch.cat([o[2] for o in offers])[keep])
        assert k.dropped_c_max == (float(allc[~keep].max()) if (~keep).any() else 0.0)
        assert k.threshold == b and k.rows_seen == allc.numel()
        assert math.isfinite(k.dropped_c_max)
