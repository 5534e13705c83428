"""MLA latent KV with a DSA indexer (DeepSeek-V3.2): the latent cache plus the indexer's keys."""

from __future__ import annotations

from witprobe.calculus.bridges import LATENT
from witprobe.kinds.base import ROW_CHECKS, SELECTION_CHECKS, BuildContext, MemoryKind


def _build(ctx: BuildContext):
    from witprobe.probe.selector import WitnessIndexedLatentLayer

    cfg = ctx.config
    return WitnessIndexedLatentLayer(ctx.layer_idx, ctx.codec, ctx.codec if ctx.compress_values else None, ctx.bands,
                                     ctx.recorder, kv_lora_rank=cfg.kv_lora_rank, rope_dim=cfg.qk_rope_head_dim,
                                     indexer_codec=ctx.codec)


KIND = MemoryKind(
    name="latent_indexed", classes=("latent_kv", "sparse_selector"), layer_type="indexed_attention", build=_build,
    write_tensors=("latent", "rope", "indexer"), read_checks=ROW_CHECKS + ("latent_recon_mismatch",) + SELECTION_CHECKS,
    score=LATENT, theorem_shape="latent", score_components=2, latent_cache=True, selection=True, hook="indexer",
)
