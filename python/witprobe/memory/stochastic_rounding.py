"""Stochastic rounding onto a coarsened FP8 e4m3 grid (mantissa masking): the torch reference.

Paper sections 5.3-5.4. The pool stores entries as FP8 e4m3 *codes* with one power-of-two scale
per entry (``x ~ 2**scale_exp * code``); these are the **exact bytes**. Compression masks the low
``drop_bits`` mantissa bits: every code is moved to a neighbour on the coarse grid whose values
have those bits zero. Byte count is unchanged (precision coarsening, not physical compression).

For one coordinate with exact code value ``v`` and magnitude ``a = |v|``:

- binade exponent ``E = max(floor(log2 a), -6)`` (e4m3: bias 7, 3 mantissa bits, subnormals
  share the step of the lowest normal binade);
- coarse step ``s = 2**(E - 3 + drop_bits)``; grid neighbours ``lo = floor(a / s) * s`` and
  ``hi = lo + s``; position ``theta = (a - lo) / s`` (exact: every quantity is dyadic);
- stochastic rounding serves ``sign * hi`` with probability ``theta`` and ``sign * lo`` otherwise,
  so the conditional mean error is exactly 0 and its variance is ``theta (1 - theta) s**2``;
- **top-of-range clamp**: when ``hi`` exceeds the largest finite coarse value ``MAX_COARSE``
  (e4m3fn has no infinity; ``S.1111.111`` is NaN), the coordinate is rounded down to ``lo``
  deterministically. Its error ``sign * (lo - a)`` is a *deterministic shift*, not random: it has
  no variance and no bounded difference, and it enters the radius as its own term.

Randomness comes from :mod:`witprobe.memory.counter_rng`. The uniform of coordinate ``c`` of the
``j``-th entry of one write event is ``uniforms(key, j * D + c)`` with
``key = stream_key(nonce, uid, layer, counter)``; a Triton kernel reproduces it bit for bit.
Round up iff ``u < theta``; ``u`` is a multiple of ``2**-32`` and ``theta`` a multiple of
``2**-drop_bits``, so ``P(up) = theta`` exactly.

Radius of one entry (pre-draw, from the exact codes alone; units: code units times the entry
scale), for bands ``b`` of contiguous coordinates and the realized witness ``W = sum_b ||d_b||``:

- mean term ``m = sum_b sqrt(sum_{c in b} theta_c (1 - theta_c) s_c**2) >= E[sum_b ||d^rand_b||]``
  (Jensen per band; Lean ``band_mean_le``);
- deterministic term ``det = sum_b ||shift_b||`` (Lean ``det_shift_sound``);
- bounded differences ``C = sum_c s_c**2`` over coordinates with ``0 < theta_c < 1`` (switching one
  coordinate's outcome moves ``W`` by at most ``s_c``, triangle inequality);
- McDiarmid tail at level ``delta``: ``sqrt(2 (C / 4) ln(1 / delta))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from witprobe.memory.counter_rng import MASK32, mix32, stream_key

E4M3_MAX = 448.0
MANTISSA_BITS = 3
MIN_EXP = -6  # binade exponent of the lowest normal; subnormals share its step
TOP_EXP = 8  # binade exponent of the largest finite e4m3fn values (256 .. 448)


class SRError(ValueError):
    """Bad input to the stochastic-rounding codec (the message names what)."""


def max_coarse(drop_bits: int) -> float:
    """Largest finite e4m3fn magnitude whose low ``drop_bits`` mantissa bits are zero."""
    _check_drop(drop_bits)
    top_mantissa = (6 >> drop_bits) << drop_bits  # mantissa 7 at exponent 15 is NaN in e4m3fn
    return (1.0 + top_mantissa / 8.0) * 2.0**TOP_EXP


def _check_drop(drop_bits: int) -> None:
    if isinstance(drop_bits, bool) or not isinstance(drop_bits, int) or not 0 <= drop_bits <= MANTISSA_BITS:
        raise SRError(f"drop_bits must be an integer in [0, {MANTISSA_BITS}], got {drop_bits!r}")


# --- exact bytes: e4m3 codes with one power-of-two scale per entry ---------------------------------


def scale_exponents(x: torch.Tensor) -> torch.Tensor:
    """Least integer ``e`` per entry (last dim) with ``max|x| / 2**e <= 448``; 0 for all-zero entries.

    Returns int64 of shape ``x.shape[:-1]``.
    """
    if not torch.isfinite(x).all():
        raise SRError("entries contain NaN or infinity; refusing to encode them")
    amax = x.detach().to(torch.float64).abs().amax(dim=-1)
    e = torch.ceil(torch.log2(amax.clamp_min(1e-300) / E4M3_MAX)).to(torch.int64)
    # settle the float log2 exactly: smallest e with amax <= 448 * 2**e
    e = torch.where(amax > E4M3_MAX * torch.pow(2.0, e.to(torch.float64)), e + 1, e)
    e = torch.where(amax <= E4M3_MAX * torch.pow(2.0, (e - 1).to(torch.float64)), e - 1, e)
    return torch.where(amax == 0, torch.zeros_like(e), e)


def encode_e4m3(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact bytes of entries ``x`` of shape ``(..., D)``: uint8 e4m3fn codes and int64 scale exponents.

    ``code = RNE_e4m3(x / 2**e)``; the division is exact (power of two) and ``|x / 2**e| <= 448``.
    """
    e = scale_exponents(x)
    scaled = x.detach().to(torch.float64) / torch.pow(2.0, e.to(torch.float64)).unsqueeze(-1)
    codes = scaled.to(torch.float8_e4m3fn).view(torch.uint8)
    return codes, e


def code_values(codes: torch.Tensor) -> torch.Tensor:
    """float64 values of uint8 e4m3fn codes (NaN codes are refused)."""
    if codes.dtype != torch.uint8:
        raise SRError(f"codes must be uint8 e4m3fn bytes, got {codes.dtype}")
    v = codes.view(torch.float8_e4m3fn).to(torch.float64)
    if torch.isnan(v).any():
        raise SRError("codes contain the e4m3fn NaN pattern (0x7f or 0xff)")
    return v


def values_to_codes(v: torch.Tensor) -> torch.Tensor:
    """uint8 e4m3fn codes of float64 values that lie exactly on the e4m3 grid (checked)."""
    codes = v.to(torch.float8_e4m3fn)
    if not torch.equal(codes.to(torch.float64), v):
        raise SRError("values are not exactly representable in e4m3fn")
    return codes.view(torch.uint8)


# --- the coarse grid and its exact two-point law -------------------------------------------------


@dataclass(frozen=True)
class SRGrid:
    """Coarse-grid neighbours of exact code values, all float64 of the values' shape.

    Attributes
    ----------
    value:
        The exact code values ``v``.
    lo, step:
        Magnitudes ``lo`` and ``s`` of the grid neighbours (``hi = lo + step``); ``step`` is 0 on
        clamped coordinates and on coordinates already on the coarse grid.
    theta:
        Probability of rounding up, in ``[0, 1)``; 0 where ``step`` is 0.
    shift:
        Deterministic error ``sign * (lo - |v|)`` on clamped coordinates, 0 elsewhere.
    """

    value: torch.Tensor
    lo: torch.Tensor
    step: torch.Tensor
    theta: torch.Tensor
    shift: torch.Tensor

    @property
    def random(self) -> torch.Tensor:
        """Coordinates whose rounding is random (``0 < theta < 1``)."""
        return self.theta > 0


def coarse_grid(v: torch.Tensor, drop_bits: int) -> SRGrid:
    """Grid neighbours, ``theta`` and clamp shifts of e4m3 values ``v`` (see the module docstring)."""
    _check_drop(drop_bits)
    if v.dtype != torch.float64:
        raise SRError(f"coarse_grid expects float64 code values, got {v.dtype}")
    a = v.abs()
    if (a > E4M3_MAX).any() or torch.isnan(a).any():
        raise SRError(f"code values must be finite with |v| <= {E4M3_MAX}")
    _, k = torch.frexp(a)  # a = m * 2**k, m in [0.5, 1) -> floor(log2 a) = k - 1
    e = torch.clamp(k.to(torch.int64) - 1, min=MIN_EXP)
    s = torch.pow(2.0, (e - MANTISSA_BITS + drop_bits).to(torch.float64))
    lo = torch.floor(a / s) * s
    rem = a - lo
    clamp = (lo + s > max_coarse(drop_bits)) & (rem > 0)
    random = (rem > 0) & ~clamp
    zero = torch.zeros_like(a)
    step = torch.where(random, s, zero)
    theta = torch.where(random, rem / s, zero)
    shift = torch.where(clamp, torch.sign(v) * (lo - a), zero)
    return SRGrid(value=v, lo=lo, step=step, theta=theta, shift=shift)


def round_with(grid: SRGrid, u: torch.Tensor) -> torch.Tensor:
    """Served values given uniforms ``u`` (same shape): up iff ``u < theta``; clamps round down."""
    up = u < grid.theta
    mag = torch.where(up, grid.lo + grid.step, grid.lo)
    return torch.sign(grid.value) * mag


# --- counter-based draws --------------------------------------------------------------------------


def keyed_uniforms(keys: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``counter_rng.uniforms`` with one stream key per element (broadcast): ``mix32(mix32(i) ^ key) / 2**32``.

    Element-wise identical to ``counter_rng.uniforms(key, index)`` for each element's key.
    """
    bits = mix32(mix32(index.to(torch.int64) & MASK32) ^ (keys.to(torch.int64) & MASK32))
    return bits.to(torch.float64) / 4294967296.0


def event_uniforms(nonce: int, uid: int, layer: int, counter: int, n_entries: int, dim: int) -> torch.Tensor:
    """Uniforms ``(n_entries, dim)`` of one write event: position ``j * dim + c`` of its stream."""
    key = stream_key(nonce, uid, layer, counter)
    idx = torch.arange(n_entries * dim, dtype=torch.int64).reshape(n_entries, dim)
    return keyed_uniforms(torch.full_like(idx, key), idx)


# --- radius pieces (pre-draw) and the realized witness ----------------------------------------------


@dataclass(frozen=True)
class RadiusParts:
    """Per-entry pre-draw radius pieces in *real* units (code units times ``2**scale_exp``).

    ``mean``, ``det`` and ``c_sum`` (the bounded-difference constant ``C``) have shape
    ``entries``; the radius at level ``delta`` is ``mean + det + sqrt(C/2 * ln(1/delta))``.
    """

    mean: torch.Tensor
    det: torch.Tensor
    c_sum: torch.Tensor


def _band_view(t: torch.Tensor, bands: int) -> torch.Tensor:
    d = t.shape[-1]
    if bands < 1 or d % bands:
        raise SRError(f"{bands} bands do not divide the entry dimension {d}")
    return t.reshape(*t.shape[:-1], bands, d // bands)


def radius_parts(grid: SRGrid, scale_exp: torch.Tensor, bands: int) -> RadiusParts:
    """Mean term, deterministic term and ``C`` of each entry (last dim = coordinates)."""
    scale = torch.pow(2.0, scale_exp.to(torch.float64))
    var = grid.theta * (1.0 - grid.theta) * grid.step * grid.step
    mean = _band_view(var, bands).sum(-1).sqrt().sum(-1) * scale
    det = _band_view(grid.shift, bands).norm(dim=-1).sum(-1) * scale
    c_sum = (grid.step * grid.step).sum(-1) * scale * scale
    return RadiusParts(mean=mean, det=det, c_sum=c_sum)


def tail_radius(c_sum: torch.Tensor, log_inv_delta: torch.Tensor | float) -> torch.Tensor:
    """McDiarmid tail ``sqrt(2 (C/4) ln(1/delta))`` (``log_inv_delta = ln(1/delta) > 0``)."""
    return torch.sqrt(0.5 * c_sum * log_inv_delta)


def realized_witness(grid: SRGrid, served: torch.Tensor, scale_exp: torch.Tensor, bands: int) -> torch.Tensor:
    """``W = 2**scale_exp * sum_b ||served_b - v_b||`` per entry (float64)."""
    scale = torch.pow(2.0, scale_exp.to(torch.float64))
    return _band_view(served - grid.value, bands).norm(dim=-1).sum(-1) * scale


@dataclass(frozen=True)
class StochasticRoundingE4M3:
    """Mantissa-masking codec with stochastic rounding (paper section 5.4), one verb.

    Parameters
    ----------
    drop_bits:
        Mantissa bits masked (0 to 3; the paper's setting is 2).
    bands:
        Bands of the witness ``W = sum_b ||d_b||``; must divide the entry dimension.
    """

    drop_bits: int = 2
    bands: int = 1

    def __post_init__(self) -> None:
        _check_drop(self.drop_bits)
        if isinstance(self.bands, bool) or not isinstance(self.bands, int) or self.bands < 1:
            raise SRError(f"bands must be a positive integer, got {self.bands!r}")

    @property
    def name(self) -> str:
        return f"e4m3-sr-drop{self.drop_bits}"

    def encode_decode(
        self, codes: torch.Tensor, *, nonce: int, uid: int, layer: int, counter: int
    ) -> torch.Tensor:
        """Masked codes (uint8, same shape ``(n, D)``) of one write event's exact codes."""
        if codes.dim() != 2:
            raise SRError(f"codes must have shape (entries, D), got {tuple(codes.shape)}")
        grid = coarse_grid(code_values(codes), self.drop_bits)
        u = event_uniforms(nonce, uid, layer, counter, codes.shape[0], codes.shape[1])
        return values_to_codes(round_with(grid, u))


def log_inv(delta: float) -> float:
    """``ln(1/delta)`` for ``0 < delta <= 1``."""
    if not 0 < delta <= 1:
        raise SRError(f"delta must lie in (0, 1], got {delta!r}")
    return -math.log(delta)
