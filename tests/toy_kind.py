"""A toy memory kind, added the way a new one is: this one module plus one registry line.

``toy_kv`` serves layers of type ``"toy_attention"``: dense attention whose keys are compressed
and whose values are stored exactly (a key-only codec deployment). The witness layer is the
dense KV layer with the value codec switched off; the record reuses the dense KV self-checks,
bridges and theorem template.
"""

from __future__ import annotations

from witprobe.calculus.bridges import DENSE_KV
from witprobe.kinds.base import ROW_CHECKS, BuildContext, MemoryKind
from witprobe.probe.witness_cache import WitnessKVLayer


class WitnessKeyOnlyLayer(WitnessKVLayer):
    """Dense KV with compressed keys and exact values."""

    kind = "toy_kv"


def _build(ctx: BuildContext) -> WitnessKeyOnlyLayer:
    return WitnessKeyOnlyLayer(ctx.layer_idx, ctx.codec, None, ctx.bands, ctx.recorder)


KIND = MemoryKind(
    name="toy_kv", classes=("plain_kv",), layer_type="toy_attention", build=_build,
    write_tensors=("key", "value"), read_checks=ROW_CHECKS, score=DENSE_KV, theorem_shape="banded",
    latent_cache=False, bands_divide_head_dim=True,
)
