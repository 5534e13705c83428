"""Outward rounding: every rational bound is at or above the real value it stands for."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from witprobe.calculus import rounding
from witprobe.calculus.contracts import TransferKind, transfer_check_units


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_up_is_an_upper_bound(x):
    assert rounding.up(x) >= Fraction(x)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1e-300, -1.0])
def test_up_refuses_nonfinite_and_negative(bad):
    with pytest.raises(rounding.RoundingError):
        rounding.up(bad)


@given(st.fractions(min_value=0, max_value=1000, max_denominator=10**6))
def test_units_round_up(x):
    u = rounding.to_units_up(x)
    assert rounding.from_units(u) >= x > rounding.from_units(u - 1) or (x == 0 and u == 0)


@given(st.fractions(min_value=0, max_value=20, max_denominator=2**20))
def test_exp_upper_bounds_exp_tightly(t):
    e = rounding.exp_upper(t)
    assert float(e) >= math.exp(float(t)) * (1 - 1e-15)
    # (1 - t/N)^(-N) overshoots e^t by about t^2/(2N)
    assert float(e) <= math.exp(float(t)) * math.exp(float(t) ** 2 / 1024 + 1e-12) + 2.0**-47


def test_exp_upper_is_the_least_accepted_witness():
    for t_num, t_den in [(0, 1), (1, 3), (7, 2), (1000, 1)]:
        e = rounding.exp_upper_units(t_num, t_den)
        assert rounding.exp_upper_ok(t_num, t_den, e)
        assert not rounding.exp_upper_ok(t_num, t_den, e - 1)
    with pytest.raises(rounding.RoundingError, match="range"):
        rounding.exp_upper_units(1024, 1)
    assert not rounding.exp_upper_ok(1024, 1, 10**400)


@given(st.integers(min_value=0, max_value=8 * rounding.UNIT))
def test_transfer_steps_bound_the_real_functions(u):
    x = u / rounding.UNIT
    for kind, f in [
        (TransferKind.SOFTMAX_TV, lambda x: (math.exp(2 * x) - 1) / 2),
        (TransferKind.CENTRED_TV, lambda x: math.tanh(x / 4)),
        (TransferKind.EFORM_TV, lambda x: x + x * x / 2),
    ]:
        v, aux = kind.step_units(u)
        assert transfer_check_units(kind, u, v, aux)
        assert v / rounding.UNIT >= f(x) * (1 - 1e-12)
        if v > 0:
            assert not transfer_check_units(kind, u, v - 1, aux) or kind is TransferKind.SOFTMAX_TV and aux <= 2 * (v - 1) + rounding.UNIT


def test_decimal_display_rounds_up():
    assert rounding.decimal_up(Fraction(1, 3), 4) == "0.3334"
    assert rounding.decimal_up(Fraction(1, 4), 2) == "0.25"
    assert rounding.parse_fraction(rounding.fraction_text(Fraction(-7, 9))) == Fraction(-7, 9)
    for bad in ("1/0", "a/b", "1.5", "1/2/3"):
        with pytest.raises(ValueError):
            rounding.parse_fraction(bad)


def test_a_negative_measured_value_is_never_an_error_bound():
    from fractions import Fraction

    from witprobe.calculus import rounding

    for bad in (Fraction(-1, 3), -2, -1e-9):
        with pytest.raises(rounding.RoundingError, match="negative"):
            rounding.up(bad, what="w_max")


def test_the_exp_check_refuses_a_nonpositive_denominator():
    from witprobe.calculus import rounding

    assert not rounding.exp_upper_ok(0, 0, rounding.UNIT)
    assert not rounding.exp_upper_ok(1, -1, 10 * rounding.UNIT)
    assert not rounding.exp_upper_ok(-2 * rounding.EXP_N, -1, 10 * rounding.UNIT)  # t = 2N as -2N / -1


@pytest.mark.parametrize("bad", [Fraction(-1, 3), Fraction(-1, 1 << 60)])
def test_a_negative_rational_has_no_unit_representation(bad):
    """``to_units_up`` rounds nonnegative bounds up; a negative value is refused, never floored to a
    negative unit count (which would pass for a bound below 0)."""
    with pytest.raises(rounding.RoundingError, match="no unit representation"):
        rounding.to_units_up(bad)
    assert rounding.to_units_up(Fraction(0)) == 0


@pytest.mark.parametrize("bad", [5, 1.5, None, b"1/2", "1/2/3", "12", "1/0", "a/2", "1/-2"])
def test_parse_fraction_refuses_anything_but_int_over_int_with_a_value_error(bad):
    """Callers catch ``ValueError`` to fail closed on a malformed exact rational (``o_proj.opnorm_upper``):
    a number, ``None`` or bytes must raise it too, not an ``AttributeError``."""
    with pytest.raises(ValueError, match="expected an exact rational"):
        rounding.parse_fraction(bad)
    assert rounding.parse_fraction("-3/4") == Fraction(-3, 4)


def test_decimal_up_prints_zero_and_negative_values_with_the_right_sign():
    assert rounding.decimal_up(Fraction(0)) == "0.000000"
    assert rounding.decimal_up(Fraction(1, 3)) == "0.333334"
    assert rounding.decimal_up(Fraction(-1, 3)) == "-0.333333"  # up: toward +infinity
    assert rounding.decimal_up(Fraction(-5, 2), 1) == "-2.5"


def test_narrow_rounds_toward_the_asked_side_and_round_to_nearest_would_not():
    """``narrow`` is the one directed narrowing of float64 to float32/float16 (witness norms, trace
    thresholds): every result lies on the asked side of its input. Round to nearest alone (the step
    it corrects) lands on the wrong side for about half of random inputs."""
    import numpy as np

    from witprobe.calculus.rounding import narrow

    x = np.random.default_rng(0).random(4096) * 10
    for dtype in (np.float32, np.float16):
        up, down = narrow(x, dtype, up=True), narrow(x, dtype, up=False)
        assert up.dtype == dtype and down.dtype == dtype
        assert (up.astype(np.float64) >= x).all() and (down.astype(np.float64) <= x).all()
        assert (up.astype(np.float64) - down.astype(np.float64) >= 0).all()
        nearest = x.astype(dtype).astype(np.float64)
        assert (nearest < x).mean() > 0.3 and (nearest > x).mean() > 0.3
