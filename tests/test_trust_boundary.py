"""The trust boundary: every measured constant, outward-rounded, is at or above its exact value.

One test per constant that enters a theorem (``q_coef``, ``w_max``, ``c_max``, ``eform_excess``,
the selection bound ``b_S``), each on adversarial inputs, through the production meters (witness
cache layer, observer, accumulators) and compared with the exact value: rationals
(:class:`fractions.Fraction`, square roots bracketed with :func:`math.isqrt`) or mpmath interval
arithmetic. Each asserts ``up(float) >= exact`` and the documented bound of
:mod:`witprobe.calculus.float_error` (docs/TRUST_BOUNDARY.md).
"""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import mpmath
import pytest
import torch

from witprobe.calculus import float_error as fe
from witprobe.calculus.rounding import REL_MARGIN, up
from witprobe.certify.derive import derive
from witprobe.memory.codecs import BandIntCodec, Codec
from witprobe.probe.latent import WitnessLatentLayer
from witprobe.probe.observer import Observer
from witprobe.probe.selector import score_radius, selection_radius, selection_rows
from witprobe.probe.witness_cache import WitnessCache, WitnessKVLayer

ROOT = Path(__file__).resolve().parents[1]
IV = mpmath.iv
IV.prec = 400


# --- exact helpers ---------------------------------------------------------------------------------


def fr(x: float) -> Fraction:
    return Fraction(float(x))


def exact_vec(t: torch.Tensor) -> list[Fraction]:
    return [Fraction(v) for v in t.to(torch.float64).reshape(-1).tolist()]


def sq_norm(xs: list[Fraction]) -> Fraction:
    """Exact ``sum x_i**2`` (integer arithmetic on a common power-of-two denominator)."""
    den = max((x.denominator for x in xs), default=1)  # every float's denominator is a power of two
    return Fraction(sum((x.numerator * (den // x.denominator)) ** 2 for x in xs), den * den)


def sqrt_bounds(a: Fraction, bits: int = 160) -> tuple[Fraction, Fraction]:
    """``lo <= sqrt(a) <= hi`` with ``hi - lo <= 2**-bits / a.denominator``."""
    n, d = a.numerator, a.denominator
    r = math.isqrt(n * d * 4**bits)
    return Fraction(r, d * 2**bits), Fraction(r + (r * r != n * d * 4**bits), d * 2**bits)


def band_norm_bounds(xs: list[Fraction], bands: int) -> list[tuple[Fraction, Fraction]]:
    m = len(xs) // bands
    return [sqrt_bounds(sq_norm(xs[b * m:(b + 1) * m])) for b in range(bands)]


def ivf(x: Fraction):
    return IV.mpf(x.numerator) / IV.mpf(x.denominator)


def upper(x) -> Fraction:
    """The upper endpoint of an mpmath interval, exactly."""
    sign, man, exp, _ = x._mpi_[1]
    v = Fraction(man) * (Fraction(2) ** exp)
    return -v if sign else v


def assert_dominated(name: str, computed: float, exact_hi: Fraction, exact_lo: Fraction, rel: Fraction,
                     floor: Fraction = Fraction(0)) -> None:
    """``up(computed) + floor >= exact`` and the documented bound ``exact <= computed (1 + rel) + floor``."""
    assert rel <= REL_MARGIN, f"{name}: documented bound {float(rel):.3g} is not dominated by the margin"
    assert up(computed) + floor >= exact_hi, f"{name}: up({computed!r}) is below the exact value {float(exact_hi)!r}"
    assert Fraction(computed) * (1 + rel) + floor >= exact_hi, f"{name}: documented error bound violated"
    assert exact_lo <= exact_hi


# --- production paths ------------------------------------------------------------------------------


class _NoRecorder:
    def record_write(self, *args, **kwargs) -> None:
        return None


class FixedCodec(Codec):
    """Serves a prescribed reconstruction (adversarial residuals)."""

    def __init__(self, served: torch.Tensor) -> None:
        object.__setattr__(self, "served", served)

    @property
    def name(self) -> str:
        return "fixed"

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        return self.served.to(x.dtype)


def dense_read(query: torch.Tensor, keys: torch.Tensor, served: torch.Tensor, bands: int, scaling: float,
               sinks: torch.Tensor | None = None) -> dict:
    """Write ``keys`` (served as ``served``) into a dense witness layer, read once, return the read stats."""
    layer = WitnessKVLayer(0, FixedCodec(served), None, bands, _NoRecorder())
    obs = Observer(1)
    obs.attach(WitnessCache([layer]))
    layer.update(keys, torch.zeros_like(keys))
    obs.observe_read(SimpleNamespace(layer_idx=0, num_key_value_groups=1), query, layer.keys, None, scaling,
                     sinks=sinks)
    return obs.snapshot()["read"][0]


def sizes_of(stats: dict, bands: int, components: int = 1) -> fe.Sizes:
    return fe.Sizes(int(stats["fp_width"]["max"]), bands, components, int(stats["keys_visible"]["max"]))


def fp32(x) -> torch.Tensor:
    return torch.as_tensor(x, dtype=torch.float32)


def _adversarial_query(d: int, gen: torch.Generator) -> torch.Tensor:
    """Rows with equal-magnitude entries (rounding errors of one sign) and a 2**-60..2**60 range."""
    same = torch.full((d,), 1 + 2.0**-12)
    wild = torch.randn(d, generator=gen) * torch.exp2(torch.randint(-60, 60, (d,), generator=gen).float())
    return torch.stack([same, wild, same * 3.0**-40]).to(torch.float32).reshape(1, 1, 3, d)


# --- q_coef ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [64, 1 << 16])
def test_q_coef_up_dominates_the_exact_query_coefficient(d):
    gen = torch.Generator().manual_seed(d)
    bands = 4
    q = _adversarial_query(d, gen)
    k = torch.randn(1, 1, 2, d, generator=gen).to(torch.float32)
    scaling = d**-0.5
    st = dense_read(q, k, k * 0.5, bands, scaling)
    exact_sq = max(sq_norm(exact_vec(q[0, 0, r])) for r in range(q.shape[2])) * fr(scaling) ** 2
    lo, hi = sqrt_bounds(exact_sq)
    s = sizes_of(st, bands)
    assert s.width == d
    assert_dominated("q_coef", st["q_coef"]["max"], hi, lo, fe.gamma(fe.q_coef_count(s)))


# --- w_max -----------------------------------------------------------------------------------------


def _adversarial_residual_keys(d: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys and served keys whose float64 differences cancel, or differ in exponent by 2**40."""
    k = (torch.randn(3, d, generator=gen) * 100).to(torch.float32)
    served = k.clone()
    served[0] = torch.nextafter(k[0], torch.full_like(k[0], math.inf))  # Delta = one ulp: total cancellation
    served[1] = (k[1] * 2.0**-40 * (1 + 2.0**-23)).to(torch.float32)  # exponent gap > 28: inexact differences
    served[2, : d // 2] = 0.0  # half a band set to zero, the rest exact (Delta_b = 0 in some bands)
    return k.reshape(1, 1, 3, d), served.reshape(1, 1, 3, d)


def test_fp32_differences_are_exact_in_float64_within_28_binades():
    """The lemma of docs/TRUST_BOUNDARY.md: fp32 a - b is exact in float64 when the quanta differ by <= 2**28."""
    gen = torch.Generator().manual_seed(0)
    n = 4096
    ea = torch.randint(-100, 100, (n,), generator=gen).float()
    a = ((1 + torch.rand(n, generator=gen)) * torch.exp2(ea)).to(torch.float32)
    for gap in (0, 5, 28):  # binades between the operands' leading bits (and so between their quanta)
        sign = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0)
        b = (sign * (1 + torch.rand(n, generator=gen)) * torch.exp2(ea - gap)).to(torch.float32)
        diff = a.double() - b.double()
        assert all(Fraction(x) - Fraction(y) == Fraction(z) for x, y, z in zip(a.tolist(), b.tolist(), diff.tolist()))
    one, tiny = fp32(1.0), fp32(2.0**-40 * (1 + 2.0**-23))
    assert Fraction(float(one.double() - tiny.double())) != 1 - Fraction(float(tiny))  # gap 40: rounded once


@pytest.mark.parametrize("d", [64, 1 << 16])
def test_w_max_up_dominates_the_exact_band_witness(d):
    gen = torch.Generator().manual_seed(d + 1)
    bands = 4
    k, served = _adversarial_residual_keys(d, gen)
    q = torch.randn(1, 1, 2, d, generator=gen).to(torch.float32)
    st = dense_read(q, k, served, bands, d**-0.5)
    his, los = [], []
    for t in range(k.shape[2]):
        delta = [x - y for x, y in zip(exact_vec(k[0, 0, t]), exact_vec(served[0, 0, t]))]
        bb = band_norm_bounds(delta, bands)
        los.append(sum(b[0] for b in bb))
        his.append(sum(b[1] for b in bb))
    s = sizes_of(st, bands)
    assert_dominated("w_max", st["w_max"]["max"], max(his), max(los), fe.gamma(fe.w_max_count(s)))


# --- c_max -----------------------------------------------------------------------------------------


def test_c_max_up_dominates_the_exact_banded_witness_product_dense():
    """Near-tied keys, a 2**+-60 dynamic range in the query, residuals that cancel to one ulp."""
    gen = torch.Generator().manual_seed(7)
    d, bands = 256, 8
    q = _adversarial_query(d, gen)
    k, served = _adversarial_residual_keys(d, gen)
    scaling = d**-0.5
    st = dense_read(q, k, served, bands, scaling)
    best_hi, best_lo = Fraction(0), Fraction(0)
    for r in range(q.shape[2]):
        qb = band_norm_bounds(exact_vec(q[0, 0, r]), bands)
        for t in range(k.shape[2]):
            kb = band_norm_bounds([x - y for x, y in zip(exact_vec(k[0, 0, t]), exact_vec(served[0, 0, t]))], bands)
            best_hi = max(best_hi, fr(scaling) * sum(a[1] * b[1] for a, b in zip(qb, kb)))
            best_lo = max(best_lo, fr(scaling) * sum(a[0] * b[0] for a, b in zip(qb, kb)))
    s = sizes_of(st, bands)
    assert_dominated("c_max", st["c_max"]["max"], best_hi, best_lo, fe.gamma(fe.c_max_count(s)))


class _MLA(SimpleNamespace):
    pass


def _latent_read(c: torch.Tensor, c_hat: torch.Tensor, k_pe: torch.Tensor, w_uk: torch.Tensor,
                 q: torch.Tensor, bands: int, scaling: float) -> tuple[dict, WitnessLatentLayer]:
    heads, nope, r = w_uk.shape
    v = 1
    weight = torch.zeros(heads * (nope + v), r)
    weight.view(heads, nope + v, r)[:, :nope] = w_uk
    module = _MLA(layer_idx=0, qk_nope_head_dim=nope, v_head_dim=v,
                  kv_b_proj=SimpleNamespace(weight=weight.to(torch.float32)))
    layer = WitnessLatentLayer(0, FixedCodec(c_hat), None, bands, _NoRecorder())
    obs = Observer(1)
    obs.attach(WitnessCache([layer]))
    layer.update(c, k_pe)
    key = layer._expand(w_uk.to(torch.float64), layer.keys, layer.values)
    obs.observe_read(module, q, key, None, scaling)
    return obs.snapshot()["read"][0], layer


def test_c_max_up_dominates_under_latent_effective_query_cancellation():
    """``u = W_UK^T q_nope`` cancels to ``2**-60`` while its terms are 1: not a relative error.

    Without the cancellation allowance of the latent read the float64 ``||u_b||`` is below the
    exact one by half (the sum ``1 + 2**-60 - 1 + 2**-60`` loses the first ``2**-60``), and
    ``up(c_max)`` is below the exact ``c_max``.
    """
    heads, nope, r, rope, bands = 1, 4, 4, 2, 1
    w_uk = torch.zeros(heads, nope, r)
    w_uk[0, :, 0] = torch.tensor([1.0, 2.0**-60, -1.0, 2.0**-60])
    q = torch.zeros(1, heads, 1, nope + rope)
    q[0, 0, 0, :nope] = 1.0
    c = fp32([[[[1.0, 0.0, 0.0, 0.0]]]])
    c_hat = fp32([[[[0.5, 0.0, 0.0, 0.0]]]])
    k_pe = torch.zeros(1, 1, 1, rope)
    st, _ = _latent_read(c, c_hat, k_pe, w_uk, q, bands, 1.0)
    u_exact = [sum(Fraction(float(w_uk[0, i, j])) * Fraction(float(q[0, 0, 0, i])) for i in range(nope)) for j in range(r)]
    lo, hi = sqrt_bounds(sq_norm(u_exact))
    dc = Fraction(1, 2)  # ||Delta c|| (one band)
    s = sizes_of(st, bands, components=2)
    assert_dominated("c_max (latent)", st["c_max"]["max"], hi * dc, lo * dc, fe.gamma(fe.c_max_count(s)))
    assert_dominated("q_coef (latent)", st["q_coef"]["max"], hi, lo, fe.gamma(fe.q_coef_count(s)))


# --- eform_excess ----------------------------------------------------------------------------------


def _exact_eform(q: torch.Tensor, served: torch.Tensor, keys: torch.Tensor, bands: int, scaling: float,
                 sinks: float | None = None, mult: list[int] | None = None):
    """Exact ``sum_t p'_t (e^{c_t} - 1)`` (mpmath intervals, 400 bits) for one query row.

    ``mult[t]`` repeats key ``t`` that many times (long rows without long exact sums).
    """
    qv = exact_vec(q.reshape(-1))
    qb = band_norm_bounds(qv, bands)
    n_keys = served.shape[-2]
    mult = mult or [1] * n_keys
    scores, cs = [], []
    for t in range(n_keys):
        kv = exact_vec(served.reshape(n_keys, -1)[t])
        scores.append(fr(scaling) * sum(a * b for a, b in zip(qv, kv)))
        dl = [x - y for x, y in zip(exact_vec(keys.reshape(n_keys, -1)[t]), kv)]
        db = band_norm_bounds(dl, bands)
        cs.append(fr(scaling) * sum(a[1] * b[1] for a, b in zip(qb, db)))  # upper bound of the exact c_t
    top = max(scores + ([fr(sinks)] if sinks is not None else []))
    weights = [m * IV.exp(ivf(s - top)) for s, m in zip(scores, mult)]
    z = sum(weights, IV.mpf(0)) + (IV.exp(ivf(fr(sinks) - top)) if sinks is not None else 0)
    x = sum((w * (IV.exp(ivf(c)) - 1) for w, c in zip(weights, cs)), IV.mpf(0)) / z
    return upper(x), max(cs)


def _assert_eform(st: dict, exact: Fraction, bands: int, c_hi: Fraction, components: int = 1) -> None:
    s = sizes_of(st, bands, components)
    mags = fe.Magnitudes(fr(st["score_err"]["max"]), fr(st["score_abs_max"]["max"]), up(st["c_max"]["max"]))
    assert up(st["c_max"]["max"]) >= c_hi
    floor = fe.eform_floor(s.keys, mags.c_max)
    assert_dominated("eform_excess", st["eform_excess"]["max"], exact, Fraction(0),
                     fe.eform_rel(s, mags.score_err, mags.score_abs_max, mags.c_max), floor)


def test_eform_excess_dominates_with_near_ties_and_cancelling_scores():
    """Scores ``q . k'`` that cancel (terms 1e4, result ~1e-3), near-tied keys, a sink column."""
    d, bands, scaling = 8, 2, 8**-0.5
    q = fp32([[[[1e4, 1e4, 3.0, -2.0, 0.5, 0.25, 1e-3, 7.0]]]])
    served = fp32([[[[1.0, -1.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                     [1.0, -1.0 + 2.0**-23, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                     [0.5, 0.25, -1.0, 1.0, 2.0, -3.0, 4.0, 1e-3]]]])
    keys = served.clone()
    keys[0, 0, 0, 0] = torch.nextafter(served[0, 0, 0, 0], fp32(2.0))
    keys[0, 0, 2] = served[0, 0, 2] * 1.001
    sink = 2.5
    st = dense_read(q, keys, served, bands, scaling, sinks=torch.tensor([sink]))
    exact, c_hi = _exact_eform(q, served, keys, bands, scaling, sinks=sink)
    _assert_eform(st, exact, bands, c_hi)


def test_eform_excess_needs_the_underflow_floor():
    """The key holding the mass has ``c = 0``; the key with ``c > 0`` has probability ``e**-800``.

    float64 computes that probability as 0, so the computed excess is 0 while the exact one is
    positive: a relative margin cannot cover it, the absolute floor does.
    """
    d, bands, scaling = 2, 1, 1.0
    q = fp32([[[[1.0, 0.0]]]])
    served = fp32([[[[0.0, 1.0], [-800.0, 0.0]]]])
    keys = served.clone()
    keys[0, 0, 1, 1] = 0.5  # Delta on the unlikely key only
    st = dense_read(q, keys, served, bands, scaling)
    exact, c_hi = _exact_eform(q, served, keys, bands, scaling)
    assert st["eform_excess"]["max"] == 0.0 and exact > 0
    assert up(st["eform_excess"]["max"]) < exact  # the margin alone fails here
    _assert_eform(st, exact, bands, c_hi)


def test_eform_excess_over_a_long_row():
    """``n = 2**20`` keys (three distinct ones, repeated), the sizes of the documented range."""
    n = 1 << 20
    d, bands, scaling = 4, 2, 0.5
    q = fp32([[[[1.0, -2.0, 0.5, 3.0]]]])
    base = fp32([[0.1, 0.2, 0.3, 0.4], [1.0, 1.0, -1.0, 0.0], [-3.0, 0.0, 2.0, 2.0 ** -20]])
    base_keys = base * fp32([[1.01], [1.0], [0.999]])
    reps = [n - 2, 1, 1]
    served = torch.cat([base[i:i + 1].expand(m, -1) for i, m in enumerate(reps)]).reshape(1, 1, n, d)
    keys = torch.cat([base_keys[i:i + 1].expand(m, -1) for i, m in enumerate(reps)]).reshape(1, 1, n, d)
    st = dense_read(q, keys, served, bands, scaling)
    assert int(st["keys_visible"]["max"]) == n
    exact, c_hi = _exact_eform(q, base.reshape(1, 1, 3, d), base_keys.reshape(1, 1, 3, d), bands, scaling, mult=reps)
    _assert_eform(st, exact, bands, c_hi)


# --- b_S (selection) -------------------------------------------------------------------------------


def _exact_scores(q: torch.Tensor, w: torch.Tensor, keys: torch.Tensor, scale: float) -> list[list[Fraction]]:
    """Exact ``sum_h w_h ReLU(scale q_h . k_t)`` for one batch, ``[s][t]``."""
    out = []
    for si in range(q.shape[1]):
        row = []
        for t in range(keys.shape[1]):
            tot = Fraction(0)
            for h in range(q.shape[2]):
                dot = sum(Fraction(a) * Fraction(b) for a, b in zip(q[0, si, h].tolist(), keys[0, t].tolist()))
                tot += Fraction(float(w[0, si, h])) * max(Fraction(0), fr(scale) * dot)
            row.append(tot)
        out.append(row)
    return out


def _v4_scorer_fp32(q: torch.Tensor, keys: torch.Tensor, w: torch.Tensor, scale: float) -> torch.Tensor:
    """DeepSeek-V4's page scorer arithmetic: float32 matmul, ReLU, scale, weighted head sum."""
    scores = torch.relu(torch.matmul(q.float(), keys.transpose(-1, -2).float().unsqueeze(1))) * scale
    return (scores * w.float().unsqueeze(-1)).sum(dim=2).to(torch.float64)


def _tie_inputs():
    """Two pages whose exact scores differ by 2**-30 relative: float32 scores cannot order them."""
    h, d = 2, 4
    q = torch.zeros(1, 1, h, d)
    q[0, 0, 0] = fp32([1.0, 1.0, 1.0, 1.0])
    q[0, 0, 1] = fp32([0.5, -0.25, 1.0, 2.0])
    keys = fp32([[[1.0, 1.0, 1.0, 1.0 + 2.0**-22],
                  [1.0 + 2.0**-22, 1.0, 1.0, 1.0],
                  [0.1, 0.1, 0.1, 0.1]]])
    keys[0, 1, 0] = 1.0 + 2.0**-23  # page 1 is exactly 2**-23 below page 0 in head 0
    w = torch.tensor([[[1.0, 2.0**-30]]], dtype=torch.float64)
    return q.to(torch.float64), keys, w, 0.5


@pytest.mark.parametrize("unit_name", ["float64", "float32"])
def test_selection_radius_covers_the_served_score_error(unit_name):
    """Every exact-key score lies within the radius of its computed served score (the certificate's premise)."""
    q, keys, w, scale = _tie_inputs()
    bn = torch.zeros(1, keys.shape[1], 2, dtype=torch.float64)  # no compression: eps = 0
    valid = torch.ones(1, 1, keys.shape[1], dtype=torch.bool)
    if unit_name == "float64":
        served = torch.einsum("bsh,bsht->bst", w, torch.relu(torch.einsum("bshd,btd->bsht", q, keys.double()) * scale))
        unit = fe.U64
    else:
        served = _v4_scorer_fp32(q, keys, w, scale)
        unit = fe.U32
    eps = selection_radius(q, w, bn, keys, served, valid, scale, unit=unit)
    exact = _exact_scores(q, w, keys, scale)
    for t in range(keys.shape[1]):
        assert abs(exact[0][t] - fr(served[0, 0, t])) <= fr(eps[0, 0, t])
    if unit_name == "float32":
        # the witness radius alone (0 here) does not cover float32 scores: the certificate would
        # claim an unchanged selection although exact arithmetic orders the pages differently
        old = score_radius(q, w, bn, scale)
        assert any(abs(exact[0][t] - fr(served[0, 0, t])) > fr(old[0, 0, t]) for t in range(keys.shape[1]))


def _exact_b_s(served: torch.Tensor, radius: list[Fraction], valid: torch.Tensor, k: int) -> Fraction:
    """Exact ``(m_in + m_out)/2`` of one row for the computed served scores and exact radii ``radius``."""
    s = [fr(x) for x in served[0, 0].tolist()]
    e = radius
    sel = set(sorted(range(len(s)), key=lambda t: -served[0, 0, t].item())[:k])
    out = [t for t in range(len(s)) if t not in sel and bool(valid[0, 0, t])]
    lo_in = min(s[t] - e[t] for t in sel)
    hi_out = max(s[t] + e[t] for t in out)
    if lo_in > hi_out:
        return Fraction(0)
    top = max(s)
    wts = [IV.exp(ivf(x - top)) for x in s]
    z = sum(wts, IV.mpf(0))
    emax = max(e)
    m_in = sum((upper(wts[t] / z) for t in sel if s[t] - e[t] <= hi_out), Fraction(0))
    m_out = sum((min(Fraction(1), upper(wts[t] / z * IV.exp(ivf(e[t] + emax)))) for t in out if s[t] + e[t] >= lo_in),
                Fraction(0))
    return (m_in + m_out) / 2


def test_b_s_up_dominates_the_exact_selection_bound():
    """A row with contestable pages (near-ties at the k-th place) and a 2**60 score range."""
    gen = torch.Generator().manual_seed(3)
    h, d, t_n, k = 2, 8, 9, 3
    q = torch.randn(1, 1, h, d, generator=gen).to(torch.float32).to(torch.float64)
    keys = torch.randn(1, t_n, d, generator=gen).to(torch.float32)
    keys[0, 3] = keys[0, 2]
    keys[0, 3, 0] = torch.nextafter(keys[0, 2, 0], fp32(10.0))  # near-tie with page 2
    keys[0, 8] = keys[0, 8] * 2.0**30
    w = torch.tensor([[[0.7, 0.3]]], dtype=torch.float64)
    bn = torch.rand(1, t_n, 2, generator=gen, dtype=torch.float64) * 1e-2
    valid = torch.ones(1, 1, t_n, dtype=torch.bool)
    scale = d**-0.5
    served = torch.einsum("bsh,bsht->bst", w, torch.relu(torch.einsum("bshd,btd->bsht", q, keys.double()) * scale))
    eps = selection_radius(q, w, bn, keys, served, valid, scale)
    rows = selection_rows(served, served, eps, valid, k)
    b_hat = float((0.5 * (rows.m_in_bound + rows.m_out_bound))[0, 0])
    assert b_hat > 0 and not bool(rows.cert_witness[0, 0])
    # the radii the certificate needs are below the computed ones (inflated by at least 2**-20)
    exact = _exact_b_s(served, [fr(x) * (1 - Fraction(1, 2**40)) for x in eps[0, 0].tolist()], valid, k)
    rel = fe.selection_rel(t_n, fr(rows.score_abs_max[0, 0]), fr(rows.eps_max[0, 0]))
    assert_dominated("b_S", b_hat, exact, Fraction(0), rel, fe.selection_floor(t_n, fr(rows.eps_max[0, 0])))


# --- the fail-closed check in derivation -----------------------------------------------------------


def test_documented_range_is_dominated_with_margin():
    """The sufficient condition of docs/TRUST_BOUNDARY.md: every bound at most REL_MARGIN / 2."""
    s = fe.Sizes(width=1 << 16, bands=16, components=2, keys=1 << 20)
    b = fe.layer_bounds(s, fe.Magnitudes(Fraction(1, 1 << 35), Fraction(1 << 14), Fraction(4)))
    assert max(b.values()) <= REL_MARGIN / 2
    assert fe.selection_rel(1 << 20, Fraction(1 << 14), Fraction(1 << 10)) <= REL_MARGIN / 2
    # and just outside: twice the keys and a larger score error exceed the margin
    assert fe.eform_rel(fe.Sizes(1 << 16, 16, 2, 1 << 21), Fraction(1, 1 << 32), Fraction(1 << 14), Fraction(4)) > REL_MARGIN


def test_derive_fails_closed_outside_the_analysed_range():
    run = json.loads((ROOT / "artifacts/coverage/smollm2-int8/run.json").read_text())
    assert derive(run).failures == []
    big = copy.deepcopy(run)
    big["schema"] = "witprobe-run/1"  # legacy runs: keys bounded by the longest request
    big["requests"][0]["prompt_tokens"] = 1 << 40
    fails = derive(big).failures
    assert fails and all("fail closed" in f for f in fails)
    assert any("eform_excess" in f for f in fails)
    big = copy.deepcopy(run)  # runs with magnitudes: keys as recorded per layer
    big["schema"] = "witprobe-run/2"
    for layer in big["layers"]:
        layer["read"]["keys_visible"]["max"] = float(1 << 40)
    fails = derive(big).failures
    assert fails and all("fail closed" in f for f in fails)


def test_derive_fails_closed_on_a_recorded_score_error_too_large():
    run = json.loads((ROOT / "artifacts/coverage/smollm2-int8/run.json").read_text())
    run["schema"] = "witprobe-run/2"
    for layer in run["layers"]:
        for key, v in (("fp_width", 64.0), ("keys_visible", 200.0), ("score_err", 2.0**-40), ("score_abs_max", 30.0)):
            layer["read"][key] = {"n": 1, "calls": 1, "sum": v, "mean": v, "min": v, "max": v}
    assert derive(run).failures == []
    zero = copy.deepcopy(run)
    zero["layers"][0]["read"]["eform_excess"]["max"] = 0.0  # the underflow floor keeps the e-form above 0
    assert derive(zero).claims[0].forms["eform"].bound > 0
    run["layers"][3]["read"]["score_err"]["max"] = 2.0**-28
    fails = derive(run).failures
    assert len(fails) == 1 and fails[0].startswith("layer 3: eform_excess")
    del run["layers"][3]["read"]["score_err"]
    with pytest.raises(ValueError, match="score_err"):
        derive(run)


def test_int8_codec_residuals_are_metered_in_float64():
    """The production codec path: float32 entries, float32 reconstruction, float64 witness."""
    gen = torch.Generator().manual_seed(11)
    d, bands = 64, 4
    k = (torch.randn(1, 1, 5, d, generator=gen) * torch.exp2(torch.randint(-20, 20, (1, 1, 5, d), generator=gen).float())).to(torch.float32)
    served = BandIntCodec(8, bands).encode_decode(k)
    assert served.dtype == torch.float32
    q = torch.randn(1, 1, 1, d, generator=gen).to(torch.float32)
    st = dense_read(q, k, served, bands, d**-0.5)
    his = []
    for t in range(5):
        bb = band_norm_bounds([x - y for x, y in zip(exact_vec(k[0, 0, t]), exact_vec(served[0, 0, t]))], bands)
        his.append(sum(b[1] for b in bb))
    assert up(st["w_max"]["max"]) >= max(his)


@pytest.mark.parametrize("y", [Fraction(-1, 8), Fraction(1), Fraction(3, 2)])
def test_exp_up_refuses_an_exponent_outside_its_range(y):
    """``1/(1 - y)`` bounds ``e**y`` only on ``[0, 1)``: outside it the error bound must refuse."""
    with pytest.raises(fe.FloatBoundError, match="outside"):
        fe.exp_up(y)
    assert fe.exp_up(Fraction(1, 2)) == 2 >= math.exp(0.5)


@pytest.mark.parametrize("field", ["width", "bands", "components", "keys"])
@pytest.mark.parametrize("bad", [0, -3, 2.0, True])
def test_sizes_refuse_anything_but_a_positive_integer(field, bad):
    sizes = dict(width=64, bands=4, components=1, keys=100)
    sizes[field] = bad
    with pytest.raises(fe.FloatBoundError, match=field):
        fe.Sizes(**sizes)


def test_the_eform_error_analysis_refuses_a_c_max_beyond_its_argument_bound():
    s = fe.Sizes(width=64, bands=4, components=1, keys=100)
    with pytest.raises(fe.FloatBoundError, match="too large for the expm1 argument bound"):
        fe.eform_rel(s, Fraction(0), Fraction(1), Fraction(2 ** 60))


def test_the_box_bound_fails_closed_where_its_centre_error_exceeds_the_meters_range_margin():
    """The box meter widens its ``1/Z`` range by ``2**-20``, which covers the centre's float64 error
    only while ``boxsup_rel <= 2**-21`` (:func:`witprobe.calculus.float_error.boxsup_problems`).
    Beyond it the layer fails closed and its claim falls back to a chain form."""
    keys, amax = 200, Fraction(30)
    assert fe.boxsup_problems(keys, Fraction(1, 1 << 40), amax) == []
    big = Fraction(1, 1 << 20)
    assert fe.boxsup_rel(keys, big, amax) > fe.BOXSUP_RANGE_LIMIT
    (problem,) = fe.boxsup_problems(keys, big, amax)
    assert problem.startswith("boxsup: centre error") and "range margin" in problem
    run = json.loads((ROOT / "artifacts/coverage/smollm2-int8/run.json").read_text())
    def claim_of(d):
        return next(c for c in d.claims if c.id == "L03.attn_tv")

    assert claim_of(derive(run)).form == "boxsup"
    run["layers"][3]["read"]["score_err"]["max"] = float(big)
    d = derive(run)
    assert any(f.startswith("layer 3: boxsup: centre error") and f.endswith("(fail closed)") for f in d.failures)
    claim = claim_of(d)
    assert claim.form != "boxsup" and claim.forms["boxsup"].bound is None and claim.forms["boxsup"].reason


def test_the_band_norm_rounding_count_is_at_least_the_textbook_one():
    """A float64 norm ``sqrt(sum_i d_i**2)`` of ``m`` entries: the sum of squares carries a relative
    error up to ``gamma_m`` (one product and ``m - 1`` additions per term), the root halves it and
    rounds once more, so no analysis may count fewer than ``ceil(m/2) + 1`` roundings (the one
    documented adds one for the difference). A smaller count would understate every allowance
    built on it."""
    for m in range(1, 4097):
        assert fe.band_norm_count(m) >= -(-m // 2) + 1, m
