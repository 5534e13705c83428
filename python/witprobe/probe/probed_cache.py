"""Serving-path caches whose layers let the always-on probe observe every write.

These are plain transformers cache layers (entries stored exactly, nothing compressed) with one
added step: before storing, each layer hands the written key and value states to a
:class:`~witprobe.probe.runtime.ProbeRuntime`. One class per layer kind (the transformers
``cache_utils`` pattern): :class:`ProbedDynamicLayer` for eager decoding, :class:`ProbedStaticLayer`
for CUDA graphs (static addresses). The certify path (compressed memory) reaches the same runtime
through :class:`witprobe.probe.observer.Observer`.

Pass the cache as ``cache=`` to ``model(...)`` or ``model.generate(...)``; no model code is patched.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer, StaticLayer

from witprobe.probe.runtime import ProbeRuntime


class _ProbedWrites:
    """Report each key/value write to the runtime before the cache layer stores it."""

    layer_idx: int
    runtime: ProbeRuntime

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        self.runtime.on_write(self.layer_idx, "key", key_states)
        self.runtime.on_write(self.layer_idx, "value", value_states)
        return super().update(key_states, value_states, *args, **kwargs)


class ProbedDynamicLayer(_ProbedWrites, DynamicLayer):
    """A ``DynamicLayer`` that reports each write ``(batch, kv_heads, new_tokens, head_dim)``."""

    def __init__(self, layer_idx: int, runtime: ProbeRuntime) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.runtime = runtime


class ProbedStaticLayer(_ProbedWrites, StaticLayer):
    """A ``StaticLayer`` (preallocated, in-place writes) that reports each write; graph-capturable."""

    def __init__(self, max_cache_len: int, layer_idx: int, runtime: ProbeRuntime) -> None:
        super().__init__(max_cache_len=max_cache_len)
        self.layer_idx = layer_idx
        self.runtime = runtime


class ProbedCache(DynamicCache):
    """A ``DynamicCache`` of :class:`ProbedDynamicLayer`, one per decoder layer of ``runtime``."""

    def __init__(self, runtime: ProbeRuntime) -> None:
        Cache.__init__(self, layers=[ProbedDynamicLayer(i, runtime) for i in range(runtime.num_layers)])
        self.runtime = runtime


class ProbedStaticCache(Cache):
    """A static cache of :class:`ProbedStaticLayer` (``max_cache_len`` slots per layer), for graphs."""

    def __init__(self, runtime: ProbeRuntime, max_cache_len: int) -> None:
        super().__init__(layers=[ProbedStaticLayer(max_cache_len, i, runtime) for i in range(runtime.num_layers)])
        self.runtime = runtime
