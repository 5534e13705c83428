"""Dense KV (plain and GQA attention): compressed keys and values, one witness per entry."""

from __future__ import annotations

from witprobe.calculus.bridges import DENSE_KV
from witprobe.kinds.base import ROW_CHECKS, BuildContext, MemoryKind


def _build(ctx: BuildContext):
    from witprobe.probe.witness_cache import WitnessKVLayer

    # a codec may serve keys and values differently (KIVI: per-channel keys, per-token values)
    return WitnessKVLayer(ctx.layer_idx, ctx.codec.for_role("key"),
                          ctx.codec.for_role("value") if ctx.compress_values else None, ctx.bands, ctx.recorder)


KIND = MemoryKind(
    name="dense_kv", classes=("plain_kv",), layer_type="full_attention", build=_build,
    write_tensors=("key", "value"), read_checks=ROW_CHECKS, score=DENSE_KV, theorem_shape="banded",
    latent_cache=False, bands_divide_head_dim=True,
)
