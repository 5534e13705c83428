"""MLA latent KV (DeepSeek-V3): the compressed latent ``c`` and the rope key, expanded at read."""

from __future__ import annotations

from witprobe.calculus.bridges import LATENT
from witprobe.kinds.base import ROW_CHECKS, BuildContext, MemoryKind


def _build(ctx: BuildContext):
    from witprobe.probe.latent import WitnessLatentLayer

    cfg = ctx.config
    return WitnessLatentLayer(ctx.layer_idx, ctx.codec, ctx.codec if ctx.compress_values else None, ctx.bands,
                              ctx.recorder, kv_lora_rank=cfg.kv_lora_rank, rope_dim=cfg.qk_rope_head_dim)


KIND = MemoryKind(
    name="latent", classes=("latent_kv",), layer_type="full_attention", build=_build,
    write_tensors=("latent", "rope"), read_checks=ROW_CHECKS + ("latent_recon_mismatch",), score=LATENT,
    theorem_shape="latent", score_components=2, latent_cache=True,
)
