"""Faulty attention kernels, to show that the kernel audit catches what users report.

Each fault replaces transformers' ``paged|eager`` attention function (the one continuous
batching calls on the CPU) with a variant that has one realistic defect; attach the ledger
*after* :func:`inject` and the audit (:mod:`witprobe.serving.read_meter`) compares what the
faulty kernel returns with its float64 recomputation:

``fp16-accumulation``
    The scores are accumulated in float16 over the head dimension (each partial sum rounded to
    float16) and the output is rounded to float16: the FP8/FP16-accumulation class of bug.
``causal-off-by-one``
    The mask is shifted by one key: each row sees one key later than it should (the current
    token's successor instead of the first key of its window).
``softmax-scale``
    The scale is computed from ``head_dim + 1`` instead of ``head_dim`` (0.8 % too small for 64).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from witprobe.probe.attention import _repeat_kv
from witprobe.serving.attention_entry import override, restore

KERNEL_FAULTS = ("fp16-accumulation", "causal-off-by-one", "softmax-scale")


def faulty_kernel(fault: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """The ``paged|eager`` attention function with ``fault`` (one of :data:`KERNEL_FAULTS`)."""
    if fault not in KERNEL_FAULTS:
        raise ValueError(f"unknown kernel fault {fault!r}; choose from {', '.join(KERNEL_FAULTS)}")

    def attend(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               attention_mask: torch.Tensor | None, scaling: float | None = None, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        groups = getattr(module, "num_key_value_groups", 1)
        k, v = _repeat_kv(key, groups), _repeat_kv(value, groups)
        d = query.shape[-1]
        scale = d ** -0.5 if scaling is None else scaling
        if fault == "softmax-scale":
            scale = (d + 1) ** -0.5
        if fault == "fp16-accumulation":
            acc = torch.zeros(query.shape[:-1] + (k.shape[-2],), dtype=torch.float16)
            for i in range(d):  # a float16 accumulator over the head dimension
                acc = (acc.float() + query[..., i:i + 1] * k[..., i:i + 1].transpose(-1, -2)).half()
            w = acc.float() * scale
        else:
            w = torch.matmul(query, k.transpose(2, 3)) * scale
        mask = attention_mask
        if fault == "causal-off-by-one" and mask is not None:
            mask = torch.roll(mask, 1, dims=-1)
        if mask is not None:
            w = w + mask
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
        out = torch.matmul(w, v)
        if fault == "fp16-accumulation":
            out = out.half().to(query.dtype)
        return out.transpose(1, 2).contiguous(), w

    attend.__name__ = f"faulty_{fault.replace('-', '_')}"
    return attend


@contextlib.contextmanager
def inject(fault: str) -> Iterator[None]:
    """Make the faulty kernel the engine's attention function for the duration (restored after)."""
    saved = override(faulty_kernel(fault))
    try:
        yield
    finally:
        restore(saved)
