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


KNOWN_LAYER_TYPES = ("full_attention", "sliding_attention", "indexed_attention", "linear_attention")
"""A ``sliding_attention`` layer keeps every entry in its witness layer; the model's sliding-window
mask hides the old ones, so what attention reads (and what is metered) is exactly the window."""
V4_KINDS = {
    "compressed_sparse_attention": "v4_csa",
    "heavily_compressed_attention": "v4_hca",
    "sliding_attention": "v4_sliding",
}


def layer_kinds(config: Any) -> list[str]:
    """The memory class of every decoder layer: ``dense_kv``, ``latent`` or ``latent_indexed``."""
    cfg = text_config(config)
    n = cfg.num_hidden_layers
    types = getattr(cfg, "layer_types", None) or ["full_attention"] * n
    if getattr(cfg, "model_type", "") == "deepseek_v4":
        unknown_v4 = sorted(set(types) - set(V4_KINDS))
        if unknown_v4:
            raise LayoutError(f"DeepSeek-V4 layer types {unknown_v4} are not supported")
        return [V4_KINDS[t] for t in types]
    unknown = sorted(set(types) - set(KNOWN_LAYER_TYPES))
    if unknown:
        raise LayoutError(f"layer types {unknown} are not supported by the witness cache yet")
    latent = bool(getattr(cfg, "kv_lora_rank", None))
    kinds = []
    for t in types:
        if t == "linear_attention":
            kinds.append("recurrent")
        elif t == "sliding_attention" and latent:
            raise LayoutError("sliding-window attention over a latent cache is not supported")
        elif t == "indexed_attention":
            if not latent:
                raise LayoutError("indexed attention without a latent cache is not supported")
            kinds.append("latent_indexed")
        else:
            kinds.append("latent" if latent else "dense_kv")
    return kinds


def witness_cache_for(config: Any, codec: Codec, bands: int, compress_values: bool,
                      recorder: WriteRecorder, model: Any = None) -> WitnessCache:
    """A witness cache with one witness layer per decoder layer of ``config``.

    DeepSeek-V4 layers also need ``model``: their compressors own the pooling parameters the
    pooling readings are computed from.
    """
    cfg = text_config(config)
    layers = []
    for i, kind in enumerate(layer_kinds(cfg)):
        if kind.startswith("v4_"):
            from witprobe.probe.v4 import WitnessV4CSALayer, WitnessV4HCALayer, WitnessV4SlidingLayer

            cls = {"v4_csa": WitnessV4CSALayer, "v4_hca": WitnessV4HCALayer, "v4_sliding": WitnessV4SlidingLayer}[kind]
            layer = cls(i, cfg, codec, bands, recorder)
            if model is None:
                raise LayoutError("DeepSeek-V4 witness layers need the model (for the compressors)")
            layer.bind(getattr(model.model.layers[i].self_attn, "compressor", None))
            layers.append(layer)
            continue
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
