"""Shared pieces of the Triton kernels: the import guard and bit-exact helper functions.

Importing this module requires ``triton`` (the optional ``kernels`` extra). The core package never
imports it unless a Triton implementation is requested.
"""

from __future__ import annotations

import os

try:
    import triton
    import triton.language as tl
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "witprobe.kernels needs the optional dependency triton (pip install 'witprobe[kernels]')"
    ) from exc

import torch


def interpreting() -> bool:
    """Whether Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "yes", "on")


def check_device(*tensors: torch.Tensor) -> None:
    """Refuse tensors that Triton cannot run on here (CPU tensors need the interpreter)."""
    for t in tensors:
        if t.device.type == "cpu" and not interpreting():
            raise RuntimeError(
                "a Triton kernel was given CPU tensors without TRITON_INTERPRET=1 (set it before importing "
                "witprobe.kernels, or use a torch implementation)"
            )


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@triton.jit
def round_half_even_f64(v):
    """Round float64 ``v`` to the nearest integer, ties to even (exact; no libdevice needed)."""
    r = tl.floor(v)
    d = v - r
    half = r * 0.5
    odd = tl.floor(half) != half
    up = (d > 0.5) | ((d == 0.5) & odd)
    return tl.where(up, r + 1.0, r)


@triton.jit
def mix32(x):
    """``lowbias32`` on uint32 (wrapping multiplies), bit-identical to ``counter_rng.mix32``."""
    x = x ^ (x >> 16)
    x = x * 0x7FEB352D
    x = x ^ (x >> 15)
    x = x * 0x846CA68B
    x = x ^ (x >> 16)
    return x
