"""The query-aligned witness: the per-key radius bounds |<q, Delta>| exactly, and the run's forms
are never beaten by the realized TV (``witprobe.probe.query_aligned``)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from witprobe.certify.measure import MeasureConfig, measure
from witprobe.models.zoo import load_model
from witprobe.probe.query_aligned import (TIER, TIER_REASON, QueryAlignedError, QueryBasis, calibrate,
                                          calibrate_basis, qa_radius, qa_witness)

CALIBRATION = ("Bees build hexagonal cells of wax; the colony keeps the hive warm in winter by clustering "
               "and shivering their flight muscles.",)
MEASURED = ("The sea and the wind are old friends, said the sailor to the child.",)


def _exact_dot(q: torch.Tensor, d: torch.Tensor) -> Fraction:
    return sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(q.tolist(), d.tolist())), Fraction(0))


def _vectors(seed: int, d: int = 16, r: int = 4, hkv: int = 2, groups: int = 2, t: int = 12, nq: int = 6):
    g = torch.Generator().manual_seed(seed)
    calib = torch.randn(1, hkv * groups, 40, d, generator=g, dtype=torch.float64)
    calib[..., r:] *= 1e-3  # queries concentrated in a low-dimensional subspace
    u = calibrate_basis([calib], groups, r)
    delta = torch.randn(1, hkv, t, d, generator=g, dtype=torch.float64) * 1e-2
    q = torch.randn(1, hkv * groups, nq, d, generator=g, dtype=torch.float64) * 3
    uq = u.repeat_interleave(groups, 0)
    adversarial = q - torch.einsum("bhqr,hdr->bhqd", torch.einsum("bhqd,hdr->bhqr", q, uq), uq)  # outside span U
    aligned_with_delta = delta.repeat_interleave(groups, 1)[:, :, :nq, :] * 100  # q along Delta itself
    return u, delta, torch.cat([q, adversarial, aligned_with_delta], dim=2), groups


def _check_sound(radius, q: torch.Tensor, delta: torch.Tensor, groups: int, scale: float) -> int:
    """Count (row, key) pairs where ``radius < scale |<q, Delta>|`` with the dot product exact."""
    bad = 0
    dq = delta.repeat_interleave(groups, 1)
    for h in range(q.shape[1]):
        for i in range(q.shape[2]):
            for t in range(delta.shape[2]):
                exact = abs(_exact_dot(q[0, h, i], dq[0, h, t])) * Fraction(scale)
                if Fraction(float(radius[0, h, i, t])) < exact:
                    bad += 1
    return bad


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_radius_bounds_the_exact_dot_product(seed):
    u, delta, q, groups = _vectors(seed)
    assert torch.allclose(u.transpose(-1, -2) @ u, torch.eye(u.shape[-1], dtype=torch.float64).expand_as(u.transpose(-1, -2) @ u), atol=1e-12)
    w = qa_witness(delta, u)
    rad = qa_radius(q, u, w, groups, 0.25)
    assert _check_sound(rad, q, delta, groups, 0.25) == 0
    # tighter than plain Cauchy-Schwarz on queries inside span U
    cs = 0.25 * q.norm(dim=-1).unsqueeze(-1) * delta.repeat_interleave(groups, 1).norm(dim=-1).unsqueeze(-2)
    assert (rad[:, :, :6] < cs[:, :, :6]).float().mean() > 0.9


def test_radius_is_sound_for_a_basis_that_is_not_orthonormal():
    u, delta, q, groups = _vectors(3)
    skew = u * 1.7 + 0.05 * torch.randn(u.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    w = qa_witness(delta, skew)
    assert float(w.cross.max()) > 1e-6  # U^T rr is far from 0 here: the correction term carries the bound
    assert _check_sound(qa_radius(q, skew, w, groups, 1.0), q, delta, groups, 1.0) == 0


def test_mutation_dropping_the_remainder_is_caught():
    u, delta, q, groups = _vectors(4)
    w = qa_witness(delta, u)
    bad = _check_sound(qa_radius(q, u, w, groups, 1.0, drop_remainder=True), q, delta, groups, 1.0)
    assert bad > 0  # queries outside span U beat the radius without its remainder term


def test_cross_term_is_needed_when_the_basis_is_not_orthonormal():
    """``U = (sqrt(1/2), 0)``, ``q = Delta = e_0``: ``<q, Delta> = 1``; the two remainder-free terms
    give ``1/4 + 1/2 = 3/4`` and the cross term ``||b|| ||U^T rr|| = 1/4`` closes the gap exactly."""
    u = torch.tensor([[[0.5 ** 0.5], [0.0]]], dtype=torch.float64)
    e0 = torch.tensor([[[[1.0, 0.0]]]], dtype=torch.float64)
    w = qa_witness(e0, u)
    full = qa_radius(e0, u, w, 1, 1.0)
    assert _check_sound(full, e0, e0, 1, 1.0) == 0
    # only the outward margins above 1: a = sqrt(1/2) rounded to float16 moves about 2**-12 into rr, and
    # rho, eps are rounded up to float32
    assert float(full) == pytest.approx(1.0, rel=1e-6)
    w0 = type(w)(w.coef, w.rest, torch.zeros_like(w.cross))  # mutation: the two-term form (qa_bridge_needs_orth)
    assert _check_sound(qa_radius(e0, u, w0, 1, 1.0), e0, e0, 1, 1.0) == 1


def test_bad_shapes_and_ranks_are_refused():
    with pytest.raises(QueryAlignedError, match="rank"):
        calibrate_basis([torch.randn(1, 2, 5, 8)], 1, 9)
    with pytest.raises(QueryAlignedError, match="shape"):
        qa_witness(torch.randn(1, 2, 3, 8), torch.randn(3, 8, 2))
    assert TIER == "empirical" and "reading" in TIER_REASON
    assert QueryBasis({}, 16).bytes_per_entry == 16 * 2 + 2 * 4  # a in float16, rho and eps in float32


def test_stored_coefficients_are_float16_and_norms_round_up_to_float32():
    """The witness's byte count is what is stored: ``a`` is a float16 value and ``rho``, ``eps`` are
    float32 values at or above the float64 norms they bound; soundness survives the rounding (the
    remainder absorbs it: ``_check_sound`` above runs on the same witness)."""
    u, delta, q, groups = _vectors(5)
    w = qa_witness(delta, u)
    assert torch.equal(w.coef, w.coef.to(torch.float16).to(torch.float64))
    for v in (w.rest, w.cross):
        assert torch.equal(v, v.to(torch.float32).to(torch.float64))
    a = w.coef
    rr = delta - torch.einsum("bhtr,hdr->bhtd", a, u)
    assert bool((w.rest >= rr.norm(dim=-1)).all())
    assert bool((w.cross >= torch.einsum("bhtd,hdr->bhtr", rr, u).norm(dim=-1)).all())
    assert _check_sound(qa_radius(q, u, w, groups, 0.5), q, delta, groups, 0.5) == 0


@pytest.fixture(scope="module")
def tiny():
    return load_model("qwen3")


@pytest.mark.parametrize("codec", ["int8", "int4"])
def test_tiny_model_bound_never_beaten(tiny, codec):
    assert not set(CALIBRATION) & set(MEASURED)
    basis = calibrate(tiny, CALIBRATION, 8)
    d = tiny.model.config.head_dim if getattr(tiny.model.config, "head_dim", None) else None
    for u in basis.bases.values():
        assert u.shape[-1] == 8 and (d is None or u.shape[1] == d)
    run = measure(tiny, MeasureConfig(model="qwen3", codec=codec, max_new_tokens=3, reference=False, prompts=MEASURED),
                  query_basis=basis).to_json()
    dense = [layer for layer in run["layers"] if layer["memory_class"] == "dense_kv"]
    assert dense
    for layer in dense:
        rd = layer["read"]
        assert rd["rows"] > 0 and rd["rows_qa_centred_beaten"] == 0 and rd["rows_qa_boxsup_beaten"] == 0
        assert rd["keys_qa_radius_beaten"] == 0
        assert rd["qa_c_max"]["max"] <= rd["c_max"]["max"]  # min(c_band, c_qa)
        assert rd["qa_centred_bound"]["max"] <= rd["centred_bound"]["max"]
        assert rd["tv_realized"]["max"] <= rd["qa_boxsup_bound"]["max"] * (1 + 1e-9) + 1e-15
    base = measure(tiny, MeasureConfig(model="qwen3", codec=codec, max_new_tokens=3, reference=False, prompts=MEASURED)).to_json()
    assert all("qa_centred_bound" not in layer["read"] for layer in base["layers"])
