"""A reference codec for recurrent states, kept with its tests (no witprobe command compresses a
recurrent state yet; it moves into :mod:`witprobe.memory.codecs` when one does).

:class:`StateIntCodec` quantizes a linear-attention state per key channel."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from witprobe.memory.codecs import CodecError, GridCodec, _slack


@dataclass(frozen=True)
class StateIntCodec(GridCodec):
    """Per-channel symmetric integer quantization of a recurrent state tensor.

    For a linear-attention state ``S`` of shape ``(batch, heads, d_k, d_v)`` (Kimi-Linear KDA,
    Gated DeltaNet) the default ``reduce_dim=-1`` gives one scale per ``(batch, head, key
    channel)``, the channel along which the KDA decay ``g`` acts, so channel identity is kept:
    ``scale = max_v |S[..., k, v]| / qmax``, ``qmax = 2^(bits-1) - 1``,
    ``S_hat = round(S / scale) * scale`` (round half to even; the codes lie in ``[-qmax, qmax]``).
    The error is at most ``scale / 2`` per element (:meth:`error_bound` adds an outward allowance
    for float64 rounding and the cast back); an all-zero channel is stored exactly. Arithmetic is
    float64, the result is cast back to the state's dtype (float32 in
    transformers' Kimi-Linear).

    Parameters
    ----------
    bits:
        Code width, 2 to 16.
    reduce_dim:
        The dimension that shares one scale.
    """

    bits: int = 8
    reduce_dim: int = -1

    def __post_init__(self) -> None:
        if not isinstance(self.bits, int) or not 2 <= self.bits <= 16:
            raise CodecError(f"state int codec: bits must be an integer in [2, 16], got {self.bits!r}")

    @property
    def name(self) -> str:
        return f"state-int{self.bits}"

    @property
    def qmax(self) -> int:
        return (1 << (self.bits - 1)) - 1

    def _scale(self, xd: torch.Tensor) -> torch.Tensor:
        return xd.abs().amax(dim=self.reduce_dim, keepdim=True) / self.qmax

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        xd = x.to(torch.float64)
        scale = self._scale(xd)
        safe = torch.where(scale > 0, scale, torch.ones_like(scale))
        q = torch.clamp(torch.round(xd / safe), -self.qmax, self.qmax)
        return torch.where(scale > 0, q * safe, torch.zeros_like(xd)).to(x.dtype)

    def error_bound(self, x: torch.Tensor) -> torch.Tensor:
        xd = x.to(torch.float64)
        scale = self._scale(xd)
        bound = scale / 2 + _slack(scale * self.qmax, x.dtype)
        return torch.where(scale > 0, bound, torch.zeros_like(bound)).expand_as(xd).clone()
