"""DeepSeek-V4: a sliding window of recent tokens, plus heavily (HCA) or sparsely (CSA) selected
compressed entries. Three kinds, one witness-layer class each; all need the model (the
compressors own the pooling parameters)."""

from __future__ import annotations

from witprobe.calculus.bridges import DENSE_KV
from witprobe.kinds.base import ROW_CHECKS, SELECTION_CHECKS, BuildContext, LayoutError, MemoryKind

MODEL_TYPES = ("deepseek_v4",)


def _builder(cls_name: str):
    def build(ctx: BuildContext):
        from witprobe.probe import v4

        layer = getattr(v4, cls_name)(ctx.layer_idx, ctx.config, ctx.codec, ctx.bands, ctx.recorder)
        if ctx.model is None:
            raise LayoutError("DeepSeek-V4 witness layers need the model (for the compressors)")
        layer.bind(getattr(ctx.model.model.layers[ctx.layer_idx].self_attn, "compressor", None))
        return layer

    return build


_V4 = dict(classes=("latent_kv",), score=DENSE_KV, theorem_shape="sink", model_types=MODEL_TYPES)
SLIDING = MemoryKind(name="v4_sliding", layer_type="sliding_attention", build=_builder("WitnessV4SlidingLayer"),
                     write_tensors=("window",), read_checks=ROW_CHECKS + ("v4_key_mismatch",), **_V4)
HCA = MemoryKind(name="v4_hca", layer_type="heavily_compressed_attention", build=_builder("WitnessV4HCALayer"),
                 write_tensors=("window", "entry"), read_checks=ROW_CHECKS + ("v4_key_mismatch", "entry_pool_viol"),
                 pooling=True, **_V4)
CSA = MemoryKind(name="v4_csa", layer_type="compressed_sparse_attention", build=_builder("WitnessV4CSALayer"),
                 write_tensors=("window", "entry", "index_entry"),
                 read_checks=ROW_CHECKS + ("v4_key_mismatch", "entry_pool_viol", "index_entry_pool_viol") + SELECTION_CHECKS,
                 pooling=True, selection=True, hook="pages",
                 **{**_V4, "classes": ("latent_kv", "sparse_selector")})
