"""DeepSeek-V4 compressed memory: sliding K=V window, gate-pooled compressed entries, page top-k.

Each V4 attention layer reads ``cat(window, entries)`` with one shared tensor as key and value:

- the **window**: the last ``sliding_window - 1`` tokens plus the new ones (``Cache.update``);
- the **entries** (CSA/HCA layers): one pooled vector per window of ``m`` tokens,
  ``rope(kv_norm(sum_j w_j * slot_j))`` with ``w = softmax(gate + position_bias)`` per channel. The
  compressors write them straight to the cache layer (``store_compression_weights``,
  ``update_overlap_state``, ``update_compressor_states``), bypassing the ``Cache`` container;
- in CSA layers a **page selector**: a lightning indexer scores the indexer's own compressed
  entries and attention reads only the top-k pages (the compressor turns the picks into a
  ``-inf`` block bias).

The witness layers compress the window entries and every new compressed entry with the codec and
witness them (band norms); pooling itself acts on uncompressed inputs, so it is *not* an error
source: its weights are reported as readings (``w_l2``, ``top1_norm``, ``entropy_n``,
``eff_frac``) with both pooling contracts (``l2``: gain ``||w||_2``; ``l-infinity``: gain 1).
Page selection is metered like the DSA token selector (:mod:`witprobe.probe.selector`), with
the scores recomputed by the model's own scorer module on the uncompressed indexer entries.

Subclasses set ``_layer_type = None``: a V4 cache-layer subclass with a layer type would register
itself globally and silently replace V4's layers in every later cache.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from transformers.cache_utils import DynamicSlidingWindowLayer
from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4CSACache, DeepseekV4HCACache

from witprobe.memory.codecs import Codec
from witprobe.models.interfaces import v4_pooling_weights
from witprobe.probe.meters import ScoreComponent, band_norms, band_witness, score_error, visibility
from witprobe.calculus.float_error import U32
from witprobe.probe.selector import fold_selection, selection_radius, selection_rows
from witprobe.probe.witness_cache import ReadScores, WitnessLayerMixin, WriteRecorder, bands_for
from witprobe.probe.model_hooks import ModelHooks

ENTRY_TENSOR = {"compressor": "entry", "indexer": "index_entry"}


class _V4Witness(WitnessLayerMixin):
    """Shared witness logic of the three V4 layer kinds (window, entries, pooling)."""

    def _setup(self, layer_idx: int, codec: Codec | None, bands: int, recorder: WriteRecorder) -> None:
        self.layer_idx = layer_idx
        self.codec = codec
        self.bands = bands
        self.recorder = recorder
        self.exact_window: torch.Tensor | None = None
        self.window_bn: torch.Tensor | None = None
        self.last: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
        self.exact_entries: dict[str, torch.Tensor | None] = {"compressor": None, "indexer": None}
        self.entry_bn: dict[str, torch.Tensor | None] = {"compressor": None, "indexer": None}
        self.modules: dict[str, nn.Module] = {}
        self._stash: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, torch.Tensor] | None = None

    def bind(self, compressor: nn.Module | None) -> None:
        """Give the layer its compressor (and the compressor's indexer) for the pooling readings."""
        if compressor is not None:
            self.modules["compressor"] = compressor
            if getattr(compressor, "indexer", None) is not None:
                self.modules["indexer"] = compressor.indexer

    def _serve(self, x: torch.Tensor, tensor: str) -> tuple[torch.Tensor, torch.Tensor]:
        bands = bands_for(x.shape[-1], self.bands)
        x_hat = x if self.codec is None else self.codec.encode_decode(x)
        w = band_witness(x, x_hat, bands)
        self.recorder.record_write(self.layer_idx, tensor, w, bands)
        return x_hat, w.band_norms

    def _window_update(self, key_states: torch.Tensor, value_states: torch.Tensor, parent_update) -> torch.Tensor:
        if value_states is not key_states and not torch.equal(value_states, key_states):
            raise ValueError(f"layer {self.layer_idx}: DeepSeek-V4 shares one tensor as key and value")
        k_hat, bn = self._serve(key_states, "window")
        served_full, _ = parent_update(k_hat, k_hat)
        old_x = self.exact_window
        exact_full = key_states if old_x is None else torch.cat([old_x, key_states], dim=-2)
        bn_full = bn if self.window_bn is None else torch.cat([self.window_bn, bn], dim=-2)
        keep = self.sliding_window - 1
        self.exact_window = exact_full[:, :, -keep:, :]
        self.window_bn = bn_full[:, :, -keep:, :]
        self.last = (served_full, exact_full, bn_full)
        return served_full

    # --- compressed entries (CSA and HCA layers) ------------------------------------------------
    def store_compression_weights(self, name, kv, gate):  # noqa: ANN001 - transformers signature
        chunk_kv, chunk_gate, first = super().store_compression_weights(name, kv, gate)
        self._stash[name] = {"chunk_kv": chunk_kv, "chunk_gate": chunk_gate, "prior": None}
        return chunk_kv, chunk_gate, first

    def update_compressor_states(self, name: str, compressed: torch.Tensor) -> torch.Tensor:
        tensor = ENTRY_TENSOR[name]
        if compressed.shape[1] > 0:
            c_hat, bn = self._serve(compressed, tensor)
            self._pooling_readings(name, tensor)
        else:
            c_hat, bn = compressed, compressed.new_zeros((*compressed.shape[:-1], bands_for(compressed.shape[-1], self.bands)), dtype=torch.float64)
        served = super().update_compressor_states(name, c_hat)
        old = self.exact_entries[name]
        self.exact_entries[name] = compressed if old is None else torch.cat([old, compressed], dim=1)
        oldb = self.entry_bn[name]
        self.entry_bn[name] = bn if oldb is None else torch.cat([oldb, bn], dim=1)
        return served

    def _pooling_readings(self, name: str, tensor: str) -> None:
        st = self._stash.pop(name, None)
        mod = self.modules.get(name)
        if st is None or mod is None or st["chunk_kv"].shape[1] == 0:
            return
        overlap = isinstance(self, DeepseekV4CSACache)
        _, w = v4_pooling_weights(st["chunk_kv"], st["chunk_gate"], mod.position_bias, mod.compress_rate,
                                  mod.head_dim, overlap=overlap, prior=st["prior"])
        self.recorder.record_pooling(self.layer_idx, tensor, w)

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("witness layers do not support cropping: the witness would lose its entries")

    # --- read -----------------------------------------------------------------------------------
    def read_scores(self, module, query, key, mask, scaling, rows=None, indices=None) -> ReadScores:
        if indices is not None:
            raise ValueError(f"layer {self.layer_idx}: unexpected sparse indices for a V4 layer")
        if self.last is None:
            raise ValueError(f"layer {self.layer_idx}: read before any write")
        served_w, exact_w, bn_w = self.last
        parts_s, parts_e, parts_b = [served_w], [exact_w], [bn_w]
        entries = getattr(self, "compressed_kv", {}).get("compressor")
        if entries is not None and entries.shape[1] > 0:
            parts_s.append(entries.unsqueeze(1))
            parts_e.append(self.exact_entries["compressor"].unsqueeze(1))
            parts_b.append(self.entry_bn["compressor"].unsqueeze(1))
        served = torch.cat(parts_s, dim=2)
        exact = torch.cat(parts_e, dim=2)
        bn = torch.cat(parts_b, dim=2)
        heads = query.shape[1]
        rs = rows or slice(0, query.shape[2])
        q = query.to(torch.float64)
        mismatch = torch.zeros(query.shape[:3], dtype=torch.bool)
        if served.shape != key.shape or not torch.equal(served, key):
            mismatch = torch.ones(query.shape[:3], dtype=torch.bool)
            if served.shape != key.shape:
                raise ValueError(f"layer {self.layer_idx}: read {tuple(key.shape)} keys, the witness holds {tuple(served.shape)}")
        ks = served.to(torch.float64).expand(-1, heads, -1, -1)
        ke = exact.to(torch.float64).expand(-1, heads, -1, -1)
        s_exact = torch.matmul(q, ke.transpose(-1, -2)) * scaling
        s_served = torch.matmul(q, ks.transpose(-1, -2)) * scaling
        bands = bn.shape[-1]
        comp = ScoreComponent(band_norms(q, bands), bn.expand(-1, heads, -1, -1))
        out = ReadScores(s_exact, s_served, visibility(mask, s_exact.shape), [comp],
                         counters={"v4_key_mismatch": mismatch}, score_err=score_error(q, ks, scaling),
                         width=q.shape[-1])
        if self.pending is not None and entries is not None and entries.shape[1] > 0:
            n_w = served_w.shape[2]
            vis = out.visible
            exact_sel = self.pending["exact_sel"][:, rs].unsqueeze(1).expand(-1, heads, -1, -1)
            valid = self.pending["valid"][:, rs].unsqueeze(1).expand(-1, heads, -1, -1)
            out.visible_exact = torch.cat([vis[..., :n_w], exact_sel], dim=-1)
            out.visible_full = torch.cat([vis[..., :n_w], valid], dim=-1)
            out.row_facts = {k: self.pending[k][:, rs] for k in ("cert", "m_sel", "b_S")}
        return out


class WitnessV4SlidingLayer(_V4Witness, DynamicSlidingWindowLayer):
    kind = "v4_sliding"
    _layer_type = None

    def __init__(self, layer_idx: int, config: Any, codec: Codec | None, bands: int, recorder: WriteRecorder) -> None:
        DynamicSlidingWindowLayer.__init__(self, sliding_window=config.sliding_window)
        self._setup(layer_idx, codec, bands, recorder)

    def update(self, key_states, value_states, *args, **kwargs):
        served = self._window_update(key_states, value_states, DynamicSlidingWindowLayer.update.__get__(self))
        return served, served


class WitnessV4HCALayer(_V4Witness, DeepseekV4HCACache):
    kind = "v4_hca"
    _layer_type = None

    def __init__(self, layer_idx: int, config: Any, codec: Codec | None, bands: int, recorder: WriteRecorder) -> None:
        DeepseekV4HCACache.__init__(self, config)
        self._setup(layer_idx, codec, bands, recorder)

    def update(self, key_states, value_states, *args, **kwargs):
        served = self._window_update(key_states, value_states, DeepseekV4HCACache.update.__get__(self))
        return served, served


class WitnessV4CSALayer(_V4Witness, DeepseekV4CSACache):
    kind = "v4_csa"
    _layer_type = None

    def __init__(self, layer_idx: int, config: Any, codec: Codec | None, bands: int, recorder: WriteRecorder) -> None:
        DeepseekV4CSACache.__init__(self, config)
        self._setup(layer_idx, codec, bands, recorder)

    def update(self, key_states, value_states, *args, **kwargs):
        served = self._window_update(key_states, value_states, DeepseekV4CSACache.update.__get__(self))
        return served, served

    def update_overlap_state(self, name, chunk_kv, chunk_gate, head_dim):  # noqa: ANN001 - transformers signature
        prior = super().update_overlap_state(name, chunk_kv, chunk_gate, head_dim)
        if name in self._stash:
            self._stash[name]["prior"] = None if prior[0] is None else prior
        return prior


class PageSelectorHooks(ModelHooks):
    """Hooks on every CSA lightning indexer (and its scorer): meter the page selection.

    The scorer hook keeps the query, the hidden states and the served page scores; the indexer hook
    (which also sees ``position_ids`` and the returned picks) re-runs the model's own scorer on the
    uncompressed indexer entries, decides the causal validity ``w < (t + 1) // m``, and meters the
    selection exactly like the DSA token selector.
    """

    def __init__(self, observer) -> None:  # noqa: ANN001
        super().__init__(observer)
        self._scored: dict[int, tuple] = {}
        self._busy = False

    def install(self, model: nn.Module) -> int:
        n = 0
        for layer in getattr(getattr(model, "model", model), "layers", []):
            comp = getattr(getattr(layer, "self_attn", None), "compressor", None)
            idx = getattr(comp, "indexer", None) if comp is not None else None
            if idx is None:
                continue
            li = layer.self_attn.layer_idx
            self.handles.append(idx.scorer.register_forward_hook(lambda m, a, o, li=li: self._scorer_hook(li, m, a, o)))
            self.handles.append(idx.register_forward_hook(lambda m, a, k, o, li=li: self._indexer_hook(li, m, a, k, o),
                                                          with_kwargs=True))
            n += 1
        return n

    def _scorer_hook(self, li: int, module: nn.Module, args: tuple, output: torch.Tensor) -> None:
        if self._busy or not self.observer.is_active:
            return
        self._scored[li] = (module, args[0], args[2], output)

    def _indexer_hook(self, li: int, module: nn.Module, args: tuple, kwargs: dict, output: torch.Tensor) -> None:
        obs = self.observer
        if not obs.is_active or obs.cache is None:
            return
        layer = obs.cache.layers[li]
        scorer, q, hidden, served = self._scored.pop(li)
        position_ids = args[2] if len(args) > 2 else kwargs["position_ids"]
        exact_entries = layer.exact_entries["indexer"]
        with torch.no_grad():
            self._busy = True
            try:
                exact = scorer(q, exact_entries.to(q.dtype), hidden).to(torch.float64)
            finally:
                self._busy = False
            served = served.to(torch.float64)
            m = module.compress_rate
            n_entries = served.shape[-1]
            threshold = (position_ids + 1) // m  # (B, S)
            valid = torch.arange(n_entries, device=served.device).view(1, 1, -1) < threshold.unsqueeze(-1)
            weights = scorer.weights_proj(hidden).to(torch.float64) * scorer.weights_scaling
            # the served page scores are the model's float32 values: the radius covers their error
            eps = selection_radius(q.to(torch.float64), weights, layer.entry_bn["indexer"], exact_entries, served,
                                   valid, scorer.softmax_scale, unit=U32)
            k = int(module.index_topk)
            rows = selection_rows(served, exact, eps, valid, k)
            picks = output.long()
            model_sel = torch.zeros_like(valid)
            for j in range(picks.shape[-1]):
                pj = picks[..., j]
                ok = pj >= 0
                model_sel |= torch.zeros_like(valid).scatter(-1, pj.clamp(min=0).unsqueeze(-1), True) & ok.unsqueeze(-1)
            model_sel &= valid
            mismatch = (model_sel != rows.served_sel).any(-1)
            if mismatch.any():  # exact score ties at 0 (ReLU) may break either way at the k-th place
                kth = torch.where(rows.served_sel, served, torch.full_like(served, math.inf)).amin(-1, keepdim=True)
                tol = 1e-5 * served.abs().amax(-1, keepdim=True).clamp_min(1e-30)
                ok = torch.where(model_sel, served >= kth - tol, torch.ones_like(valid)).all(-1)
                mismatch &= ~ok
        fold_selection(obs.read[li], rows, mismatch)
        layer.pending = {
            "exact_sel": rows.exact_sel,
            "valid": valid,
            "cert": rows.cert_witness,
            "m_sel": rows.m_sel,
            "b_S": 0.5 * (rows.m_in_bound + rows.m_out_bound),
        }
