"""The e-process drift sentinel (paper 5.5)."""

import math

import numpy as np
import pytest

from witprobe.ledger.eprocess import EProcess, log_factors


def test_normalized_factor_is_two_z_minus_half():
    rng = np.random.default_rng(0)
    c = rng.uniform(0.1, 10, 100)
    m = rng.uniform(0, 5, 100)
    w = m + rng.normal(0, 1, 100)
    z = (w - m) / np.sqrt(c)
    assert np.allclose(log_factors(w, m, c), 2 * z - 0.5)
    with pytest.raises(ValueError, match="C > 0"):
        log_factors(np.ones(1), np.ones(1), np.zeros(1))


def test_max_is_over_post_update_values_and_missing_before_factors():
    e = EProcess()
    assert e.log_m_max is None and e.n_factors == 0
    e.add(np.array([-1.0, -2.0]))
    assert e.log_m_max == -1.0  # never the initial 0
    e.add(np.array([0.5]))
    assert e.log_m == -2.5 and e.log_m_max == -1.0 and not e.crossed


def test_alarm_at_ln_one_over_delta():
    e = EProcess()
    assert math.isclose(e.threshold, math.log(100))
    e.add(np.array([2.0, 2.0]))
    assert not e.crossed
    e.add(np.array([0.7, -10.0]))
    assert e.crossed and e.first_cross_factor == 3


def test_paper_check_value():
    # r3f1b_a4cum: cum_z -5091.924832761288 over 79,662 factors -> log M = 2 cum_z - 0.5 n
    assert abs(2 * -5091.924832761288 - 0.5 * 79662 - (-50014.8497)) < 1e-3


def test_honest_draws_keep_the_process_small():
    """Under the null (W - m <= 0 in mean, sub-Gaussian), Ville's bound: rarely crosses."""
    rng = np.random.default_rng(1)
    crossed = 0
    for _ in range(200):
        e = EProcess()
        c = np.ones(500)
        w = -0.1 + rng.uniform(-0.5, 0.5, 500)  # bounded differences 1, mean below m = 0
        e.add(log_factors(w, np.zeros(500), c))
        crossed += e.crossed
    assert crossed <= 6  # Ville: P(cross) <= 0.01; 200 runs


def test_folding_event_summaries_equals_folding_factors():
    """The journal keeps one FactorSummary per event; folding those reproduces add() bit for bit."""
    from witprobe.ledger.eprocess import EProcess, FactorSummary

    rng = np.random.default_rng(7)
    a, b = EProcess(), EProcess()
    for _ in range(200):
        lg = rng.normal(0.05, 1.3, size=int(rng.integers(0, 40)))
        a.add(lg)
        b.add_summary(FactorSummary.of(lg))
    assert (a.n_factors, a.log_m, a.log_m_max, a.crossed) == (b.n_factors, b.log_m, b.log_m_max, b.crossed)
    assert a.crossed  # the path did cross, so `crossed` was compared on a real event
    with pytest.raises(ValueError):
        b.add_summary(FactorSummary(3, None, 1.0))
