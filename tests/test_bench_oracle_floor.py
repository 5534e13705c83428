"""bench/oracle_floor.py: its floor is a lower bound of the exact box supremum (every per-key-radius
certificate's floor) and never below the realized TV; the box meter's bound is above both."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import torch

from witprobe.probe.box_sup import box_sup_bound, sup_tv_vertices

_spec = importlib.util.spec_from_file_location("oracle_floor", Path(__file__).resolve().parents[1] / "bench" / "oracle_floor.py")
oracle_floor = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(oracle_floor)


def test_the_floor_lies_between_the_realized_tv_and_the_exact_box_supremum():
    g = torch.Generator().manual_seed(3)
    for trial in range(60):
        n = 2 + trial % 9
        s = torch.randn(1, 1, 1, n, generator=g, dtype=torch.float64) * 2
        sp = s + torch.randn(1, 1, 1, n, generator=g, dtype=torch.float64) * (0.05 + 0.5 * (trial % 3))
        visible = torch.ones_like(s, dtype=torch.bool)
        rows = oracle_floor.oracle_rows(s, sp, visible)
        ps = torch.softmax(sp[0, 0, 0], -1).tolist()
        exact = sup_tv_vertices(ps, (s - sp)[0, 0, 0].abs().tolist())
        tv, floor, upper = (float(rows[k]) for k in ("tv", "floor", "upper"))
        assert tv <= floor + 1e-12, (trial, tv, floor)
        assert floor <= exact + 1e-12, (trial, floor, exact)
        assert exact <= upper + 1e-12, (trial, exact, upper)


def test_the_floor_equals_the_supremum_when_one_set_attains_it():
    """Two keys, one perturbed: the supremum puts +c on that key alone, a prefix of every ordering."""
    s = torch.tensor([[[[1.0, 0.0]]]], dtype=torch.float64)
    sp = torch.zeros_like(s)
    rows = oracle_floor.oracle_rows(s, sp, torch.ones_like(s, dtype=torch.bool))
    assert math.isclose(float(rows["floor"]), sup_tv_vertices([0.5, 0.5], [1.0, 0.0]), rel_tol=1e-12)
    assert float(box_sup_bound(torch.softmax(sp, -1), (s - sp).abs())) >= float(rows["floor"])
