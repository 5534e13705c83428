"""The ``"witprobe"`` attention function: meter the read, then attend exactly like transformers' eager path.

transformers calls the registered attention function with the post-RoPE queries and the served
keys of each layer. :func:`witprobe_attention` hands the read to the active observer
(:data:`ACTIVE`, a context variable, so concurrent requests in threads each see their own), then
computes attention with :func:`eager_attention` (fp32 softmax) over the served mask: the model's
own mask, narrowed to a sparse selection (:func:`sparse_mask`) or to the retained keys of an
evicting cache (:func:`eviction_mask`). Metering runs beside it in float64 and does not change
what the model computes.
"""

from __future__ import annotations

import contextvars
from typing import Any

import torch
from torch import nn
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, eager_mask

from witprobe.probe.errors import ObserverError


ATTN_IMPLEMENTATION = "witprobe"

# the active witprobe.probe.observer.Observer (typed Any: the observer imports this module, never the reverse)
ACTIVE: contextvars.ContextVar[Any] = contextvars.ContextVar("witprobe_observer", default=None)


def _repeat_kv(x: torch.Tensor, groups: int) -> torch.Tensor:
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def eager_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    sinks: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' eager attention: ``softmax(scale q k^T + mask) v`` with an fp32 softmax.

    With ``sinks`` (one logit per head, gpt-oss / DeepSeek-V4 style) a sink column takes part in
    the softmax and is dropped afterwards, so each row's key probabilities sum to less than 1.
    """
    groups = getattr(module, "num_key_value_groups", 1)
    k = _repeat_kv(key, groups)
    v = _repeat_kv(value, groups)
    w = torch.matmul(query, k.transpose(2, 3)) * scaling
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            w = w.masked_fill(~attention_mask, torch.finfo(w.dtype).min)
        else:
            w = w + attention_mask
    if sinks is not None:
        col = sinks.reshape(1, -1, 1, 1).to(w.dtype).expand(w.shape[0], -1, w.shape[2], 1)
        full = torch.cat([w, col], dim=-1)
        full = full - full.max(dim=-1, keepdim=True).values
        w = nn.functional.softmax(full, dim=-1, dtype=full.dtype)[..., :-1].to(query.dtype)
    else:
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
    w = nn.functional.dropout(w, p=dropout, training=module.training)
    out = torch.matmul(w, v).transpose(1, 2).contiguous()
    return out, w


_UNSUPPORTED_KWARGS = ("softcap", "sinks")


def witprobe_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention function registered as ``"witprobe"``: meter the read, then attend eagerly.

    The parameters are in the order of transformers' ``sdpa_attention_forward`` (``dropout`` sixth):
    models pass both by keyword, and kvpress's import-time wrapper of every registered attention
    function passes ``dropout`` by position."""
    for k in _UNSUPPORTED_KWARGS:
        if kwargs.get(k) is not None:
            raise ObserverError(f"witprobe attention does not model {k!r}; refusing to meter this layer")
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    indices = kwargs.get("indices")
    sinks = kwargs.get("s_aux")
    obs = ACTIVE.get()
    if obs is not None:
        obs.observe_read(module, query, key, attention_mask, scaling, indices=indices, sinks=sinks, value=value)
    served_mask = attention_mask if indices is None else sparse_mask(attention_mask, indices, key.shape[2], query.dtype)
    retained = _served_retained(obs, module, query.shape[1] // key.shape[1])
    if retained is not None:
        served_mask = eviction_mask(served_mask, retained, query.shape[2], query.dtype)
    return eager_attention(module, query, key, value, served_mask, scaling, dropout, sinks=sinks)


def _served_retained(obs: Any, module: nn.Module, groups: int) -> torch.Tensor | None:
    """The retained-key mask ``(B, H, 1, T)`` of the layer this call reads, if it evicts."""
    if obs is None or obs.cache is None:
        return None
    idx = getattr(module, "layer_idx", None)
    if idx is None or not 0 <= idx < len(obs.cache.layers):
        return None
    fn = getattr(obs.cache.layers[idx], "served_retained", None)
    return None if fn is None else fn(groups)


def eviction_mask(mask: torch.Tensor | None, retained: torch.Tensor, q_len: int, dtype: torch.dtype) -> torch.Tensor:
    """The served mask under eviction: ``mask`` with every evicted key hidden, ``(B, H, Q, T)``.

    ``retained`` ``(B, H, 1, T)`` is the layer's retained set; evicted keys get the most negative
    logit (boolean masks: ``False``), so the softmax renormalizes over the retained keys only.
    """
    b, h, _, t = retained.shape
    if mask is None:
        base = torch.zeros((b, h, q_len, t), dtype=dtype, device=retained.device)
        return base.masked_fill(~retained, torch.finfo(dtype).min)
    if mask.dtype == torch.bool:
        return mask & retained
    return torch.where(retained, mask, torch.full((), torch.finfo(mask.dtype).min, dtype=mask.dtype, device=mask.device))


def sparse_mask(mask: torch.Tensor | None, indices: torch.Tensor, kv_len: int, dtype: torch.dtype) -> torch.Tensor:
    """The eager path's sparse attention mask: keys outside ``indices`` ``(B, Q, k)`` are masked out."""
    b, q = indices.shape[:2]
    hide = indices.new_ones((b, q, kv_len), dtype=torch.bool).scatter(-1, indices.long().clamp(min=0), False).unsqueeze(1)
    if mask is None:
        return torch.zeros(hide.shape, dtype=dtype, device=indices.device).masked_fill(hide, torch.finfo(dtype).min)
    if mask.dtype == torch.bool:
        return mask & ~hide
    return mask.masked_fill(hide, torch.finfo(mask.dtype).min)


AttentionInterface.register(ATTN_IMPLEMENTATION, witprobe_attention)
AttentionMaskInterface.register(ATTN_IMPLEMENTATION, eager_mask)
