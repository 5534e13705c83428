"""Which witness layer serves which decoder layer: the memory layout of a model.

The layout is read from the model's configuration (no model code is inspected): each layer's
``layer_types`` entry, the model type and whether the model caches latents (``kv_lora_rank`` set)
select one registered memory kind (:mod:`witprobe.kinds.registry`), which builds the witness
layer. Adding a memory kind is one module plus one registry line there, nothing here.
"""

from __future__ import annotations

from typing import Any

from witprobe.kinds.base import BuildContext, LayoutError, MemoryKind
from witprobe.kinds.registry import KINDS
from witprobe.memory.codecs import EVICT, WHOLE_SEQUENCE, Codec
from witprobe.probe.witness_cache import WitnessCache, WriteRecorder

__all__ = ["LayoutError", "layer_kinds", "text_config", "witness_cache_for"]


def text_config(config: Any) -> Any:
    """The decoder's text configuration of ``config`` (itself when it has no sub-configurations)."""
    get = getattr(config, "get_text_config", None)
    return get(decoder=True) if callable(get) else config


def _kinds_for(cfg: Any) -> list[MemoryKind]:
    """The kinds that may serve a layer of this model: its own (by ``model_type``), else the generic ones."""
    model_type = getattr(cfg, "model_type", "")
    own = [k for k in KINDS.values() if model_type in k.model_types]
    return own or [k for k in KINDS.values() if not k.model_types]


def layer_kinds(config: Any) -> list[str]:
    """The memory kind (:data:`witprobe.kinds.registry.KINDS`) of every decoder layer of ``config``."""
    cfg = text_config(config)
    n = cfg.num_hidden_layers
    types = getattr(cfg, "layer_types", None) or ["full_attention"] * n
    candidates = _kinds_for(cfg)
    known = {k.layer_type for k in candidates}
    if "full_attention" in known:
        known.add("sliding_attention")  # served by the dense kind below, when the cache is not latent
    unknown = sorted(set(types) - known)
    if unknown:
        owner = f"{getattr(cfg, 'model_type', '')} " if candidates and candidates[0].model_types else ""
        raise LayoutError(f"{owner}layer types {unknown} are not supported by the witness cache yet")
    latent = bool(getattr(cfg, "kv_lora_rank", None))
    kinds = []
    for t in types:
        match = [k for k in candidates if k.layer_type == t and k.latent_cache in (None, latent)]
        if not match and t == "sliding_attention" and not latent:
            # a sliding-window layer of a dense model: the model's own sliding mask limits what is
            # read, so the window is metered exactly by the dense witness layer
            match = [k for k in candidates if k.layer_type == "full_attention" and k.latent_cache in (None, False)]
        if not match:
            raise LayoutError(f"{t.replace('_', ' ')} {'with' if latent else 'without'} a latent cache is not supported")
        kinds.append(match[0].name)
    return kinds


def witness_cache_for(config: Any, codec: Codec, bands: int, compress_values: bool,
                      recorder: WriteRecorder, model: Any = None) -> WitnessCache:
    """A witness cache with one witness layer per decoder layer of ``config``, built by its kind.

    DeepSeek-V4 layers also need ``model``: their compressors own the pooling parameters the
    pooling readings are computed from.
    """
    cfg = text_config(config)
    kinds = layer_kinds(cfg)
    other = sorted({k for k in kinds if k != "dense_kv"})
    if codec.scope in (*WHOLE_SEQUENCE, EVICT) and other:
        what = "an eviction policy" if codec.scope == EVICT else "sequence-level"
        raise LayoutError(f"codec {codec.name} is {what}; it applies to dense KV layers only, "
                          f"not to {', '.join(other)}")
    return WitnessCache([KINDS[kind].build(BuildContext(i, cfg, codec, bands, compress_values, recorder, model))
                         for i, kind in enumerate(kinds)])
