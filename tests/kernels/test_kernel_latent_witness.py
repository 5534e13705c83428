"""Fused latent (MLA) witness vs its float64 torch reference, and the soundness of the bound."""

from __future__ import annotations

import pytest
import torch
from kernel_util import kernel_device

from witprobe.kernels.latent_witness import latent_witness_fused
from witprobe.probe.meters_latent import (
    LatentWitnessError,
    band_norms,
    effective_query,
    k_nope_selfcheck,
    latent_witness_from_query,
    w_uk_from_kv_b_proj,
)

DEV = kernel_device()


def _inputs(b, h, q, t, dn, dl, dr, bc, bp, seed=0):
    g = torch.Generator().manual_seed(seed)
    qn = torch.randn(b, h, q, dn, generator=g)
    w = torch.randn(h, dn, dl, generator=g) / dn**0.5
    qpe = torch.randn(b, h, q, dr, generator=g)
    dc = torch.randn(b, t, dl, generator=g) * 0.01
    dk = torch.randn(b, t, dr, generator=g) * 0.01
    return qn, w, qpe, dc, dk, band_norms(dc, bc), band_norms(dk, bp)


@pytest.mark.parametrize(
    "b, h, q, t, dn, dl, dr, bc, bp",
    [
        (1, 2, 1, 5, 16, 32, 8, 8, 2),  # decode: one query row
        (2, 3, 2, 37, 20, 48, 8, 6, 2),  # non-power-of-two dims, T over one block
        (1, 1, 3, 0, 8, 16, 4, 4, 1),  # empty cache
    ],
)
def test_fused_latent_witness_matches_reference(b, h, q, t, dn, dl, dr, bc, bp):
    qn, w, qpe, _, _, lbn, rbn = _inputs(b, h, q, t, dn, dl, dr, bc, bp)
    sm = (dn + dr) ** -0.5
    ref = latent_witness_from_query(qn, w, qpe, lbn, rbn, sm)
    got = latent_witness_fused(qn.to(DEV), w.to(DEV), qpe.to(DEV), lbn.to(DEV), rbn.to(DEV), sm)
    assert got.c.shape == ref.c.shape == (b, h, q, t)
    if t:
        rel = ((got.c.cpu() - ref.c).abs() / ref.c.abs()).max()
        assert rel <= 1e-6, rel
    assert torch.allclose(got.c_max.cpu(), ref.c_max, rtol=1e-6, atol=0.0)


def test_latent_bound_holds_for_the_actual_score_error():
    """|Delta score_t| <= c_t for every head, query and token (Cauchy-Schwarz per band)."""
    b, h, q, t, dn, dl, dr, bc, bp = 2, 4, 3, 50, 16, 64, 16, 8, 4
    qn, w, qpe, dc, dk, lbn, rbn = _inputs(b, h, q, t, dn, dl, dr, bc, bp, seed=3)
    g = torch.Generator().manual_seed(4)
    c = torch.randn(b, t, dl, generator=g)
    kpe = torch.randn(b, t, dr, generator=g)
    sm = (dn + dr) ** -0.5
    q64, w64, p64 = qn.double(), w.double(), qpe.double()

    def scores(lat, kp):
        knope = torch.einsum("hnl,btl->bhtn", w64, lat.double())
        return sm * (torch.einsum("bhqn,bhtn->bhqt", q64, knope) + torch.einsum("bhqr,btr->bhqt", p64, kp.double()))

    delta = (scores(c + dc, kpe + dk) - scores(c, kpe)).abs()
    bound = latent_witness_from_query(qn, w, qpe, lbn, rbn, sm).c
    assert torch.all(delta <= bound * (1 + 1e-12))
    assert float((delta / bound).max()) > 0.05  # and it is not vacuously loose


def test_w_uk_slice_and_self_check():
    h, dn, dv, dl, b, t = 3, 8, 6, 16, 2, 5
    g = torch.Generator().manual_seed(8)
    weight = torch.randn(h * (dn + dv), dl, generator=g)
    w_uk = w_uk_from_kv_b_proj(weight, h, dn, dv)
    assert w_uk.shape == (h, dn, dl)
    lat = torch.randn(b, t, dl, generator=g)
    kv = (lat @ weight.T).reshape(b, t, h, dn + dv).permute(0, 2, 1, 3)
    assert k_nope_selfcheck(w_uk, lat, kv[..., :dn]) < 1e-5
    assert k_nope_selfcheck(w_uk, lat, kv[..., dv:dv + dn]) > 1e-2  # wrong slice is caught
    u = effective_query(torch.randn(b, h, 1, dn, generator=g), w_uk)
    assert u.shape == (b, h, 1, dl)
    with pytest.raises(LatentWitnessError):
        w_uk_from_kv_b_proj(weight, h + 1, dn, dv)
