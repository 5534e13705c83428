"""Meters of the update and read operators, against hand vectors and independent computations."""

from __future__ import annotations

import math

import pytest
import torch

from witprobe.memory.codecs import BandIntCodec, CodecError, make_codec
from witprobe.probe.meters import band_witness, read_rows, witness_violations

X = torch.tensor([[127.0, 10.2, -3.7, 0.4, 1.27, -0.4321, 0.0777, 0.0]], dtype=torch.float64)


@pytest.mark.parametrize(
    "bits, bands_norms, W, true, rel",
    [
        (8, (0.53851648, 0.00311448), 0.54163096, 0.53852549, 0.00422471),
        (4, (8.77148674, 0.10407624), 8.87556298, 8.77210416, 0.06881681),
    ],
)
def test_band_witness_hand_vector(bits, bands_norms, W, true, rel):
    codec = BandIntCodec(bits=bits, bands=2)
    w = band_witness(X, codec.encode_decode(X), 2)
    assert w.band_norms[0].tolist() == pytest.approx(bands_norms, abs=1e-8)
    assert float(w.witness[0]) == pytest.approx(W, abs=1e-8)
    assert float(w.residual[0]) == pytest.approx(true, abs=1e-8)
    assert float(w.residual[0] / w.x_norm[0]) == pytest.approx(rel, abs=1e-8)
    low, high = witness_violations(w, 2)
    assert not low.any() and not high.any()


def test_int8_codes_match_the_hand_vector():
    codec = BandIntCodec(bits=8, bands=2)
    xhat = codec.encode_decode(X)
    scale = torch.tensor([127.0 / 127, 1.27 / 127], dtype=torch.float64).repeat_interleave(4)
    codes = torch.round(xhat[0] / scale).tolist()
    assert codes == [127, 10, -4, 0, 127, -43, 8, 0]


def test_witness_inequalities_on_random_entries():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 3, 17, 64, generator=g) * torch.rand(64, 3, 17, 1, generator=g) * 10
    for name in ("int8", "int6", "int4", "int2"):
        for bands in (1, 4, 16):
            w = band_witness(x, make_codec(name, bands).encode_decode(x), bands)
            low, high = witness_violations(w, bands)
            assert int(low.sum()) == 0 and int(high.sum()) == 0
            assert torch.all(w.witness >= w.residual * (1 - 1e-12))


def test_violation_detector_is_not_vacuous():
    w = band_witness(X, BandIntCodec(bits=4, bands=2).encode_decode(X), 2)
    from dataclasses import replace

    broken = replace(w, witness=w.residual * 0.5)
    low, _ = witness_violations(broken, 2)
    assert low.all()
    inflated = replace(w, witness=w.residual * 3)
    _, high = witness_violations(inflated, 2)
    assert high.all()


def test_codec_errors_name_the_problem():
    with pytest.raises(CodecError, match="bits"):
        BandIntCodec(bits=9)
    with pytest.raises(CodecError, match="bands"):
        BandIntCodec(bits=8, bands=0)
    with pytest.raises(CodecError, match="divide"):
        BandIntCodec(bits=8, bands=3).encode_decode(torch.zeros(2, 8))
    with pytest.raises(CodecError, match="unknown codec"):
        make_codec("int9", 4)


def _naive_rows(q, ke, ks, bn, mask, scaling, groups):
    """Independent per-row loops for the read meter (float64)."""
    B, H, Q, D = q.shape
    bands = bn.shape[-1]
    out = []
    for b in range(B):
        for h in range(H):
            kvh = h // groups
            for i in range(Q):
                vis = [t for t in range(ke.shape[2]) if mask is None or mask[b, 0, i, t] == 0]
                s = [float(scaling * (q[b, h, i] @ ke[b, kvh, t])) for t in vis]
                s2 = [float(scaling * (q[b, h, i] @ ks[b, kvh, t])) for t in vis]
                m, m2 = max(s), max(s2)
                p = [math.exp(v - m) for v in s]
                p2 = [math.exp(v - m2) for v in s2]
                p = [v / sum(p) for v in p]
                p2 = [v / sum(p2) for v in p2]
                tv = 0.5 * sum(abs(a - c) for a, c in zip(p, p2))
                qb = [float(q[b, h, i, j * D // bands:(j + 1) * D // bands].norm()) for j in range(bands)]
                c = [scaling * sum(qb[j] * float(bn[b, kvh, t, j]) for j in range(bands)) for t in vis]
                w = [float(bn[b, kvh, t].sum()) for t in vis]
                eps = scaling * float(q[b, h, i].norm()) * max(w)
                x = sum(pp * (math.exp(cc) - 1) for pp, cc in zip(p2, c))
                out.append((tv, 0.5 * math.expm1(2 * eps), math.tanh(max(c) / 2), x + x * x / 2))
    return out


def test_read_rows_matches_naive_loops_and_every_bound_holds():
    g = torch.Generator().manual_seed(1)
    B, Hkv, groups, Q, T, D, bands = 1, 2, 3, 4, 6, 16, 4
    q = torch.randn(B, Hkv * groups, Q, D, generator=g, dtype=torch.float64)
    ke = torch.randn(B, Hkv, T, D, generator=g, dtype=torch.float64) * 2
    codec = BandIntCodec(bits=4, bands=bands)
    ks = codec.encode_decode(ke)
    bn = band_witness(ke, ks, bands).band_norms
    mask = torch.zeros(B, 1, Q, T, dtype=torch.float64)
    for i in range(Q):  # causal: query i sees keys 0 .. T-Q+i
        mask[0, 0, i, T - Q + i + 1:] = torch.finfo(torch.float64).min
    rows = read_rows(q, ke, ks, bn, mask, D**-0.5, groups)
    naive = _naive_rows(q, ke, ks, bn, mask, D**-0.5, groups)
    got = list(zip(rows.tv_realized.flatten().tolist(), rows.plain_bound.flatten().tolist(),
                   rows.centred_bound.flatten().tolist(), rows.eform_bound.flatten().tolist()))
    assert len(got) == len(naive) == B * Hkv * groups * Q
    for a, b in zip(got, naive):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)
        assert a[0] <= min(a[1:])


def test_read_rows_bound_holds_under_adversarial_alignment():
    """Queries aligned with the residual of one key: the Cauchy-Schwarz direction."""
    g = torch.Generator().manual_seed(2)
    D, T = 32, 10
    ke = torch.randn(1, 1, T, D, generator=g, dtype=torch.float64) * 3
    ks = BandIntCodec(bits=2, bands=4).encode_decode(ke)
    delta = ke - ks
    q = (delta[:, :, 3:4, :] * 40).clone()  # q parallel to Delta k_3, large
    bn = band_witness(ke, ks, 4).band_norms
    rows = read_rows(q, ke, ks, bn, None, D**-0.5, 1)
    tv = float(rows.tv_realized)
    assert tv > 0.05  # a real perturbation
    assert tv <= float(rows.centred_bound) and tv <= float(rows.eform_bound) and tv <= float(rows.plain_bound)


@pytest.mark.parametrize("q_len,t", [(1, 37), (1, 700), (5, 300), (64, 129)])
def test_grouped_reads_equal_the_repeated_cache_reference(q_len, t):
    """The meters read each KV head once for its query heads (no repeated cache): the scores, their
    float64 error bound and the output meter equal the reference on a repeated cache (the error bound
    and the value witnesses bit for bit; products of length D within one rounding per term)."""
    from witprobe.probe.meters import dense_scores, output_rows, score_error

    g = torch.Generator().manual_seed(q_len * 1000 + t)
    b, h, hkv, d, nb = 2, 6, 2, 16, 4
    q = torch.randn(b, h, q_len, d, generator=g)
    ke, ks = torch.randn(b, hkv, t, d, generator=g), torch.randn(b, hkv, t, d, generator=g)
    kb = torch.rand(b, hkv, t, nb, generator=g, dtype=torch.float64)
    got = dense_scores(q, ke, ks, kb, 0.25, h // hkv)
    rep = lambda x: x.to(torch.float64).repeat_interleave(h // hkv, dim=1)  # noqa: E731
    q64 = q.to(torch.float64)
    for name, ref in (("s_exact", torch.matmul(q64, rep(ke).transpose(-1, -2)) * 0.25),
                      ("s_served", torch.matmul(q64, rep(ks).transpose(-1, -2)) * 0.25)):
        assert torch.allclose(getattr(got, name), ref, rtol=0, atol=1e-12 * float(ref.abs().max())), name
    assert torch.equal(got.score_err, score_error(q64, rep(ks), 0.25))
    p = torch.softmax(got.s_exact, -1)
    ps = torch.softmax(got.s_served, -1)
    ve, vs = torch.randn(b, hkv, t, d, generator=g), torch.randn(b, hkv, t, d, generator=g)
    wv = torch.rand(b, h, t, generator=g, dtype=torch.float64)
    vis = torch.ones_like(p, dtype=torch.bool)
    tvb = torch.full(p.shape[:3], 0.1, dtype=torch.float64)
    grouped = output_rows(p, ps, vis, ve, vs, wv, tvb)
    repeated = output_rows(p, ps, vis, rep(ve), rep(vs), wv, tvb)
    for f in ("err", "spread", "value_term", "bound"):
        a, r = getattr(grouped, f), getattr(repeated, f)
        assert torch.allclose(a, r, rtol=1e-12, atol=1e-14), f
    assert torch.equal(grouped.value_term, repeated.value_term)
