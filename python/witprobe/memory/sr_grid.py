"""Stochastic rounding to a uniform grid, driven by the counter-based RNG (reference).

This is the specification of the Triton write kernel :mod:`witprobe.kernels.sr_write`. For entries
``x`` (float32, any shape) and a grid step ``s > 0`` (float32), element ``i`` of the row-major
flattening is written as

``v = x_i / s`` (float32, IEEE division), ``f = floor(v)``, ``theta = v - f`` (exact, float64;
0 when ``|v| >= 2**24``, where float32 values are integers),
``u = counter_rng.uniforms(key, offset + i)`` (float64, a multiple of ``2**-32`` in ``[0, 1)``),
``code = f + [u < theta]``, ``y_i = code * s`` (float32).

So ``y`` rounds up with probability ``theta`` (up to the ``2**-32`` resolution of ``u``) and
``E[y_i] = x_i`` in that sense: the rounding error is unbiased, which is what the SR ledger's
certified object needs (paper section 5.4). ``key = counter_rng.stream_key(nonce, uid, layer,
counter)`` names the stream; ``offset`` places this write inside it. No generator state exists,
so the same key and offset give the same bits on every replica and under graph replay.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from witprobe.memory.counter_rng import MASK32, uniforms

MAX_CODE = 1 << 31  # codes are stored as int32


class SRGridError(ValueError):
    """Bad input to the stochastic-rounding writer (the message names what)."""


@dataclass(frozen=True)
class SRWrite:
    """Result of one stochastic-rounding write.

    Attributes
    ----------
    values:
        ``y`` (float32, the shape of ``x``): what is stored.
    codes:
        ``code`` (int32, the shape of ``x``): ``y = code * s``.
    """

    values: torch.Tensor
    codes: torch.Tensor


def _validate(x: torch.Tensor, step: float, key: int, offset: int) -> None:
    if x.dtype != torch.float32:
        raise SRGridError(f"sr write: x must be float32, got {x.dtype}")
    if not (isinstance(step, float) or isinstance(step, int)) or not step > 0:
        raise SRGridError(f"sr write: step must be a positive number, got {step!r}")
    if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key <= MASK32:
        raise SRGridError(f"sr write: key must be an integer in [0, 2**32), got {key!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise SRGridError(f"sr write: offset must be a nonnegative integer, got {offset!r}")


def sr_round_grid(x: torch.Tensor, step: float, key: int, offset: int = 0) -> SRWrite:
    """Round ``x`` stochastically to the grid ``step * Z`` using stream ``key`` from ``offset``.

    Parameters
    ----------
    x:
        float32 entries, any shape.
    step:
        Grid step ``s`` (converted to float32).
    key:
        32-bit stream key (:func:`witprobe.memory.counter_rng.stream_key`).
    offset:
        Index of the first element in the stream.
    """
    _validate(x, step, key, offset)
    s32 = torch.full_like(x, float(step))
    v = x / s32
    if v.numel() and not bool(v.abs().max() < MAX_CODE):
        raise SRGridError("sr write: |x/step| must stay below 2**31 (codes are int32)")
    v64 = v.to(torch.float64)
    f = torch.floor(v64)
    theta = v64 - f
    idx = torch.arange(x.numel(), dtype=torch.int64, device=x.device) + offset
    u = uniforms(key, idx).reshape(x.shape)
    code = f + (u < theta).to(torch.float64)
    values = code.to(torch.float32) * s32
    return SRWrite(values=values, codes=code.to(torch.int32))
