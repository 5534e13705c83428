"""bench/probabilistic.py: its tails are sound against exact enumeration, its variance bound holds
on every draw of a synthetic layer, and a broken tail is caught."""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path

import pytest
import torch

_spec = importlib.util.spec_from_file_location("probabilistic", Path(__file__).resolve().parents[1] / "bench" / "probabilistic.py")
prob = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prob)


def _exact_upper_tail(a: list[float], theta: list[float], t: float) -> float:
    """``P(sum_i a_i (B_i - theta_i) >= t)`` by enumerating all ``2**D`` outcomes."""
    total = 0.0
    for bits in itertools.product((0, 1), repeat=len(a)):
        y = sum(ai * (b - th) for ai, b, th in zip(a, bits, theta))
        if y >= t:
            total += math.prod(th if b else 1 - th for b, th in zip(bits, theta))
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_two_point_chernoff_tail_is_sound_by_enumeration(seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(12, generator=g, dtype=torch.float64)
    theta = torch.rand(12, generator=g, dtype=torch.float64)
    for level in (math.log(4.0), math.log(20.0), math.log(1e3)):
        t = float(prob._chernoff_tail(a, theta, torch.tensor(level, dtype=torch.float64)))
        assert _exact_upper_tail(a.tolist(), theta.tolist(), t) <= math.exp(-level) * (1 + 1e-9)
        # tight enough to mean something: a Hoeffding radius at the same level is larger
        assert t <= math.sqrt(float((a * a).sum()) * level / 2) * (1 + 1e-9)
    # a broken tail (half the radius) is beaten by the exact probability at a moderate level
    t = float(prob._chernoff_tail(a, theta, torch.tensor(math.log(4.0), dtype=torch.float64)))
    assert _exact_upper_tail(a.tolist(), theta.tolist(), t / 4) > 0.25


def test_every_family_holds_on_every_draw_of_a_synthetic_layer():
    g = torch.Generator().manual_seed(7)
    hkv, groups, t, d, rows = 2, 2, 48, 16, 3
    k = (torch.randn(1, hkv, t, d, generator=g) * 2).float()
    k[:, :, 0] *= 6  # a heavy key (an attention sink)
    q = torch.randn(1, hkv * groups, rows, d, generator=g, dtype=torch.float64) * 1.5
    deltas = torch.full((hkv * groups * rows,), 1e-3, dtype=torch.float64)
    tv, bounds, viol, pairs = prob._layer_rows(q, k, 0.25, groups, 4, 32, 0, 0, deltas)
    assert tv.shape == (32, hkv * groups, rows) and pairs > 0
    assert float(tv.max()) > 0
    for f, b in bounds.items():
        assert bool((tv <= b).all()), f
    assert viol == {"C1_worst_case": 0, "C3_hoeffding": 0, "C4_two_point_mgf": 0}
    # the worst-case radius dominates the probabilistic ones, and C4 is the tightest radius family
    assert float(bounds["C4_two_point_mgf"].max()) <= float(bounds["C3_hoeffding"].max())
    assert float(bounds["C3_hoeffding"].max()) <= float(bounds["C1_worst_case"].max())


def test_the_variance_bound_is_beaten_without_its_heavy_key_term(monkeypatch):
    """Break the variance family once: drop the heavy key's term (its second moment and every range).
    A synthetic row with much of its mass on one coarsely quantized key then beats it on some draw."""
    real = prob._variance_bound

    def broken(p, vis, second, radius, delta):
        heavy = torch.nn.functional.one_hot(p.argmax(-1), p.shape[-1]).bool()
        return real(p, vis, torch.where(heavy, torch.zeros_like(second), second), radius * 0, delta)

    g = torch.Generator().manual_seed(1)
    q = torch.randn(1, 1, 1, 8, generator=g, dtype=torch.float64)
    k = (torch.randn(1, 1, 24, 8, generator=g) * 0.3).float()
    k[0, 0, 3] = (q[0, 0, 0] / q[0, 0, 0].norm() * 6).float()  # a heavy key along the query, coarse steps
    delta = torch.full((1,), 1e-3, dtype=torch.float64)
    tv, bounds, _, _ = prob._layer_rows(q, k, 0.5, 1, 2, 32, 0, 0, delta)
    assert bool((tv <= bounds["V_variance_aware"]).all())
    monkeypatch.setattr(prob, "_variance_bound", broken)
    tv, bounds, _, _ = prob._layer_rows(q, k, 0.5, 1, 2, 32, 0, 0, delta)
    assert bool((tv > bounds["V_variance_aware"]).any())


RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


@pytest.mark.parametrize("name", sorted(p.name for p in RESULTS.glob("probabilistic*_cpu.json")))
def test_results_md_prints_the_committed_probabilistic_table_and_its_gates_passed(name):
    """Claim guard: bench/RESULTS.md's table is the one rendered from the committed result, whose
    gates (registered before the run) are re-evaluated here from its per-layer records."""
    import json

    result = json.loads((RESULTS / name).read_text())
    if result.get("long_only"):
        assert result["prompts"] == 1 and result["long_prompt_tokens"] >= 1500
    assert prob.markdown(result) in (RESULTS.parent / "RESULTS.md").read_text()
    gates = json.loads((RESULTS / result["gates_file"]).read_text())
    assert gates == result["gates"]
    records = result["records"]
    assert records and all(r["realizations"] >= gates["realizations_min"] for r in records)
    assert sum(sum(r["bound_violations"].values()) for r in records) <= gates["bound_violations_max"]
    assert sum(sum(r["radius_violations"].values()) for r in records) <= gates["radius_violations_max"]
    assert set(result["table"]) == set(prob.FAMILIES)
