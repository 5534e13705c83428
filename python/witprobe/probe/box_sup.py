"""The box supremum of the attention TV: the sharpest deterministic bound for what is stored.

Setting (one query row, ``n`` keys)
-----------------------------------
The served scores ``s'`` (what the compressed cache gives) and per-key radii ``c_t >= 0`` with
``|s_t - s'_t| <= c_t`` (the banded score bridge) are known; the exact scores ``s`` are not.
``p' = softmax(s')`` is the served distribution, ``p = softmax(s)`` the exact one. The quantity
bounded is ``sup { TV(softmax s, p') : |s_t - s'_t| <= c_t }``, the supremum over the box
*around the served scores*.

What is exact, and why it is not computed exactly
-------------------------------------------------
With ``d = s - s'``, ``p_t = p'_t e^{d_t} / Z`` and ``Z = sum_t p'_t e^{d_t}``. Since
``TV = max_A (p(A) - p'(A))`` and ``p(A)`` increases in ``d_t`` on ``A`` and decreases off it,
the supremum is ``max_A F(A)`` with ``F(A) = a/(a + b) - p'(A)``, ``a = sum_A p'_t e^{c_t}``,
``b = sum_{A^c} p'_t e^{-c_t}`` (the worst case puts ``+c`` on ``A`` and ``-c`` off it, and the
supremum is attained). :func:`sup_tv_vertices` evaluates this over all ``2^n`` sets (the
reference for small ``n``). No sort order gives the optimal ``A`` in general: with equal radii
``c``, ``F`` depends on ``p'(A)`` alone and is maximal at ``p'(A) = (1 - e^{-c})/(e^c - e^{-c})``,
so the exact supremum is a subset-sum problem (NP-hard); with ``p'`` infinitely divisible its
value is ``tanh(c/2)``, the centred bound. So the meter computes a tight, provable *upper* bound.

The upper bound (theorem, proved here)
--------------------------------------
For ``w = 1/Z`` and every ``lambda`` in ``[0, 1]``, since ``sum_t (p_t - p'_t) = 0``,
``TV = sum_t [lambda (p_t - p'_t)_+ + (1 - lambda) (p'_t - p_t)_+]``, and only one of the two
parts of each term is nonzero, so with ``u_t = e^{c_t} >= e^{d_t} >= v_t = e^{-c_t}``::

    TV <= Psi_lambda(w) = sum_t p'_t max(lambda (u_t w - 1)_+, (1 - lambda)(1 - v_t w)_+).

``Psi_lambda`` is convex in ``w`` (a sum of maxima of positive parts of affine functions), so on
an interval ``[w_a, w_b]`` it is at most ``max(Psi_lambda(w_a), Psi_lambda(w_b))``; and
``1/Z`` lies in ``[1/Z_hi, 1/Z_lo]``, ``Z_hi = sum p' u``, ``Z_lo = sum p' v``. Cover that range
with ``K`` intervals, choose one ``lambda_k`` per interval (any choice is sound), and

    TV <= B = max_k max(Psi_{lambda_k}(w_k), Psi_{lambda_k}(w_{k+1})).

``Psi`` is linear in ``p'`` with nonnegative coefficients and nondecreasing in every ``c_t``, so
keys may be pooled into buckets with the bucket's mass and its *largest* radius (an upper bound
of every member's term). As ``K`` grows and the buckets refine, ``B`` tends to
``max_w min_lambda Psi_lambda(w)``, which by LP duality is the supremum of ``F`` over
*fractional* sets (each key's mass split between ``A`` and its complement): at most one key's
granularity above the exact supremum, and never above ``tanh(max c / 2)`` in the limit.
``lambda_k`` minimizes ``Psi_lambda`` at the interval's geometric midpoint (a weighted-median
search over the buckets' breakpoints ``beta/(alpha + beta)``).

Float64 and its margin
----------------------
Every quantity is float64. The radii are inflated by ``1 + RADIUS_MARGIN`` (``2**-30``, the
outward margin that derivation proves dominates the float64 error of every ``c_t``), the ``w``
range is widened by ``1 +- RANGE_MARGIN`` (``2**-20``), and the computed ``B`` is returned as
``B (1 + 2 (G + T + 8) u) + 32 u (1 + Z_hi/Z_lo)`` with ``u = 2**-53``: the sums of
nonnegative terms err by at most ``(G + T + 4) u`` relatively; each ``(u_t w - 1)`` and
``(1 - v_t w)`` carries an absolute error of at most ``8 u (1 + u_t w)`` from ``exp`` (assumption
A1 of ``docs/TRUST_BOUNDARY.md``, relative ``4u``), the product and the subtraction, and
``sum_t p'_t u_t w <= Z_hi / Z_lo (1 + 2**-20)``; a factor 2 covers the rest. Where the grid is coarse
against a very wide ``Z`` range (large radii) the result is capped by ``tanh(max c / 2)``: the
centred theorem bounds the same supremum (``tanh`` within ``16 u``). What is left, that
the float64 ``p'`` and served scores are not the real ones, is a relative error of the centre
that derivation bounds with :func:`witprobe.calculus.float_error.boxsup_rel` and multiplies in
(``Psi`` is linear in ``p'``; the widened ``w`` range covers the same relative error of ``Z``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from witprobe.probe.errors import MeterInputError

U64 = 2.0 ** -53
RADIUS_MARGIN = 2.0 ** -30
RANGE_MARGIN = 2.0 ** -20
LAMBDA_STEPS = 10
Z_LO_MIN = 1e-290  # below it the grid's top end 1/Z_lo is not representable: the row takes the centred cap


@dataclass(frozen=True)
class BoxSupSpec:
    """Resolution of the box-sup bound (any values are sound; larger ones are tighter and slower).

    Parameters
    ----------
    intervals:
        ``K``, the intervals covering ``w = 1/Z`` (geometric spacing).
    buckets:
        ``G``, the radius buckets keys are pooled into (geometric spacing ``ratio`` down from the
        row's largest radius; the last bucket takes every smaller radius).
    ratio:
        Ratio of consecutive bucket edges (``> 1``).
    heavy:
        Keys of largest served probability whose side is enumerated (``2**heavy`` cases). Must be 1:
        the box theorem's certificate (``box_grid`` in ``coq/Witprobe/BoxSup.v``) fixes the side of
        exactly one key ``h``, both sides, so the meter computes exactly its hypothesis.
    """

    intervals: int = 16
    buckets: int = 64
    ratio: float = 1.1
    heavy: int = 1

    def __post_init__(self) -> None:
        for name in ("intervals", "buckets"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1 or v > 1024:
                raise ValueError(f"box-sup: {name} must be a positive integer, got {v!r}")
        if self.heavy != 1 or isinstance(self.heavy, bool):
            raise ValueError(f"box-sup: heavy must be 1 (the box theorem, coq/Witprobe/BoxSup.v, fixes the side of "
                             f"exactly one key), got {self.heavy!r}")
        if not isinstance(self.ratio, float) or not self.ratio > 1.0 or math.isinf(self.ratio):
            raise ValueError(f"box-sup: ratio must be a float > 1, got {self.ratio!r}")


DEFAULT_SPEC = BoxSupSpec()


def _buckets(p: torch.Tensor, c: torch.Tensor, spec: BoxSupSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """Pool keys into radius buckets: masses ``(R, G)`` and bucket radii (the members' maximum).

    The bucket index only decides the pooling; soundness rests on the radius being the maximum
    of the members' radii, which ``scatter_reduce`` computes exactly.
    """
    logc = torch.log(c)  # -inf where c = 0: those keys go to the last bucket
    pos = (logc.amax(-1, keepdim=True) - logc) * (1.0 / math.log(spec.ratio))
    idx = torch.where(c > 0, pos.clamp(0, spec.buckets - 1), spec.buckets - 1).to(torch.int64)
    shape = (*c.shape[:-1], spec.buckets)
    mass = torch.zeros(shape, dtype=torch.float64, device=c.device).scatter_add_(-1, idx, p)
    rad = torch.zeros(shape, dtype=torch.float64, device=c.device).scatter_reduce_(-1, idx, c, "amax")
    return mass, rad


def _psi_unused(mass: torch.Tensor, up: torch.Tensor, vp: torch.Tensor, w: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """``Psi_lambda(w) = sum_j m_j max(lambda (U_j w - 1)_+, (1 - lambda)(1 - V_j w)_+)``.

    ``mass, up, vp``: ``(R, 1, G)``; ``w, lam``: ``(R, K, 1)``; returns ``(R, K)``.
    """
    a = (up * w - 1).clamp_min(0)
    b = (1 - vp * w).clamp_min(0)
    return (mass * torch.maximum(lam * a, (1 - lam) * b)).sum(-1)


def _row_sum(x: torch.Tensor, portable: bool) -> torch.Tensor:
    """``sum`` over the last axis, keeping it; ``portable``: summed in index order (a sequential
    scan), so the result does not depend on the CPU's vector width or the thread count."""
    return x.cumsum(-1)[..., -1:] if portable else x.sum(-1, keepdim=True)


def _best_lambda(a: torch.Tensor, b: torch.Tensor, steps: int = LAMBDA_STEPS, portable: bool = False) -> torch.Tensor:
    """Approximate minimizer of the convex ``lambda -> sum_j max(lambda a_j, (1 - lambda) b_j)``.

    ``a, b``: ``(..., G)`` nonnegative (mass times the positive parts). Bisection on the sign of
    the right derivative ``sum_{brk_j <= lambda} a_j - sum_{brk_j > lambda} b_j`` with breakpoints
    ``brk_j = b_j/(a_j + b_j)``, then snapped down to the largest breakpoint at or below the
    bracket's upper end; returns ``(..., 1)``. Any value in ``[0, 1]`` is sound. ``portable``: the
    sums in index order (:func:`_row_sum`). (A sort-based weighted median gives the exact
    minimizer in a fixed number of passes, but on the CPU it was slower than these ten steps:
    605 us against 421 us per call on ``(9, 2, 16, 65)``, one thread, best of 15 interleaved rounds,
    measured ad hoc in December 2026; torch's sort of 65 float64 per row costs more than the
    passes it saves.)
    """
    s = a + b
    brk = torch.where(s > 0, b / s.clamp_min(1e-300), 0.0)
    need = _row_sum(b, portable)
    lo = torch.zeros_like(need)
    hi = torch.ones_like(need)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        up = _row_sum(s * (brk <= mid), portable) >= need
        hi = torch.where(up, mid, hi)
        lo = torch.where(up, lo, mid)
    # the largest breakpoint <= hi is at least as good as hi (the slope on (it, hi] is >= 0); an empty
    # bucket (a = b = 0) is no breakpoint, so the result does not depend on empty buckets
    snap = torch.where((brk <= hi) & (s > 0), brk, -1.0).amax(-1, keepdim=True)
    return torch.where(snap >= 0, snap, hi)


def _terms(mass: torch.Tensor, up: torch.Tensor, vp: torch.Tensor, w: torch.Tensor,
           side_a: torch.Tensor, side_b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``a_j = m_j (U_j w - 1)_+`` and ``b_j = m_j (1 - V_j w)_+``, zeroed where a case fixes the side.

    ``mass, up, vp``: ``(R, 1, 1, J)``; ``w``: ``(R, 1, K, 1)``; ``side_*``: ``(S, 1, J)``;
    returns ``(R, S, K, J)``.
    """
    return mass * (up * w - 1).clamp_min(0) * side_a, mass * (1 - vp * w).clamp_min(0) * side_b


def box_pool(p: torch.Tensor, c: torch.Tensor, spec: BoxSupSpec = DEFAULT_SPEC
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The pooled rows the box bound is computed from: what the kernel's box checker reads.

    ``p``, ``c``: ``(R, T)``. Returns ``mass``, ``rad`` ``(R, J)`` with ``J = G + heavy``: the
    buckets' served masses and radii (the members' maximum of ``c_t (1 + RADIUS_MARGIN)``), the
    last ``heavy`` columns being the heaviest keys (their own mass and radius), ``p2``, ``c2`` the
    inflated inputs, rows flattened.
    """
    t = p.shape[-1]
    p2 = p.to(torch.float64).reshape(-1, t)
    c2 = (c.to(torch.float64) * (1 + RADIUS_MARGIN)).reshape(-1, t)
    m = min(spec.heavy, t)
    hm, hidx = torch.topk(p2, m, dim=-1) if m else (p2[:, :0], None)
    hr = torch.gather(c2, -1, hidx) if m else c2[:, :0]
    pb, cb = p2, c2
    if m:
        keep = torch.ones_like(p2, dtype=torch.bool).scatter_(-1, hidx, False)
        pb, cb = torch.where(keep, p2, 0.0), torch.where(keep, c2, 0.0)
    mass, rad = _buckets(pb, cb, spec)
    return torch.cat([mass, hm], -1), torch.cat([rad, hr], -1), p2, c2


def _check_inputs(p: torch.Tensor, c: torch.Tensor) -> None:
    """Refuse radii that are NaN, infinite or negative and probabilities that are NaN (:class:`MeterInputError`)."""
    for bad, what in ((torch.isnan(c), "a NaN radius"), (torch.isinf(c), "an infinite radius"),
                      (c < 0, "a negative radius"), (torch.isnan(p), "a NaN probability")):
        if bool(bad.any()):
            at = tuple(int(i) for i in bad.nonzero()[0])
            value = (c if "radius" in what else p)[at].item()
            raise MeterInputError(f"box_sup_bound: {what} ({value}) at index {at}; the box bound needs finite radii "
                                  "c_t >= 0 and probabilities that are numbers")


def box_sup_bound(p: torch.Tensor, c: torch.Tensor, spec: BoxSupSpec = DEFAULT_SPEC) -> torch.Tensor:
    """The box bound per row (:func:`box_sup_rows` without the pooled rows)."""
    return box_sup_rows(p, c, spec)[0]


def box_sup_rows(p: torch.Tensor, c: torch.Tensor, spec: BoxSupSpec = DEFAULT_SPEC
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Upper bound of ``sup TV(softmax s, p')`` over ``|s_t - s'_t| <= c_t``, per row.

    The ``spec.heavy`` keys of largest ``p'_t`` keep their own terms, and each of the ``2**heavy``
    cases fixes on which side of ``p'_t`` their exact probability lies (so a dominant key, an
    attention sink, is never split between the two sides); the other keys are pooled into radius
    buckets (:func:`box_pool`). The bound is the maximum over the cases.

    Parameters
    ----------
    p:
        ``(..., T)`` served distribution ``p'`` (float64; 0 on keys a row does not see).
    c:
        ``(..., T)`` radii ``c_t >= 0`` (0 on keys a row does not see).

    Returns
    -------
    ``(...)`` float64 bounds, with the float64 allowance of the module docstring included, and
    the pooled rows ``mass``, ``rad`` ``(..., J)`` of :func:`box_pool` they were computed from.

    Raises
    ------
    MeterInputError
        A radius that is NaN, infinite or negative, or a probability that is NaN.
    """
    if p.shape != c.shape:
        raise ValueError(f"box_sup_bound: p {tuple(p.shape)} and c {tuple(c.shape)} differ in shape")
    _check_inputs(p, c)
    lead, t = p.shape[:-1], p.shape[-1]
    mass, rad, p2, c2 = box_pool(p, c, spec)
    centred = torch.tanh(c2.amax(-1) / 2) * (1 + 16 * U64)  # the centred theorem bounds the same supremum
    h = box_hints(mass, rad, spec.buckets, spec.intervals)
    bound = pooled_bound(mass, h)
    allow = bound * (2 * (mass.shape[-1] + t + 8) * U64) + 32 * U64 * (1 + h.z_hi[:, 0] / h.z_lo[:, 0])
    usable = h.covered & torch.isfinite(bound + allow)  # an uncovered row's float64 bound may be NaN: the cap alone
    out = torch.where(usable, torch.minimum(bound + allow, centred), centred).reshape(lead)
    return out, mass.reshape(*lead, -1), rad.reshape(*lead, -1)


def pooled_bound(mass: torch.Tensor, h: "BoxHints") -> torch.Tensor:
    """``max`` over cases, intervals and both ends of ``Psi_lambda(w)`` for pooled rows ``(R, J)``
    with their hints: the box bound in float64, before the allowance (``(R,)``)."""
    m4, u4, v4 = mass[:, None, None, :], h.up[:, None, None, :], h.vp[:, None, None, :]
    wa, wb = h.grid[:, None, :-1, None], h.grid[:, None, 1:, None]  # (R, 1, K, 1)
    psi = [torch.maximum(h.lam * ta, (1 - h.lam) * tb).sum(-1)
           for ta, tb in (_terms(m4, u4, v4, w, h.side_a, h.side_b) for w in (wa, wb))]
    return torch.maximum(*psi).amax(dim=(-1, -2))


@dataclass(frozen=True)
class BoxHints:
    """The untrusted hints of the box certificate of pooled rows, and the sums they are built from.

    ``grid`` ``(R, K+1)``: ``w`` values from ``(1 - RANGE_MARGIN)/Z_hi`` to ``(1 + RANGE_MARGIN)/Z_lo``
    (geometric); ``lam`` ``(R, S, K, 1)``: one ``lambda`` per case and interval, case ``s`` fixing the
    heavy key's side (``s = 1``: its exact probability is at least the served one); ``covered``
    ``(R,)``: ``Z_lo`` is representable (else only the centred cap applies). The kernel's checker
    (``coq/Witprobe/BoxCheck.v``) verifies any such hints; these make the bound tight.
    """

    grid: torch.Tensor
    lam: torch.Tensor
    covered: torch.Tensor
    up: torch.Tensor
    vp: torch.Tensor
    z_hi: torch.Tensor
    z_lo: torch.Tensor
    side_a: torch.Tensor
    side_b: torch.Tensor


def _portable_exp(x: torch.Tensor) -> torch.Tensor:
    """``exp`` of each float64 by the C library's scalar ``exp`` (Python's :func:`math.exp`).

    torch's vectorized ``exp`` computes the elements of a vector body with SLEEF and those of the
    remainder with the scalar function, and where the body ends depends on the CPU's vector width
    and on how the work is split between threads; the two differ in the last place now and then.
    Overflow gives ``inf`` (as torch does)."""
    def one(v: float) -> float:
        try:
            return math.exp(v)
        except OverflowError:
            return math.inf
    return torch.tensor([one(v) for v in x.reshape(-1).tolist()], dtype=torch.float64).reshape(x.shape)


def geometric_grid(w_lo: torch.Tensor, w_hi: torch.Tensor, intervals: int, portable: bool = False) -> torch.Tensor:
    """``(R, K+1)``: ``w_lo (w_hi / w_lo)^(k/K)``, ``k = 0..K``, with the end points exactly ``w_lo``
    and ``w_hi`` (``(R, 1)`` each). ``portable``: each power by the C library's scalar ``pow``
    (:func:`math.pow`), the same on every CPU (torch's vectorized ``pow`` is not: see
    :func:`_portable_exp`). Any grid whose ends bracket ``1/Z`` is sound; the spacing only makes
    the bound tight."""
    frac = torch.arange(intervals + 1, dtype=torch.float64, device=w_lo.device) / intervals
    ratio = w_hi / w_lo
    if portable:
        fr = frac.tolist()
        powers = torch.tensor([[math.pow(r, f) for f in fr] for r in ratio[:, 0].tolist()], dtype=torch.float64)
        grid = w_lo * powers.reshape(ratio.shape[0], intervals + 1)
    else:
        grid = w_lo * ratio ** frac
    grid[:, 0], grid[:, -1] = w_lo[:, 0], w_hi[:, 0]  # the end points exactly
    return grid


def box_hints(mass: torch.Tensor, rad: torch.Tensor, buckets: int, intervals: int,
              ends: tuple[torch.Tensor, torch.Tensor] | None = None, portable: bool = False) -> BoxHints:
    """Grid and lambdas for pooled rows ``mass``, ``rad`` ``(R, J)`` whose last ``J - buckets``
    columns are heavy keys (see :func:`box_pool`); ``ends`` ``(R, 1)`` each, when given, are the
    grid's end points (else ``(1 -+ RANGE_MARGIN)`` over ``Z_hi`` and ``Z_lo``).

    ``portable``: every step gives the same bits on every CPU and thread count: ``exp`` and ``pow``
    by the C library's scalar functions, sums in index order, and otherwise only IEEE operations
    (``+ - * /``, ``sqrt``, comparisons). The kernel's certificate (``run.v``) is rendered this way,
    so ``certify check`` re-renders it byte for byte on another machine (the meter's own calls,
    on the hot path, are not portable; their hints may differ in the last place, and any hints
    are sound)."""
    m = mass.shape[-1] - buckets
    if portable:
        up, vp = _portable_exp(rad), _portable_exp(-rad)
    else:
        up, vp = torch.exp(rad), torch.exp(-rad)
    z_hi = _row_sum(mass * up, portable)
    z_lo_raw = _row_sum(mass * vp, portable)
    # else 1/Z_lo is out of float64 range, or e^{c} overflowed Z_hi: the grid cannot reach the range
    covered = (z_lo_raw[:, 0] > Z_LO_MIN) & torch.isfinite(z_hi[:, 0])
    z_lo = z_lo_raw.clamp_min(Z_LO_MIN)
    w_lo, w_hi = ((1 - RANGE_MARGIN) / z_hi, (1 + RANGE_MARGIN) / z_lo) if ends is None else ends
    grid = geometric_grid(w_lo, w_hi, intervals, portable)  # (R, K+1)
    wa, wb = grid[:, None, :-1, None], grid[:, None, 1:, None]  # (R, 1, K, 1)
    cases = torch.tensor(list(itertools.product((0.0, 1.0), repeat=m)), dtype=torch.float64,
                         device=mass.device).reshape(2**m, m)  # (S, m): 1 = the key's exact p is >= p'
    ones = torch.ones(cases.shape[0], buckets, dtype=torch.float64, device=mass.device)
    side_a = torch.cat([ones, cases], -1)[:, None, :]
    side_b = torch.cat([ones, 1 - cases], -1)[:, None, :]
    m4, u4, v4 = mass[:, None, None, :], up[:, None, None, :], vp[:, None, None, :]
    lam = _best_lambda(*_terms(m4, u4, v4, (wa * wb).sqrt(), side_a, side_b), portable=portable)  # (R, S, K, 1)
    return BoxHints(grid, lam, covered, up, vp, z_hi, z_lo, side_a, side_b)


def sup_tv_vertices(p: list[float], c: list[float]) -> float:
    """The exact supremum ``max_A a/(a + b) - p'(A)`` over all ``2^n`` sets (reference, ``n <= 20``).

    Float64 (``math.fsum``); its rounding is far below the tolerances of the tests that use it.
    """
    n = len(p)
    if n != len(c) or n > 20:
        raise ValueError("sup_tv_vertices: p and c must have the same length, at most 20")
    up = [pi * math.exp(ci) for pi, ci in zip(p, c)]
    vp = [pi * math.exp(-ci) for pi, ci in zip(p, c)]
    best = 0.0
    for signs in itertools.product((False, True), repeat=n):
        a = math.fsum(x for x, s in zip(up, signs) if s)
        b = math.fsum(x for x, s in zip(vp, signs) if not s)
        if a + b > 0:
            best = max(best, a / (a + b) - math.fsum(x for x, s in zip(p, signs) if s))
    return best
