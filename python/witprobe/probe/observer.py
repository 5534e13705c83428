"""The observer: routes every write and read of a witness cache into per-layer accumulators.

Reads arrive through the ``"witprobe"`` attention function (:mod:`witprobe.probe.attention`),
which hands each read to the active observer (:data:`witprobe.probe.attention.ACTIVE`) with the
query, the served keys, the uncompressed keys and the witnesses together; writes arrive from the
witness cache (:mod:`witprobe.probe.witness_cache`) and the kinds' model hooks (decay gates,
indexers, page selectors). Each is folded into the layer's accumulators by the recorder of its
memory kind: :meth:`Observer.record_write` (every stored tensor), :meth:`Observer.observe_read`
(attention reads: the read, output and eviction meters), :meth:`Observer.record_pooling`,
:meth:`Observer.note_state_write` and :meth:`Observer.record_decay` (recurrent states).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
from torch import nn

from witprobe.probe.accumulators import Accumulator
from witprobe.probe.attention import ACTIVE
from witprobe.probe.box_rows import BoxRowKeeper
from witprobe.probe.box_sup import DEFAULT_SPEC as BOX_SUP_DEFAULT, BoxSupSpec
from witprobe.probe.errors import ObserverError
from witprobe.probe.meters import (ScoreComponent, WitnessBatch, output_rows, read_rows_from_scores,
                                   witness_violations)
from witprobe.probe.meters_evict import EVICT_MASS_TOL, EvictRows, evict_rows
from witprobe.probe.query_aligned import QueryBasis
from witprobe.probe.runtime import ProbeRuntime
from witprobe.probe.witness_cache import WitnessCache, WitnessLayerMixin

BEATEN_REL_TOL = 1e-9
BEATEN_ABS_TOL = 1e-15


def with_sinks(inputs, sinks: torch.Tensor):  # noqa: ANN001 - ReadScores
    """Append the per-head sink logit as one more, always visible, never perturbed column.

    The sink takes part in the softmax (and is then dropped by the model), so the distribution the
    bounds speak about is the one over keys plus the sink; its score error is 0.
    """
    b, h, q, _ = inputs.s_exact.shape
    col = sinks.to(torch.float64).reshape(1, -1, 1, 1).expand(b, h, q, 1)
    ones = torch.ones((b, h, q, 1), dtype=torch.bool, device=col.device)
    inputs.s_exact = torch.cat([inputs.s_exact, col], dim=-1)
    inputs.s_served = torch.cat([inputs.s_served, col], dim=-1)
    inputs.visible = torch.cat([inputs.visible, ones], dim=-1)
    if inputs.score_err is not None:
        inputs.score_err = torch.cat([inputs.score_err, inputs.score_err.new_zeros((b, h, q, 1))], dim=-1)
    if inputs.qa_radius is not None:
        inputs.qa_radius = torch.cat([inputs.qa_radius, inputs.qa_radius.new_zeros((b, h, q, 1))], dim=-1)
    if inputs.visible_exact is not None:
        inputs.visible_exact = torch.cat([inputs.visible_exact, ones], dim=-1)
        inputs.visible_full = torch.cat([inputs.visible_full, ones], dim=-1)
    inputs.components = [
        ScoreComponent(c.q_band_norms, torch.cat(
            [c.k_band_norms, c.k_band_norms.new_zeros((*c.k_band_norms.shape[:2], 1, c.k_band_norms.shape[-1]))], dim=2))
        for c in inputs.components
    ]
    return inputs


class _Keep:
    """The real query rows of one chunk: ``rows`` ``(B, Q)`` bool, or ``None`` (every row).

    :meth:`rows_of` replaces every per-row tensor of a row record (``(B, H, Q)`` per head or
    ``(B, Q)`` per token) by its real rows, flattened (the accumulators fold elements, so a
    flattened selection folds exactly the real rows); per-key tensors (``(B, H, Q, T)``) are dropped
    (set to ``None``): no fold reads them.
    """

    def __init__(self, rows: torch.Tensor | None, heads: int) -> None:
        self.rows = rows
        self.heads = heads

    def __call__(self, v: torch.Tensor | None) -> torch.Tensor | None:
        if v is None or self.rows is None:
            return v
        b, q = self.rows.shape
        if v.shape == (b, self.heads, q):
            return v[self.rows.unsqueeze(1).expand_as(v)]
        if v.shape == (b, q):
            return v[self.rows]
        if v.dim() == 4 and v.shape[:3] == (b, self.heads, q):
            return None
        raise ObserverError(f"cannot select the real rows of a {tuple(v.shape)} reading (rows {b} x {q})")

    def rows_of(self, record):  # noqa: ANN001, ANN201 - ReadRows or OutputRows
        if self.rows is None:
            return record
        import dataclasses

        return dataclasses.replace(record, **{f.name: self(getattr(record, f.name))
                                              for f in dataclasses.fields(record)})


class Observer:
    """Per-layer write and read accumulators for one witness cache.

    Parameters
    ----------
    num_layers:
        Number of decoder layers (accumulators are created for each).
    device:
        Where accumulators live.
    row_chunk:
        Query rows metered at once (bounds the float64 working set).
    probe:
        Optional always-on probe (:class:`witprobe.probe.runtime.ProbeRuntime`) that also meters
        the stored entries of every write on its declared layers; read it back with
        :meth:`probe_snapshot`. Without it the observer behaves exactly as before.
    box_sup:
        Resolution of the per-row box supremum bound (:mod:`witprobe.probe.box_sup`), folded as
        ``boxsup_bound`` beside the three chain forms; ``None`` skips it.
    query_basis:
        Calibrated query bases (:mod:`witprobe.probe.query_aligned`); dense KV layers with a basis
        store the query-aligned key witness and the reads fold the ``qa_centred_bound`` and
        ``qa_boxsup_bound`` forms (tier ``empirical``) and the ``keys_qa_radius_beaten`` check.
    """

    def __init__(
        self,
        num_layers: int,
        device: torch.device | str = "cpu",
        row_chunk: int = 256,
        probe: ProbeRuntime | None = None,
        box_sup: BoxSupSpec | None = BOX_SUP_DEFAULT,
        query_basis: QueryBasis | None = None,
        meter: bool = True,
    ) -> None:
        if probe is not None and probe.num_layers != num_layers:
            raise ObserverError(f"probe runtime has {probe.num_layers} layers, the observer {num_layers}")
        self.probe = probe
        self.num_layers = num_layers
        self.cache: WitnessCache | None = None
        self.row_chunk = row_chunk
        self.box_sup = box_sup
        self.query_basis = query_basis
        # False: serve only (witprobe.certify.tasks): a read folds an eviction policy's votes, which
        # decide what is served, and meters nothing else; the readings of such an observer are empty
        self.meter = meter
        self.write = [Accumulator(device) for _ in range(num_layers)]
        self.read = [Accumulator(device) for _ in range(num_layers)]
        self.host_write_calls = [0] * num_layers
        self.host_read_calls = [0] * num_layers
        self.channels: dict[int, dict] = {}  # per-channel decay sums of recurrent layers
        self.projections: dict[int, tuple[torch.Tensor, float]] = {}  # layer -> (W_o, sigma_up)
        # batched requests with left padding: (B, positions) bool, True where the token is real
        # (not padding, not after the request's end); None: every position is real
        self.padding: torch.Tensor | None = None
        self._written: dict[tuple[int, str], int] = {}  # (layer, tensor) -> entries written so far
        # per layer and box form: the rows shipped to the kernel's box checker (witprobe.probe.box_rows)
        self.box_rows: dict[tuple[int, str], BoxRowKeeper] = {}

    def set_padding(self, mask: torch.Tensor | None) -> None:
        """Meter a batch of left-padded requests: ``mask`` ``(B, prompt_len)`` (the tokenizer's
        ``attention_mask``, nonzero on real tokens). Padded positions are left out of every meter:
        their entries from the write statistics, their query rows from the read statistics (their
        keys are already hidden from the other rows by the attention mask). ``None`` ends it."""
        self.padding = None if mask is None else mask.detach().to(torch.bool).clone()

    def extend_padding(self, alive: torch.Tensor) -> None:
        """Append one position per request (``alive`` ``(B,)`` bool: the request has not ended, so
        the token is fed back and read)."""
        if self.padding is None:
            raise ObserverError("extend_padding without set_padding")
        self.padding = torch.cat([self.padding, alive.reshape(-1, 1).to(torch.bool)], dim=1)

    def _positions(self, what: str, start: int, stop: int, batch: int) -> torch.Tensor:
        """``(B, stop - start)`` real-token flags of positions ``[start, stop)``."""
        pad = self.padding
        if pad.shape[0] != batch or pad.shape[1] < stop:
            raise ObserverError(f"{what}: padding mask {tuple(pad.shape)} does not cover batch {batch}, "
                                f"positions {start}..{stop}")
        return pad[:, start:stop]

    def set_output_projection(self, layer_idx: int, weight: torch.Tensor, sigma_up: float) -> None:
        """Meter the error after the output projection ``weight`` ``(hidden, H * D)`` of a layer,
        with ``sigma_up >= ||weight||_2`` (:func:`witprobe.calculus.opnorm.spectral_norm_upper`)."""
        self.projections[layer_idx] = (weight.detach(), sigma_up)

    def attach(self, cache: WitnessCache) -> WitnessCache:
        self.cache = cache
        self._written = {}
        return cache

    @property
    def is_active(self) -> bool:
        """Whether this observer is the one metering calls in the current context."""
        return ACTIVE.get() is self

    @contextlib.contextmanager
    def active(self) -> Iterator["Observer"]:
        """Route witprobe attention calls in this context to this observer."""
        if self.cache is None:
            raise ObserverError("observer has no witness cache attached")
        token = ACTIVE.set(self)
        try:
            yield self
        finally:
            ACTIVE.reset(token)

    # --- update (write) -------------------------------------------------------------------------
    def record_write(self, layer_idx: int, tensor: str, w: WitnessBatch, bands: int) -> None:
        """Fold one write's witness into ``<tensor>_*`` statistics and self-check counters."""
        acc = self.write[layer_idx]
        p = f"{tensor}_"
        if tensor in ("key", "latent"):
            self.host_write_calls[layer_idx] += 1
        if self.padding is not None:  # entries (B, heads, S): only the real tokens' are metered
            b, _, n = w.witness.shape
            start = self._written.get((layer_idx, tensor), 0)
            self._written[(layer_idx, tensor)] = start + n
            real = self._positions(f"layer {layer_idx} {tensor} write", start, start + n, b)
            real = real.unsqueeze(1).expand_as(w.witness)
            w = WitnessBatch(w.band_norms[real], w.witness[real], w.residual[real], w.x_norm[real])
        acc.fold(p + "witness", w.witness)
        acc.fold(p + "residual", w.residual)
        acc.fold(p + "x_norm", w.x_norm)
        acc.fold(p + "rel_residual", w.residual / w.x_norm.clamp_min(1e-300))
        nz = w.residual > 0
        acc.fold(p + "conservativeness", (w.witness / w.residual.clamp_min(1e-300))[nz])
        acc.count(p + "zero_residual", ~nz)
        low, high = witness_violations(w, bands)
        acc.count(p + "viol_witness_below_residual", low)
        acc.count(p + "viol_witness_above_sqrt_bands", high)

    # --- pooling (V4 compressed entries) -----------------------------------------------------------
    def record_pooling(self, layer_idx: int, tensor: str, w: torch.Tensor) -> None:
        """Gate weights ``(B, n_windows, slots, channels)`` of one pooling call: readings and self-check.

        ``w_l2 = ||w||_2`` (the l2 pooling contract's gain, in ``[1/sqrt(B), 1]``); ``top1_norm =
        (max w - 1/B)/(1 - 1/B)``; ``entropy_n = H/log B``; ``eff_frac = exp(H)/B``; the self-check
        ``viol_pool`` counts channels whose largest weight is below ``1/B``.
        """
        acc = self.write[layer_idx]
        p = f"{tensor}_pool_"
        w = w.detach().to(torch.float64)
        slots = w.shape[2]
        top1 = w.amax(dim=2)
        ent = -(w * torch.log(w.clamp_min(1e-300))).sum(dim=2)
        acc.fold(p + "w_l2", w.pow(2).sum(dim=2).sqrt())
        acc.fold(p + "top1_norm", (top1 - 1 / slots) / (1 - 1 / slots))
        acc.fold(p + "entropy_n", ent / math.log(slots))
        acc.fold(p + "eff_frac", torch.exp(ent) / slots)
        acc.count(p + "viol", top1 < 1 / slots - 1e-4)
        acc.count(p + "windows", torch.ones(w.shape[:2], dtype=torch.bool))

    # --- recurrent state ---------------------------------------------------------------------------
    def note_state_write(self, layer_idx: int, groenwall: torch.Tensor) -> None:
        """One recurrent-state write: count it and fold the running Groenwall quantity (a reading)."""
        self.host_write_calls[layer_idx] += 1
        acc = self.read[layer_idx]
        acc.count("state_writes", torch.ones(groenwall.shape[0], dtype=torch.bool))
        acc.fold("state_groenwall", groenwall)

    def record_decay(self, layer_idx: int, g: torch.Tensor) -> None:
        """Per-token, per-channel decay ``a = exp(g)``: statistics with channel identity kept."""
        from witprobe.probe.recurrent import A_EDGES, NEAR_ONE

        acc = self.read[layer_idx]
        a = g.detach().to(torch.float64).exp().clamp(0.0, 1.0)
        log_a = torch.log(a.clamp_min(1e-12))
        acc.fold("a_t", a)
        acc.fold("log_a_t", log_a)
        acc.count("a_near_one", a > NEAR_ONE)
        bins = torch.bucketize(a, torch.tensor(A_EDGES, dtype=a.dtype, device=a.device))
        for i in range(len(A_EDGES) + 1):
            acc.count(f"a_hist_{i}", bins == i)
        per_channel = self.channels.setdefault(layer_idx, {})
        flat_log = log_a.reshape(-1, log_a.shape[-2] * log_a.shape[-1])
        flat_a = a.reshape(-1, a.shape[-2] * a.shape[-1])
        for key, v in (("sum_log_a", flat_log.sum(0)), ("sum_a", flat_a.sum(0)),
                       ("near_one", (flat_a > NEAR_ONE).sum(0).to(torch.float64))):
            per_channel[key] = v if key not in per_channel else per_channel[key] + v
        per_channel["n"] = per_channel.get("n", 0) + flat_a.shape[0]

    def observe_entries(self, layer_idx: int, tensor: str, stored: torch.Tensor) -> None:
        """Forward the stored entries of a write to the always-on probe, if one is attached."""
        if self.probe is not None:
            self.probe.on_write(layer_idx, tensor, stored)

    # --- read -----------------------------------------------------------------------------------
    def observe_read(
        self, module: nn.Module, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None, scaling: float,
        indices: torch.Tensor | None = None, sinks: torch.Tensor | None = None, value: torch.Tensor | None = None,
    ) -> None:
        if self.cache is None:
            raise ObserverError("observer has no witness cache attached")
        layer_idx = getattr(module, "layer_idx", None)
        if layer_idx is None or not 0 <= layer_idx < len(self.cache.layers):
            raise ObserverError(f"attention module {type(module).__name__} has no valid layer_idx ({layer_idx!r})")
        layer = self.cache.layers[layer_idx]
        if not isinstance(layer, WitnessLayerMixin):
            raise ObserverError(f"layer {layer_idx} is {type(layer).__name__}, not a witness layer (unattributable read)")
        self.host_read_calls[layer_idx] += 1
        q_len = query.shape[2]
        if not self.meter:
            evict = getattr(layer, "evict_codec", None)
            if evict is not None and evict.votes != "none":  # the votes decide what is served next
                for start in range(0, q_len, self.row_chunk):
                    stop = min(q_len, start + self.row_chunk)
                    layer.read_scores(module, query[:, :, start:stop, :], key,
                                      None if mask is None else mask[:, :, start:stop, :], scaling,
                                      rows=slice(start, stop), indices=indices)
            return
        acc = self.read[layer_idx]
        acc.bump("calls", 1)
        rows_real = None
        if self.padding is not None:  # the query rows are the last q_len positions of the keys
            t = key.shape[2]
            rows_real = self._positions(f"layer {layer_idx} read", t - q_len, t, query.shape[0])
        values = None  # the float64 values of this read, cast once for all its row chunks
        for start in range(0, q_len, self.row_chunk):
            stop = min(q_len, start + self.row_chunk)
            m = None if mask is None else mask[:, :, start:stop, :]
            keep = _Keep(None if rows_real is None else rows_real[:, start:stop], query.shape[1])
            try:
                inputs = layer.read_scores(module, query[:, :, start:stop, :], key, m, scaling,
                                           rows=slice(start, stop), indices=indices)
            except ValueError as e:
                raise ObserverError(str(e)) from e
            if sinks is not None:
                inputs = with_sinks(inputs, sinks)
            if keep.rows is None and not bool(inputs.visible.any(-1).all()):
                raise ObserverError(
                    f"layer {layer_idx}: a query row sees no key (a left-padded batch's padding rows?); its "
                    "attention is undefined and would turn every reading to NaN. Meter a padded batch with its "
                    "attention_mask: witprobe.observe(...).batch(attention_mask), or the CLI's --batch N")
            rows = read_rows_from_scores(inputs.s_exact, inputs.s_served, inputs.visible, inputs.components, scaling,
                                         inputs.score_err, self.box_sup, inputs.qa_radius)
            if keep.rows is not None and (inputs.counters or inputs.visible_exact is not None
                                          or inputs.evict is not None):
                raise ObserverError(f"layer {layer_idx}: padded batches are metered on dense KV layers only")
            self._fold_rows(acc, rows, keep)
            self._offer_box_rows(layer_idx, rows, keep)
            ev = None if inputs.evict is None else self._fold_evict(acc, inputs)
            if value is not None and sinks is None and indices is None and hasattr(layer, "read_values"):
                if values is None:
                    try:
                        values = layer.read_values(value, query.shape[1] // value.shape[1])
                    except ValueError as e:
                        raise ObserverError(str(e)) from e
                self._fold_output(acc, rows, inputs.visible, *values, self.projections.get(layer_idx), keep, ev)
            if inputs.width:
                acc.fold("fp_width", torch.tensor([float(inputs.width)], dtype=torch.float64))
            for name, flags in inputs.counters.items():
                acc.count(name, flags)
            if inputs.visible_exact is not None:
                self._fold_sparse(acc, inputs, rows)

    @staticmethod
    def _fold_sparse(acc: Accumulator, inputs, rows) -> None:
        """End-to-end TV under a sparse selection, and the selector-to-attention ratio rho."""
        neg = torch.full_like(inputs.s_exact, -torch.inf)
        pe = torch.softmax(torch.where(inputs.visible_exact, inputs.s_exact, neg), dim=-1)
        ps = torch.softmax(torch.where(inputs.visible, inputs.s_served, neg), dim=-1)
        tv_total = 0.5 * (pe - ps).abs().sum(-1)
        pf = torch.softmax(torch.where(inputs.visible_full, inputs.s_served, neg), dim=-1)
        m_attn = torch.where(inputs.visible_full & ~inputs.visible, pf, torch.zeros_like(pf)).sum(-1)
        facts = {k: v.unsqueeze(1).expand_as(tv_total) for k, v in inputs.row_facts.items()}
        cert = facts["cert"]
        best = torch.minimum(torch.minimum(rows.plain_bound, rows.centred_bound), rows.eform_bound)
        acc.fold("tv_total_realized", tv_total)
        acc.fold("tv_total_realized_certified", tv_total[cert])
        acc.count("rows_selection_certified", cert)
        acc.count("rows_total_beaten_on_certified", cert & (tv_total > best * (1 + BEATEN_REL_TOL) + BEATEN_ABS_TOL))
        acc.fold("attn_b_S_witness", facts["b_S"])
        acc.fold("m_attn_omitted", m_attn)
        has = facts["m_sel"] > 1e-12
        acc.fold("rho", (m_attn / facts["m_sel"].clamp_min(1e-300))[has])

    @staticmethod
    def _fold_evict(acc: Accumulator, inputs) -> "EvictRows":
        """The eviction meter of one row chunk (``evict_*``); see :func:`evict_rows`."""
        ev = evict_rows(inputs)
        acc.fold("evict_tv_realized", ev.tv)
        acc.fold("evict_mass", ev.mass)
        acc.fold("evict_rho", ev.rho)
        acc.fold("evict_bound", ev.bound)
        acc.fold("evict_keys", ev.evicted)
        acc.fold("evict_tightness", (ev.bound / ev.tv)[ev.tv > 0])
        acc.count("evict_rows", torch.ones_like(ev.tv, dtype=torch.bool))
        acc.count("evict_rows_evicting", ev.evicted > 0)
        acc.count("rows_evict_vacuous", ev.bound >= 1)
        acc.count("rows_evict_beaten", ev.tv > ev.bound * (1 + BEATEN_REL_TOL) + BEATEN_ABS_TOL)
        acc.count("rows_evict_mass_mismatch", (ev.tv - ev.mass).abs() > EVICT_MASS_TOL)
        acc.count("rows_evict_viol_upper", ev.upper_viol)
        return ev

    @staticmethod
    def _fold_output(acc: Accumulator, rows, visible, ve, vs, wv, projection, keep: "_Keep | None" = None,
                     ev: "EvictRows | None" = None) -> None:
        """Attention-output error and its bound per row (``out_*``), and after the projection (``out_proj_*``).

        Under eviction the exact output is the full attention's and the served one the pruned
        attention's: ``p`` is over the full support, ``p'`` over the retained keys, and the row's
        TV bound is the storage bound plus the eviction bound (triangle inequality)."""
        keep = keep or _Keep(None, 0)
        best = torch.minimum(torch.minimum(rows.plain_bound, rows.centred_bound), rows.eform_bound)
        w, sigma = projection if projection is not None else (None, None)
        if ev is None:
            out = output_rows(rows.p_exact, rows.p_served, visible, ve, vs, wv, best, w, sigma)
        else:
            out = output_rows(ev.p_full, rows.p_served, ev.visible_full, ve, vs, wv, best + ev.bound, w, sigma)
        out = keep.rows_of(out)
        acc.fold("out_err", out.err)
        acc.fold("out_spread", out.spread)
        acc.fold("out_value_term", out.value_term)
        acc.fold("out_row_bound", out.bound)
        acc.count("rows_out_beaten", out.err > out.bound * (1 + BEATEN_REL_TOL) + BEATEN_ABS_TOL)
        acc.fold("out_spread_l2", out.spread_l2)
        acc.fold("out_value_l2", out.value_l2)
        acc.count("out_rows", torch.ones_like(out.err, dtype=torch.bool))
        if out.proj_err is not None:
            acc.fold("out_proj_err", out.proj_err)
            acc.fold("out_proj_row_bound", out.proj_bound)
            acc.count("rows_out_proj_beaten",
                      out.proj_err > out.proj_bound * (1 + BEATEN_REL_TOL) + BEATEN_ABS_TOL)

    def _offer_box_rows(self, layer_idx: int, rows, keep: "_Keep") -> None:
        """Offer the real rows of one chunk to the layer's box-row keepers (one per box form)."""
        for form, bound, c_max, mass, rad in (
                ("boxsup", rows.boxsup_bound, rows.c_max, rows.box_mass, rows.box_rad),
                ("qa_boxsup", rows.qa_boxsup_bound, rows.qa_c_max, rows.qa_box_mass, rows.qa_box_rad)):
            if bound is None or mass is None:
                continue
            sel = torch.ones_like(bound, dtype=torch.bool) if keep.rows is None else \
                keep.rows.unsqueeze(1).expand_as(bound)
            self.box_rows.setdefault((layer_idx, form), BoxRowKeeper()).offer(
                bound[sel], c_max[sel], mass[sel], rad[sel])

    def box_row_records(self) -> dict[str, dict[str, dict]]:
        """The shipped-row records, ``{layer: {form: record}}`` (``run.json``'s ``box_rows``)."""
        out: dict[str, dict[str, dict]] = {}
        for (layer, form), keeper in sorted(self.box_rows.items()):
            out.setdefault(str(layer), {})[form] = keeper.record()
        return out

    @staticmethod
    def _fold_rows(acc: Accumulator, rows, keep: "_Keep | None" = None) -> None:
        rows = (keep or _Keep(None, 0)).rows_of(rows)
        tv = rows.tv_realized
        acc.fold("tv_realized", tv)
        acc.fold("q_coef", rows.q_coef)
        acc.fold("w_max", rows.w_max)
        acc.fold("c_max", rows.c_max)
        acc.fold("eform_excess", rows.eform_excess)
        for key in ("score_err", "score_abs_max", "keys"):  # magnitudes of the float64 error analysis
            v = getattr(rows, key)
            if v is not None:
                acc.fold(key if key != "keys" else "keys_visible", v)
        bounds = {"plain": rows.plain_bound, "centred": rows.centred_bound, "eform": rows.eform_bound}
        best = torch.minimum(torch.minimum(bounds["plain"], bounds["centred"]), bounds["eform"])
        acc.fold("best_bound", best)
        acc.count("rows_best_vacuous", best >= 1)
        for form, b in bounds.items():
            acc.fold(f"{form}_bound", b)
            acc.count(f"rows_{form}_vacuous", b >= 1)
            acc.count(f"rows_{form}_beaten", tv > b * (1 + BEATEN_REL_TOL) + BEATEN_ABS_TOL)
            ratio = b / tv
            acc.fold(f"{form}_tightness", ratio[tv > 0])
        if rows.boxsup_bound is not None:  # an empirical form beside the chains (no library theorem yet)
            b = rows.boxsup_bound
            acc.fold("boxsup_bound", b)
            acc.count("rows_boxsup_vacuous", b >= 1)
            acc.count("rows_boxsup_beaten", tv > b * (1 + BEATEN_REL_TOL) + BEATEN_ABS_TOL)
            acc.fold("boxsup_tightness", (b / tv)[tv > 0])
        if rows.qa_centred_bound is not None:  # empirical: the query-aligned bridge is not in the per-run theorem
            acc.fold("qa_c_max", rows.qa_c_max)
            acc.bump("keys_qa_radius_beaten", int(rows.qa_keys_beaten.sum()))
            for form, b in (("qa_centred", rows.qa_centred_bound), ("qa_boxsup", rows.qa_boxsup_bound)):
                if b is None:
                    continue
                acc.fold(f"{form}_bound", b)
                acc.count(f"rows_{form}_vacuous", b >= 1)
                acc.count(f"rows_{form}_beaten", tv > b * (1 + BEATEN_REL_TOL) + BEATEN_ABS_TOL)
                acc.fold(f"{form}_tightness", (b / tv)[tv > 0])
        acc.count("rows", torch.ones_like(tv, dtype=torch.bool))

    def probe_snapshot(self, meta: dict | None = None) -> dict:
        """The attached probe's snapshot (schema ``witprobe-probe/1``); raises if none is attached."""
        if self.probe is None:
            raise ObserverError("no probe runtime is attached to this observer")
        return self.probe.snapshot(meta)

    def snapshot(self) -> dict[str, list]:
        """Host readback of every accumulator (the only synchronisation)."""
        channels = {}
        for layer, d in sorted(self.channels.items()):
            n = d["n"]
            channels[layer] = {
                "n": n,
                "mean_log_a": (d["sum_log_a"] / n).tolist(),
                "mean_a": (d["sum_a"] / n).tolist(),
                "near_one_share": (d["near_one"] / n).tolist(),
            }
        return {
            "channels": channels,
            "write": [a.finalize() for a in self.write],
            "read": [a.finalize() for a in self.read],
            "host_write_calls": list(self.host_write_calls),
            "host_read_calls": list(self.host_read_calls),
        }
