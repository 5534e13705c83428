"""The eviction meter: the bound ``RHO / (1 + RHO)`` on TV(full, pruned attention) and its realized value,
per read row of an evicting cache (``coq/Witprobe/Eviction.v``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


EVICT_MASS_TOL = 1e-9  # |TV(full, pruned) - evicted mass|: equal in exact arithmetic (Eviction.tv_pruned_evicted_mass)


@dataclass
class EvictRows:
    """Per-row eviction readings, ``(B, H, Q)`` float64 unless noted.

    ``tv``: realized ``TV(p_full, p_pruned)``; ``mass``: the evicted mass ``sum_E p_full``
    (equal to ``tv`` in exact arithmetic); ``rho``: ``sum_E e^{U_t} / Z_R``, rounded up;
    ``bound``: ``rho / (1 + rho)`` rounded up; ``evicted``: number of evicted keys;
    ``p_full`` ``(B, H, Q, T)``: the full attention; ``visible_full``: its support.
    """

    tv: torch.Tensor
    mass: torch.Tensor
    rho: torch.Tensor
    bound: torch.Tensor
    evicted: torch.Tensor
    p_full: torch.Tensor
    visible_full: torch.Tensor
    upper_viol: torch.Tensor  # (B, H, Q) bool: an evicted logit above its bound U_t (Cauchy-Schwarz broken)


def evict_rows(inputs) -> EvictRows:  # noqa: ANN001 - ReadScores
    """The eviction bound and the realized TV of full vs pruned attention, per read row.

    With ``R`` the retained support (``inputs.visible``), ``F`` the full causal support and
    ``E = F \\ R``; ``s`` the exact logits (retained keys are served exactly) and ``U_t`` the
    evicted logits' upper bounds from stored band norms (``inputs.evict.upper``)::

        TV(p_full, p_pruned) = Z_E / (Z_R + Z_E) <= X / (Z_R + X) = rho / (1 + rho),
        X = sum_{t in E} e^{U_t},  Z_R = sum_{t in R} e^{s_t},  rho = X / Z_R

    (``Eviction.tv_pruned_le``, ``Eviction.evict_banded_claim``). Computed in log space:
    ``log rho = logsumexp_E(U) - logsumexp_R(s)``, plus an outward allowance for the float64
    error of the retained logits (``max_R score_err``: ``Z_R`` shrinks at most by ``e^{-err}``)
    and of the two log-sum-exps (``4 (T + 2) u`` each); ``bound = sigmoid(log rho)`` rounded up
    by ``4u``. Only the upper bounds ``U`` of evicted keys enter the bound; the exact evicted
    logits enter only the realized TV.
    """
    ev = inputs.evict
    s = inputs.s_exact.to(torch.float64)
    R, F = inputs.visible, ev.visible_full
    E = F & ~R
    neg = torch.full_like(s, -math.inf)
    p_full = torch.softmax(torch.where(F, s, neg), dim=-1)
    p_pruned = torch.softmax(torch.where(R, s, neg), dim=-1)
    tv = 0.5 * (p_full - p_pruned).abs().sum(-1)
    mass = torch.where(E, p_full, torch.zeros_like(p_full)).sum(-1)
    t = s.shape[-1]
    u = 2.0 ** -53
    err = torch.zeros_like(tv)
    if inputs.score_err is not None:
        err = torch.where(R, inputs.score_err.to(torch.float64).expand_as(s), torch.zeros_like(s)).amax(-1)
    log_x = torch.logsumexp(torch.where(E, ev.upper.to(torch.float64), neg), dim=-1)
    log_zr = torch.logsumexp(torch.where(R, s, neg), dim=-1)
    log_rho = log_x - log_zr + err + 8 * (t + 2) * u * (1 + log_x.abs().nan_to_num(0.0, 0.0, 0.0) + log_zr.abs())
    rho = torch.exp(log_rho)
    bound = torch.where(E.any(-1), torch.sigmoid(log_rho) * (1 + 4 * u), torch.zeros_like(tv))
    viol = (E & (s > ev.upper.to(torch.float64))).any(-1)
    return EvictRows(tv, mass, rho, bound.clamp(max=1.0), E.sum(-1).to(torch.float64), p_full, F, viol)
