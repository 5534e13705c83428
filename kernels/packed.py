"""Packed int4/int6 kernels with block-Hadamard rotation: fused pack and fused unpack.

Specification: :mod:`witprobe.memory.packed`. Each program handles ``BLOCK_R`` entries times one
Hadamard block of ``BLOCK`` channels. The Sylvester matrix is generated in registers from the
parity of ``i & j`` (no device constant to build lazily, nothing to capture by mistake).

- :func:`pack_fused`: rotate in float64 (sums of +-x, exact as in the reference), per-group
  scales rounded to float32, codes by round-half-even in float64, bit-packing of 2 (int4) or 4
  (int6) codes per unit, all in one launch. Codes and scales equal the reference's bit for bit.
- :func:`unpack_fused`: gather the bytes of each code, dequantize in float32 and inverse-rotate
  with ``tl.dot`` (IEEE float32 products, tensor-core friendly); float32 output within ~1e-7 of
  the float64 reference relative to the entry's magnitude.
"""

from __future__ import annotations

import torch

from witprobe.kernels._common import check_device, round_half_even_f64, tl, triton
from witprobe.memory.packed import SCALE_FLOOR, PackedEntries, PackedFormat, PackedFormatError

BLOCK_R = 16
K_CHUNK = 8


@triton.jit
def _parity_sign(i, j):
    """(-1)^popcount(i & j) for nonnegative int32 tensors (broadcast), as float64."""
    x = i & j
    x = x ^ (x >> 16)
    x = x ^ (x >> 8)
    x = x ^ (x >> 4)
    x = x ^ (x >> 2)
    x = x ^ (x >> 1)
    return 1.0 - 2.0 * (x & 1).to(tl.float64)


@triton.jit
def _pack_kernel(x_ptr, data_ptr, scale_ptr, n_rows,
                 D: tl.constexpr, BLOCK: tl.constexpr, G: tl.constexpr, QMAX: tl.constexpr, OFF: tl.constexpr,
                 BITS: tl.constexpr, CPU: tl.constexpr, BPU: tl.constexpr, NBYTES: tl.constexpr,
                 INV_SQRT: tl.constexpr, FLOOR: tl.constexpr, BLOCK_R: tl.constexpr, K_CHUNK: tl.constexpr):
    pr = tl.program_id(0)
    pb = tl.program_id(1)
    rows = pr * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    r64 = rows.to(tl.int64)
    jj = tl.arange(0, BLOCK)
    y = tl.zeros([BLOCK_R, BLOCK], dtype=tl.float64)
    for k0 in range(0, BLOCK, K_CHUNK):
        kk = k0 + tl.arange(0, K_CHUNK)
        xk = tl.load(x_ptr + r64[:, None] * D + pb * BLOCK + kk[None, :], mask=rmask[:, None], other=0.0)
        sgn = _parity_sign(kk[:, None], jj[None, :])
        y += tl.sum(xk.to(tl.float64)[:, :, None] * sgn[None, :, :], axis=1)
    y = y * tl.full([], INV_SQRT, tl.float64)
    y3 = tl.reshape(y, [BLOCK_R, BLOCK // G, G])
    amax = tl.max(tl.abs(y3), axis=2)
    s32 = tl.maximum((amax / tl.full([], QMAX, tl.float64)).to(tl.float32), FLOOR)
    gidx = tl.arange(0, BLOCK // G)
    tl.store(scale_ptr + r64[:, None] * (D // G) + pb * (BLOCK // G) + gidx[None, :], s32, mask=rmask[:, None])
    code = round_half_even_f64(y3 / s32.to(tl.float64)[:, :, None])
    code = tl.minimum(tl.maximum(code, -QMAX * 1.0), QMAX * 1.0)
    u = tl.reshape(code.to(tl.int32) + OFF, [BLOCK_R, BLOCK // CPU, CPU])
    ph = tl.arange(0, CPU)
    word = tl.zeros([BLOCK_R, BLOCK // CPU], dtype=tl.int32)
    for p in tl.static_range(CPU):
        up = tl.sum(tl.where(ph[None, None, :] == p, u, 0), axis=2)
        word = word | (up << (BITS * p))
    units = tl.arange(0, BLOCK // CPU)
    base = r64[:, None] * NBYTES + (pb * (BLOCK // CPU) + units[None, :]) * BPU
    for k in tl.static_range(BPU):
        tl.store(data_ptr + base + k, ((word >> (8 * k)) & 0xFF).to(tl.uint8), mask=rmask[:, None])


@triton.jit
def _unpack_kernel(data_ptr, scale_ptr, out_ptr, n_rows,
                   D: tl.constexpr, BLOCK: tl.constexpr, G: tl.constexpr, OFF: tl.constexpr,
                   BITS: tl.constexpr, CPU: tl.constexpr, BPU: tl.constexpr, NBYTES: tl.constexpr,
                   INV_SQRT: tl.constexpr, BLOCK_R: tl.constexpr):
    pr = tl.program_id(0)
    pb = tl.program_id(1)
    rows = pr * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < n_rows
    r64 = rows.to(tl.int64)
    jj = tl.arange(0, BLOCK)
    col = pb * BLOCK + jj
    unit = col // CPU
    pos = col % CPU
    base = r64[:, None] * NBYTES + (unit * BPU)[None, :]
    word = tl.zeros([BLOCK_R, BLOCK], dtype=tl.int32)
    for k in tl.static_range(BPU):
        byte = tl.load(data_ptr + base + k, mask=rmask[:, None], other=0).to(tl.int32)
        word = word | (byte << (8 * k))
    u = (word >> (BITS * pos)[None, :]) & ((1 << BITS) - 1)
    scale = tl.load(scale_ptr + r64[:, None] * (D // G) + (col // G)[None, :], mask=rmask[:, None], other=0.0)
    deq = (u - OFF).to(tl.float32) * scale
    ii = tl.arange(0, BLOCK)
    x = ii[:, None] & jj[None, :]
    x = x ^ (x >> 16)
    x = x ^ (x >> 8)
    x = x ^ (x >> 4)
    x = x ^ (x >> 2)
    x = x ^ (x >> 1)
    sgn = 1.0 - 2.0 * (x & 1).to(tl.float32)
    out = tl.dot(deq, sgn, input_precision="ieee") * INV_SQRT
    tl.store(out_ptr + r64[:, None] * D + col[None, :], out, mask=rmask[:, None])


def _check(fmt: PackedFormat, d: int, kernel: str) -> None:
    fmt.check_dim(d)
    if fmt.block % fmt.group:
        raise PackedFormatError(f"{kernel}: the kernel needs group {fmt.group} to divide block {fmt.block}")
    if fmt.block < 16:
        raise PackedFormatError(f"{kernel}: the kernel needs block >= 16 (tl.dot tiles), got {fmt.block}")


def pack_fused(x: torch.Tensor, fmt: PackedFormat) -> PackedEntries:
    """Rotate, quantize and bit-pack float32 entries ``x`` ``(..., D)`` in one launch."""
    d = x.shape[-1]
    _check(fmt, d, "pack_fused")
    check_device(x)
    x2 = x.reshape(-1, d).to(torch.float32).contiguous()
    n = x2.shape[0]
    nbytes = fmt.packed_bytes(d)
    data = torch.empty((n, nbytes), dtype=torch.uint8, device=x.device)
    scales = torch.empty((n, d // fmt.group), dtype=torch.float32, device=x.device)
    if n:
        _pack_kernel[(triton.cdiv(n, BLOCK_R), d // fmt.block)](
            x2, data, scales, n, D=d, BLOCK=fmt.block, G=fmt.group, QMAX=fmt.qmax, OFF=fmt.offset, BITS=fmt.bits,
            CPU=fmt.codes_per_unit, BPU=fmt.bytes_per_unit, NBYTES=nbytes, INV_SQRT=fmt.block**-0.5,
            FLOOR=SCALE_FLOOR, BLOCK_R=BLOCK_R, K_CHUNK=min(K_CHUNK, fmt.block),
        )
    lead = x.shape[:-1]
    return PackedEntries(data=data.reshape(*lead, nbytes), scales=scales.reshape(*lead, d // fmt.group), dim=d)


def unpack_fused(p: PackedEntries, fmt: PackedFormat) -> torch.Tensor:
    """Unpack, dequantize and inverse-rotate in one launch: float32 ``(..., D)``."""
    d = p.dim
    _check(fmt, d, "unpack_fused")
    nbytes = fmt.packed_bytes(d)
    if p.data.dtype != torch.uint8 or p.data.shape[-1] != nbytes:
        raise PackedFormatError(f"unpack_fused: expected uint8 data with {nbytes} bytes per entry")
    check_device(p.data)
    data = p.data.reshape(-1, nbytes).contiguous()
    scales = p.scales.reshape(-1, d // fmt.group).to(torch.float32).contiguous()
    n = data.shape[0]
    out = torch.empty((n, d), dtype=torch.float32, device=data.device)
    if n:
        _unpack_kernel[(triton.cdiv(n, BLOCK_R), d // fmt.block)](
            data, scales, out, n, D=d, BLOCK=fmt.block, G=fmt.group, OFF=fmt.offset, BITS=fmt.bits,
            CPU=fmt.codes_per_unit, BPU=fmt.bytes_per_unit, NBYTES=nbytes, INV_SQRT=fmt.block**-0.5, BLOCK_R=BLOCK_R,
        )
    return out.reshape(*p.data.shape[:-1], d)
