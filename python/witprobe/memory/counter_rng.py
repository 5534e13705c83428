"""Counter-based random numbers for stochastic rounding: reproducible, rank-invariant, graph-safe.

A stream is keyed by the quadruple ``(server nonce, request uid, layer, event counter)`` (paper
section 5.6): distinct requests never share a stream, and every tensor-parallel replica that knows
the quadruple realizes the same draws. The ``j``-th uniform of a stream is a pure function of the
key and ``j``, so there is no generator state to capture or to replay.

The mixing function is the 32-bit ``lowbias32`` integer hash (xor-shift-multiply). It uses only
32-bit multiplies, xors and shifts, so a Triton kernel can reproduce it bit for bit; the torch
reference below is its specification.
"""

from __future__ import annotations

import torch

MASK32 = 0xFFFFFFFF
_M1 = 0x7FEB352D
_M2 = 0x846CA68B
_GOLDEN = 0x9E3779B9


def mix32_int(x: int) -> int:
    """``lowbias32`` on a Python integer (taken modulo 2**32)."""
    x &= MASK32
    x ^= x >> 16
    x = (x * _M1) & MASK32
    x ^= x >> 15
    x = (x * _M2) & MASK32
    x ^= x >> 16
    return x


def mix32(x: torch.Tensor) -> torch.Tensor:
    """``lowbias32`` elementwise on an int64 tensor holding values in ``[0, 2**32)``."""
    if x.dtype != torch.int64:
        raise TypeError(f"mix32 expects int64, got {x.dtype}")
    x = x & MASK32
    x = x ^ (x >> 16)
    x = (x * _M1) & MASK32
    x = x ^ (x >> 15)
    x = (x * _M2) & MASK32
    x = x ^ (x >> 16)
    return x


def stream_key(nonce: int, uid: int, layer: int, counter: int) -> int:
    """The 32-bit key of the stream ``(nonce, uid, layer, counter)``; each part must fit 32 bits."""
    parts = (nonce, uid, layer, counter)
    for name, v in zip(("nonce", "uid", "layer", "counter"), parts):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MASK32:
            raise ValueError(f"stream key part {name} must be an integer in [0, 2**32), got {v!r}")
    h = 0
    for v in parts:
        h = mix32_int(h ^ mix32_int(v + _GOLDEN))
    return h


def uniforms(key: int, index: torch.Tensor) -> torch.Tensor:
    """Uniforms in ``[0, 1)`` (float64, multiples of ``2**-32``) for positions ``index`` of a stream."""
    if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key <= MASK32:
        raise ValueError(f"stream key must be an integer in [0, 2**32), got {key!r}")
    idx = index.to(torch.int64)
    bits = mix32(mix32(idx & MASK32) ^ key)
    return bits.to(torch.float64) / 4294967296.0
