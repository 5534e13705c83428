"""Recurrent / linear-attention state (Kimi-Linear KDA): observed through its state writes."""

from __future__ import annotations

from witprobe.kinds.base import BuildContext, MemoryKind


def _build(ctx: BuildContext):
    from witprobe.probe.recurrent import WitnessRecurrentLayer

    return WitnessRecurrentLayer(ctx.layer_idx, ctx.codec, ctx.bands, ctx.recorder)


KIND = MemoryKind(
    name="recurrent", classes=("recurrent_state",), layer_type="linear_attention", build=_build,
    write_tensors=("state",), hook="decay",
)
