"""Learned sparse selectors (DeepSeek-V3.2 DSA style): the Select operator and its meters.

The indexer scores every cached token for each query, ``s_t = sum_h w_h ReLU(scale q_h . k_t)``,
and attention reads only the top-k tokens. Compressing the indexer keys perturbs the scores and
may swap tokens in or out of the selected set. Meters here (paper section 2.2):

- **witness certificate** (deterministic, from the stored indexer-key witness):
  ``|Delta s_t| <= eps_t = scale * sum_b (sum_h |w_h| ||q_{h,b}||) ||Delta k_{t,b}||``
  (ReLU is 1-Lipschitz, then Cauchy-Schwarz per band). If
  ``min_{t in I'} (s'_t - eps_t) > max_{u not in I'} (s'_u + eps_u)`` the selected set is provably
  unchanged (rank-prefix stability with per-key radii). On the other rows the swapped selector
  mass is bounded by the contestable keys: ``m_in <= sum_{t in I', s'_t - eps_t <= hi} p'_t`` and
  ``m_out <= sum_{u not in I', s'_u + eps_u >= lo} min(1, p'_u e^{eps_u + eps_max})``, so the
  selection lemma gives ``b_S = (m_out + m_in)/2`` in selector-score mass (``selector_dist:tv@select``).
- **eta-perturbation certificate** (the paper's form): ``eps = eta * max_{t in I'} |s'_t|``, rank
  margins ``s'_(r) - s'_(r+1) > 2 eps``, and a deterministic perturbation flip test with no RNG
  (``u = frac(sin(pos * 12.9898 + 78.233) * 43758.5453) * 2 - 1``): flips inside the certified
  region must be 0.
- realized swaps against the uncompressed indexer keys (readings), which must respect both
  certificates (self-checks).

Selector-score mass is not attention mass: crossing to attention TV needs the empirical ratio
``rho`` (measured at the read), never an implicit addition.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import torch
from torch import nn

from witprobe.calculus.float_error import SAFETY, U64, allowance
from witprobe.memory.codecs import Codec
from witprobe.probe.latent import WitnessLatentLayer
from witprobe.probe.meters import band_witness
from witprobe.probe.witness_cache import bands_for
from witprobe.probe.model_hooks import ModelHooks

ETAS = (1e-3, 1e-2)
RANKS = (1, 8, 64)


class WitnessIndexedLatentLayer(WitnessLatentLayer):
    """MLA latent layer with a DSA indexer-key cache: ``update_indexer`` is witnessed too."""

    kind = "latent_indexed"

    def __init__(self, *args, indexer_codec: Codec | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.indexer_codec = indexer_codec or self.latent_codec
        self.indexer_keys: torch.Tensor | None = None
        self.exact_indexer_keys: torch.Tensor | None = None
        self.indexer_band_norms: torch.Tensor | None = None
        self.pending: dict[str, torch.Tensor] | None = None  # selection facts for the next attention read

    def update_indexer(self, indexer_key_states: torch.Tensor) -> torch.Tensor:
        k = indexer_key_states
        if k.dim() != 3:
            raise ValueError(f"layer {self.layer_idx}: indexer keys must be (B, S, D), got {tuple(k.shape)}")
        if self.indexer_keys is None:
            self.bands_indexer = bands_for(k.shape[-1], self.bands)
        k_hat = self.indexer_codec.encode_decode(k)
        w = band_witness(k, k_hat, self.bands_indexer)
        self.recorder.record_write(self.layer_idx, "indexer", w, self.bands_indexer)
        cat = lambda old, new: new if old is None else torch.cat([old, new], dim=1)  # noqa: E731
        self.indexer_keys = cat(self.indexer_keys, k_hat)
        self.exact_indexer_keys = cat(self.exact_indexer_keys, k)
        self.indexer_band_norms = cat(self.indexer_band_norms, w.band_norms)
        return self.indexer_keys

    def read_scores(self, module, query, key, mask, scaling, rows: slice | None = None, indices=None):
        """Latent read inputs plus the selection: served support from the model's indices, exact
        support from the exact-key top-k staged by the indexer hook."""
        base = super().read_scores(module, query, key, mask, scaling)
        if self.pending is None or indices is None:
            from witprobe.probe.errors import ObserverError

            raise ObserverError(f"layer {self.layer_idx}: sparse read without a metered indexer selection")
        rs = rows or slice(0, query.shape[2])
        causal = base.visible
        heads = causal.shape[1]
        served = torch.zeros(causal.shape[0], indices.shape[1], causal.shape[-1], dtype=torch.bool,
                             device=causal.device).scatter(-1, indices.long().clamp(min=0), True)[:, rs]
        exact = self.pending["exact_sel"][:, rs]
        base.visible_full = causal
        base.visible = causal & served.unsqueeze(1).expand(-1, heads, -1, -1)
        base.visible_exact = causal & exact.unsqueeze(1).expand(-1, heads, -1, -1)
        base.row_facts = {k: self.pending[k][:, rs] for k in ("cert", "m_sel", "b_S")}
        return base


def indexer_query(module: nn.Module, hidden_states: torch.Tensor, q_resid: torch.Tensor,
                  position_embeddings: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The indexer's post-RoPE queries ``(B, S, H, D)`` and head weights ``(B, S, H)``, float64.

    Mirrors ``DeepseekV32Indexer.forward`` of transformers 5.x (non-interleaved RoPE on the first
    ``qk_rope_head_dim`` channels); the self-check ``indexer_recon_mismatch`` compares the top-k of
    these scores with the indices the model actually returned.
    """
    b, s, _ = hidden_states.shape
    rope = sys.modules[type(module).__module__].apply_rotary_pos_emb
    q = module.wq_b(q_resid).view(b, s, module.n_heads, module.head_dim)
    q_rot, q_pass = torch.split(q, [module.qk_rope_head_dim, module.head_dim - module.qk_rope_head_dim], dim=-1)
    cos, sin = position_embeddings
    q_rot, _ = rope(q_rot, q_rot, cos, sin, unsqueeze_dim=2)
    q = torch.cat([q_rot, q_pass], dim=-1).to(torch.float64)
    weights = module.weights_proj(hidden_states.to(module.weights_proj.weight.dtype)).to(torch.float64)
    return q, weights * module.n_heads ** -0.5


def index_scores(q: torch.Tensor, weights: torch.Tensor, keys: torch.Tensor, scale: float) -> torch.Tensor:
    """``s[b, s, t] = sum_h w[b, s, h] ReLU(scale q[b, s, h] . k[b, t])`` (float64)."""
    raw = torch.einsum("bshd,btd->bsht", q, keys.to(torch.float64)) * scale
    return torch.einsum("bsh,bsht->bst", weights, torch.relu(raw))


def score_radius(q: torch.Tensor, weights: torch.Tensor, key_band_norms: torch.Tensor, scale: float) -> torch.Tensor:
    """Per-key radius ``eps[b, s, t] = scale sum_b (sum_h |w_h| ||q_{h,b}||) ||Delta k_{t,b}||``."""
    bands = key_band_norms.shape[-1]
    d = q.shape[-1]
    qb = q.reshape(*q.shape[:-1], bands, d // bands).norm(dim=-1)  # B,S,H,bands
    coeff = torch.einsum("bsh,bshn->bsn", weights.abs(), qb)
    return torch.einsum("bsn,btn->bst", coeff, key_band_norms.to(torch.float64)) * scale


COMPARE_SLACK = 2.0**-48  # times (max |s'| + max radius): covers the float64 rounding of s' -+ eps


def selection_radius(q: torch.Tensor, weights: torch.Tensor, key_band_norms: torch.Tensor, exact_keys: torch.Tensor,
                     served: torch.Tensor, valid: torch.Tensor, scale: float, unit=U64) -> torch.Tensor:
    """The witness radius :func:`score_radius` made sound for the float evaluation, ``(B, S, T)``.

    The certificate compares *computed* served scores ``s^'_t`` with radii. Besides the witness
    radius ``eps_t`` it must cover (docs/TRUST_BOUNDARY.md): the error of the served scores
    themselves, ``gamma_{D+H+2} scale sum_h |w_h| ||q_h|| ||k'_t||`` in the unit roundoff
    ``unit`` of the arithmetic that computed them (float64 for the DSA recomputation, float32
    for DeepSeek-V4's own page scorer), with ``||k'_t|| <= ||k_t|| + sum_b ||Delta k_{t,b}||``;
    a relative ``2 unit`` on ``eps`` for the weights (V4 rounds them in float32); the float64
    evaluation of all this (``1 + 2**-20``); and the rounding of ``s' -+ eps`` in the comparisons
    (``2**-48 (max |s'| + max radius)`` per row).

    Parameters
    ----------
    q:
        ``(B, S, H, D)`` indexer queries (float64 values of the model's).
    weights:
        ``(B, S, H)`` head weights.
    key_band_norms:
        ``(B, T, bands)`` residual band norms of the indexer keys.
    exact_keys:
        ``(B, T, D)`` uncompressed indexer keys.
    served, valid:
        ``(B, S, T)`` served scores as computed and the candidate mask.
    """
    d, h = q.shape[-1], q.shape[-2]
    eps = score_radius(q, weights, key_band_norms, scale)
    key_norm = exact_keys.to(torch.float64).norm(dim=-1) + key_band_norms.to(torch.float64).sum(dim=-1)  # B,T
    coeff = torch.einsum("bsh,bsh->bs", weights.abs(), q.norm(dim=-1))
    delta = (allowance(d + h + 2, unit) * abs(scale)) * coeff.unsqueeze(-1) * key_norm.unsqueeze(1)
    e = (eps * (1 + 2 * float(unit)) + delta) * (1 + float(SAFETY))
    zero = torch.zeros_like(e)
    s_max = torch.where(valid, served.abs(), zero).amax(-1, keepdim=True)
    e_max = torch.where(valid, e, zero).amax(-1, keepdim=True)
    return e + COMPARE_SLACK * (s_max + e_max)


def _topk_mask(scores: torch.Tensor, valid: torch.Tensor, k: int) -> torch.Tensor:
    """Boolean mask of the top-k valid entries (all valid entries when fewer than k)."""
    masked = torch.where(valid, scores, torch.full_like(scores, -math.inf))
    kk = min(k, scores.shape[-1])
    idx = masked.topk(kk, dim=-1).indices
    sel = torch.zeros_like(valid).scatter(-1, idx, True)
    return sel & valid


def sin_hash(shape: torch.Size, device: torch.device) -> torch.Tensor:
    """Deterministic pseudo-random values in ``[-1, 1)`` from the flattened position (no RNG)."""
    pos = torch.arange(math.prod(shape), dtype=torch.float64, device=device).reshape(shape)
    x = torch.sin(pos * 12.9898 + 78.233) * 43758.5453
    return (x - torch.floor(x)) * 2 - 1


@dataclass
class SelectionRows:
    """Per-row selection facts of one indexer call, shapes ``(B, S)`` unless stated."""

    nontrivial: torch.Tensor  # more valid candidates than k
    served_sel: torch.Tensor  # (B, S, T) I' (served-key top-k)
    exact_sel: torch.Tensor  # (B, S, T) I (exact-key top-k)
    changed: torch.Tensor  # I != I'
    cert_witness: torch.Tensor  # selection provably unchanged
    cert_witness_top1: torch.Tensor
    m_in_bound: torch.Tensor
    m_out_bound: torch.Tensor
    m_in: torch.Tensor  # realized (needs exact keys)
    m_out: torch.Tensor
    m_sel: torch.Tensor  # selector mass outside I' (for rho)
    eta: dict[float, dict[str, torch.Tensor]]
    score_abs_max: torch.Tensor | None = None  # max |s'_t| over candidates (float64 error analysis)
    eps_max: torch.Tensor | None = None  # max radius over candidates


def selection_rows(served: torch.Tensor, exact: torch.Tensor, eps: torch.Tensor, valid: torch.Tensor,
                   k: int) -> SelectionRows:
    """Certificates, bounds and realizations of the top-k selection (see module docstring)."""
    neg = torch.full_like(served, -math.inf)
    n_valid = valid.sum(-1)
    nontrivial = n_valid > k
    sel = _topk_mask(served, valid, k)
    sel_exact = _topk_mask(exact, valid, k)
    changed = (sel != sel_exact).any(-1)
    out_valid = valid & ~sel
    lo_in = torch.where(sel, served - eps, -neg).amin(-1)
    hi_out = torch.where(out_valid, served + eps, neg).amax(-1)
    cert = (lo_in > hi_out) | ~nontrivial
    ps = torch.softmax(torch.where(valid, served, neg), dim=-1)
    pe = torch.softmax(torch.where(valid, exact, neg), dim=-1)
    eps_max = torch.where(valid, eps, torch.zeros_like(eps)).amax(-1, keepdim=True)
    leave = sel & (served - eps <= hi_out.unsqueeze(-1))
    enter = out_valid & (served + eps >= lo_in.unsqueeze(-1))
    m_in_bound = torch.where(leave, ps, torch.zeros_like(ps)).sum(-1)
    m_out_bound = torch.where(enter, (ps * torch.exp(eps + eps_max)).clamp(max=1.0), torch.zeros_like(ps)).sum(-1)
    m_in_bound = torch.where(cert, torch.zeros_like(m_in_bound), m_in_bound)
    m_out_bound = torch.where(cert, torch.zeros_like(m_out_bound), m_out_bound)
    m_in = torch.where(sel & ~sel_exact, ps, torch.zeros_like(ps)).sum(-1)
    m_out = torch.where(sel_exact & ~sel, pe, torch.zeros_like(pe)).sum(-1)
    m_sel = torch.where(out_valid, ps, torch.zeros_like(ps)).sum(-1)
    # top-1 by the witness: the best key beats every other key by more than both radii
    best = torch.where(valid, served, neg).argmax(-1, keepdim=True)
    best_lo = (served - eps).gather(-1, best).squeeze(-1)
    others = valid.clone().scatter(-1, best, False)
    cert_top1 = (best_lo > torch.where(others, served + eps, neg).amax(-1)) | (n_valid <= 1)
    eta_stats = {eta: _eta_rows(served, valid, sel, k, eta) for eta in ETAS}
    score_abs_max = torch.where(valid, served.abs(), torch.zeros_like(served)).amax(-1)
    return SelectionRows(nontrivial, sel, sel_exact, changed, cert, cert_top1, m_in_bound, m_out_bound,
                         m_in, m_out, m_sel, eta_stats, score_abs_max, eps_max.squeeze(-1))


def _eta_rows(served: torch.Tensor, valid: torch.Tensor, sel: torch.Tensor, k: int, eta: float) -> dict[str, torch.Tensor]:
    """The paper's eta-certificate, flip test and selector-mass b_S at ranks (1, 8, 64, k)."""
    neg = torch.full_like(served, -math.inf)
    vals = torch.where(valid, served, neg)
    eps = eta * torch.where(sel, served.abs(), torch.zeros_like(served)).amax(-1)
    pert = vals + sin_hash(served.shape, served.device) * eps.unsqueeze(-1)
    sorted_vals = vals.sort(dim=-1, descending=True).values
    out: dict[str, torch.Tensor] = {}
    for r in sorted({min(r, k) for r in RANKS} | {k}):
        if r >= served.shape[-1]:
            continue
        gap = sorted_vals[..., r - 1] - sorted_vals[..., r]
        ok_rows = valid.sum(-1) > r
        cert = (gap > 2 * eps) & ok_rows
        top_a = _topk_mask(vals, valid, r)
        top_b = _topk_mask(pert, valid, r)
        flip = (top_a != top_b).any(-1) & ok_rows
        out[f"cert_r{r}"] = cert
        out[f"flip_r{r}"] = flip
        out[f"flip_in_cert_r{r}"] = flip & cert
        out[f"rows_r{r}"] = ok_rows
    # selector-score mass swapped by the perturbation (softmax over the selected logits only)
    sel_p = _topk_mask(pert, valid, k)
    p_sel = torch.softmax(torch.where(sel, vals, neg), dim=-1)
    p_pert = torch.softmax(torch.where(sel_p, pert, neg), dim=-1)
    lost = torch.where(sel & ~sel_p, p_sel, torch.zeros_like(p_sel)).sum(-1)
    gain = torch.where(sel_p & ~sel, p_pert, torch.zeros_like(p_pert)).sum(-1)
    out["b_S"] = 0.5 * (lost + gain)
    return out


def _valid_from_mask(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if mask.dtype == torch.bool:
        return mask.expand_as(like)
    return (mask > torch.finfo(mask.dtype).min / 2).expand_as(like)


def fold_selection(acc, rows: SelectionRows, mismatch: torch.Tensor) -> None:  # noqa: ANN001 - Accumulator
    """Fold one selection call into the layer's read accumulator (``sel_*`` keys, self-checks)."""
    nt = rows.nontrivial
    acc.count("indexer_recon_mismatch", mismatch)
    acc.count("sel_rows", nt)
    acc.count("sel_rows_trivial", ~nt)
    acc.count("sel_cert_witness", rows.cert_witness & nt)
    acc.count("sel_cert_witness_top1", rows.cert_witness_top1 & nt)
    acc.count("sel_changed", rows.changed & nt)
    acc.count("sel_flip_in_witness_cert", rows.changed & rows.cert_witness)
    tol = 1e-9
    acc.count("sel_mass_bound_beaten", (rows.m_in > rows.m_in_bound + tol) | (rows.m_out > rows.m_out_bound + tol))
    acc.fold("sel_b_S_witness", (0.5 * (rows.m_in_bound + rows.m_out_bound))[nt])
    acc.fold("sel_b_S_realized", (0.5 * (rows.m_in + rows.m_out))[nt])
    acc.fold("sel_m_sel", rows.m_sel[nt])
    acc.fold("sel_candidates", torch.full((1,), float(rows.served_sel.shape[-1]), dtype=torch.float64))  # >= keys per row
    if rows.score_abs_max is not None:  # magnitudes of the float64 error analysis of b_S
        acc.fold("sel_score_abs_max", rows.score_abs_max[nt])
        acc.fold("sel_eps_max", rows.eps_max[nt])
    for eta, st in rows.eta.items():
        tag = f"sel_eta{eta:g}"
        acc.fold(f"{tag}_b_S", st["b_S"][nt])
        for key, flags in st.items():
            if key != "b_S":
                acc.count(f"{tag}_{key}", flags & nt)


class SelectorHooks(ModelHooks):
    """Forward hooks on every DSA indexer: meter the selection and stage it for the read.

    The hook recomputes the indexer's scores with the served and with the uncompressed indexer keys
    (the scoring formula of the model's own indexer, from its own weights), checks that the served
    scores reproduce the indices the model returned (``indexer_recon_mismatch``), folds the
    selection meters into the layer's read accumulator and leaves the per-row facts on the witness
    layer for the attention read that follows.
    """

    def install(self, model: nn.Module) -> int:
        for mod in model.modules():
            if type(mod).__name__.endswith("Indexer") and hasattr(mod, "index_topk") and hasattr(mod, "layer_idx"):
                self.handles.append(mod.register_forward_hook(self._hook, with_kwargs=True))
        return len(self.handles)

    def _hook(self, module: nn.Module, args: tuple, kwargs: dict, output: torch.Tensor) -> None:
        obs = self.observer
        if obs.cache is None or not obs.is_active:  # an unobserved run (e.g. the uncompressed reference)
            return
        layer = obs.cache.layers[module.layer_idx]
        if not isinstance(layer, WitnessIndexedLatentLayer):
            from witprobe.probe.errors import ObserverError

            raise ObserverError(f"indexer of layer {module.layer_idx} wrote to {type(layer).__name__}, not a witness layer")
        names = ("hidden_states", "q_resid", "position_embeddings", "attention_mask")
        vals = {n: (args[i] if i < len(args) else kwargs[n]) for i, n in enumerate(names)}
        with torch.no_grad():
            q, w = indexer_query(module, vals["hidden_states"], vals["q_resid"], vals["position_embeddings"])
            scale = module.softmax_scale
            served = index_scores(q, w, layer.indexer_keys, scale)
            exact = index_scores(q, w, layer.exact_indexer_keys, scale)
            valid = _valid_from_mask(vals["attention_mask"], served) & torch.isfinite(served)
            eps = selection_radius(q, w, layer.indexer_band_norms, layer.exact_indexer_keys, served, valid, scale)
            k = int(module.index_topk)
            rows = selection_rows(served, exact, eps, valid, k)
            model_sel = torch.zeros_like(valid).scatter(-1, output.long().clamp(min=0), True) & valid
            mismatch = (model_sel != rows.served_sel).any(-1)
            if mismatch.any():  # ties can flip the last place: accept equal scores at the boundary
                kth = torch.where(rows.served_sel, served, torch.full_like(served, math.inf)).amin(-1, keepdim=True)
                tol = 1e-5 * served.abs().amax(-1, keepdim=True).clamp_min(1e-30)
                ok = torch.where(model_sel, served >= kth - tol, torch.ones_like(valid)).all(-1)
                mismatch = mismatch & ~ok
        fold_selection(obs.read[module.layer_idx], rows, mismatch)
        layer.pending = {
            "exact_sel": rows.exact_sel,
            "served_sel": rows.served_sel,
            "cert": rows.cert_witness,
            "m_sel": rows.m_sel,
            "b_S": 0.5 * (rows.m_in_bound + rows.m_out_bound),
        }
