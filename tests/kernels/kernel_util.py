"""Helpers shared by the kernel equivalence tests."""

from __future__ import annotations

import os

import torch


def kernel_device() -> str:
    """``cuda`` when a GPU is present and Triton compiles natively, else ``cpu`` (interpreter)."""
    interp = os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "yes", "on")
    return "cuda" if torch.cuda.is_available() and not interp else "cpu"


def rel_err(a: float, b: float) -> float:
    """``|a - b| / max(|b|, tiny)`` (``b`` is the reference)."""
    return abs(a - b) / max(abs(b), 1e-300)
