"""Proven float64 error bounds of the measured constants (the trust boundary, in code).

Every measured constant that enters a theorem is a float64 value computed by a torch meter and
then rounded outward by :func:`witprobe.calculus.rounding.up` (relative margin
``REL_MARGIN = 2**-30``). This module states, as exact rationals, how far below its real value
the float64 value can be, so that derivation can check that the margin dominates and fail
closed when it does not. The analysis is written out in ``docs/TRUST_BOUNDARY.md``; this is its
single encoding.

Model (Higham, *Accuracy and Stability of Numerical Algorithms*, ch. 2-3): ``u = 2**-53``; every
float64 ``+ - * / sqrt`` returns ``(x op y)(1 + d)`` with ``|d| <= u``; a sum of ``m``
nonnegative terms (any order, with or without FMA) and a square norm of length ``m`` lie within
the factors ``(1 -+ u)**m`` of the exact value. Assumption A1: ``exp`` and ``expm1`` are within
2 ulp (relative ``4u``; Sleef's u10 and CUDA's double routines document 1 ulp). Inputs are float32/bfloat16/float16 tensors, so no float64 operation
of the norm and score pipeline underflows or overflows (the document proves this); the one
place where underflow can occur (tiny softmax probabilities) gets an absolute floor.

Main results (``Sizes`` = longest vector width ``L``, bands ``nb``, score components, keys ``n``):

- :func:`q_coef_count`, :func:`w_max_count`, :func:`c_max_count`: rounding counts ``k`` with
  ``computed >= exact * (1 - u)**k``; the relative deficit is at most :func:`gamma` ``(k)``.
- :func:`eform_rel` and :func:`eform_floor`: ``E_{p'}[e^c] - 1 <= computed * (1 + eform_rel)
  + eform_floor`` given the served-score error ``delta``, the score magnitude and ``C``.
- :func:`selection_rel` and :func:`selection_floor`: the same for the selection bound ``b_S``.
- :func:`margin_problems`: the fail-closed check derivation runs per layer.
- :func:`allowance`: ``gamma(k)`` as a float rounded up and inflated by ``1 + 2**-20``, for the
  error allowances that the meters add in float64 (score errors, the latent effective query).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from witprobe.calculus.rounding import REL_MARGIN

U64 = Fraction(1, 1 << 53)  # unit roundoff of float64
U32 = Fraction(1, 1 << 24)  # unit roundoff of float32 (the DeepSeek-V4 page scorer computes in float32)
EXP_REL = 4 * U64  # assumption A1: exp and expm1 within 2 ulp (vendors document 1), i.e. relative 4u
SAFETY = Fraction(1, 1 << 20)  # inflation of float64-evaluated allowances (covers their own rounding)
LOG2_E_UP = Fraction(14427, 10000)  # > log2(e) = 1.442695...
SUBNORMAL_EXP = 1019  # 2**-1019 > 4 * 2**-1021: absolute floor unit for underflowed probabilities
LEGACY_LATENT_WIDTH = 1 << 14  # assumed latent width for schema-1 runs, which do not record it


class FloatBoundError(ValueError):
    """A size or magnitude is outside the range where the analysis applies."""


def gamma(k: int, unit: Fraction = U64) -> Fraction:
    """``gamma_k = k u / (1 - k u)``; bounds ``(1 - u)**-k - 1`` and ``(1 + u)**k - 1``."""
    if k < 0:
        raise FloatBoundError(f"rounding count must be nonnegative, got {k}")
    if k * unit >= 1:
        raise FloatBoundError(f"rounding count {k} is outside the range k * u < 1")
    return k * unit / (1 - k * unit)


def _float_up(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def allowance(k: int, unit: Fraction = U64) -> float:
    """``gamma_k * (1 + SAFETY)`` as a float rounded up (a multiplier for error allowances).

    A meter multiplies it with float64 norms and products of nonnegative numbers, whose own
    relative error ``k' u`` is far below ``SAFETY`` for every width below ``2**30``; the product
    is then at or above ``gamma_k`` times the exact driver.
    """
    return _float_up(gamma(k, unit) * (1 + SAFETY))


# --- rounding counts (computed >= exact * (1 - u)**count) --------------------------------------


@dataclass(frozen=True)
class Sizes:
    """The sizes the bounds depend on, per layer.

    Attributes
    ----------
    width:
        ``L``: the longest vector whose norm or dot product the meter evaluates (head dimension,
        latent width, rope width, the no-rope query width).
    bands:
        ``nb``: bands per vector (the configured count; ``bands_for`` only lowers it).
    components:
        Score components: 1 (dense KV, DeepSeek-V4), 2 (latent: latent and rope key).
    keys:
        ``n``: keys in one softmax row, the sink column included.
    """

    width: int
    bands: int
    components: int
    keys: int

    def __post_init__(self) -> None:
        for name in ("width", "bands", "components", "keys"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise FloatBoundError(f"sizes: {name} must be a positive integer, got {v!r}")


def band_norm_count(width: int) -> int:
    """Band norm ``||v_b||`` of a band of at most ``width`` entries: ``ceil(m/2) + 2``.

    Covers ``||Delta_b||`` from float64 differences (one rounding per entry, squared inside the
    root), a query band of exact inputs (one count to spare), and the latent effective query,
    whose computed norm gets its cancellation allowance added (one more rounding).
    """
    return -(-width // 2) + 2


def q_coef_count(s: Sizes) -> int:
    """``scale * sqrt(sum_b ||q_b||**2)``: squares, ``nb - 1`` additions, root, scale."""
    nc = band_norm_count(s.width)
    return -(-(2 * nc + 1 + s.bands - 1) // 2) + 2


def w_max_count(s: Sizes) -> int:
    """``W_t = sum_components sum_b ||Delta_{t,b}||``; the maximum over keys and rows is exact."""
    return band_norm_count(s.width) + (s.bands - 1) + (s.components - 1)


def c_max_count(s: Sizes) -> int:
    """``c_t = sum_components scale * sum_b ||q_b|| ||Delta_{t,b}||``: products, sums, scale."""
    nc = band_norm_count(s.width)
    return 2 * nc + 1 + (s.bands - 1) + 1 + (s.components - 1)


def exp_up(y: Fraction) -> Fraction:
    """Rational upper bound of ``e**y`` for ``0 <= y < 1``: ``1/(1 - y)`` (as ``e**-y >= 1 - y``)."""
    if y < 0 or y >= 1:
        raise FloatBoundError(f"exponent {float(y):.3g} outside [0, 1) for the error bound")
    return 1 / (1 - y)


def _softmax_deficit(keys: int, score_abs_max: Fraction) -> Fraction:
    """Lower factor of ``p_hat_t / softmax(s_hat)_t`` for torch's float64 softmax over ``keys``.

    ``exp(s - max)``: the subtraction errs by at most ``u * 2 M`` (``M = max |s_hat|``), exp by
    ``EXP_REL``; the sum of ``keys`` terms by ``(1 + u)**(keys - 1)``; the normalization (a division,
    or a reciprocal and a product) by ``(1 - u)**2``. The inverse of the returned factor is the
    relative bound.
    """
    u = U64
    # the denominator is at least 1 (the maximum's own term); underflowed terms add at most
    # keys * 2**-1074 to it, a relative 2**-1000 for every keys < 2**74
    lo = (1 - EXP_REL) * (1 - u) ** 2 / ((1 + EXP_REL) * (1 + gamma(keys - 1)) * (1 + Fraction(1, 1 << 1000)))
    return lo / exp_up(4 * u * score_abs_max)


def eform_rel(s: Sizes, score_err: Fraction, score_abs_max: Fraction, c_max: Fraction) -> Fraction:
    """Relative bound: ``x_exact <= x_computed * (1 + eform_rel)`` up to :func:`eform_floor`.

    ``x = sum_t p'_t (e^{c_t} - 1)``, computed as ``sum(p_hat * expm1(c_hat))``: every term is
    nonnegative (no cancellation). ``score_err`` bounds ``|s_hat'_t - s'_t|`` (the served scores'
    float64 error, so ``p_hat/p' >= e^{-2 delta}`` times the softmax deficit), ``c_max`` bounds
    the real ``c_t`` (``expm1(lambda c) >= expm1(c) (1 - (1 - lambda)(1 + c))`` for ``lambda <= 1``).
    """
    u = U64
    k_c = c_max_count(s)
    arg = 1 - k_c * u * (1 + c_max)
    if arg <= 0:
        raise FloatBoundError(f"e-form: c_max {float(c_max):.3g} too large for the expm1 argument bound")
    lam = (_softmax_deficit(s.keys, score_abs_max) / exp_up(2 * score_err) * arg * (1 - EXP_REL)
           * (1 - s.keys * u))  # (1 - u)**keys >= 1 - keys u: product rounding, keys - 1 additions
    return 1 / lam - 1


def boxsup_rel(keys: int, score_err: Fraction, score_abs_max: Fraction) -> Fraction:
    """Relative error of the box-sup bound's centre: ``p'_t <= p_hat_t (1 + boxsup_rel)``.

    The meter (:mod:`witprobe.probe.box_sup`) evaluates ``Psi`` at the float64 softmax
    ``p_hat`` of the computed served scores, which differ from the real ones by at most
    ``score_err`` (L5: a factor ``e^{2 delta}``) and carry the softmax deficit. ``Psi`` is linear in
    the centre with nonnegative coefficients, so the bound scales by ``1 + boxsup_rel``; the meter
    widens the ``1/Z`` range by ``2**-20``, which covers the same error of ``Z`` while
    ``boxsup_rel <= 2**-21`` (:func:`boxsup_problems`).
    """
    return exp_up(2 * score_err) / _softmax_deficit(keys, score_abs_max) - 1


BOXSUP_RANGE_LIMIT = Fraction(1, 1 << 21)  # half the meter's widening of the 1/Z range (2**-20)


def boxsup_problems(keys: int, score_err: Fraction, score_abs_max: Fraction) -> list[str]:
    """Why the box-sup bound's float64 analysis does not apply to a layer (empty when it does)."""
    try:
        rel = boxsup_rel(keys, score_err, score_abs_max)
    except FloatBoundError as e:
        return [f"float64 error analysis of the box-sup bound does not apply: {e}"]
    if rel > BOXSUP_RANGE_LIMIT:
        return [f"boxsup: centre error {float(rel):.3g} exceeds the meter's range margin {float(BOXSUP_RANGE_LIMIT):.3g} "
                f"(keys {keys})"]
    return []


def boxsup_floor(keys: int, c_max: Fraction) -> Fraction:
    """Absolute floor for underflowed centre probabilities: each carries a coefficient ``<= e^{2C}``."""
    return _floor(keys, 2 * c_max + 1)


def _floor(keys: int, exponent: Fraction) -> Fraction:
    """``keys * 2**-1019 * 2**(ceil(exponent * log2 e) + 1)``, at least ``4 keys 2**-1021 e**exponent``."""
    k = max(math.ceil(exponent * LOG2_E_UP), 0) + 1
    return Fraction(keys << k, 1 << SUBNORMAL_EXP)


def eform_floor(keys: int, c_max: Fraction) -> Fraction:
    """Absolute floor for underflowed probabilities: ``keys * 2**-1019 * e**C``.

    A probability whose ``exp(s - max)`` falls below ``2**-1022`` is computed with an absolute
    error only; its true value is below ``2**-1021``, so the terms it feeds sum to less than
    ``keys * 2**-1021 * e**C`` (plus ``2**-1075`` per underflowed product).
    """
    return _floor(keys, c_max)


def selection_rel(keys: int, score_abs_max: Fraction, eps_max: Fraction) -> Fraction:
    """Relative bound of ``b_S = (m_in + m_out)/2`` from the float64 selection meter.

    The selector distribution is the softmax of the served selector scores as computed (the
    values the selection is decided on); ``m_out`` terms are ``min(1, p'_u e^{eps_u + eps_max})``.
    Radii already include every score and comparison rounding (:func:`allowance`), so the only
    errors are the softmax deficit, ``exp`` of a rounded sum (``e^{-2 u eps_max}``, ``EXP_REL``), one
    product, ``keys - 1`` additions and the final addition.
    """
    u = U64
    lam = (_softmax_deficit(keys, score_abs_max) / exp_up(2 * u * eps_max) * (1 - EXP_REL)
           * (1 - (keys + 1) * u))  # Bernoulli: (1 - u)**k >= 1 - k u
    return 1 / lam - 1


def selection_floor(keys: int, eps_max: Fraction) -> Fraction:
    """Absolute floor of ``b_S`` for underflowed selector probabilities: ``keys * 2**-1019 * e**(2 eps_max)``."""
    return _floor(keys, 2 * eps_max)


@dataclass(frozen=True)
class Magnitudes:
    """Per-layer recorded magnitudes (``None`` where the run does not record them)."""

    score_err: Fraction | None = None  # max over rows of the served-score error bound delta
    score_abs_max: Fraction | None = None  # max |s_hat'| over rows and visible keys (sink included)
    c_max: Fraction = Fraction(0)  # outward-rounded max c_t


def layer_bounds(s: Sizes, mag: Magnitudes) -> dict[str, Fraction]:
    """The proven relative bound of each read constant of one layer (missing magnitudes as 0)."""
    return {
        "q_coef": gamma(q_coef_count(s)),
        "w_max": gamma(w_max_count(s)),
        "c_max": gamma(c_max_count(s)),
        "eform_excess": eform_rel(s, mag.score_err or Fraction(0), mag.score_abs_max or Fraction(0), mag.c_max),
    }


def margin_problems(s: Sizes, mag: Magnitudes, margin: Fraction = REL_MARGIN) -> list[str]:
    """Names of the constants whose proven relative error is not dominated by ``margin``.

    An argument outside the analysed range is a problem too (fail closed), never an exception.
    """
    try:
        bounds = layer_bounds(s, mag)
    except FloatBoundError as e:
        return [f"float64 error analysis does not apply: {e}"]
    return [f"{name}: proven float64 error {float(b):.3g} exceeds the outward margin {float(margin):.3g} "
            f"(width {s.width}, bands {s.bands}, keys {s.keys})" for name, b in bounds.items() if b > margin]


def selection_problems(keys: int, score_abs_max: Fraction, eps_max: Fraction,
                       margin: Fraction = REL_MARGIN) -> list[str]:
    """Like :func:`margin_problems`, for the selection bound ``b_S``."""
    try:
        b = selection_rel(keys, score_abs_max, eps_max)
    except FloatBoundError as e:
        return [f"float64 error analysis of b_S does not apply: {e}"]
    if b > margin:
        return [f"b_S: proven float64 error {float(b):.3g} exceeds the outward margin {float(margin):.3g} (keys {keys})"]
    return []
