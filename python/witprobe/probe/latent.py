"""Latent (MLA) memory: the cache stores the compressed latent ``c`` and the rope key ``k_pe``.

transformers 5.x MLA models (DeepSeek-V2/V3, Kimi-Linear's MLA layers, ...) call
``cache.update(kv_nope, k_rot, layer_idx)`` with the latent ``kv_nope`` of shape
``(B, 1, S, kv_lora_rank)`` and the post-RoPE shared key ``k_rot`` of shape ``(B, 1, S, rope)``,
and expand keys after the read: ``k_nope^{(h)} = W_UK^{(h)} c``. A latent residual therefore
propagates *linearly* into the logits through the up-projection:

    ``Delta s_t^{(h)} = scale * (u_h . Delta c_t + q_pe^{(h)} . Delta k_pe,t)``,  ``u_h = W_UK^{(h)T} q_nope^{(h)}``,

and per band ``|Delta s_t| <= c_t = scale * (sum_b ||u_b|| ||Delta c_b|| + sum_b ||q_pe,b|| ||Delta k_pe,b||)``
(paper section 2.1, latent Tier-A witness). Self-check: ``W_UK c`` must reproduce the key the
model expanded (counter ``latent_recon_mismatch``).
"""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer

from witprobe.calculus.float_error import allowance
from witprobe.memory.codecs import Codec
from witprobe.probe.meters import band_norms, band_witness, score_error, visibility
from witprobe.probe.meters_latent import effective_query, latent_components, w_uk_from_kv_b_proj
from witprobe.probe.witness_cache import ReadScores, WitnessLayerMixin, WriteRecorder, bands_for

RECON_REL_TOL = 1e-4


class LatentShapeError(ValueError):
    """The cache received tensors that are not an MLA latent and rope key."""


def latent_key_weight(module) -> torch.Tensor:
    """``W_UK`` as ``(H, nope, r)`` from an MLA attention module's ``kv_b_proj`` (float64)."""
    w = module.kv_b_proj.weight.to(torch.float64)
    nope, v = module.qk_nope_head_dim, module.v_head_dim
    return w_uk_from_kv_b_proj(w, w.shape[0] // (nope + v), nope, v)


class WitnessLatentLayer(WitnessLayerMixin, DynamicLayer):
    """MLA latent cache layer: compress the latent and the rope key at every write.

    Attributes
    ----------
    keys, values:
        Served latent ``(B, 1, T, r)`` and served rope key ``(B, 1, T, rope)``.
    exact_latent, exact_rope:
        Uncompressed versions.
    latent_band_norms, rope_band_norms:
        Residual band norms per entry.
    """

    kind = "latent"

    def __init__(self, layer_idx: int, latent_codec: Codec, rope_codec: Codec | None, bands: int,
                 recorder: WriteRecorder, kv_lora_rank: int | None = None, rope_dim: int | None = None) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.latent_codec = latent_codec
        self.rope_codec = rope_codec
        self.bands = bands
        self.recorder = recorder
        self.expected = (kv_lora_rank, rope_dim)
        self.exact_latent: torch.Tensor | None = None
        self.exact_rope: torch.Tensor | None = None
        self.latent_band_norms: torch.Tensor | None = None
        self.rope_band_norms: torch.Tensor | None = None

    def _check_shapes(self, c: torch.Tensor, k_pe: torch.Tensor) -> None:
        if c.dim() != 4 or k_pe.dim() != 4 or c.shape[1] != 1 or k_pe.shape[1] != 1 or c.shape[:3] != k_pe.shape[:3]:
            raise LatentShapeError(
                f"layer {self.layer_idx}: expected latent (B,1,S,r) and rope key (B,1,S,rope), got "
                f"{tuple(c.shape)} and {tuple(k_pe.shape)} (is this transformers >= 5 caching the latent?)"
            )
        r, rope = self.expected
        if (r is not None and c.shape[-1] != r) or (rope is not None and k_pe.shape[-1] != rope):
            raise LatentShapeError(
                f"layer {self.layer_idx}: latent width {c.shape[-1]} / rope width {k_pe.shape[-1]} differ "
                f"from the config ({r} / {rope})"
            )

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        c, k_pe = key_states, value_states
        self._check_shapes(c, k_pe)
        if not self.is_initialized:
            self.lazy_initialization(c, k_pe)
            self.bands_latent = bands_for(c.shape[-1], self.bands)
            self.bands_rope = bands_for(k_pe.shape[-1], self.bands)
        c_hat = self.latent_codec.encode_decode(c)
        pe_hat = k_pe if self.rope_codec is None else self.rope_codec.encode_decode(k_pe)
        wc = band_witness(c, c_hat, self.bands_latent)
        wp = band_witness(k_pe, pe_hat, self.bands_rope)
        self.recorder.record_write(self.layer_idx, "latent", wc, self.bands_latent)
        self.recorder.record_write(self.layer_idx, "rope", wp, self.bands_rope)
        self.keys = torch.cat([self.keys, c_hat], dim=-2)
        self.values = torch.cat([self.values, pe_hat], dim=-2)
        self._append("exact_latent", c)
        self._append("exact_rope", k_pe)
        self._append("latent_band_norms", wc.band_norms)
        self._append("rope_band_norms", wp.band_norms)
        return self.keys, self.values

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("witness layers do not support cropping: the witness would lose its entries")

    def _expand(self, wuk: torch.Tensor, c: torch.Tensor, k_pe: torch.Tensor) -> torch.Tensor:
        """Keys ``(B, H, T, nope + rope)`` from a latent and rope key, in float64."""
        k_nope = torch.einsum("hnr,btr->bhtn", wuk, c[:, 0].to(torch.float64))
        heads = wuk.shape[0]
        k_rot = k_pe.to(torch.float64).expand(-1, heads, -1, -1)
        return torch.cat([k_nope, k_rot], dim=-1)

    def read_scores(self, module, query, key, mask, scaling, rows=None, indices=None) -> ReadScores:
        if self.keys is None or key.shape[2] != self.keys.shape[2]:
            raise ValueError(f"layer {self.layer_idx}: attention read {key.shape[2]} keys, the cache holds "
                             f"{None if self.keys is None else self.keys.shape[2]}")
        wuk = latent_key_weight(module)
        nope = module.qk_nope_head_dim
        k_served = self._expand(wuk, self.keys, self.values)
        k_exact = self._expand(wuk, self.exact_latent, self.exact_rope)
        if key.shape != k_served.shape:
            raise ValueError(f"layer {self.layer_idx}: expanded keys {tuple(k_served.shape)} vs read keys {tuple(key.shape)}")
        scale_ref = k_served.abs().amax(dim=-1, keepdim=True).clamp_min(1e-30)
        mismatch = ((k_served - key.to(torch.float64)).abs() / scale_ref).amax(dim=-1) > RECON_REL_TOL
        q = query.to(torch.float64)
        s_exact = torch.matmul(q, k_exact.transpose(-1, -2)) * scaling
        s_served = torch.matmul(q, k_served.transpose(-1, -2)) * scaling
        u = effective_query(q[..., :nope], wuk)
        heads, r = wuk.shape[0], wuk.shape[-1]
        bl = self.bands_latent
        # u = W_UK^T q_nope is a float64 dot product of length nope that may cancel: its error per
        # latent band is at most gamma_nope ||q_nope|| ||W_UK[:, :, b]||_F (not relative to ||u_b||),
        # so the band norms carry that allowance and stay upper bounds (docs/TRUST_BOUNDARY.md)
        q_nope_norm = q[..., :nope].norm(dim=-1)  # B,H,Q
        w_band_f = wuk.reshape(heads, nope, bl, r // bl).pow(2).sum(dim=(1, 3)).sqrt()  # H,bl
        u_bands = band_norms(u, bl) + allowance(nope) * q_nope_norm.unsqueeze(-1) * w_band_f[None, :, None, :]
        comps = latent_components(u_bands, band_norms(q[..., nope:], self.bands_rope),
                                  self.latent_band_norms[:, 0], self.rope_band_norms[:, 0])
        # served scores: keys expanded in float64 (dot length r, error gamma_r |W||c|), then q . k
        w_f = wuk.pow(2).sum(dim=(1, 2)).sqrt()  # H
        c_norm = self.keys[:, 0].to(torch.float64).norm(dim=-1)  # B,T
        err = score_error(q, k_served, scaling) + (allowance(r) * abs(scaling)) * (
            (q_nope_norm * w_f[None, :, None]).unsqueeze(-1) * c_norm[:, None, None, :])
        return ReadScores(s_exact, s_served, visibility(mask, s_exact.shape), comps,
                          score_err=err, width=max(q.shape[-1], r, nope, self.values.shape[-1]),
                          counters={"latent_recon_mismatch": mismatch})
