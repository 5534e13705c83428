"""Record every write a model makes to its memory, through the transformers Cache API only.

:class:`RecordingCache` is a ``DynamicCache`` built from the model's config (so it holds the
same per-layer classes transformers would build) that logs every write as a :class:`CacheWrite`
and otherwise behaves exactly like ``DynamicCache``. It is the executable form of
``docs/MEMORY_INTERFACES.md``: the tests in ``tests/models/`` run every zoo model through it and
check the document's statements (methods called, shapes, dtypes, in-place writes).

Interception points it uses (no model code is patched):

- container methods ``update``, ``update_indexer``, ``update_conv_state``,
  ``update_recurrent_state`` (overridden on the subclass);
- DeepSeek-V4's per-layer methods ``store_compression_weights``, ``update_overlap_state``,
  ``update_compressor_states``, which the V4 compressors call on ``cache.layers[i]`` directly,
  bypassing the container (wrapped on this cache's own layer objects);
- Kimi-Linear's single-token decode, which writes the conv state **in place** inside
  ``causal_conv1d_update`` on the tensor returned by ``get_conv_state`` instead of calling
  ``update_conv_state``: ``get_conv_state`` keeps a copy, and the next
  ``update_recurrent_state`` of the same layer (always called later in the same forward) records
  the in-place write as method ``"conv_state_inplace"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers.cache_utils import DynamicCache

V4_LAYER_METHODS = ("store_compression_weights", "update_overlap_state", "update_compressor_states")


@dataclass(frozen=True)
class CacheWrite:
    """One write to a model's memory.

    Attributes
    ----------
    layer:
        Decoder layer index.
    method:
        The cache method that received the write (``update``, ``update_indexer``,
        ``update_conv_state``, ``update_recurrent_state``, ``conv_state_inplace``, or a V4 layer
        method).
    entry:
        DeepSeek-V4 entry name (``"compressor"`` or ``"indexer"``) for the V4 layer methods;
        ``"key=value"`` for an ``update`` whose key and value are the same tensor object; else
        ``None``.
    shapes, dtypes:
        Of the tensors written, in argument order.
    tensors:
        Copies of the tensors written (only with ``keep_tensors=True``).
    """

    layer: int
    method: str
    entry: str | None
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[torch.dtype, ...]
    tensors: tuple[torch.Tensor, ...] = field(default=(), repr=False, compare=False)


class RecordingCache(DynamicCache):
    """A ``DynamicCache(config=...)`` that records every write in :attr:`writes`.

    Parameters
    ----------
    config:
        The model config (its ``layer_types`` select the per-layer cache classes).
    keep_tensors:
        Keep a detached copy of every written tensor in :attr:`CacheWrite.tensors`.
    """

    def __init__(self, config: Any, keep_tensors: bool = False) -> None:
        super().__init__(config=config)
        self.writes: list[CacheWrite] = []
        self.keep_tensors = keep_tensors
        self._conv_snapshots: dict[int, torch.Tensor] = {}
        for i, layer in enumerate(self.layers):
            for name in V4_LAYER_METHODS:
                if hasattr(layer, name):
                    setattr(layer, name, self._wrap_layer_method(i, name, getattr(layer, name)))

    def _record(self, layer: int, method: str, entry: str | None, *tensors: torch.Tensor) -> None:
        self.writes.append(
            CacheWrite(
                layer=layer,
                method=method,
                entry=entry,
                shapes=tuple(tuple(t.shape) for t in tensors),
                dtypes=tuple(t.dtype for t in tensors),
                tensors=tuple(t.detach().clone() for t in tensors) if self.keep_tensors else (),
            )
        )

    def _wrap_layer_method(self, layer_idx: int, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(entry: str, *args: Any, **kwargs: Any) -> Any:
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            self._record(layer_idx, name, entry, *tensors)
            return fn(entry, *args, **kwargs)

        return wrapped

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any):
        # DeepSeek-V4 passes one tensor as both key and value (shared-KV MQA): marked "key=value"
        entry = "key=value" if value_states is key_states else None
        self._record(layer_idx, "update", entry, key_states, value_states)
        return super().update(key_states, value_states, layer_idx, *args, **kwargs)

    def update_indexer(self, indexer_key_states: torch.Tensor, layer_idx: int) -> torch.Tensor:
        self._record(layer_idx, "update_indexer", None, indexer_key_states)
        return super().update_indexer(indexer_key_states, layer_idx)

    def get_conv_state(self, layer_idx: int, state_idx: int = 0) -> torch.Tensor | None:
        state = super().get_conv_state(layer_idx, state_idx)
        if state is not None:
            self._conv_snapshots[layer_idx] = state.detach().clone()
        return state

    def update_conv_state(self, conv_states: torch.Tensor, layer_idx: int, state_idx: int = 0, **kwargs: Any):
        self._record(layer_idx, "update_conv_state", None, conv_states)
        self._conv_snapshots.pop(layer_idx, None)
        return super().update_conv_state(conv_states, layer_idx, state_idx, **kwargs)

    def update_recurrent_state(self, recurrent_states: torch.Tensor, layer_idx: int, state_idx: int = 0, **kwargs: Any):
        before = self._conv_snapshots.pop(layer_idx, None)
        if before is not None:
            after = self.layers[layer_idx].conv_states[state_idx]
            if not torch.equal(before, after):
                self._record(layer_idx, "conv_state_inplace", None, after)
        self._record(layer_idx, "update_recurrent_state", None, recurrent_states)
        return super().update_recurrent_state(recurrent_states, layer_idx, state_idx, **kwargs)

    def calls(self, layer: int | None = None) -> list[tuple[int, str, str | None]]:
        """``(layer, method, entry)`` of every write, optionally of one layer only."""
        return [(w.layer, w.method, w.entry) for w in self.writes if layer is None or w.layer == layer]


def dsa_index_scores(
    indexer: Any,
    hidden_states: torch.Tensor,
    q_resid: torch.Tensor,
    position_embeddings: tuple[torch.Tensor, torch.Tensor],
    attention_mask: torch.Tensor,
    indexer_keys: torch.Tensor,
) -> torch.Tensor:
    """Recompute the DeepSeek-V3.2 (DSA) indexer scores that transformers does not return.

    ``DeepseekV32Indexer.forward`` returns only the top-k indices; its scores are formed inline.
    A forward pre-hook (``with_kwargs=True``) on ``layers[i].self_attn.indexer`` receives the
    positional arguments ``(hidden_states, q_resid, position_embeddings, attention_mask,
    position_ids)`` and ``cache=``; the witness cache holds the full indexer keys (the return value
    of ``update_indexer``). This function repeats the indexer's arithmetic on them.

    Parameters
    ----------
    indexer:
        The ``DeepseekV32Indexer`` module.
    hidden_states:
        ``(batch, q_len, hidden)``, the attention input.
    q_resid:
        ``(batch, q_len, q_lora_rank)``, ``q_a_layernorm(q_a_proj(hidden_states))``.
    position_embeddings:
        ``(cos, sin)``, each ``(batch, q_len, qk_rope_head_dim)``.
    attention_mask:
        ``(batch, q_len, kv_len)``, the additive (float) or boolean causal mask the indexer receives.
    indexer_keys:
        ``(batch, kv_len, index_head_dim)``, all cached indexer keys (RoPE already applied).

    Returns
    -------
    torch.Tensor
        ``(batch, q_len, kv_len)`` float32 scores ``sum_h w_h * relu(q_h . k / sqrt(d))`` plus the mask;
        the indexer keeps ``topk(scores, min(index_topk, kv_len))``.
    """
    from transformers.models.deepseek_v32.modeling_deepseek_v32 import apply_rotary_pos_emb

    b, s, _ = hidden_states.shape
    cos, sin = position_embeddings
    rope = indexer.qk_rope_head_dim
    q = indexer.wq_b(q_resid).view(b, s, indexer.n_heads, indexer.head_dim)
    q_rot, q_pass = torch.split(q, [rope, indexer.head_dim - rope], dim=-1)
    q_rot, _ = apply_rotary_pos_emb(q_rot, q_rot, cos, sin, unsqueeze_dim=2)
    q = torch.cat([q_rot, q_pass], dim=-1)
    dots = torch.matmul(q.float(), indexer_keys.transpose(-1, -2).float().unsqueeze(1))
    scores = torch.relu(dots * indexer.softmax_scale)
    weights = indexer.weights_proj(hidden_states).float() * indexer.n_heads**-0.5
    index_scores = torch.matmul(weights.unsqueeze(-2), scores).squeeze(-2)
    if attention_mask.dtype == torch.bool:
        return index_scores.masked_fill(~attention_mask, float("-inf"))
    return index_scores + attention_mask


def v4_pooling_weights(
    chunk_kv: torch.Tensor,
    chunk_gate: torch.Tensor,
    position_bias: torch.Tensor,
    compress_rate: int,
    head_dim: int,
    overlap: bool,
    prior: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The slots and gate weights of DeepSeek-V4's block pooling (one compressed entry per window).

    The V4 compressors return only the pooled entries; the weights are formed inline. The chunk
    they pool is the return value of the cache layer's ``store_compression_weights(name, kv,
    gate)`` (the longest window-aligned prefix of buffer + new tokens), and ``position_bias`` is
    the compressor's parameter. The stored entry is
    ``rope(kv_norm((slots * weights).sum(dim=2)))``: the weights act **per channel** (a softmax
    over the slots of each window, separately for every one of the ``head_dim`` channels).

    Parameters
    ----------
    chunk_kv, chunk_gate:
        ``(batch, n_windows * compress_rate, width)``, ``width = head_dim`` (HCA) or
        ``2 * head_dim`` (CSA and the CSA indexer: series Ca = ``[..., :head_dim]``,
        Cb = ``[..., head_dim:]``).
    position_bias:
        ``(compress_rate, width)``, added to the gate logits of every window.
    overlap:
        ``False`` for HCA (non-overlapping windows of ``compress_rate`` slots); ``True`` for CSA
        (``2 * compress_rate`` slots: the previous window's Ca then the current window's Cb).
    prior:
        CSA only: the previous call's last-window ``(Ca kv, Ca gate + bias)``, each
        ``(batch, compress_rate, head_dim)`` (the return value of ``update_overlap_state``);
        ``None`` on the first call, when window 0's first half gets weight 0.

    Returns
    -------
    tuple[torch.Tensor, torch.Tensor]
        ``slots`` and ``weights``, each ``(batch, n_windows, n_slots, head_dim)``; the weights are
        float32, non-negative and sum to 1 over ``n_slots`` for every window and channel.
    """
    b = chunk_kv.shape[0]
    n = chunk_kv.shape[1] // compress_rate
    kv = chunk_kv.view(b, n, compress_rate, -1)
    gate = chunk_gate.view(b, n, compress_rate, -1) + position_bias
    if not overlap:
        return kv, gate.softmax(dim=2, dtype=torch.float32)
    m, d = compress_rate, head_dim
    slots = kv.new_zeros((b, n, 2 * m, d))
    logits = gate.new_full((b, n, 2 * m, d), float("-inf"))
    slots[:, :, m:] = kv[..., d:]
    logits[:, :, m:] = gate[..., d:]
    if n > 1:
        slots[:, 1:, :m] = kv[:, :-1, :, :d]
        logits[:, 1:, :m] = gate[:, :-1, :, :d]
    if prior is not None:
        slots[:, 0, :m] = prior[0].to(slots.dtype)
        logits[:, 0, :m] = prior[1].to(logits.dtype)
    return slots, logits.softmax(dim=2, dtype=torch.float32)
