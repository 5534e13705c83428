"""A tiny witprobe plugin, as a user would write one (docs/PLUGINS.md).

- :class:`StepCodec`: rounds every entry to the grid ``2^-step_bits`` (float64, cast back);
- :class:`FirstLastPolicy`: an eviction policy keeping the first ``first`` and last ``last`` tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from witprobe.memory.codecs import Codec, CodecError, EvictionPolicy


@dataclass(frozen=True)
class StepCodec(Codec):
    """Round to the nearest multiple of ``2^-step_bits`` (round half to even)."""

    step_bits: int = 5

    def __post_init__(self) -> None:
        if not isinstance(self.step_bits, int) or not 0 <= self.step_bits <= 20:
            raise CodecError(f"step codec: step_bits must be an integer in [0, 20], got {self.step_bits!r}")

    @property
    def name(self) -> str:
        return f"step{self.step_bits}"

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        scale = float(2 ** self.step_bits)
        return (torch.round(x.to(torch.float64) * scale) / scale).to(x.dtype)


@dataclass(frozen=True)
class FirstLastPolicy(EvictionPolicy):
    """Keep tokens ``[0, first)`` and ``[T - last, T)``; positions only (no votes)."""

    first: int = 4
    last: int = 8

    def keep(self, scores: torch.Tensor) -> torch.Tensor:
        t = scores.shape[-1]
        if t <= self.first + self.last:
            idx = torch.arange(t, device=scores.device)
        else:
            idx = torch.cat([torch.arange(self.first, device=scores.device),
                             torch.arange(t - self.last, t, device=scores.device)])
        return idx.expand(*scores.shape[:-1], idx.shape[0]).clone()
