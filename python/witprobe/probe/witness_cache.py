"""The witness cache: a transformers ``Cache`` that sees every write to compressed memory.

Each memory class is one layer class (the transformers ``cache_utils`` pattern): it receives
exactly the tensors the model writes, serves the codec's reconstruction, records the witness of
every stored entry (its band residual norms, small metadata) and keeps the uncompressed entries
side by side so that every bound can be compared with the realized error on the same input.
At read time, :meth:`WitnessLayerMixin.read_scores` turns the query into exact and served scores
and the score-error components the read meter needs.

Pass a :class:`WitnessCache` as ``cache=`` to ``model(...)`` or ``model.generate(...)``;
no model code is patched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import nn
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer

from witprobe.calculus.float_error import allowance
from witprobe.memory.codecs import CACHE, EVICT, SEQUENCE, WHOLE_SEQUENCE, Codec, CodecError, EvictionCodec
from witprobe.probe.meters import (ScoreComponent, WitnessBatch, band_norms, band_witness, dense_scores,
                                   visibility)
from witprobe.probe.query_aligned import COEF_DTYPE, QAWitness, qa_radius, qa_witness


class WriteRecorder(Protocol):
    """Receives the witness of every write (implemented by :class:`witprobe.probe.observer.Observer`)."""

    def record_write(self, layer_idx: int, tensor: str, w: WitnessBatch, bands: int) -> None: ...


class EntryObserver(Protocol):
    """Optional second interface of a recorder: sees the stored entries of every write.

    A recorder that defines ``observe_entries`` receives the served (stored) entries
    ``(batch, kv_heads, new_tokens, head_dim)`` of each write; the always-on probe meters them.
    Recorders without it are unaffected.
    """

    def observe_entries(self, layer_idx: int, tensor: str, stored: torch.Tensor) -> None: ...


@dataclass
class EvictionRead:
    """What the eviction meter needs beyond :class:`ReadScores` (dense KV with an eviction codec).

    ``visible_full`` ``(B, H, Q, T)``: the keys the row would see without eviction (the causal
    support); :attr:`ReadScores.visible` is its retained part. ``upper`` ``(B, H, Q, T)`` float64:
    ``U_t = scale * sum_b ||q_b|| ||k_{t,b}||`` from the query's and the stored key band norms,
    rounded up for its float64 evaluation; ``|s_t| <= U_t`` by Cauchy-Schwarz per band
    (``Eviction.banded_logit_le``). Only ``upper`` of the evicted keys enters the bound.
    """

    visible_full: torch.Tensor
    upper: torch.Tensor


@dataclass
class ReadScores:
    """What a witness layer gives the read meter for one attention call: exact and served scores,
    visibility, score-error components and self-check flags (the layer maxima of the read chains are
    :class:`witprobe.calculus.chains.ReadMaxima`)."""

    s_exact: torch.Tensor  # (B, H, Q, T) scores with uncompressed entries, scale included
    s_served: torch.Tensor  # (B, H, Q, T) scores with served entries
    visible: torch.Tensor  # (B, H, Q, T) bool
    components: list[ScoreComponent]
    counters: dict[str, torch.Tensor] = field(default_factory=dict)  # self-check flags to count
    # sparse selection (DSA): the exact-key support, the unselected causal support, per-row facts
    visible_exact: torch.Tensor | None = None
    visible_full: torch.Tensor | None = None
    row_facts: dict[str, torch.Tensor] = field(default_factory=dict)
    # float64 error analysis (docs/TRUST_BOUNDARY.md): the served scores' error bound per row and
    # key, and the longest vector the meters take a norm or dot product of
    score_err: torch.Tensor | None = None
    width: int = 0
    # query-aligned per-key radius (witprobe.probe.query_aligned), when the layer has a basis
    qa_radius: torch.Tensor | None = None
    evict: EvictionRead | None = None  # eviction codecs: full support and evicted-logit bounds


def bands_for(dim: int, bands: int) -> int:
    """The band count used for a tensor of width ``dim``: ``gcd(dim, bands)`` (divides both)."""
    return math.gcd(dim, bands)


class WitnessLayerMixin:
    """Shared bookkeeping: exact shadows and per-entry witnesses, appended along the sequence."""

    kind = "abstract"
    layer_idx: int

    def _append(self, name: str, value: torch.Tensor) -> None:
        old = getattr(self, name, None)
        setattr(self, name, value if old is None else torch.cat([old, value], dim=-2))

    def read_scores(
        self, module: nn.Module, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None, scaling: float,
        rows: slice | None = None, indices: torch.Tensor | None = None,
    ) -> ReadScores:  # pragma: no cover - abstract
        raise NotImplementedError


class WitnessKVLayer(WitnessLayerMixin, DynamicLayer):
    """Dense KV (plain and GQA attention): compress each write, serve the reconstruction.

    Attributes (all ``(batch, kv_heads, seq, ...)``)
    -------------------------------------------------
    keys, values:
        Served (compressed) entries, what attention reads.
    exact_keys, exact_values:
        Uncompressed entries, for the side-by-side realized error only.
    key_band_norms, value_band_norms:
        ``||Delta_b||`` per entry and band, recorded at the write.
    """

    kind = "dense_kv"

    def __init__(self, layer_idx: int, key_codec: Codec, value_codec: Codec | None, bands: int,
                 recorder: WriteRecorder) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.key_codec = key_codec
        self.value_codec = value_codec
        self.bands = bands
        self.recorder = recorder
        self.exact_keys: torch.Tensor | None = None
        self.exact_values: torch.Tensor | None = None
        self.key_band_norms: torch.Tensor | None = None
        self.value_band_norms: torch.Tensor | None = None
        # query-aligned key witness (a, rho, eps), when the recorder carries a query basis
        self.key_qa_coef: torch.Tensor | None = None
        self.key_qa_rest: torch.Tensor | None = None
        self.key_qa_cross: torch.Tensor | None = None
        # eviction (key_codec.scope == "evict"): retained mask, stored key band norms, votes
        self.evict_codec: EvictionCodec | None = key_codec if key_codec.scope == EVICT else None
        if self.evict_codec is not None and value_codec is not None and value_codec is not key_codec:
            raise CodecError(f"layer {layer_idx}: an eviction codec evicts keys and values together")
        self.retained: torch.Tensor | None = None  # (B, Hkv, T) bool
        self.key_norm_bands: torch.Tensor | None = None  # (B, Hkv, T, bands) ||k_{t,b}||, float64
        self.votes: torch.Tensor | None = None  # (B, Hkv, T) float64, the policy's scores
        self.backend_states: dict[str, object] = {}  # scope "cache": the backend layer per role
        self.prefill_len = 0
        self.compressed = False
        self.evictions = 0  # policy applications
        self.press_scored = False  # votes "press": PressHooks stored the press's prefill scores

    def _qa_basis(self) -> torch.Tensor | None:
        """This layer's calibrated query basis ``(Hkv, D, r)``, if the recorder carries one."""
        qb = getattr(self.recorder, "query_basis", None)
        return None if qb is None else qb.for_layer(self.layer_idx)

    def _qa_record(self, exact: torch.Tensor, served: torch.Tensor, replace: bool) -> None:
        """Store the query-aligned witness of keys ``(B, Hkv, T, D)`` (appended, or replacing all)."""
        u = self._qa_basis()
        if u is None:
            return
        w = qa_witness(exact.to(torch.float64) - served.to(torch.float64), u.to(exact.device))
        # stored as the witness's bytes say: a in float16, rho and eps in float32 (both exact: qa_witness
        # rounded them to those formats, rho and eps upward)
        for name, v in (("key_qa_coef", w.coef.to(COEF_DTYPE)), ("key_qa_rest", w.rest.unsqueeze(-1).to(torch.float32)),
                        ("key_qa_cross", w.cross.unsqueeze(-1).to(torch.float32))):
            if replace:
                setattr(self, name, v)
            else:
                self._append(name, v)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        if self.evict_codec is not None:
            return self._update_evict(key_states, value_states)
        if {self.key_codec.scope, getattr(self.value_codec, "scope", None)} & set(WHOLE_SEQUENCE):
            return self._update_sequence(key_states, value_states)
        k_hat = self.key_codec.encode_decode(key_states)
        v_hat = value_states if self.value_codec is None else self.value_codec.encode_decode(value_states)
        wk = band_witness(key_states, k_hat, self.bands)
        wv = band_witness(value_states, v_hat, self.bands)
        self.recorder.record_write(self.layer_idx, "key", wk, self.bands)
        self.recorder.record_write(self.layer_idx, "value", wv, self.bands)
        observe = getattr(self.recorder, "observe_entries", None)
        if observe is not None:
            observe(self.layer_idx, "key", k_hat)
            observe(self.layer_idx, "value", v_hat)
        self.keys = torch.cat([self.keys, k_hat], dim=-2)
        self.values = torch.cat([self.values, v_hat], dim=-2)
        self._append("exact_keys", key_states)
        self._append("exact_values", value_states)
        self._append("key_band_norms", wk.band_norms)
        self._append("value_band_norms", wv.band_norms)
        self._qa_record(key_states, k_hat, replace=False)
        return self.keys, self.values

    def _serve(self, codec: Codec | None, exact: torch.Tensor, old_served: torch.Tensor | None, tensor: str
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Served sequence and band norms of every entry after a write; records the witness of each
        entry whose served form is new or changed (a sequence codec may re-quantize old entries)."""
        if codec is None:
            served = exact
        elif codec.scope == SEQUENCE:
            served = codec.encode_decode(exact)
        elif codec.scope == CACHE:  # a stateful backend: feed it the new entries, serve what it returns
            n_old = 0 if old_served is None else old_served.shape[-2]
            if tensor not in self.backend_states:
                self.backend_states[tensor] = codec.new_state(tensor)
            served = self.backend_states[tensor].write(exact[..., n_old:, :])
        else:  # an entry codec beside a sequence codec: only the new entries are coded
            n_old = 0 if old_served is None else old_served.shape[-2]
            new = codec.encode_decode(exact[..., n_old:, :])
            served = new if old_served is None else torch.cat([old_served, new], dim=-2)
        if served.shape != exact.shape:
            raise ValueError(f"layer {self.layer_idx}: codec {getattr(codec, 'name', '?')} changed the shape of the {tensor}s")
        w = band_witness(exact, served, self.bands)
        n_old = 0 if old_served is None else old_served.shape[-2]
        changed = torch.zeros(exact.shape[-2], dtype=torch.bool, device=exact.device)
        changed[n_old:] = True
        if n_old:
            changed[:n_old] = (served[..., :n_old, :] != old_served).flatten(0, -3).any(0).any(-1)
        idx = changed.nonzero().squeeze(-1)
        part = WitnessBatch(w.band_norms.index_select(-2, idx), w.witness.index_select(-1, idx),
                            w.residual.index_select(-1, idx), w.x_norm.index_select(-1, idx))
        self.recorder.record_write(self.layer_idx, tensor, part, self.bands)
        observe = getattr(self.recorder, "observe_entries", None)
        if observe is not None:
            observe(self.layer_idx, tensor, served.index_select(-2, idx))
        return served, w.band_norms

    def _update_sequence(self, key_states: torch.Tensor, value_states: torch.Tensor):
        """A write through a sequence codec: the served state is recomputed from every exact entry."""
        self._append("exact_keys", key_states)
        self._append("exact_values", value_states)
        old_k = self.keys if self.keys is not None and self.keys.numel() else None
        old_v = self.values if self.values is not None and self.values.numel() else None
        self.keys, self.key_band_norms = self._serve(self.key_codec, self.exact_keys, old_k, "key")
        self.values, self.value_band_norms = self._serve(self.value_codec, self.exact_values, old_v, "value")
        self._qa_record(self.exact_keys, self.keys, replace=True)
        return self.keys, self.values

    # --- eviction -------------------------------------------------------------------------------
    def _update_evict(self, key_states: torch.Tensor, value_states: torch.Tensor):
        """A write through an eviction codec: first apply the policy to what is cached (the reads
        since the last write have voted), then store the new entries exactly and retained.

        Served entries are the exact ones; what eviction changes is which keys attention sees
        (:meth:`served_retained`, applied by the witprobe attention function). Without an active
        observer nothing would apply the mask, so the write is refused (fail closed).
        """
        if not getattr(self.recorder, "is_active", False):
            raise ValueError(f"layer {self.layer_idx}: an eviction codec needs an active observer to hide evicted keys")
        if self.retained is not None and self.retained.shape[-1]:
            self._apply_policy()
        wk = band_witness(key_states, key_states, self.bands)
        wv = band_witness(value_states, value_states, self.bands)
        self.recorder.record_write(self.layer_idx, "key", wk, self.bands)
        self.recorder.record_write(self.layer_idx, "value", wv, self.bands)
        b, h, n, _ = key_states.shape
        if self.prefill_len == 0:
            self.prefill_len = n
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        self.values = torch.cat([self.values, value_states], dim=-2)
        self._append("exact_keys", key_states)
        self._append("exact_values", value_states)
        self._append("key_band_norms", wk.band_norms)
        self._append("value_band_norms", wv.band_norms)
        self._append("key_norm_bands", band_norms(key_states, self.bands))
        new = torch.ones((b, h, n), dtype=torch.bool, device=key_states.device)
        self.retained = new if self.retained is None else torch.cat([self.retained, new], dim=-1)
        z = torch.zeros((b, h, n), dtype=torch.float64, device=key_states.device)
        self.votes = z if self.votes is None else torch.cat([self.votes, z], dim=-1)
        return self.keys, self.values

    def _apply_policy(self) -> None:
        """Run the eviction policy on the cached entries; an evicted entry stays evicted."""
        codec = self.evict_codec
        if codec.schedule == "once_after_prefill":
            if self.compressed:
                return
            self.compressed = True
        if codec.votes == "press" and not self.press_scored:
            raise CodecError(f"layer {self.layer_idx}: the press {type(codec.policy.press).__name__} never scored the "
                             "prefill (its hooks were not on the model; witprobe.probe.press_hooks.press_scoring)")
        scores = torch.where(self.retained, self.votes, torch.full_like(self.votes, -math.inf))
        keep_idx = codec.kept(scores)
        keep = torch.zeros_like(self.retained).scatter(-1, keep_idx, True)
        retained = self.retained & keep
        if not bool(retained.any(dim=-1).all()):
            raise CodecError(f"eviction policy {type(codec.policy).__name__} kept no retained entry of a head: "
                             "attention would read nothing")
        self.retained = retained
        self.evictions += 1

    def served_retained(self, groups: int) -> torch.Tensor | None:
        """``(B, H, 1, T)`` bool: the keys attention may read (``None`` without eviction)."""
        if self.evict_codec is None:
            return None
        return self.retained.repeat_interleave(groups, dim=1).unsqueeze(2)

    def _vote(self, s: torch.Tensor, visible: torch.Tensor, rows: slice | None, groups: int) -> None:
        """Fold this read's served attention into the policy's votes ``(B, Hkv, T)``."""
        kind = self.evict_codec.votes
        if kind in ("none", "press"):  # positions only, or the press's scores (PressHooks)
            return
        p = torch.softmax(torch.where(visible, s, torch.full_like(s, -math.inf)), dim=-1)  # served, over R
        if kind == "window":
            if self.compressed or s.shape[-1] != self.prefill_len:
                return  # only the prompt's own read votes, before the one compression
            start = 0 if rows is None else (rows.start or 0)
            pos = torch.arange(start, start + s.shape[2], device=s.device)
            p = p[:, :, pos >= self.prefill_len - self.evict_codec.policy.window, :]
        b, h, q, t = p.shape
        self.votes = self.votes + p.reshape(b, h // groups, groups, q, t).sum(dim=(2, 3))

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("witness layers do not support cropping: the witness would lose its entries")

    def read_scores(self, module, query, key, mask, scaling, rows=None, indices=None) -> ReadScores:
        if indices is not None:
            raise ValueError(f"layer {self.layer_idx}: a sparse read reached a dense KV witness layer")
        if self.keys is None or key.shape != self.keys.shape or key.data_ptr() != self.keys.data_ptr():
            raise ValueError(f"layer {self.layer_idx}: attention read keys that are not the served keys")
        groups = query.shape[1] // key.shape[1]
        sc = dense_scores(query, self.exact_keys, key, self.key_band_norms, scaling, groups)
        visible = visibility(mask, sc.s_exact.shape)
        u = self._qa_basis()
        qa = None
        if u is not None and self.key_qa_coef is not None:
            if self.evict_codec is not None:
                raise ValueError(f"layer {self.layer_idx}: the query-aligned witness does not apply to eviction")
            w = QAWitness(self.key_qa_coef, self.key_qa_rest[..., 0], self.key_qa_cross[..., 0])
            qa = qa_radius(query, u.to(query.device), w, groups, scaling)
        if self.evict_codec is None:
            return ReadScores(sc.s_exact, sc.s_served, visible, [sc.component],
                              score_err=sc.score_err, width=query.shape[-1], qa_radius=qa)
        retained = visible & self.served_retained(groups)
        qn = band_norms(query, self.bands)  # (B, H, Q, nb)
        kn = self.key_norm_bands.repeat_interleave(groups, dim=1)  # (B, H, T, nb)
        upper = torch.einsum("bhqn,bhtn->bhqt", qn, kn) * abs(scaling)
        upper = upper + allowance(query.shape[-1] + 2 * self.bands + 4) * upper  # float64 evaluation, rounded up
        self._vote(sc.s_served, retained, rows, groups)
        return ReadScores(sc.s_exact, sc.s_served, retained, [sc.component], score_err=sc.score_err,
                          width=query.shape[-1], evict=EvictionRead(visible, upper))


    def read_values(self, value: torch.Tensor, groups: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Exact values and served values per KV head, ``(B, Hkv, T, D)`` (read by ``groups`` query heads
        each: :func:`witprobe.probe.meters.output_rows`), and the value witnesses ``W^v_t`` per query
        head ``(B, H, T)`` (float64). ``value`` must be the served values."""
        if self.values is None or value.shape != self.values.shape or value.data_ptr() != self.values.data_ptr():
            raise ValueError(f"layer {self.layer_idx}: attention read values that are not the served values")
        ve = self.exact_values.to(torch.float64)
        vs = value.to(torch.float64)
        w = self.value_band_norms.to(torch.float64).sum(-1).repeat_interleave(groups, dim=1)
        return ve, vs, w


class WitnessCache(DynamicCache):
    """A ``DynamicCache`` whose layers are witness layers, one per decoder layer."""

    def __init__(self, layers: list[DynamicLayer]) -> None:
        Cache.__init__(self, layers=layers)

    @classmethod
    def for_dense_kv(cls, num_layers: int, key_codec: Codec, value_codec: Codec | None, bands: int,
                     recorder: WriteRecorder) -> "WitnessCache":
        return cls([WitnessKVLayer(i, key_codec, value_codec, bands, recorder) for i in range(num_layers)])
