"""Which witness layer serves which decoder layer: the memory layout of a model.

The layout is read from the model's configuration (no model code is inspected): an MLA model
(``kv_lora_rank`` set) caches latents, everything else with attention caches dense K/V. Each kind
maps to one witness-layer class; adding a memory class is one class plus one line here.
"""

from __future__ import annotations

from typing import Any

from witprobe.memory.codecs import Codec
from witprobe.probe.latent import WitnessLatentLayer
from witprobe.probe.recurrent import WitnessRecurrentLayer
from witprobe.probe.selector import WitnessIndexedLatentLayer
from witprobe.probe.witness_cache import WitnessCache, WitnessKVLayer, WriteRecorder


class LayoutError(ValueError):
    """The model's memory layout is not one witprobe knows how to witness."""


def text_config(config: Any) -> Any:
    get = getattr(config, "get_text_config", None)
    return get(decoder=True) if callable(get) else config


KNOWN_LAYER_TYPES = ("full_attention", "indexed_attention", "linear_attention")


def layer_kinds(config: Any) -> list[str]:
    """The memory class of every decoder layer: ``dense_kv``, ``latent`` or ``latent_indexed``."""
    cfg = text_config(config)
    n = cfg.num_hidden_layers
    types = getattr(cfg, "layer_types", None) or ["full_attention"] * n
    unknown = sorted(set(types) - set(KNOWN_LAYER_TYPES))
    if unknown:
        raise LayoutError(f"layer types {unknown} are not supported by the witness cache yet")
    latent = bool(getattr(cfg, "kv_lora_rank", None))
    kinds = []
    for t in types:
        if t == "linear_attention":
            kinds.append("recurrent")
        elif t == "indexed_attention":
            if not latent:
                raise LayoutError("indexed attention without a latent cache is not supported")
            kinds.append("latent_indexed")
        else:
            kinds.append("latent" if latent else "dense_kv")
    return kinds


def witness_cache_for(config: Any, codec: Codec, bands: int, compress_values: bool,
                      recorder: WriteRecorder) -> WitnessCache:
    """A witness cache with one witness layer per decoder layer of ``config``."""
    cfg = text_config(config)
    layers = []
    for i, kind in enumerate(layer_kinds(cfg)):
        if kind == "dense_kv":
            layers.append(WitnessKVLayer(i, codec, codec if compress_values else None, bands, recorder))
        elif kind == "recurrent":
            layers.append(WitnessRecurrentLayer(i, codec, bands, recorder))
        elif kind == "latent":
            layers.append(WitnessLatentLayer(i, codec, codec if compress_values else None, bands, recorder,
                                             kv_lora_rank=cfg.kv_lora_rank, rope_dim=cfg.qk_rope_head_dim))
        else:
            layers.append(WitnessIndexedLatentLayer(i, codec, codec if compress_values else None, bands, recorder,
                                                    kv_lora_rank=cfg.kv_lora_rank, rope_dim=cfg.qk_rope_head_dim,
                                                    indexer_codec=codec))
    return WitnessCache(layers)
