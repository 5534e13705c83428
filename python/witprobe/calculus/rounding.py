"""Outward rounding at the trust boundary.

Measured floats become exact rationals here, and every upper bound is rounded *up*:

- :func:`up` turns a measured, nonnegative float (computed in float64 by a meter) into a
  :class:`~fractions.Fraction` inflated by the relative margin ``REL_MARGIN = 2**-30``. That the
  margin dominates the float64 error of every measured constant is proved in
  ``docs/TRUST_BOUNDARY.md`` and checked per layer by derivation with
  :mod:`witprobe.calculus.float_error` (fail closed outside the analysed sizes). NaN, infinities
  and negative values are refused (fail closed).
- Bounds that reach Lean are nonnegative integers in *units* of ``2**-UNIT_BITS``
  (:func:`to_units_up` rounds up, so a unit value is never below the real one).
- ``exp`` is bounded above by the rational ``(1 - t/N)**(-N)`` with ``N = EXP_N = 1024``, valid for
  ``0 <= t < N`` because ``e**(-s) >= 1 - s`` for every real ``s``; raising ``e**(-t/N) >= 1 - t/N``
  to the power ``N`` and inverting gives ``e**t <= (N/(N - t))**N``. The relative overshoot is
  about ``t**2/(2N)``. The Lean kernel checks exactly this inequality per run
  (``Witprobe.expUpperOk``); its real-analysis meaning is stated in the optional Mathlib module.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

UNIT_BITS = 48
UNIT = 1 << UNIT_BITS
REL_MARGIN = Fraction(1, 1 << 30)
EXP_N = 1024


class RoundingError(ValueError):
    """A value cannot be rounded outward (NaN, infinite, negative, or out of range)."""


def up(x: float | int | Fraction, *, what: str = "value") -> Fraction:
    """Exact upper bound of a measured nonnegative float: ``Fraction(x) * (1 + REL_MARGIN)``.

    Integers and Fractions are exact and returned unchanged.
    """
    if isinstance(x, bool):
        raise RoundingError(f"{what}: expected a number, got a bool")
    if isinstance(x, Fraction):
        if x < 0:
            raise RoundingError(f"{what}: negative value {x} cannot be an error bound")
        return x
    if isinstance(x, int):
        if x < 0:
            raise RoundingError(f"{what}: negative value {x} cannot be an error bound")
        return Fraction(x)
    if not isinstance(x, float):
        raise RoundingError(f"{what}: expected a float, got {type(x).__name__}")
    if math.isnan(x) or math.isinf(x):
        raise RoundingError(f"{what}: {x} is not a finite measurement")
    if x < 0:
        raise RoundingError(f"{what}: negative value {x} cannot be an error bound")
    return Fraction(x) * (1 + REL_MARGIN)


def to_units_up(x: Fraction) -> int:
    """``ceil(x * 2**UNIT_BITS)`` for a nonnegative rational."""
    if x < 0:
        raise RoundingError(f"negative value {x} has no unit representation")
    num = x.numerator * UNIT
    return -((-num) // x.denominator)


def from_units(n: int) -> Fraction:
    """The rational value of ``n`` units."""
    return Fraction(n, UNIT)


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for integers with ``b > 0``."""
    if b <= 0:
        raise ValueError("ceil_div needs a positive divisor")
    return -((-a) // b)


def exp_upper_units(t_num: int, t_den: int) -> int:
    """Least ``E`` (in units) with ``E * (N*t_den - t_num)**N >= UNIT * (N*t_den)**N``.

    That is, ``E / UNIT >= (1 - t/N)**(-N) >= e**t`` for ``t = t_num / t_den``. This is exactly the
    inequality ``Witprobe.expUpperOk`` decides in the kernel, so a value produced here always
    passes there.
    """
    if t_num < 0 or t_den <= 0:
        raise RoundingError(f"exp argument {t_num}/{t_den} must be a nonnegative rational")
    big = EXP_N * t_den
    if t_num >= big:
        raise RoundingError(f"exp argument {t_num}/{t_den} is outside the certified range [0, {EXP_N})")
    return ceil_div(UNIT * big**EXP_N, (big - t_num) ** EXP_N)


def exp_upper_ok(t_num: int, t_den: int, e_units: int) -> bool:
    """The kernel's check, mirrored: ``E * (N*t_den - t_num)**N >= UNIT * (N*t_den)**N``."""
    if t_den <= 0:
        return False
    big = EXP_N * t_den
    if t_num >= big:
        return False
    return e_units * (big - t_num) ** EXP_N >= UNIT * big**EXP_N


def exp_upper(t: Fraction) -> Fraction:
    """A rational upper bound of ``e**t`` on the unit grid (see module docstring)."""
    return from_units(exp_upper_units(t.numerator, t.denominator))


def decimal_up(x: Fraction, digits: int = 6) -> str:
    """Decimal string of ``x`` rounded *up* at ``digits`` places (for display of bounds)."""
    scale = 10**digits
    n = ceil_div(x.numerator * scale, x.denominator)
    sign = "-" if n < 0 else ""
    n = abs(n)
    return f"{sign}{n // scale}.{n % scale:0{digits}d}"


def fraction_text(x: Fraction) -> str:
    """Exact ``num/den`` text of a rational (round-trips through :func:`parse_fraction`)."""
    return f"{x.numerator}/{x.denominator}"


def parse_fraction(text: str) -> Fraction:
    """Inverse of :func:`fraction_text`; refuses anything but ``int/int`` with a positive denominator."""
    if not isinstance(text, str) or text.count("/") != 1:
        raise ValueError(f"expected an exact rational 'num/den', got {text!r}")
    num, den = text.split("/")
    if not (num.lstrip("-").isdigit() and den.isdigit()) or int(den) == 0:
        raise ValueError(f"expected an exact rational 'num/den', got {text!r}")
    return Fraction(int(num), int(den))


def narrow(x: np.ndarray, dtype: type, up: bool) -> np.ndarray:
    """``x`` (float64) in the narrower float ``dtype``, rounded toward ``+inf`` (``up``) or ``-inf``.

    Round to nearest, then step one ulp where that went the wrong way, so every result is ``>= x``
    (``up``) or ``<= x``. A value past the format's range becomes ``+-inf`` the same way.
    """
    h = np.asarray(x, dtype=np.float64).astype(dtype)
    wrong = h.astype(np.float64) < x if up else h.astype(np.float64) > x
    h[wrong] = np.nextafter(h[wrong], dtype(np.inf if up else -np.inf))
    return h
