"""Which models witprobe can meter soundly: one check for the CLI and the Python API.

The attention function ``witprobe`` meters exactly ``softmax(scale q k^T + mask) v`` over the
witness cache (any query/KV head grouping, RoPE or absolute positions, full or sliding-window
masks). A model is supported when its attention is that and nothing more, and its family has been
tested on a tiny saved model (:data:`SUPPORTED`) or is one of the zoo's configurations
(:data:`ZOO_MODEL_TYPES`, metered by their own memory kinds). What the MLP does does not matter:
a mixture of experts (Mixtral) or a parallel residual (GPT-NeoX) only changes the queries, keys
and values the metered attention receives.

:func:`check_config` raises :class:`~witprobe.models.loaded.ModelError` naming what is not
supported: an unknown model type, cross-attention, attention logit soft-capping (the bounds are
stated for uncapped scores), a quantized checkpoint (witprobe meters an fp32 model), GPT-2's
``reorder_and_upcast_attn`` path.
"""

from __future__ import annotations

from typing import Any

from witprobe.models.loaded import ModelError

SUPPORTED: dict[str, str] = {
    "llama": "llama",
    "mistral": "mistral",
    "mixtral": "mixtral-moe",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "phi3": "phi3",
    "gemma2": "gemma2",
    "gemma3_text": "gemma3",
    "gpt2": "gpt2-absolute-positions",
    "gpt_neox": "gpt-neox-partial-rotary",
}
"""``config.model_type`` -> family recorded in run.json. Each is tested on a tiny saved model
(``tests/models/test_local_models.py``)."""

ZOO_MODEL_TYPES = ("deepseek_v3", "deepseek_v32", "deepseek_v4", "kimi_linear")
"""Model types of the zoo's configurations (``--model mla|mla-dsa|v4|kda|mla-smollm2``) beyond
:data:`SUPPORTED`: latent, selector and recurrent memories, metered by their own kinds."""

MAX_LAYERS = 1024
"""The most decoder layers a model may declare (a config claiming 10^6 would run for hours)."""


def check_config(config: Any, where: str, *, zoo: bool = False) -> None:
    """Raise :class:`ModelError` naming what ``config`` (read from ``where``) has that witprobe cannot
    meter. ``zoo=True`` also accepts :data:`ZOO_MODEL_TYPES` (the API, given any loaded model)."""
    layers = getattr(config, "num_hidden_layers", None)
    if isinstance(layers, int) and not 0 < layers <= MAX_LAYERS:
        raise ModelError(f"{where}: num_hidden_layers {layers} is not in 1..{MAX_LAYERS}")
    mt = getattr(config, "model_type", None)
    archs = ", ".join(getattr(config, "architectures", None) or []) or "no architectures listed"
    if mt not in SUPPORTED and not (zoo and mt in ZOO_MODEL_TYPES):
        raise ModelError(f"{where}: model type {mt!r} ({archs}) is not supported; supported model types: "
                         f"{', '.join(sorted(SUPPORTED))}")
    if getattr(config, "is_encoder_decoder", False) or getattr(config, "add_cross_attention", False):
        raise ModelError(f"{where}: cross-attention (encoder-decoder) is not supported: only decoder self-attention "
                         "over a K/V cache is metered")
    cap = getattr(config, "attn_logit_softcapping", None)
    if cap is not None:
        raise ModelError(f"{where}: attention logit soft-capping (attn_logit_softcapping={cap}) is not supported: "
                         "the bounds are stated for uncapped scores; set it to null to certify the uncapped model")
    q = getattr(config, "quantization_config", None)
    if q is not None and not str(where).endswith(".gguf"):
        method = q.get("quant_method") if isinstance(q, dict) else getattr(q, "quant_method", q)
        raise ModelError(f"{where}: quantized checkpoints (quant_method={method}) are not supported; "
                         "witprobe meters an fp32 model (dequantize it first)")
    if getattr(config, "reorder_and_upcast_attn", False):
        raise ModelError(f"{where}: reorder_and_upcast_attn=True (GPT-2's eager-only attention path) is not supported")
