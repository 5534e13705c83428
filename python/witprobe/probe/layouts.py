"""Which witness layer serves which decoder layer: the memory layout of a model.

The layout is read from the model's configuration (no model code is inspected): an MLA model
(``kv_lora_rank`` set) caches latents, everything else with attention caches dense K/V. Each kind
maps to one witness-layer class; adding a memory class is one class plus one line here.
"""

from __future__ import annotations

from typing import Any

from witprobe.memory.codecs import Codec
from witprobe.probe.latent import WitnessLatentLayer
from witprobe.probe.witness_cache import WitnessCache, WitnessKVLayer, WriteRecorder


class LayoutError(ValueError):
    """The model's memory layout is not one witprobe knows how to witness."""


def text_config(config: Any) -> Any:
    get = getattr(config, "get_text_config", None)
    return get(decoder=True) if callable(get) else config


def layer_kinds(config: Any) -> list[str]:
    """The memory class of every decoder layer (``dense_kv`` or ``latent``)."""
    cfg = text_config(config)
    n = cfg.num_hidden_layers
    types = getattr(cfg, "layer_types", None)
    if types is not None and any(t not in ("full_attention", "sliding_attention") for t in types):
        raise LayoutError(f"layer types {sorted(set(types))} are not supported by the witness cache yet")
    if types is not None and "sliding_attention" in types:
        raise LayoutError("sliding-window layers are not supported by the witness cache yet")
    kind = "latent" if getattr(cfg, "kv_lora_rank", None) else "dense_kv"
    return [kind] * n


def witness_cache_for(config: Any, codec: Codec, bands: int, compress_values: bool,
                      recorder: WriteRecorder) -> WitnessCache:
    """A witness cache with one witness layer per decoder layer of ``config``."""
    cfg = text_config(config)
    layers = []
    for i, kind in enumerate(layer_kinds(cfg)):
        if kind == "dense_kv":
            layers.append(WitnessKVLayer(i, codec, codec if compress_values else None, bands, recorder))
        else:
            layers.append(WitnessLatentLayer(i, codec, codec if compress_values else None, bands, recorder,
                                             kv_lora_rank=cfg.kv_lora_rank, rope_dim=cfg.qk_rope_head_dim))
    return WitnessCache(layers)
