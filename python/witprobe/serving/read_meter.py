"""The live read meter: a per-row attention bound on the serving engine, enforcement, and a kernel audit.

The ledger (:mod:`witprobe.serving.attach`) sees every write of the paged cache, with the model's
exact key and value states ``x`` and the served (compressed, then stored) states ``x'``. This
module keeps, per layer, KV head and ledger slot, the **witness** of each key entry: the band
norms ``W_{t,b} = ||x_{t,b} - x'_{t,b}||`` (float64, rounded up), a simple norm measured at the
write. At every attention read it then computes, with no reference model:

Live bound (per query row ``r`` of head ``h``, shapes ``(H, Q)`` per request)
    ``s'_t = scale q . k'_t`` (float64 over the served keys the kernel read), ``p' = softmax(s')``
    over the keys the engine's mask shows the row, radii
    ``c_t = scale sum_b ||q_b|| W_{t,b} + gamma_{D+1} scale ||q|| ||k'_t||`` (banded
    Cauchy-Schwarz plus the float64 error of ``s'``), and the box supremum of
    :mod:`witprobe.probe.box_sup` over ``|s_t - s'_t| <= c_t``, capped by the centred bound
    ``tanh(max_t c_t / 2)``. It bounds ``TV(softmax(s), softmax(s'))`` of the read operator:
    how far the served attention distribution of this row is from the one the uncompressed keys
    give the same query. It is a float64 evaluation of a proved form, **not kernel-checked**: its
    tier is ``empirical`` (only ``certify run``'s Coq-checked claims are ``certified``).

Enforce mode (``tau``)
    A row whose bound exceeds ``tau`` is recomputed for that head from the exact keys and values
    (kept in a side pool, in the model's dtype, ``2 * L * Hkv * slots * D`` numbers: its size is
    :attr:`LiveReadMeter.side_pool_bytes`) and its output replaces the kernel's. Every served row
    is then within ``tau`` in TV of exact (by its bound) or exact.

Realized TV (a reading, only with the exact side pool)
    ``TV(softmax(s), p')`` with ``s`` from the exact keys; a row whose realized TV exceeds its bound
    is counted ``bound_beaten`` (must stay 0).

Kernel audit (``audit_rate``)
    A Bernoulli sample of (row, head) pairs: the attention output the engine's kernel returned is
    compared with a float64 recomputation **from the same inputs** the kernel got (query, served
    keys and values, mask, scale). The tolerance is :func:`kernel_allowance`, the float-error
    allowance of an attention computed in the kernel's precision (written out there); a
    difference over it is an alert naming the layer, head and position. Compression error is not
    the audit's business (the live bound covers it), so the audit sees kernel faults far smaller
    than the compression itself.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from witprobe.calculus.float_error import U64, allowance
from witprobe.probe.box_sup import BoxSupSpec, box_sup_bound
from witprobe.probe.meters import band_norms, grouped_matmul, score_error

#: The live meter's box resolution: 8 intervals, 16 buckets (any resolution is sound). On the box
#: evaluations of a served SmolLM2 run (``bench/live_box_resolution.py``) it takes 0.23x the time of
#: certify run's default 16 x 64 and 0.74x that of 8 x 32, for a median row bound 2.96 % above 16 x 64's
#: (8 x 32: 2.79 %; rows here seldom fill more than 16 radius buckets at ratio 1.1).
LIVE_BOX = BoxSupSpec(intervals=8, buckets=16)
#: Rows the witness and side-pool tables start with (they double when more slots are written).
INITIAL_ROWS = 512
#: Upper edges of the bound histogram (TV units), the last bucket is ``+Inf``.
BOUND_BUCKETS = (1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0)
#: Witness norms are rounded up by this relative factor: a float64 difference of two float32 numbers
#: is exact, and a norm of width ``D <= 2**16`` errs by less than ``(D / 2 + 2) u`` relatively.
WITNESS_UP = 1 + 2.0 ** -30
#: Assumption of the audit's allowance: the kernel's ``exp`` is within 32 ulp (PyTorch's vectorized CPU
#: ``exp_u20`` documents 20, CUDA's ``__expf`` 2 + 1.16 |x| ulp for |x| < 88 after range reduction).
EXP_ULP = 32


@contextmanager
def one_intra_op_thread():
    """Run the block with torch's intra-op parallelism at one thread, then restore it.

    The meter's float64 work is many mid-sized elementwise operations (``(rows, cases, intervals,
    buckets)`` of tens of thousands of elements). Inside a serving run on 2 CPU cores, splitting
    them over 2 threads made the box evaluations 2.4x slower (6.2 s against 2.55 s over one run's
    1,020 calls, SmolLM2, 16 requests), while the model itself ran as fast at 1 thread as at 2.
    """
    n = torch.get_num_threads()
    if n == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def _grown(t: torch.Tensor, rows: int) -> torch.Tensor:
    """``t`` ``(L, H, R, X)`` with ``rows >= R`` rows along dimension 2 (the new ones zero)."""
    out = torch.zeros((t.shape[0], t.shape[1], rows, t.shape[3]), dtype=t.dtype)
    out[:, :, :t.shape[2]] = t
    return out


def _gamma(k: int, u: float) -> float:
    return k * u / (1 - k * u)


def kernel_allowance(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: torch.Tensor, visible: torch.Tensor,
                     scaling: float, u: float) -> torch.Tensor:
    """Per-coordinate tolerance of an attention kernel's output, ``(..., Q, D)``, float64.

    ``q`` ``(..., Q, D)``, ``k``/``v`` ``(..., T, D)`` (float64 copies of the kernel's inputs, KV
    heads already matched to the query heads), ``p`` ``(..., Q, T)`` the float64 softmax of the
    float64 scores over the ``visible`` keys, ``u`` the unit roundoff of the kernel's precision.

    Model: the kernel computes ``s_t = fl(fl(q . k_t) * scale)`` (error at most
    ``gamma_{D+1} scale ||q|| ||k_t||``, any order, FMA or not), subtracts the row maximum (error
    at most ``u |s_t - m| <= 2 u max|s|``), exponentiates (``EXP_ULP`` ulp), sums ``T`` terms and
    divides, in a float32 softmax (transformers' eager and paged-eager paths); then
    ``y_d = fl(sum_t p_t v_{t,d})`` in the kernel's precision (``gamma_T``). So each computed
    weight is ``p_t (1 + theta_t)`` with ``|theta_t| <= rho = exp(2 e_s)(1 + 2 gamma_{T+EXP_ULP+4}) - 1``,
    ``e_s`` the largest score error, and

        ``|y^_d - y_d| <= (rho + gamma_T (1 + rho)) sum_t p_t |v_{t,d}|``,

    inflated by ``1 + 2**-20`` for the float64 reference, plus ``T * 2**-126 max_t |v_{t,d}|`` for
    weights that underflow in float32.
    """
    d = q.shape[-1]
    t = int(visible.sum(-1).max().item()) if visible.numel() else 0
    u32 = 2.0 ** -24
    us = max(u, u32)  # the softmax runs in float32 at least
    qn = q.norm(dim=-1)  # (..., Q)
    kn = torch.where(visible, k.norm(dim=-1).unsqueeze(-2), torch.zeros((), dtype=torch.float64)).amax(-1)
    s_abs = torch.where(visible, (grouped_scores(q, k) * scaling).abs(), torch.zeros((), dtype=torch.float64)).amax(-1)
    e_s = _gamma(d + 1, u) * abs(scaling) * qn * kn + 2 * us * s_abs
    rho = torch.exp(2 * e_s) * (1 + 2 * _gamma(t + EXP_ULP + 4, us)) - 1
    mag = torch.matmul(p, v.abs())  # sum_t p_t |v_{t,d}|
    g = _gamma(max(t, 1), u)
    floor = t * 2.0 ** -126 * v.abs().amax(-2, keepdim=True)
    return (rho + g * (1 + rho)).unsqueeze(-1) * mag * (1 + 2.0 ** -20) + floor


def grouped_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``q k^T`` for matched heads (``(..., Q, D) x (..., T, D) -> (..., Q, T)``)."""
    return torch.matmul(q, k.transpose(-1, -2))


@dataclass
class RequestAttention:
    """One request's live attention record, per metered layer (arrays of length ``L``)."""

    layers: list[int]
    bound_max: np.ndarray
    rows: np.ndarray
    over_tau: np.ndarray
    enforced: np.ndarray
    realized_max: np.ndarray
    beaten: np.ndarray
    audited: int = 0
    mismatches: int = 0
    spent: float = 0.0  # the summed live bounds of the rows served compressed (request_budget)
    bound_sum: float = 0.0  # the summed live bounds of every row read, enforced or not (what no budget would spend)
    exhausted: bool = False  # the budget would have been exceeded: every later read is served exact

    @classmethod
    def empty(cls, layers: list[int]) -> "RequestAttention":
        n = len(layers)
        return cls(layers, np.full(n, -1.0), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
                   np.full(n, -1.0), np.zeros(n, np.int64))

    def record(self, tau: float | None, exact_kept: bool, budget: float | None = None) -> dict[str, Any]:
        """The journal's and the verdict's ``attention`` body (JSON; ``None`` for a layer not read yet)."""
        rows = int(self.rows.sum())
        enf = int(self.enforced.sum())
        seen = self.rows > 0
        body: dict[str, Any] = {
            "form": "box supremum capped by centred, float64 evaluation (live; not kernel-checked)",
            "tier": "empirical",
            "layers": self.layers,
            "bound_max_per_layer": [float(b) if s else None for b, s in zip(self.bound_max, seen)],
            "bound_max": float(self.bound_max[seen].max()) if seen.any() else None,
            "rows": rows,
            "tau": tau,
            "rows_over_tau": int(self.over_tau.sum()),
            "enforced_rows": enf,
            "fallback_rate": enf / rows if rows else 0.0,
            "bound_sum": self.bound_sum,
            "audit": {"rows": self.audited, "mismatches": self.mismatches},
        }
        if budget is not None:
            body["budget"] = {"limit": budget, "spent": self.spent, "exhausted": self.exhausted}
        if exact_kept:
            body["realized_tv_max_per_layer"] = [float(b) if s else None for b, s in zip(self.realized_max, seen)]
            body["bound_beaten"] = int(self.beaten.sum())
        # the request's attention is fine: no audit alert, no bound beaten, every row over tau served exact
        # (with a budget, rows under tau are enforced too once it is exhausted)
        served_over_tau = (body["rows_over_tau"] > body["enforced_rows"] if budget is not None
                           else body["rows_over_tau"] != body["enforced_rows"])
        body["ok"] = bool(self.mismatches == 0 and body.get("bound_beaten", 0) == 0 and not served_over_tau
                          and (budget is None or self.spent <= budget))
        return body


@dataclass
class ReadSpan:
    """One request's part of a paged attention call: query rows ``q0:q1`` of the packed query, key
    columns ``k0:k1`` of the read-back keys, their ledger ``slots`` and the request's ``past``."""

    rid: str
    q0: int
    q1: int
    k0: int
    k1: int
    slots: np.ndarray
    past: int


@dataclass
class ReadOutcome:
    """What one attention call produced: the (possibly enforced) output and the audit alerts."""

    output: torch.Tensor
    alerts: list[dict[str, Any]] = field(default_factory=list)


class LiveReadMeter:
    """Witness tables and per-request attention records of one engine (see the module docstring).

    ``layers``: the engine's layer indices in order; ``metered``: the layer indices to meter (all by
    default); ``heads``/``dim``: KV heads and head dimension; ``n_slots``: ledger slots per layer.
    """

    def __init__(self, layers: list[int], metered: tuple[int, ...] | None, heads: int, dim: int, n_slots: int, bands: int,
                 tau: float | None, audit_rate: float, keep_exact: bool, seed: int, dtype: torch.dtype,
                 budget: float | None = None) -> None:
        self.layers = list(layers)
        self.metered = [l for l in self.layers if metered is None or l in metered]
        self.mpos = {l: i for i, l in enumerate(self.metered)}
        self.heads, self.dim, self.bands = heads, dim, bands
        self.tau = tau
        self.audit_rate = audit_rate
        self.budget = budget
        self.keep_exact = keep_exact or tau is not None or budget is not None
        n = len(self.metered)
        # the ledger's slot numbers are sparse (a block's number runs over every layer's pages): the tables
        # hold one row per slot ever written, in order of first write, and grow by doubling
        self.row_of = np.full(n_slots, -1, np.int64)
        self.n_rows = 0
        cap = INITIAL_ROWS
        self.witness = torch.zeros((n, heads, cap, bands), dtype=torch.float64)
        self.exact = None
        if self.keep_exact:
            self.exact = {f: torch.zeros((n, heads, cap, dim), dtype=dtype) for f in ("key", "value")}
        self.rng = np.random.default_rng(seed)
        self.requests: dict[str, RequestAttention] = {}
        self.hist = np.zeros((n, len(BOUND_BUCKETS) + 1), np.int64)  # per metered layer, non-cumulative
        self.hist_sum = np.zeros(n)
        self.totals = {"rows": 0, "rows_over_tau": 0, "rows_enforced": 0, "audit_rows": 0, "audit_mismatches": 0,
                       "bound_beaten": 0, "requests_over_tau": 0, "requests_budget_exhausted": 0}
        self.mismatch_by_layer = np.zeros(n, np.int64)
        self.audit_worst_ratio = 0.0  # largest |kernel - float64| / allowance seen (a reading: < 1 when clean)

    def _rows(self, slots: np.ndarray) -> torch.Tensor:
        """Table rows of ledger ``slots`` (any shape); a slot seen for the first time gets the next row
        (a slot read before any write reads a zero witness, and the ledger reports the read)."""
        new = np.unique(slots[self.row_of[slots] < 0])
        if new.size:
            self.row_of[new] = np.arange(self.n_rows, self.n_rows + new.size)
            self.n_rows += int(new.size)
            cap = self.witness.shape[2]
            if self.n_rows > cap:
                while cap < self.n_rows:
                    cap *= 2
                self.witness = _grown(self.witness, cap)
                if self.exact is not None:
                    self.exact = {f: _grown(t, cap) for f, t in self.exact.items()}
        return torch.from_numpy(self.row_of[slots])

    @property
    def side_pool_bytes(self) -> int:
        """Bytes of the exact side pool (0 without it) and of the witness table."""
        ex = 0 if self.exact is None else sum(t.numel() * t.element_size() for t in self.exact.values())
        return ex

    @property
    def witness_bytes(self) -> int:
        return self.witness.numel() * self.witness.element_size()

    # --- the write path ----------------------------------------------------------------------------
    def on_write(self, layer: int, slots: np.ndarray, key: torch.Tensor, key_served: torch.Tensor,
                 value: torch.Tensor) -> None:
        """Record the witnesses of one layer's new entries: ``key``/``key_served``/``value`` ``[1, H, N, D]``
        (the model's states and what the engine stores), ``slots`` ``(N,)`` ledger slots."""
        li = self.mpos.get(layer)
        if li is None:
            return
        sl = self._rows(np.asarray(slots, np.int64))
        diff = key[0].to(torch.float64) - key_served[0].to(torch.float64)  # (H, N, D), exact for float32 inputs
        self.witness[li][:, sl] = band_norms(diff, self.bands) * WITNESS_UP
        if self.exact is not None:
            self.exact["key"][li][:, sl] = key[0].to(self.exact["key"].dtype)
            self.exact["value"][li][:, sl] = value[0].to(self.exact["value"].dtype)

    # --- the read path -----------------------------------------------------------------------------
    def on_read(self, layer: int, spans: list[ReadSpan], query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None, scaling: float, output: torch.Tensor) -> ReadOutcome:
        """Meter one paged attention call: ``query`` ``[1, H, Qtot, D]``, ``key``/``value`` ``[1, Hkv, Ktot, D]``
        (what the kernel read), ``mask`` ``[1, 1, Qtot, Ktot]`` additive or boolean, ``output``
        ``[1, Qtot, H, D]`` (the kernel's). Returns the output to serve and the audit alerts.

        The decoding requests of the call (one query row each) are metered together: their keys are
        gathered into padded ``(S, H, 1, Tm)`` tensors, padding invisible, so one box evaluation
        serves them all; a request with several rows (a prefill chunk) is metered alone, so that no
        row is padded."""
        li = self.mpos.get(layer)
        out = ReadOutcome(output)
        spans = [sp for sp in spans if sp.q1 > sp.q0]
        if li is None or not spans:
            return out
        decode = [sp for sp in spans if sp.q1 - sp.q0 == 1]
        groups = ([decode] if decode else []) + [[sp] for sp in spans if sp.q1 - sp.q0 > 1]
        with one_intra_op_thread():
            for group in groups:
                self._meter(li, layer, group, query, key, value, mask, scaling, output, out)
        return out

    def _meter(self, li: int, layer: int, spans: list[ReadSpan], query: torch.Tensor, key: torch.Tensor,
               value: torch.Tensor, mask: torch.Tensor | None, scaling: float, output: torch.Tensor,
               out: ReadOutcome) -> None:
        """:meth:`on_read` for one group of requests, gathered into padded tensors."""
        hq = query.shape[1]
        groups = hq // key.shape[1]
        n = len(spans)
        qm = max(sp.q1 - sp.q0 for sp in spans)
        tm = max(sp.k1 - sp.k0 for sp in spans)
        qi = torch.tensor([[min(sp.q0 + j, sp.q1 - 1) for j in range(qm)] for sp in spans])  # (S, Qm) query rows
        ki = torch.tensor([[min(sp.k0 + t, sp.k1 - 1) for t in range(tm)] for sp in spans])  # (S, Tm) key columns
        row_ok = torch.tensor([[j < sp.q1 - sp.q0 for j in range(qm)] for sp in spans])
        key_ok = torch.tensor([[t < sp.k1 - sp.k0 for t in range(tm)] for sp in spans])
        slots = self._rows(np.stack([np.pad(sp.slots, (0, tm - sp.slots.size), mode="edge") for sp in spans]))
        q = query[0].to(torch.float64)[:, qi].transpose(0, 1)  # (S, H, Qm, D)
        ks = key[0].to(torch.float64)[:, ki].transpose(0, 1)  # (S, Hkv, Tm, D)
        if mask is None:
            past = torch.tensor([sp.past for sp in spans]).view(n, 1, 1)
            vis = torch.arange(tm).view(1, 1, tm) <= past + torch.arange(qm).view(1, qm, 1)
        else:
            m = mask[0, 0][qi.unsqueeze(-1), ki.unsqueeze(1)]  # (S, Qm, Tm)
            vis = m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2
        vis = (vis & row_ok.unsqueeze(-1) & key_ok.unsqueeze(1)).unsqueeze(1).expand(n, hq, qm, tm)
        seen = vis.any(-1, keepdim=True)
        minus_inf = torch.full((), -math.inf, dtype=torch.float64)
        s = grouped_matmul(q, ks.transpose(-1, -2)) * scaling
        ps = torch.where(seen, torch.softmax(torch.where(vis, s, minus_inf), dim=-1), torch.zeros((), dtype=torch.float64))
        wit = self.witness[li][:, slots].transpose(0, 1)  # (S, Hkv, Tm, bands)
        c = torch.einsum("bhqn,bhtn->bhqt", band_norms(q, self.bands),
                         wit.repeat_interleave(groups, dim=1)) * abs(scaling) * (1 + allowance(2 * self.bands + 4))
        c = torch.where(vis, c + score_error(q, ks, scaling, groups), torch.zeros((), dtype=torch.float64))
        bound = box_sup_bound(ps, c, LIVE_BOX)  # (S, H, Qm), capped by tanh(max c / 2); 0 on padding rows
        pe = None
        if self.exact is not None:
            ke = self.exact["key"][li][:, slots].transpose(0, 1).to(torch.float64)
            se = grouped_matmul(q, ke.transpose(-1, -2)) * scaling
            pe = torch.where(seen, torch.softmax(torch.where(vis, se, minus_inf), dim=-1), torch.zeros((), dtype=torch.float64))
            tv = 0.5 * (pe - ps).abs().sum(-1)  # (S, H, Qm)
        for i, sp in enumerate(spans):
            nq = sp.q1 - sp.q0
            b = bound[i, :, :nq]
            rec = self.requests.setdefault(sp.rid, RequestAttention.empty(self.metered))
            self._tally(li, rec, b)
            if pe is not None:
                t = tv[i, :, :nq]
                rec.realized_max[li] = max(rec.realized_max[li], float(t.max()))
                beaten = int((t > b).sum())
                rec.beaten[li] += beaten
                self.totals["bound_beaten"] += beaten
            if self.audit_rate > 0:
                self._audit(li, layer, sp, q[i:i + 1, :, :nq], ks[i:i + 1, :, :sp.k1 - sp.k0], value,
                            ps[i:i + 1, :, :nq, :sp.k1 - sp.k0], vis[i:i + 1, :, :nq, :sp.k1 - sp.k0], scaling, groups,
                            output, out.alerts, rec)
            if self.tau is not None or self.budget is not None:
                over = b > self.tau if self.tau is not None else torch.zeros(b.shape, dtype=torch.bool)
                n_over = int(over.sum())
                rec.over_tau[li] += n_over
                self.totals["rows_over_tau"] += n_over
                enforce = over
                if self.budget is not None:  # admission on the request's cumulative bound
                    if not rec.exhausted:
                        cost = float(torch.where(over, torch.zeros((), dtype=b.dtype), b).sum())
                        if rec.spent + cost > self.budget:
                            rec.exhausted = True  # this read and every later one are served exact
                        else:
                            rec.spent += cost
                    if rec.exhausted:
                        enforce = torch.ones(b.shape, dtype=torch.bool)
                n_enf = int(enforce.sum())
                if n_enf:
                    ve = self.exact["value"][li][:, slots[i]].to(torch.float64)  # (Hkv, Tm, D)
                    y = grouped_matmul(pe[i:i + 1], ve.unsqueeze(0))[0, :, :nq]  # (H, Q, D) exact attention output
                    if out.output is output:
                        out.output = output.clone()
                    hs, qs = enforce.nonzero(as_tuple=True)
                    out.output[0, sp.q0 + qs, hs] = y[hs, qs].to(output.dtype)
                    rec.enforced[li] += n_enf
                    self.totals["rows_enforced"] += n_enf

    def _tally(self, li: int, rec: RequestAttention, bound: torch.Tensor) -> None:
        b = bound.reshape(-1).numpy()
        if not np.isfinite(b).all():
            raise ValueError("live read meter: a non-finite bound (the witness or the scores are not numbers)")
        rec.bound_max[li] = max(rec.bound_max[li], float(b.max()))
        rec.bound_sum += float(b.sum(dtype=np.float64))
        rec.rows[li] += b.size
        self.totals["rows"] += b.size
        self.hist[li] += np.bincount(np.searchsorted(BOUND_BUCKETS, b, side="left"), minlength=len(BOUND_BUCKETS) + 1)
        self.hist_sum[li] += float(b.sum())

    def _audit(self, li: int, layer: int, sp: ReadSpan, q: torch.Tensor, ks: torch.Tensor, value: torch.Tensor,
               ps: torch.Tensor, vis: torch.Tensor, scaling: float, groups: int, output: torch.Tensor,
               alerts: list[dict[str, Any]], rec: RequestAttention) -> None:
        hq, nq = q.shape[1], q.shape[2]
        pick = torch.from_numpy(self.rng.random((hq, nq)) < self.audit_rate)
        n = int(pick.sum())
        if not n:
            return
        hs, qs = pick.nonzero(as_tuple=True)
        kv = hs // groups
        vs = value[0, :, sp.k0:sp.k1].to(torch.float64)  # (Hkv, T, D)
        qq = q[0, hs, qs].unsqueeze(1)  # (n, 1, D)
        kk = ks[0, kv]  # (n, T, D)
        vv = vs[kv]
        pp = ps[0, hs, qs].unsqueeze(1)  # (n, 1, T)
        vis_n = vis[0, hs, qs].unsqueeze(1)
        ref = torch.matmul(pp, vv)[:, 0]  # (n, D)
        allow = kernel_allowance(qq, kk, vv, pp, vis_n, scaling, float(torch.finfo(output.dtype).eps) / 2)[:, 0]
        got = output[0, sp.q0 + qs, hs].to(torch.float64)
        err = (got - ref).abs()
        excess = (err - allow).amax(-1)
        bad = ~(excess <= 0)  # a NaN output is a mismatch
        ratio = float((err / allow).amax()) if bool(torch.isfinite(err).all()) else math.inf
        self.audit_worst_ratio = max(self.audit_worst_ratio, ratio)
        rec.audited += n
        self.totals["audit_rows"] += n
        nb = int(bad.sum())
        if nb:
            rec.mismatches += nb
            self.totals["audit_mismatches"] += nb
            self.mismatch_by_layer[li] += nb
            for i in bad.nonzero(as_tuple=True)[0][:4].tolist():  # the first few of this call, each named
                alerts.append({"rid": sp.rid, "layer": layer, "head": int(hs[i]), "position": sp.past + int(qs[i]),
                               "excess": float(excess[i]) if math.isfinite(float(excess[i])) else None,
                               "allowance_max": float(allow[i].max())})

    # --- requests ----------------------------------------------------------------------------------
    def finish(self, rid: str) -> dict[str, Any] | None:
        """The request's ``attention`` body (and forget it); ``None`` if it was never read."""
        rec = self.requests.pop(rid, None)
        if rec is None:
            return None
        if self.tau is not None and int(rec.over_tau.sum()):
            self.totals["requests_over_tau"] += 1
        if rec.exhausted:
            self.totals["requests_budget_exhausted"] += 1
        return rec.record(self.tau, self.exact is not None, self.budget)

    def peek(self, rid: str) -> dict[str, Any] | None:
        rec = self.requests.get(rid)
        return None if rec is None else rec.record(self.tau, self.exact is not None, self.budget)

    def config(self) -> dict[str, Any]:
        return {"metered_layers": self.metered, "tau": self.tau, "request_budget": self.budget,
                "audit_rate": self.audit_rate,
                "exact_side_pool": self.exact is not None, "side_pool_bytes": self.side_pool_bytes,
                "witness_bytes": self.witness_bytes, "exp_ulp_assumed": EXP_ULP, "unit_roundoff_float64": float(U64),
                "box": {"intervals": LIVE_BOX.intervals, "buckets": LIVE_BOX.buckets, "ratio": LIVE_BOX.ratio}}
