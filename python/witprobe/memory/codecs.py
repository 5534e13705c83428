"""Reference codecs: compress a tensor of cache entries and return what would be served.

A codec maps entries ``x`` of shape ``(..., D)`` to their served reconstruction ``x_hat`` of the
same shape and dtype. Its error ``Delta = x - x_hat`` is known exactly because the meters see
both sides; the witness is computed from ``Delta`` by :func:`witprobe.probe.meters.band_witness`.

Each codec is a small frozen dataclass with one verb, :meth:`Codec.encode_decode`, in the style
of kvpress presses. The registry :data:`CODECS` maps names used on the command line to factories.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch


class CodecError(ValueError):
    """A codec was configured or applied wrongly (the message names what)."""


@dataclass(frozen=True)
class Codec:
    """Base class. Subclasses implement :meth:`encode_decode`."""

    @property
    def name(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        """Return the served reconstruction of ``x`` (same shape and dtype)."""
        raise NotImplementedError


@dataclass(frozen=True)
class BandIntCodec(Codec):
    """Symmetric per-band integer quantization (paper section 2.1, artifact meters).

    The last dimension ``D`` is split into ``bands`` contiguous bands of ``D / bands`` channels.
    For each entry and band ``b``: ``scale_b = max|x_b| / qmax`` with ``qmax = 2^(bits-1) - 1``,
    ``q = clamp(round(x_b / scale_b), -qmax - 1, qmax)`` (round half to even) and
    ``x_hat_b = q * scale_b``. Arithmetic is float64; the result is cast back to ``x.dtype``,
    which is the value actually stored, so the witness is computed against it.

    Parameters
    ----------
    bits:
        Code width, 2 to 8.
    bands:
        Number of bands; must divide the entry dimension.
    """

    bits: int = 8
    bands: int = 4

    def __post_init__(self) -> None:
        if not isinstance(self.bits, int) or not 2 <= self.bits <= 8:
            raise CodecError(f"band int codec: bits must be an integer in [2, 8], got {self.bits!r}")
        if not isinstance(self.bands, int) or self.bands < 1:
            raise CodecError(f"band int codec: bands must be a positive integer, got {self.bands!r}")

    @property
    def name(self) -> str:
        return f"int{self.bits}"

    @property
    def qmax(self) -> int:
        return (1 << (self.bits - 1)) - 1

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        if d % self.bands:
            raise CodecError(f"{self.name}: {self.bands} bands do not divide the entry dimension {d}")
        xb = x.to(torch.float64).reshape(*x.shape[:-1], self.bands, d // self.bands)
        scale = xb.abs().amax(dim=-1, keepdim=True).clamp_min(1e-30) / self.qmax
        q = torch.clamp(torch.round(xb / scale), -self.qmax - 1, self.qmax)
        return (q * scale).reshape(x.shape).to(x.dtype)


def _band_int(bits: int) -> Callable[[int], Codec]:
    return lambda bands: BandIntCodec(bits=bits, bands=bands)


CODECS: dict[str, Callable[[int], Codec]] = {
    "int8": _band_int(8),
    "int6": _band_int(6),
    "int4": _band_int(4),
    "int2": _band_int(2),
}


def make_codec(name: str, bands: int) -> Codec:
    """Build a registered codec by name, e.g. ``make_codec("int8", bands=4)``."""
    try:
        factory = CODECS[name]
    except KeyError:
        raise CodecError(f"unknown codec {name!r}; available: {', '.join(sorted(CODECS))}") from None
    return factory(bands)
