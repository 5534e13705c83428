"""The Python mirrors of the decidable Lean checks agree with the paper's worked numbers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from witprobe.ledger.budget import telescoping_delta, telescoping_spend, two_layer_spend
from witprobe.ledger.sentinel import detection_rounds, miss_probability, misses_within


@pytest.mark.parametrize("k", [0, 1, 2, 3, 10, 99, 1000])
def test_telescoping_spend_closed_form(k):
    d = Fraction(1, 100)
    assert telescoping_spend(d, k) == d * k / (k + 1)
    assert sum((telescoping_delta(d, i) for i in range(k)), Fraction(0)) == telescoping_spend(d, k)
    assert telescoping_spend(d, k) < d


def test_telescoping_matches_lean_pairs():
    # Lean `tsum`: (0,1), then qadd with (1, (i+1)(i+2)); `telescope_examples` decides k = 1, 2, 3
    num, den = 0, 1
    for i in range(6):
        num, den = num * ((i + 1) * (i + 2)) + den, den * ((i + 1) * (i + 2))
        assert Fraction(num, den) == telescoping_spend(Fraction(1), i + 1)
    assert telescoping_spend(Fraction(1), 1) == Fraction(1, 2)
    assert telescoping_spend(Fraction(1), 2) == Fraction(2, 3)


def test_two_layer_deterministic_events_cost_nothing():
    d = Fraction(1, 100)
    assert two_layer_spend(d, [True, False, True]) == d * Fraction(2, 3)  # Lean `two_layer_example`
    assert two_layer_spend(d, [False] * 50) == 0
    assert two_layer_spend(d, [True, False, False, True, False]) == telescoping_spend(d, 2)


@pytest.mark.parametrize(
    "r, rounds, q",
    [(32, 148, "0.9692"), (64, 74, "0.9394"), (128, 37, "0.8824"), (256, 19, "0.7787")],
)
def test_sentinel_worked_numbers(r, rounds, q):
    delta = Fraction(1, 100)
    assert detection_rounds(1024, 1, r, delta) == rounds
    assert f"{float(miss_probability(1024, 1, r)):.4f}" == q
    # minimality, exactly as the Lean theorems `sentinel_rounds_r*` decide it
    assert misses_within(1024, 1, r, rounds, delta)
    assert not misses_within(1024, 1, r, rounds - 1, delta)


def test_sentinel_cross_multiplied_form_matches_lean():
    # Lean `missWithin M B r n dNum dDen`: ((M-B)^r)^n * dDen <= (M^r)^n * dNum
    def miss_within(M, B, r, n, dn, dd):
        return ((M - B) ** r) ** n * dd <= (M**r) ** n * dn

    for r, n in [(32, 148), (64, 74), (128, 37), (256, 19)]:
        assert miss_within(1024, 1, r, n, 1, 100) == misses_within(1024, 1, r, n, Fraction(1, 100))
        assert miss_within(1024, 1, r, n - 1, 1, 100) == misses_within(1024, 1, r, n - 1, Fraction(1, 100))
    assert not miss_within(1024, 0, 32, 148, 1, 100)  # Lean `sentinel_needs_corruption`
    with pytest.raises(ValueError):
        detection_rounds(1024, 0, 32, Fraction(1, 100))
