"""transformers' ``QuantizedCache`` backends as codecs: what a quantized-cache layer really serves.

transformers quantizes a KV cache with :class:`transformers.cache_utils.QuantizedLayer`
(``QuantizedCache(backend="quanto", nbits=..., axis_key=..., axis_value=..., q_group_size=...,
residual_length=...)``). Its served state depends on the write history, not only on the entries:

- the first write (the prefill) is quantized into storage, but that write's own attention reads
  the exact entries (``update`` returns its inputs);
- each later write returns ``dequantize(Q) ++ residual ++ new`` (``residual`` kept in full
  precision);
- when ``residual + new >= residual_length`` everything returned is quantized again (the
  dequantized old part included) and the residual is emptied.

So this codec does not imitate the layer: :class:`QuantizedCacheState` holds a real
``QuantoQuantizedLayer`` per layer and role, feeds it each write and serves what its ``update``
returns, through optimum-quanto's ``MaxOptimizer`` and ``quantize_weight`` (the only code path
transformers uses for this backend). The witness cache keeps the exact entries beside it and
witnesses every entry whose served form changed (:mod:`witprobe.probe.witness_cache`), so the
bounds cover whatever the backend served.

Scope ``"cache"`` (:data:`witprobe.memory.codec_base.CACHE`): keys and values are each fed to their
own layer (keys quantized along ``axis_key``, values along ``axis_value``), dense KV layers only,
batch 1. optimum-quanto (``pip install optimum-quanto``, CPU works) must be installed; without it
the codec is refused with that message. HQQ (``backend="HQQ"``) is not a codec here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from witprobe.memory.codec_base import CACHE, Codec, CodecError

BACKENDS = ("quanto",)


def quanto_available() -> bool:
    """Whether optimum-quanto >= 0.2.5 is importable (what ``QuantoQuantizedLayer`` requires)."""
    from transformers.utils import is_optimum_quanto_available, is_quanto_greater

    return bool(is_optimum_quanto_available() and is_quanto_greater("0.2.5", accept_dev=True))


class QuantizedCacheState:
    """One role's storage: a transformers ``QuantoQuantizedLayer`` fed the role's writes.

    :meth:`write` takes the new entries ``(B, H, n, D)`` and returns the whole served sequence
    ``(B, H, T, D)`` that the layer's ``update`` returns for this write."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer

    def write(self, new: torch.Tensor) -> torch.Tensor:
        served, _ = self.layer.update(new, new)
        return served


@dataclass(frozen=True)
class QuantizedCacheCodec(Codec):
    """A transformers quantized-cache backend (``backend="quanto"``) as a codec.

    Parameters (``QuantizedCache``'s, with its defaults)
    ----------------------------------------------------
    nbits:
        2 or 4 (``qint2`` / ``qint4``).
    axis_key, axis_value:
        0 or -1, the quantization axis of ``quantize_weight`` for keys and values.
    q_group_size:
        Elements per quantization group (64).
    residual_length:
        Tokens kept in full precision before they are flushed into storage (128).
    """

    backend: str = "quanto"
    nbits: int = 4
    axis_key: int = 0
    axis_value: int = 0
    q_group_size: int = 64
    residual_length: int = 128

    scope: ClassVar[str] = CACHE

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise CodecError(f"quantized cache: backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.nbits not in (2, 4):
            raise CodecError(f"{self.name}: nbits must be 2 or 4 for the quanto backend, got {self.nbits!r}")
        for axis in (self.axis_key, self.axis_value):
            if axis not in (0, -1):
                raise CodecError(f"{self.name}: axis_key and axis_value must be 0 or -1, got {axis!r}")
        if not isinstance(self.q_group_size, int) or self.q_group_size < 1:
            raise CodecError(f"{self.name}: q_group_size must be a positive integer, got {self.q_group_size!r}")
        if not isinstance(self.residual_length, int) or self.residual_length < 1:
            raise CodecError(f"{self.name}: residual_length must be a positive integer, got {self.residual_length!r}")
        if not quanto_available():
            raise CodecError(f"{self.name}: needs optimum-quanto >= 0.2.5 (pip install optimum-quanto)")

    @property
    def name(self) -> str:
        return f"{self.backend}{self.nbits}-g{self.q_group_size}-r{self.residual_length}"

    def check_dim(self, d: int) -> None:
        """quanto groups ``q_group_size`` consecutive elements of the flattened ``(B, H, T, D)``
        states and fails when their count is not a multiple; with ``D`` a multiple of the group
        size that never happens, otherwise it happens at some sequence lengths: refused."""
        if d % self.q_group_size:
            raise CodecError(f"{self.name}: q_group_size {self.q_group_size} does not divide the entry dimension {d} "
                             "(transformers' quanto backend fails at some sequence lengths then)")

    def new_state(self, role: str) -> QuantizedCacheState:
        """A fresh backend layer for ``role`` (``"key"`` quantizes along ``axis_key``, ``"value"``
        along ``axis_value``)."""
        from transformers.cache_utils import QuantoQuantizedLayer

        if role not in ("key", "value"):
            raise CodecError(f"{self.name}: role must be 'key' or 'value', got {role!r}")
        axis = self.axis_key if role == "key" else self.axis_value
        return QuantizedCacheState(QuantoQuantizedLayer(nbits=self.nbits, axis_key=axis, axis_value=axis,
                                                        q_group_size=self.q_group_size,
                                                        residual_length=self.residual_length))

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        raise CodecError(f"{self.name}: a quantized-cache backend serves from its write history; "
                         "the witness cache feeds it through new_state(role).write")
