"""Fused latent (MLA) Tier-A witness: effective query, band norms and per-key bounds in one pass.

Specification: :func:`witprobe.probe.meters_latent.latent_witness_from_query`. One program per
query row ``(b, h, q)``: it forms ``u = W_UK^(h)T q_nope`` in registers (float64 accumulation over
``d_nope`` chunks; ``u`` never reaches memory), reduces ``u`` and ``q_pe`` to band norms, then
streams the recorded residual band norms of every cached token and writes
``c_t = sm * (sum_b ||u_b|| ||Delta c_{t,b}|| + sum_b ||q_pe,b|| ||Delta k_pe,{t,b}||)`` and the
row maximum. Arithmetic is float64 like the reference (the bound feeds certificates).
"""

from __future__ import annotations

import torch

from witprobe.kernels._common import check_device, next_pow2, tl, triton
from witprobe.probe.meters_latent import LatentWitness, LatentWitnessError

BLOCK_K = 16
BLOCK_T = 32


@triton.jit
def _band_norms(v, col, N: tl.constexpr, BAND: tl.constexpr, NB: tl.constexpr, NBP: tl.constexpr):
    # v: [NP] float64 (zero past N); returns [NBP] norms of the NB contiguous bands of width BAND.
    bidx = tl.arange(0, NBP)
    sel = ((col[None, :] // BAND) == bidx[:, None]) & (col[None, :] < N) & (bidx[:, None] < NB)
    return tl.sqrt(tl.sum(tl.where(sel, v[None, :] * v[None, :], 0.0), axis=1))


@triton.jit
def _latent_witness_kernel(
    qn_ptr, w_ptr, qpe_ptr, lbn_ptr, rbn_ptr, c_ptr, cmax_ptr, T,
    H: tl.constexpr, Q: tl.constexpr,
    D_NOPE: tl.constexpr, D_LAT: tl.constexpr, D_LAT_P: tl.constexpr, D_ROPE: tl.constexpr, D_ROPE_P: tl.constexpr,
    BC: tl.constexpr, BC_P: tl.constexpr, BP: tl.constexpr, BP_P: tl.constexpr,
    SCALE: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_T: tl.constexpr,
):
    r = tl.program_id(0).to(tl.int64)
    b = r // (H * Q)
    h = (r // Q) % H
    lcol = tl.arange(0, D_LAT_P)
    lmask = lcol < D_LAT
    u = tl.zeros([D_LAT_P], dtype=tl.float64)
    for k0 in range(0, D_NOPE, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K)
        km = kk < D_NOPE
        q = tl.load(qn_ptr + r * D_NOPE + kk, mask=km, other=0.0).to(tl.float64)
        w = tl.load(w_ptr + h * (D_NOPE * D_LAT) + kk[:, None] * D_LAT + lcol[None, :],
                    mask=km[:, None] & lmask[None, :], other=0.0).to(tl.float64)
        u += tl.sum(w * q[:, None], axis=0)
    ub = _band_norms(u, lcol, D_LAT, D_LAT // BC, BC, BC_P)
    pcol = tl.arange(0, D_ROPE_P)
    qpe = tl.load(qpe_ptr + r * D_ROPE + pcol, mask=pcol < D_ROPE, other=0.0).to(tl.float64)
    qb = _band_norms(qpe, pcol, D_ROPE, D_ROPE // BP, BP, BP_P)
    sm = tl.full([], SCALE, tl.float64)
    bc = tl.arange(0, BC_P)
    bp = tl.arange(0, BP_P)
    cmax = tl.full([BLOCK_T], float("-inf"), tl.float64)
    for t0 in range(0, T, BLOCK_T):
        tt = t0 + tl.arange(0, BLOCK_T)
        tm = tt < T
        row = b * T + tt
        dc = tl.load(lbn_ptr + row[:, None] * BC + bc[None, :], mask=tm[:, None] & (bc[None, :] < BC), other=0.0)
        dk = tl.load(rbn_ptr + row[:, None] * BP + bp[None, :], mask=tm[:, None] & (bp[None, :] < BP), other=0.0)
        c = (tl.sum(dc.to(tl.float64) * ub[None, :], axis=1) + tl.sum(dk.to(tl.float64) * qb[None, :], axis=1)) * sm
        tl.store(c_ptr + r * T + tt, c, mask=tm)
        cmax = tl.maximum(cmax, tl.where(tm, c, float("-inf")))
    m = tl.max(cmax, axis=0)
    tl.store(cmax_ptr + r, tl.where(m == float("-inf"), 0.0, m))


def latent_witness_fused(
    q_nope: torch.Tensor,
    w_uk: torch.Tensor,
    q_pe: torch.Tensor,
    latent_band_norms: torch.Tensor,
    rope_band_norms: torch.Tensor,
    scale: float,
) -> LatentWitness:
    """One launch; same arguments, shapes and result as ``latent_witness_from_query``."""
    if q_nope.dim() != 4 or w_uk.dim() != 3 or q_pe.dim() != 4:
        raise LatentWitnessError("q_nope (B,H,Q,d_nope), w_uk (H,d_nope,d_latent), q_pe (B,H,Q,d_rope) expected")
    bsz, h, q, d_nope = q_nope.shape
    if w_uk.shape[:2] != (h, d_nope) or q_pe.shape[:3] != (bsz, h, q):
        raise LatentWitnessError(f"shapes disagree: q_nope {tuple(q_nope.shape)}, w_uk {tuple(w_uk.shape)}, "
                                 f"q_pe {tuple(q_pe.shape)}")
    d_lat, d_rope = w_uk.shape[2], q_pe.shape[3]
    if latent_band_norms.dim() != 3 or rope_band_norms.dim() != 3 or latent_band_norms.shape[0] != bsz \
            or latent_band_norms.shape[:2] != rope_band_norms.shape[:2]:
        raise LatentWitnessError("band norms must be (B, T, bands) with matching (B, T)")
    t = latent_band_norms.shape[1]
    bc, bp = latent_band_norms.shape[2], rope_band_norms.shape[2]
    if d_lat % bc or d_rope % bp:
        raise LatentWitnessError(f"bands ({bc}, {bp}) must divide (d_latent {d_lat}, d_rope {d_rope})")
    check_device(q_nope)
    dev = q_nope.device
    c = torch.empty((bsz, h, q, t), dtype=torch.float64, device=dev)
    c_max = torch.empty((bsz, h, q), dtype=torch.float64, device=dev)
    rows = bsz * h * q
    if rows:
        _latent_witness_kernel[(rows,)](
            q_nope.contiguous(), w_uk.contiguous(), q_pe.contiguous(),
            latent_band_norms.contiguous(), rope_band_norms.contiguous(), c, c_max, t,
            H=h, Q=q, D_NOPE=d_nope, D_LAT=d_lat, D_LAT_P=next_pow2(d_lat), D_ROPE=d_rope,
            D_ROPE_P=next_pow2(d_rope), BC=bc, BC_P=next_pow2(bc), BP=bp, BP_P=next_pow2(bp),
            SCALE=float(scale), BLOCK_K=BLOCK_K, BLOCK_T=BLOCK_T,
        )
    return LatentWitness(c=c, c_max=c_max)
