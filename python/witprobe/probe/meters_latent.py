"""Latent (MLA) Tier-A witness: per-key score-error bounds for a compressed latent cache.

Torch reference (float64; the specification of :mod:`witprobe.kernels.latent_witness`) of paper
section 2.1, "Latent (MLA) Tier-A witness" (artifact p50). In multi-head latent attention each
cached token ``t`` stores a latent ``c_t`` (``d_latent``, 512 in DeepSeek-V2/V3) shared by all
heads and a RoPE key ``k_pe,t`` (``d_rope``, 64). Head ``h`` reads the no-RoPE key
``k_nope,t^(h) = W_UK^(h) c_t`` and the score

``score_t^(h) = sm * (<q_nope^(h), W_UK^(h) c_t> + <q_pe^(h), k_pe,t>)
             = sm * (<u^(h), c_t> + <q_pe^(h), k_pe,t>)``,  with ``u^(h) = W_UK^(h)T q_nope^(h)``,

the effective query in latent space. If the cache serves ``c_t + Delta c_t`` and ``k_pe,t + Delta
k_pe,t``, Cauchy-Schwarz per band (contiguous bands of each vector) gives the sound bound

``|Delta score_t^(h)| <= c_t^(h) = sm * (sum_b ||u_b|| ||Delta c_{t,b}|| + sum_b ||q_pe,b|| ||Delta k_pe,{t,b}||)``

which enters the e-form and centred TV bridges exactly like the dense per-key bound of
:func:`witprobe.probe.meters.read_rows` (metric ``score:linf@read``). The band norms of the
residuals are recorded at the write, as for dense KV. Self-check (artifact): ``W_UK c`` must
reproduce the captured ``k_nope`` (:func:`k_nope_selfcheck`).

Shapes (numpy style)
--------------------
``B`` batch, ``H`` heads, ``Q`` query positions, ``T`` cached tokens,
``d_nope`` per-head no-RoPE dimension, ``d_latent`` latent dimension, ``d_rope`` RoPE dimension.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from witprobe.probe.meters import ScoreComponent, band_norms, component_radii


class LatentWitnessError(ValueError):
    """Inconsistent shapes or band counts (the message names what)."""


def w_uk_from_kv_b_proj(weight: torch.Tensor, num_heads: int, qk_nope_head_dim: int, v_head_dim: int) -> torch.Tensor:
    """Per-head ``W_UK`` from a DeepSeek-style ``kv_b_proj`` weight.

    Parameters
    ----------
    weight:
        ``(num_heads * (qk_nope_head_dim + v_head_dim), d_latent)``: the linear map from the latent
        to per-head ``[k_nope ; v]`` (transformers' ``kv_b_proj.weight`` layout).

    Returns
    -------
    ``(num_heads, qk_nope_head_dim, d_latent)``: ``k_nope^(h) = W_UK[h] @ c``.
    """
    rows, d_latent = weight.shape
    if rows != num_heads * (qk_nope_head_dim + v_head_dim):
        raise LatentWitnessError(
            f"kv_b_proj weight has {rows} rows, expected {num_heads} * ({qk_nope_head_dim} + {v_head_dim})"
        )
    return weight.reshape(num_heads, qk_nope_head_dim + v_head_dim, d_latent)[:, :qk_nope_head_dim, :]


def effective_query(q_nope: torch.Tensor, w_uk: torch.Tensor) -> torch.Tensor:
    """``u^(h) = W_UK^(h)T q_nope^(h)`` in float64.

    Parameters
    ----------
    q_nope:
        ``(B, H, Q, d_nope)`` no-RoPE query part.
    w_uk:
        ``(H, d_nope, d_latent)``.

    Returns
    -------
    ``(B, H, Q, d_latent)``.
    """
    if q_nope.dim() != 4 or w_uk.dim() != 3 or q_nope.shape[1] != w_uk.shape[0] or q_nope.shape[3] != w_uk.shape[1]:
        raise LatentWitnessError(
            f"effective_query: q_nope {tuple(q_nope.shape)} and w_uk {tuple(w_uk.shape)} do not match "
            "(expected (B, H, Q, d_nope) and (H, d_nope, d_latent))"
        )
    return torch.einsum("bhqn,hnl->bhql", q_nope.to(torch.float64), w_uk.to(torch.float64))


@dataclass(frozen=True)
class LatentWitness:
    """Per-key score-error bounds of one latent read.

    Attributes
    ----------
    c:
        ``(B, H, Q, T)`` float64: ``c_t`` per query row and cached token (score units, i.e.
        already multiplied by ``sm``).
    c_max:
        ``(B, H, Q)``: ``max_t c_t`` (0 when ``T = 0``), the input of the centred bridge.
    """

    c: torch.Tensor
    c_max: torch.Tensor


def latent_components(
    u_band_norms: torch.Tensor,
    q_pe_band_norms: torch.Tensor,
    latent_band_norms: torch.Tensor,
    rope_band_norms: torch.Tensor,
) -> list[ScoreComponent]:
    """The two score components of a latent read: ``||u_b||`` against ``||Delta c_{t,b}||`` and
    ``||q_pe,b||`` against ``||Delta k_pe,{t,b}||``.

    The latent layer (:meth:`witprobe.probe.latent.WitnessLatentLayer.read_scores`) and
    :func:`latent_witness` (the fused kernel's reference) both build their radii here.

    Parameters
    ----------
    u_band_norms, q_pe_band_norms:
        ``(B, H, Q, bands_c)`` and ``(B, H, Q, bands_pe)`` query-side band norms (the layer adds
        the float allowance of ``u`` to the first before calling).
    latent_band_norms, rope_band_norms:
        ``(B, T, bands)`` residual band norms recorded at the writes, shared by all heads.
    """
    heads = u_band_norms.shape[1]
    return [
        ScoreComponent(u_band_norms, latent_band_norms.unsqueeze(1).expand(-1, heads, -1, -1)),
        ScoreComponent(q_pe_band_norms, rope_band_norms.unsqueeze(1).expand(-1, heads, -1, -1)),
    ]


def latent_witness(
    u: torch.Tensor,
    q_pe: torch.Tensor,
    latent_band_norms: torch.Tensor,
    rope_band_norms: torch.Tensor,
    scale: float,
) -> LatentWitness:
    """``c_t = sm * (sum_b ||u_b|| ||Delta c_{t,b}|| + sum_b ||q_pe,b|| ||Delta k_pe,{t,b}||)``.

    Parameters
    ----------
    u:
        ``(B, H, Q, d_latent)`` effective queries (:func:`effective_query`).
    q_pe:
        ``(B, H, Q, d_rope)`` post-RoPE query RoPE part.
    latent_band_norms:
        ``(B, T, bands_c)``: ``||Delta c_{t,b}||`` recorded at the writes (shared by all heads).
        ``bands_c`` must divide ``d_latent``.
    rope_band_norms:
        ``(B, T, bands_pe)``: ``||Delta k_pe,{t,b}||``; ``bands_pe`` must divide ``d_rope``.
        With RoPE, bands should be unions of rotation pairs so that band norms are rotation
        invariant (anchor notes section 1.1).
    scale:
        Softmax scale ``sm`` (e.g. ``(d_nope + d_rope) ** -0.5``).
    """
    if u.dim() != 4 or q_pe.dim() != 4 or u.shape[:3] != q_pe.shape[:3]:
        raise LatentWitnessError(f"u {tuple(u.shape)} and q_pe {tuple(q_pe.shape)} must share (B, H, Q)")
    b = u.shape[0]
    if latent_band_norms.dim() != 3 or rope_band_norms.dim() != 3:
        raise LatentWitnessError("band norms must be (B, T, bands)")
    if latent_band_norms.shape[:2] != rope_band_norms.shape[:2] or latent_band_norms.shape[0] != b:
        raise LatentWitnessError(
            f"latent band norms {tuple(latent_band_norms.shape)} and rope band norms "
            f"{tuple(rope_band_norms.shape)} must share (B, T) with B = {b}"
        )
    comps = latent_components(band_norms(u, latent_band_norms.shape[-1]),
                              band_norms(q_pe, rope_band_norms.shape[-1]), latent_band_norms, rope_band_norms)
    c = component_radii(comps, float(scale), u.shape[:3] + latent_band_norms.shape[1:2])
    c_max = c.amax(dim=-1) if c.shape[-1] else torch.zeros(c.shape[:-1], dtype=torch.float64, device=c.device)
    return LatentWitness(c=c, c_max=c_max)


def latent_witness_from_query(
    q_nope: torch.Tensor,
    w_uk: torch.Tensor,
    q_pe: torch.Tensor,
    latent_band_norms: torch.Tensor,
    rope_band_norms: torch.Tensor,
    scale: float,
) -> LatentWitness:
    """:func:`latent_witness` of ``u = effective_query(q_nope, w_uk)`` (what the fused kernel computes)."""
    return latent_witness(effective_query(q_nope, w_uk), q_pe, latent_band_norms, rope_band_norms, scale)


def k_nope_selfcheck(w_uk: torch.Tensor, latent: torch.Tensor, k_nope: torch.Tensor) -> float:
    """``max |W_UK c - k_nope|``: the adapter captured the right tensors (artifact threshold 5e-2).

    Parameters
    ----------
    w_uk:
        ``(H, d_nope, d_latent)``.
    latent:
        ``(B, T, d_latent)`` cached latents.
    k_nope:
        ``(B, H, T, d_nope)`` no-RoPE keys as the model computed them.
    """
    rebuilt = torch.einsum("hnl,btl->bhtn", w_uk.to(torch.float64), latent.to(torch.float64))
    if rebuilt.shape != k_nope.shape:
        raise LatentWitnessError(f"W_UK c has shape {tuple(rebuilt.shape)}, k_nope {tuple(k_nope.shape)}")
    return float((rebuilt - k_nope.to(torch.float64)).abs().max()) if rebuilt.numel() else 0.0
