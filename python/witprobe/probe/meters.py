"""Meters of the update and read operators: pure torch reference functions.

These functions are the specification: a fused kernel is accepted only if it reproduces them.
All arithmetic is float64 (inputs are cast), so rounding stays far below the outward margin of
:mod:`witprobe.calculus.rounding`; ``docs/TRUST_BOUNDARY.md`` proves the bounds that
:mod:`witprobe.calculus.float_error` encodes, and the reads record the magnitudes they need.

Shapes follow transformers' cache layout: entries ``(batch, kv_heads, seq, dim)``, queries
``(batch, heads, q_len, dim)`` with ``heads = kv_heads * groups`` (GQA).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from witprobe.calculus.float_error import allowance
from witprobe.probe.box_sup import BoxSupSpec, box_sup_rows

VIOLATION_TOL = 1e-5


@dataclass(frozen=True)
class WitnessBatch:
    """Per-entry witness of a batch of writes; every tensor has the entries' leading shape.

    Attributes
    ----------
    band_norms:
        ``||Delta_b||`` per band, shape ``(..., bands)``.
    witness:
        ``W = sum_b ||Delta_b||``.
    residual:
        ``||Delta||`` (the true residual; needs the uncompressed entry, so a reading).
    x_norm:
        ``||x||``.
    """

    band_norms: torch.Tensor
    witness: torch.Tensor
    residual: torch.Tensor
    x_norm: torch.Tensor


def band_witness(x: torch.Tensor, x_hat: torch.Tensor, bands: int) -> WitnessBatch:
    """Band witness of stored entries: ``Delta = x - x_hat`` split into ``bands`` contiguous bands.

    ``W = sum_b ||Delta_b||_2 >= ||Delta||_2`` by the triangle inequality, and
    ``W <= sqrt(bands) * ||Delta||_2`` by Cauchy-Schwarz.
    """
    if x.shape != x_hat.shape:
        raise ValueError(f"band_witness: shapes differ, x {tuple(x.shape)} vs x_hat {tuple(x_hat.shape)}")
    d = x.shape[-1]
    if d % bands:
        raise ValueError(f"band_witness: {bands} bands do not divide the entry dimension {d}")
    x64 = x.to(torch.float64)
    delta = x64 - x_hat.to(torch.float64)
    bn = delta.reshape(*delta.shape[:-1], bands, d // bands).norm(dim=-1)
    return WitnessBatch(band_norms=bn, witness=bn.sum(-1), residual=delta.norm(dim=-1), x_norm=x64.norm(dim=-1))


def witness_violations(w: WitnessBatch, bands: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-check flags: ``W < ||Delta||(1 - tol)`` and ``W > sqrt(bands)||Delta||(1 + tol)``.

    Either flag is an implementation error (the inequalities are theorems); both counts must be 0.
    """
    low = w.witness < w.residual * (1 - VIOLATION_TOL)
    high = w.witness > math.sqrt(bands) * w.residual * (1 + VIOLATION_TOL) + 1e-300
    return low, high


@dataclass(frozen=True)
class ReadRows:
    """Per-query-row readings and bounds of one attention read, shape ``(batch, heads, q_len)``.

    ``tv_realized`` needs the uncompressed keys (a reading); the rest is computable at runtime.
    The three ``*_bound`` tensors are float64 evaluations of the three sound forms, used to
    compare every row with its realization; certified values are recomputed exactly from the
    layer maxima by the calculus.
    """

    tv_realized: torch.Tensor
    q_coef: torch.Tensor  # scale * ||q||
    w_max: torch.Tensor  # max W over the keys this row sees
    c_max: torch.Tensor  # max_t c_t over the keys this row sees
    eform_excess: torch.Tensor  # E_p'[e^c] - 1
    plain_bound: torch.Tensor
    centred_bound: torch.Tensor
    eform_bound: torch.Tensor
    score_err: torch.Tensor | None = None  # max over visible keys of the served-score error bound
    score_abs_max: torch.Tensor | None = None  # max over visible keys of |s_served| (sink included)
    keys: torch.Tensor | None = None  # visible keys (float64 counts)
    p_exact: torch.Tensor | None = None  # (B, H, Q, T) exact attention distribution (for the output meter)
    p_served: torch.Tensor | None = None  # (B, H, Q, T) served attention distribution
    boxsup_bound: torch.Tensor | None = None  # box supremum bound (witprobe.probe.box_sup), when metered
    # query-aligned forms (witprobe.probe.query_aligned): radii min(c_band, c_qa), when the layer has a basis
    qa_c_max: torch.Tensor | None = None
    qa_centred_bound: torch.Tensor | None = None
    qa_boxsup_bound: torch.Tensor | None = None
    qa_keys_beaten: torch.Tensor | None = None  # (B, H, Q) visible keys with |s - s'| > c_qa (must be 0)
    # the pooled rows (B, H, Q, J) each box bound was computed from (witprobe.probe.box_sup.box_pool),
    # shipped to the kernel's box checker (witprobe.probe.box_rows)
    box_mass: torch.Tensor | None = None
    box_rad: torch.Tensor | None = None
    qa_box_mass: torch.Tensor | None = None
    qa_box_rad: torch.Tensor | None = None


def score_error(q: torch.Tensor, k: torch.Tensor, scaling: float, groups: int = 1) -> torch.Tensor:
    """Bound of ``|fl(fl(q . k) * scale) - scale q . k|`` per row and key, ``(B, H, Q, T)``.

    ``q`` is ``(B, H, Q, D)``, ``k`` is ``(B, H / groups, T, D)`` (each KV head read by ``groups``
    consecutive query heads); the scores are float64 dot products of length ``D`` times the scale,
    in any summation order, so the error is at most ``gamma_{D+1} * scale * ||q|| * ||k||``
    (Higham, dot products; Cauchy-Schwarz on ``|q|.|k|``).
    """
    d = q.shape[-1]
    qn = q.to(torch.float64).norm(dim=-1)
    kn = k.to(torch.float64).norm(dim=-1)
    if groups > 1:
        kn = kn.repeat_interleave(groups, dim=1)  # (B, H, T): the norms, never the keys, repeated
    return (allowance(d + 1) * abs(scaling)) * qn.unsqueeze(-1) * kn.unsqueeze(-2)


@dataclass(frozen=True)
class ScoreComponent:
    """One additive part of the per-key score-error bound.

    The score error of key ``t`` seen by query row ``r`` is bounded by
    ``scale * sum_components sum_b q_band_norms[r, b] * k_band_norms[t, b]`` (Cauchy-Schwarz per
    band). For dense KV there is one component (query bands, key residual bands); for a latent
    cache there are two (effective-query bands ``u = W_UK^T q_nope`` against latent residual bands,
    and rope-query bands against rope-key residual bands).

    Attributes
    ----------
    q_band_norms:
        ``(B, H, Q, nb)`` norms of the query-side bands.
    k_band_norms:
        ``(B, H, T, nb)`` residual norms of the stored entries' bands (already per query head).
    """

    q_band_norms: torch.Tensor
    k_band_norms: torch.Tensor


def component_radii(components: list[ScoreComponent], scaling: float, shape: torch.Size) -> torch.Tensor:
    """Per-key score-error radii ``c_t = scale * sum_components sum_b ||q_b|| ||Delta k_{t,b}||``.

    The one computation of the banded Cauchy-Schwarz radius (dense and latent reads, and the
    reference of the fused latent kernel). ``shape`` is ``(B, H, Q, T)``; returns float64 of that
    shape, in score units (the scale already applied).
    """
    c = torch.zeros(shape, dtype=torch.float64, device=components[0].q_band_norms.device if components else None)
    for comp in components:
        c = c + torch.einsum("bhqn,bhtn->bhqt", comp.q_band_norms.to(torch.float64),
                             comp.k_band_norms.to(torch.float64)) * scaling
    return c


def read_rows_from_scores(
    s_exact: torch.Tensor,
    s_served: torch.Tensor,
    visible: torch.Tensor,
    components: list[ScoreComponent],
    scaling: float,
    score_err: torch.Tensor | None = None,
    box_sup: BoxSupSpec | None = None,
    qa_radius: torch.Tensor | None = None,
) -> ReadRows:
    """Per-row readings and the three bounds from exact and served scores ``(B, H, Q, T)``.

    ``s_exact``/``s_served`` are the pre-softmax scores *including* the scale, without the mask;
    ``visible`` is the boolean mask of keys each row attends to. ``score_err`` ``(B, H, Q, T)``
    bounds the float64 error of ``s_served`` (see :func:`score_error`); with it the rows also
    carry the magnitudes that the e-form's error analysis needs (``docs/TRUST_BOUNDARY.md``).
    With ``box_sup`` the rows also carry the box supremum bound of :mod:`witprobe.probe.box_sup`
    over the same radii ``c_t`` and served distribution ``p'``. With ``qa_radius`` ``(B, H, Q, T)``
    (:func:`witprobe.probe.query_aligned.qa_radius`) the rows also carry the centred and box-sup
    forms over ``min(c_t, c^qa_t)`` and the count of keys whose score error exceeds ``c^qa_t``.
    """
    hidden = torch.full_like(s_exact, -math.inf)
    p = torch.softmax(torch.where(visible, s_exact.to(torch.float64), hidden), dim=-1)
    ps = torch.softmax(torch.where(visible, s_served.to(torch.float64), hidden), dim=-1)
    tv = 0.5 * (p - ps).abs().sum(-1)
    c = component_radii(components, scaling, p.shape)
    w = torch.zeros(p.shape[:2] + p.shape[3:], dtype=torch.float64, device=p.device)  # B,H,T
    q_sq_max = torch.zeros(p.shape[:3], dtype=torch.float64, device=p.device)
    for comp in components:
        qn = comp.q_band_norms.to(torch.float64)
        kn = comp.k_band_norms.to(torch.float64)
        w = w + kn.sum(-1)
        q_sq_max = torch.maximum(q_sq_max, (qn * qn).sum(-1))
    c = torch.where(visible, c, torch.zeros_like(c))
    wq = torch.where(visible, w.unsqueeze(2).expand_as(c), torch.zeros_like(c))
    w_max = wq.amax(-1)
    c_max = c.amax(-1)
    q_coef = q_sq_max.sqrt() * scaling
    excess = (ps * torch.expm1(c)).sum(-1)
    zero = torch.zeros_like(c)
    err = None if score_err is None else torch.where(visible, score_err.to(torch.float64).expand_as(c), zero).amax(-1)
    qa_c_max = qa_centred = qa_box = qa_beaten = qa_mass = qa_rad = None
    # a row that sees no key (left padding of a batch) has a NaN softmax: the box meter gets zeros
    # there (the row is dropped before any fold), so that its input check can refuse real NaNs
    ps_box = torch.where(visible.any(-1, keepdim=True), ps, torch.zeros_like(ps))
    box, box_mass, box_rad = (None, None, None) if box_sup is None else box_sup_rows(ps_box, c, box_sup)
    if qa_radius is not None:
        cqa = qa_radius.to(torch.float64)
        cm = torch.where(visible, torch.minimum(c, cqa), zero)
        qa_c_max = cm.amax(-1)
        qa_centred = torch.tanh(qa_c_max / 2)
        qa_box, qa_mass, qa_rad = (None, None, None) if box_sup is None else box_sup_rows(ps_box, cm, box_sup)
        gap = (s_exact.to(torch.float64) - s_served.to(torch.float64)).abs()
        qa_beaten = (visible & (gap > cqa * (1 + 1e-9) + 1e-12)).sum(-1)
    return ReadRows(
        tv_realized=tv,
        q_coef=q_coef,
        w_max=w_max,
        c_max=c_max,
        eform_excess=excess,
        plain_bound=0.5 * torch.expm1(2 * q_coef * w_max),
        centred_bound=torch.tanh(c_max / 2),
        eform_bound=excess + 0.5 * excess * excess,
        score_err=err,
        score_abs_max=torch.where(visible, s_served.to(torch.float64).abs(), zero).amax(-1),
        keys=visible.sum(-1).to(torch.float64),
        p_exact=p,
        p_served=ps,
        boxsup_bound=box,
        qa_c_max=qa_c_max,
        qa_centred_bound=qa_centred,
        qa_boxsup_bound=qa_box,
        qa_keys_beaten=qa_beaten,
        box_mass=box_mass,
        box_rad=box_rad,
        qa_box_mass=qa_mass,
        qa_box_rad=qa_rad,
    )


@dataclass(frozen=True)
class OutputRows:
    """Per-row attention-output error and its bound (dense KV), float64.

    Per query row ``r`` of head ``h``: ``y = sum_t p_t v_t`` (exact keys and values), ``y_hat =
    sum_t p'_t v'_t`` (served). Since ``sum_t (p_t - p'_t) = 0``, for the centre ``c = y_hat``::

        y - y_hat = sum_t (p_t - p'_t)(v_t - c) + sum_t p'_t (v_t - v'_t)
        ||y - y_hat|| <= 2 TV(p, p') max_t ||v_t - c|| + sum_t p'_t ||v_t - v'_t||
                      <= 2 TV * spread + value_term,

    with ``spread = max_t (||v'_t - y_hat|| + W^v_t)`` (``||v_t - c|| <= ||v'_t - c|| + ||v_t - v'_t||``)
    and ``value_term = sum_t p'_t W^v_t``, both runtime-computable from served values and the value
    witnesses ``W^v_t >= ||v_t - v'_t||``. After the output projection, for the row's heads
    concatenated, ``||W_o (Y - Y_hat)|| <= sigma_up * sqrt(sum_h (2 TV_h spread_h + value_h)^2)
    <= sigma_up * (2 TV spread_l2 + value_l2)`` (Minkowski) with ``spread_l2 = sqrt(sum_h spread_h^2)``,
    ``value_l2 = sqrt(sum_h value_h^2)`` and ``sigma_up >= ||W_o||_2``.

    Shapes: ``(B, H, Q)`` for the per-head fields, ``(B, Q)`` for the projected ones.
    """

    err: torch.Tensor
    spread: torch.Tensor
    value_term: torch.Tensor
    bound: torch.Tensor  # 2 min(tv_bound_row, 1) spread + value_term
    spread_l2: torch.Tensor
    value_l2: torch.Tensor
    proj_err: torch.Tensor | None = None
    proj_bound: torch.Tensor | None = None


def output_rows(
    p: torch.Tensor, ps: torch.Tensor, visible: torch.Tensor, v_exact: torch.Tensor, v_served: torch.Tensor,
    w_value: torch.Tensor, tv_bound: torch.Tensor, o_weight: torch.Tensor | None = None,
    sigma_up: float | None = None,
) -> OutputRows:
    """Meter of the attention output (see :class:`OutputRows` for the math).

    Parameters
    ----------
    p, ps:
        ``(B, H, Q, T)`` exact and served attention distributions (0 on hidden keys).
    visible:
        ``(B, H, Q, T)`` keys each row sees.
    v_exact, v_served:
        ``(B, H / g, T, D)`` uncompressed and served values, each KV head read by ``g`` consecutive
        query heads (``g = 1``: one per query head).
    w_value:
        ``(B, H, T)`` value witnesses ``W^v_t = sum_b ||Delta v_{t,b}||``.
    tv_bound:
        ``(B, H, Q)`` the row's TV bound (the tightest of the read forms; clipped at 1 here).
    o_weight, sigma_up:
        The output projection ``(hidden, H * D)`` and an upper bound on its spectral norm; both or
        neither.
    """
    ve, vs = v_exact.to(torch.float64), v_served.to(torch.float64)
    groups = p.shape[1] // vs.shape[1]
    y = grouped_matmul(p, ve)
    y_hat = grouped_matmul(ps, vs)
    diff = y - y_hat
    err = diff.norm(dim=-1)
    # ||v'_t - y_hat||^2 = ||v'_t||^2 - 2 v'_t . y_hat + ||y_hat||^2, plus an allowance for its float64
    # cancellation (a dot product of length D: gamma_{D+2} (||v'||^2 + ||y_hat||^2) covers every term)
    vn2 = (vs * vs).sum(-1)
    vn2 = (vn2.repeat_interleave(groups, dim=1) if groups > 1 else vn2).unsqueeze(2)  # B,H,1,T
    yn2 = (y_hat * y_hat).sum(-1, keepdim=True)  # B,H,Q,1
    d2 = vn2 - 2 * grouped_matmul(y_hat, vs.transpose(-1, -2)) + yn2
    d2 = d2.clamp_min(0) + allowance(vs.shape[-1] + 2) * (vn2 + yn2)
    wv = w_value.to(torch.float64).unsqueeze(2)  # B,H,1,T
    reach = torch.where(visible, d2.sqrt() + wv, torch.zeros_like(d2))
    spread = reach.amax(-1)
    value_term = (ps * wv).sum(-1)
    bound = 2 * tv_bound.clamp(max=1.0) * spread + value_term
    spread_l2 = spread.pow(2).sum(1).sqrt()
    value_l2 = value_term.pow(2).sum(1).sqrt()
    proj_err = proj_bound = None
    if (o_weight is None) != (sigma_up is None):
        raise ValueError("output_rows: give both the output projection and its norm bound, or neither")
    if o_weight is not None:
        b, h, q, d = diff.shape
        flat = diff.permute(0, 2, 1, 3).reshape(b, q, h * d)  # heads concatenated, as the model does
        proj_err = torch.matmul(flat, o_weight.to(torch.float64).T).norm(dim=-1)
        proj_bound = sigma_up * bound.pow(2).sum(1).sqrt()
    return OutputRows(err, spread, value_term, bound, spread_l2, value_l2, proj_err, proj_bound)


BAND_NORM_BYTES = 8
"""Bytes of one stored band norm: the witness keeps ``||x_b - x_hat_b||`` in float64."""


def witness_bytes_per_entry(bands: int) -> int:
    """Bytes of band witness one stored entry carries (one key, or one value, of one KV head):
    ``bands`` float64 residual norms. A key and its value together carry twice this."""
    return bands * BAND_NORM_BYTES


def band_norms(x: torch.Tensor, bands: int) -> torch.Tensor:
    """``||x_b||`` over ``bands`` contiguous bands of the last dimension (float64)."""
    d = x.shape[-1]
    if d % bands:
        raise ValueError(f"{bands} bands do not divide the dimension {d}")
    x64 = x.to(torch.float64)
    return x64.reshape(*x64.shape[:-1], bands, d // bands).norm(dim=-1)


def visibility(mask: torch.Tensor | None, shape: torch.Size) -> torch.Tensor:
    """Boolean ``(B, H, Q, T)`` mask of the keys each row sees (additive float or boolean masks)."""
    if mask is None:
        return torch.ones(shape, dtype=torch.bool)
    if mask.dtype == torch.bool:
        return mask.expand(shape)
    return (mask > torch.finfo(mask.dtype).min / 2).expand(shape)


def read_rows(
    query: torch.Tensor,
    keys_exact: torch.Tensor,
    keys_served: torch.Tensor,
    key_band_norms: torch.Tensor,
    mask: torch.Tensor | None,
    scaling: float,
    groups: int,
) -> ReadRows:
    """Meter of the read operator for one dense-KV layer call.

    Parameters
    ----------
    query:
        ``(B, H, Q, D)`` post-RoPE queries.
    keys_exact, keys_served:
        ``(B, Hkv, T, D)`` uncompressed and served (compressed) keys.
    key_band_norms:
        ``(B, Hkv, T, bands)`` band residual norms recorded at the writes.
    mask:
        Additive mask ``(B, 1 or H, Q, T)`` (0 visible, very negative hidden), boolean, or ``None``.
    scaling:
        Softmax temperature ``scale`` (``head_dim ** -0.5``).
    groups:
        Query heads per KV head.

    Math (per row ``r`` and key ``t``; ``p`` exact, ``p'`` served):
    ``c_t = scale * sum_b ||q_b|| * ||Delta k_{t,b}||``; ``TV = 1/2 sum_t |p_t - p'_t|``;
    plain ``(e^{2 scale ||q|| max_t W_t} - 1)/2``; centred ``tanh(max_t c_t / 2)``;
    e-form ``x + x^2/2`` with ``x = sum_t p'_t (e^{c_t} - 1)``.
    """
    sc = dense_scores(query, keys_exact, keys_served, key_band_norms, scaling, groups)
    return read_rows_from_scores(sc.s_exact, sc.s_served, visibility(mask, sc.s_exact.shape), [sc.component], scaling,
                                 sc.score_err)


@dataclass(frozen=True)
class DenseScores:
    """Exact and served scores of one dense read, its score-error component and float64 error.

    All ``(B, H, Q, T)`` float64 with the scale included, except ``component`` (per-band norms).
    """

    s_exact: torch.Tensor
    s_served: torch.Tensor
    component: ScoreComponent
    score_err: torch.Tensor


def dense_scores(query: torch.Tensor, keys_exact: torch.Tensor, keys_served: torch.Tensor,
                 key_band_norms: torch.Tensor, scaling: float, groups: int) -> DenseScores:
    """``s = scale q k^T`` with uncompressed and with served keys, in float64, keys repeated per group.

    ``query`` is ``(B, H, Q, D)``; ``keys_*`` are ``(B, Hkv, T, D)`` with ``H = Hkv * groups``;
    ``key_band_norms`` ``(B, Hkv, T, bands)`` are the residual band norms recorded at the writes.
    The one computation of dense scores: the dense witness layer's read and :func:`read_rows`.
    """
    bands = key_band_norms.shape[-1]
    q = query.to(torch.float64)
    ke = keys_exact.to(torch.float64)
    ks = keys_served.to(torch.float64)
    s_exact = grouped_matmul(q, ke.transpose(-1, -2)) * scaling
    s_served = grouped_matmul(q, ks.transpose(-1, -2)) * scaling
    comp = ScoreComponent(band_norms(q, bands), key_band_norms.repeat_interleave(groups, dim=1))
    return DenseScores(s_exact, s_served, comp, score_error(q, ks, scaling, groups))


def grouped_matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x_h @ y_{h // g}`` for every query head ``h``, without repeating ``y``: ``x`` ``(B, H, Q, M)``,
    ``y`` ``(B, H / g, M, N)``, returns ``(B, H, Q, N)``.

    The ``g`` query heads of a KV head are stacked as rows of one product (grouped-query
    attention's own layout), so no per-head copy of the cache is made. Each entry is the same
    float64 dot product of length ``M`` as with a repeated ``y``, possibly summed in another order
    (the float allowances of the scores and outputs hold for any order)."""
    b, h, q, m = x.shape
    hk = y.shape[1]
    if h == hk:
        return torch.matmul(x, y)
    return torch.matmul(x.reshape(b, hk, (h // hk) * q, m), y).reshape(b, h, q, y.shape[-1])
