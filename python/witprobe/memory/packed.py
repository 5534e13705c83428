"""Packed int4/int6 entries with a block-Hadamard rotation (paper section 8.2), reference codec.

The specification of :mod:`witprobe.kernels.packed`. An entry ``x`` of dimension ``D`` is stored as:

1. **rotate**: split ``x`` into blocks of ``block`` channels (a power of two) and apply the
   orthonormal Sylvester Hadamard matrix ``H = S / sqrt(block)``, ``S[i, j] = (-1)^popcount(i & j)``:
   ``y = x_blk @ H``. Computed in float64 as ``(x @ S) * block**-0.5``; the sums of ``+-x_i`` are
   exact in float64 whenever the entry's magnitudes span less than about 2**22, so any summation
   order gives the same bits. The rotation spreads outliers over the block, so a symmetric
   quantizer wastes less range;
2. **quantize** per group of ``group`` consecutive rotated channels, symmetric:
   ``scale = float32(max|y_g| / qmax)`` (then at least ``1e-30``), ``q = clamp(round_half_even(y /
   scale), -qmax, qmax)`` with ``qmax = 2**(bits-1) - 1`` (7 for int4, 31 for int6), the division
   in float64 with the stored float32 scale;
3. **bit-pack** the offset codes ``q + 2**(bits-1)`` (in ``[1, 2**bits - 1]``) little-endian:
   int4 packs two codes per byte (low nibble first); int6 packs four codes into three bytes
   (``u0 | u1 << 6 | u2 << 12 | u3 << 18``, low byte first).

Unpacking reverses the three steps: ``x_hat = (q * scale) @ H`` per block (``H`` is symmetric
and orthonormal, its own inverse). Storage per entry: ``D * bits / 8`` bytes plus ``4 * D /
group`` bytes of float32 scales.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

SCALE_FLOOR = 1e-30
_UNITS = {4: (2, 1), 6: (4, 3)}  # bits -> (codes per unit, bytes per unit)


class PackedFormatError(ValueError):
    """Bad packed-format parameters or shapes (the message names what)."""


@dataclass(frozen=True)
class PackedFormat:
    """A packed format.

    Parameters
    ----------
    bits:
        4 or 6.
    block:
        Hadamard block size, a power of two >= 2 (1 disables the rotation).
    group:
        Channels per quantization scale; a multiple of the codes per packing unit (2 for int4, 4
        for int6).
    """

    bits: int = 4
    block: int = 64
    group: int = 32

    def __post_init__(self) -> None:
        if self.bits not in _UNITS:
            raise PackedFormatError(f"packed format: bits must be 4 or 6, got {self.bits!r}")
        if not isinstance(self.block, int) or self.block < 1 or self.block & (self.block - 1):
            raise PackedFormatError(f"packed format: block must be a power of two, got {self.block!r}")
        if not isinstance(self.group, int) or self.group < 1 or self.group % self.codes_per_unit:
            raise PackedFormatError(
                f"packed format: group must be a positive multiple of {self.codes_per_unit}, got {self.group!r}"
            )

    @property
    def name(self) -> str:
        return f"int{self.bits}-h{self.block}-g{self.group}"

    @property
    def qmax(self) -> int:
        return (1 << (self.bits - 1)) - 1

    @property
    def offset(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def codes_per_unit(self) -> int:
        return _UNITS[self.bits][0]

    @property
    def bytes_per_unit(self) -> int:
        return _UNITS[self.bits][1]

    def check_dim(self, d: int) -> None:
        for what, k in (("block", self.block), ("group", self.group)):
            if d % k:
                raise PackedFormatError(f"{self.name}: {what} {k} does not divide the entry dimension {d}")

    def packed_bytes(self, d: int) -> int:
        """Bytes of codes per entry of dimension ``d``."""
        self.check_dim(d)
        return d // self.codes_per_unit * self.bytes_per_unit

    def bytes_per_entry(self, d: int) -> int:
        """Code bytes plus float32 scale bytes per entry."""
        return self.packed_bytes(d) + 4 * (d // self.group)


@dataclass(frozen=True)
class PackedEntries:
    """Packed entries.

    Attributes
    ----------
    data:
        ``(..., fmt.packed_bytes(D))`` uint8 codes.
    scales:
        ``(..., D // fmt.group)`` float32.
    dim:
        ``D``.
    """

    data: torch.Tensor
    scales: torch.Tensor
    dim: int


def sylvester(n: int, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu") -> torch.Tensor:
    """The ``n x n`` Sylvester matrix ``S[i, j] = (-1)^popcount(i & j)`` (entries +-1)."""
    if n < 1 or n & (n - 1):
        raise PackedFormatError(f"Hadamard size must be a power of two, got {n}")
    i = torch.arange(n, device=device)
    bits = i[:, None] & i[None, :]
    parity = torch.zeros_like(bits)
    while bool(bits.any()):
        parity ^= bits & 1
        bits = bits >> 1
    return (1 - 2 * parity).to(dtype)


def hadamard_rotate(x: torch.Tensor, block: int) -> torch.Tensor:
    """``(x_blk @ S) * block**-0.5`` per block of the last dimension, float64 (self-inverse)."""
    d = x.shape[-1]
    if d % block:
        raise PackedFormatError(f"Hadamard block {block} does not divide the dimension {d}")
    s = sylvester(block, device=x.device)
    y = x.to(torch.float64).reshape(*x.shape[:-1], d // block, block) @ s
    return (y * block**-0.5).reshape(x.shape)


def round_half_even(v: torch.Tensor) -> torch.Tensor:
    """Round to the nearest integer, ties to even (``torch.round`` semantics), float64."""
    return torch.round(v.to(torch.float64))


def quantize_groups(y: torch.Tensor, fmt: PackedFormat) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-group codes (int32, shape of ``y``) and float32 scales ``(..., D/group)``."""
    d = y.shape[-1]
    g = y.to(torch.float64).reshape(*y.shape[:-1], d // fmt.group, fmt.group)
    amax = g.abs().amax(dim=-1)
    # tensor / tensor: IEEE division on every backend (a scalar divisor may become a reciprocal multiply)
    scale = (amax / torch.full_like(amax, float(fmt.qmax))).to(torch.float32).clamp_min(SCALE_FLOOR)
    q = torch.clamp(round_half_even(g / scale.to(torch.float64).unsqueeze(-1)), -fmt.qmax, fmt.qmax)
    return q.to(torch.int32).reshape(y.shape), scale


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Bit-pack signed codes in ``[-qmax, qmax]`` (last dimension) into uint8, little-endian."""
    cpu_, bpu = _UNITS[bits]
    d = codes.shape[-1]
    if d % cpu_:
        raise PackedFormatError(f"int{bits}: the dimension {d} is not a multiple of {cpu_}")
    u = (codes.to(torch.int64) + (1 << (bits - 1))).reshape(*codes.shape[:-1], d // cpu_, cpu_)
    if bool(((u < 0) | (u >= (1 << bits))).any()):
        raise PackedFormatError(f"int{bits}: a code is outside the representable range")
    word = torch.zeros(u.shape[:-1], dtype=torch.int64, device=codes.device)
    for p in range(cpu_):
        word |= u[..., p] << (bits * p)
    out = torch.stack([(word >> (8 * k)) & 0xFF for k in range(bpu)], dim=-1)
    return out.reshape(*codes.shape[:-1], d // cpu_ * bpu).to(torch.uint8)


def unpack_codes(data: torch.Tensor, bits: int, d: int) -> torch.Tensor:
    """Inverse of :func:`pack_codes`: uint8 ``(..., d*bits/8)`` to int32 codes ``(..., d)``."""
    cpu_, bpu = _UNITS[bits]
    if data.dtype != torch.uint8 or data.shape[-1] * cpu_ != d * bpu:
        raise PackedFormatError(f"int{bits}: expected uint8 data with {d // cpu_ * bpu} bytes per entry")
    b = data.to(torch.int64).reshape(*data.shape[:-1], d // cpu_, bpu)
    word = torch.zeros(b.shape[:-1], dtype=torch.int64, device=data.device)
    for k in range(bpu):
        word |= b[..., k] << (8 * k)
    mask = (1 << bits) - 1
    u = torch.stack([(word >> (bits * p)) & mask for p in range(cpu_)], dim=-1)
    return (u - (1 << (bits - 1))).reshape(*data.shape[:-1], d).to(torch.int32)


def pack(x: torch.Tensor, fmt: PackedFormat) -> PackedEntries:
    """Rotate, quantize and bit-pack entries ``x`` of shape ``(..., D)``."""
    d = x.shape[-1]
    fmt.check_dim(d)
    codes, scales = quantize_groups(hadamard_rotate(x, fmt.block), fmt)
    return PackedEntries(data=pack_codes(codes, fmt.bits), scales=scales, dim=d)


def dequantize(codes: torch.Tensor, scales: torch.Tensor, fmt: PackedFormat) -> torch.Tensor:
    """``q * scale`` per group, float64 (rotated domain)."""
    d = codes.shape[-1]
    g = codes.to(torch.float64).reshape(*codes.shape[:-1], d // fmt.group, fmt.group)
    return (g * scales.to(torch.float64).unsqueeze(-1)).reshape(codes.shape)


def unpack(p: PackedEntries, fmt: PackedFormat) -> torch.Tensor:
    """Unpack, dequantize and inverse-rotate: the served reconstruction ``x_hat`` (float64)."""
    codes = unpack_codes(p.data, fmt.bits, p.dim)
    return hadamard_rotate(dequantize(codes, p.scales, fmt), fmt.block)


def codes_of(p: PackedEntries, fmt: PackedFormat) -> torch.Tensor:
    """The integer codes stored in ``p`` (int32, ``(..., D)``)."""
    return unpack_codes(p.data, fmt.bits, p.dim)
