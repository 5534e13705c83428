"""Stochastic-rounding write kernel: round to a uniform grid with counter-based uniforms.

Specification: :func:`witprobe.memory.sr_grid.sr_round_grid`. The uniforms are
``lowbias32(lowbias32(index) ^ key) / 2**32`` (:mod:`witprobe.memory.counter_rng`), computed here
in uint32 arithmetic, bit for bit; the comparison ``u < theta`` and ``theta`` itself are float64,
so every rounding decision equals the reference's.
"""

from __future__ import annotations

import torch

from witprobe.kernels._common import check_device, mix32, tl, triton
from witprobe.memory.sr_grid import SRWrite, _validate

BLOCK = 256


@triton.jit
def _uniform_bits(key, idx64):
    idx = (idx64 & 0xFFFFFFFF).to(tl.uint32)
    return mix32(mix32(idx) ^ key.to(tl.uint32))


@triton.jit
def _sr_write_kernel(x_ptr, y_ptr, code_ptr, n, step, key, offset, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m, other=0.0)
    s = tl.full([BLOCK], 0.0, tl.float32) + step
    v = tl.div_rn(x, s)
    v64 = v.to(tl.float64)
    f = tl.floor(v64)
    theta = v64 - f
    bits = _uniform_bits(key, i + offset)
    u = bits.to(tl.float64) * (1.0 / 4294967296.0)
    code = f + tl.where(u < theta, 1.0, 0.0)
    y = code.to(tl.float32) * s
    tl.store(y_ptr + i, y, mask=m)
    tl.store(code_ptr + i, code.to(tl.int32), mask=m)


@triton.jit
def _bits_kernel(out_ptr, n, key, offset, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out_ptr + i, _uniform_bits(key, i + offset).to(tl.int64), mask=m)


def uniform_bits(key: int, n: int, offset: int = 0, device: torch.device | str = "cpu") -> torch.Tensor:
    """The raw 32-bit words of stream ``key`` at ``offset .. offset+n-1`` (int64), from the kernel."""
    out = torch.empty(n, dtype=torch.int64, device=device)
    check_device(out)
    if n:
        _bits_kernel[(triton.cdiv(n, BLOCK),)](out, n, key, offset, BLOCK=BLOCK)
    return out


def sr_write(x: torch.Tensor, step: float, key: int, offset: int = 0) -> SRWrite:
    """Fused stochastic-rounding write of float32 ``x`` (one launch); see the module docstring.

    No host synchronisation (graph-capturable). Precondition, as in the reference: ``|x/step| <
    2**31`` so that the int32 codes do not overflow (the reference checks it; the kernel cannot
    without a sync).
    """
    _validate(x, step, key, offset)
    check_device(x)
    xc = x.contiguous()
    y = torch.empty_like(xc)
    codes = torch.empty(xc.shape, dtype=torch.int32, device=xc.device)
    n = xc.numel()
    if n:
        _sr_write_kernel[(triton.cdiv(n, BLOCK),)](xc, y, codes, n, float(step), key, offset, BLOCK=BLOCK)
    return SRWrite(values=y.reshape(x.shape), codes=codes.reshape(x.shape))
