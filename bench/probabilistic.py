"""Probabilistic certificates for a randomized codec (issue 14, item 3): SR int8 on SmolLM2 keys.

Tier: **empirical**. No library theorem states these bounds yet, so nothing here is certified.
The bench measures how tight each family is, and checks that no realization beats a bound or a
radius.

Codec
-----
Stochastic-rounding int8 per band: each key of each KV head is split into ``bands`` bands of
``w`` coordinates. Band ``b`` has the step ``s_b = max |k_b| / 127``. Each coordinate
``v = k / s_b`` (float32) is rounded up with probability ``theta = v - floor(v)`` by
:func:`witprobe.memory.sr_grid.sr_round_grid`, on the grid of step 1. Its uniforms come from the
counter RNG stream ``stream_key(nonce=realization, uid=prompt, layer, 0)``. Served key:
``k' = code * s_b``. Draws are independent across coordinates and keys.

Score error of key ``t`` for a query row ``q``: ``X_t = s'_t - s_t = scale <q, k'_t - k_t>
= d_t + sum_i a_i (B_i - theta_i)``. Here ``a_i = scale q_i s_i``, ``B_i`` is Bernoulli(``theta_i``),
and ``d_t = scale sum_i q_i (v_i s_i - k_i)`` is the deterministic shift left by the float32 division
(``|d_t| <= scale 127 2**-24 sum_b s_b ||q_b||_1``).

Families (per read row; exact distribution ``p = softmax(s)``, served ``p' = softmax(s')``)
------------------------------------------------------------------------------------------
- **C0, band witness (deterministic, post-draw).** The certified meter of ``certify run``: radii
  ``c_t = scale sum_b ||q_b|| ||Delta_{t,b}||`` from the realized residuals, then the box bound.
- **C1, worst-case band (deterministic, pre-draw).** Radii ``R_t = scale (1 + 2**-17) sum_b s_b
  ||q_b||_1`` (``|B_i - theta_i| < 1``, Hoelder per band), then the box bound. It needs the steps only.
- **C2, centred (deterministic, pre-draw).** ``tanh(max_t R_t / 2)``.
- **C3, sub-Gaussian / Hoeffding (probabilistic).** Radii
  ``r3_t = |d|^+ + sqrt(sum_i a_i^2 ln(2 n / delta_i) / 2)``, then the box bound. A union bound runs
  over the ``n`` visible keys. It needs the steps only.
- **C4, exact two-point MGF, Chernoff (probabilistic).** Each tail is
  ``min_lambda (log E e^{lambda (X_t - d_t)} + ln(4 n / delta_i)) / lambda``, from the exact two-point
  MGF of every ``B_i - theta_i``, over a grid of ``lambda``. Any ``lambda`` is sound. Add ``|d_t|``
  and take the box bound. It needs every ``theta_i``: a witness as large as the key.
- **V, variance-aware (probabilistic, pre-draw).** ``p'_t = p_t e^{X_t} / Z`` with
  ``Z = sum_t p_t e^{X_t}``. By Cauchy-Schwarz, ``TV <= 1/2 sqrt(chi2)``, and ``chi2`` is bounded
  from the second moments ``E (e^{X_t} - 1)^2`` of the score errors under the exact distribution.
  The heaviest key is centred out, and the others are handled by Bernstein (:func:`_variance_bound`).
  The moments come from the exact two-point MGFs, and the event ``|X_t| <= r4_t`` bounds the ranges.
  Like C4, it needs every ``theta_i``.
- **V3, variance-aware with Hoeffding's lemma.** The same, with ``E (e^{X_t} - 1)^2 <=
  e^{2|d|^+ + sum_i a_i^2 / 2} - 2 e^{-|d|^+} + 1`` (Hoeffding's lemma, and Jensen), and the C3
  radii at ``delta_i / 2`` for the ranges. It needs the steps only.

Budget: a request (one prompt) spends ``delta_req`` through the ledger's telescoping budget
(:func:`witprobe.ledger.budget.telescoping_delta`). Its ``i``-th probabilistic certificate (one per
layer, head and row, in that order) gets ``delta_i = delta_req / ((i + 1)(i + 2))``. The
deterministic families spend nothing.

Adjudication: ``--realizations`` independent draws (at least 64) of every key. Gates are
registered before anything is measured, in ``<out>.gates.json``: every realization's TV is at most
every family's bound, no score error beats a C3 or C4 radius, and at least 64 realizations ran.
The gates are then re-evaluated from the per-row records in the result file.

    python bench/probabilistic.py --out bench/results/probabilistic_cpu.json

``--no-long`` measures the default prompts only, ``--long-only`` the long prompt only (1,581 tokens).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from fractions import Fraction
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from witprobe.certify.measure import DEFAULT_PROMPTS  # noqa: E402
from witprobe.models.prompts import encode  # noqa: E402
from witprobe.ledger.budget import telescoping_delta  # noqa: E402
from witprobe.memory.counter_rng import stream_key  # noqa: E402
from witprobe.memory.sr_grid import sr_round_grid  # noqa: E402
from witprobe.models.zoo import load_model  # noqa: E402
from witprobe.probe.attention import ACTIVE, ATTN_IMPLEMENTATION  # noqa: E402
from witprobe.probe.box_sup import box_sup_bound  # noqa: E402

FAMILIES = ("C0_band_witness", "C1_worst_case", "C2_centred", "C3_hoeffding", "C4_two_point_mgf",
            "V_variance_aware", "V3_variance_hoeffding")
WITNESS = {"C0_band_witness": "4 band residual norms per key (float64): 32 B",
           "C1_worst_case": "the codec's own band steps: 0 B extra",
           "C2_centred": "the codec's own band steps: 0 B extra",
           "C3_hoeffding": "the codec's own band steps: 0 B extra",
           "C4_two_point_mgf": "theta per coordinate: 64 float32 = 256 B (as large as the key)",
           "V_variance_aware": "theta per coordinate: 64 float32 = 256 B (as large as the key)",
           "V3_variance_hoeffding": "the codec's own band steps: 0 B extra"}
PROBABILISTIC = ("C3_hoeffding", "C4_two_point_mgf", "V_variance_aware", "V3_variance_hoeffding")
LONG_PROMPT = " ".join([DEFAULT_PROMPTS[3]] * 17)
SHIFT = 127 * 2.0 ** -24  # |v s - k| <= 2**-24 |v| s, |v| <= 127
LAMBDAS = torch.tensor([2.0 ** (k / 2) for k in range(-8, 9)], dtype=torch.float64)


class Collector:
    """Stands in for the observer: keeps each layer's exact post-RoPE keys and its last query rows."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.layers: dict[int, tuple[torch.Tensor, torch.Tensor, float, int]] = {}
        self.cache = None

    def observe_read(self, module, query, key, mask, scaling, **kwargs) -> None:
        groups = int(getattr(module, "num_key_value_groups", 1))
        self.layers[module.layer_idx] = (query[:, :, -self.rows:, :].detach().double().cpu(),
                                         key.detach().float().cpu(), float(scaling), groups)


def _collect(lm, prompt, rows: int) -> Collector:
    col = Collector(rows)
    model = lm.model
    model.set_attn_implementation(ATTN_IMPLEMENTATION)
    token = ACTIVE.set(col)
    try:
        with torch.no_grad():
            model(**encode(lm.tokenizer, prompt), use_cache=False)
    finally:
        ACTIVE.reset(token)
    return col


def _sr_keys(k: torch.Tensor, bands: int, realizations: int, uid: int, layer: int):
    """Exact keys ``(Hkv, T, D)`` float32 -> steps ``(Hkv, T, D)``, theta, the shift ``v s - k`` and
    the served keys of every realization ``(N, Hkv, T, D)`` (float64)."""
    hkv, t, d = k.shape
    kb = k.double().reshape(hkv, t, bands, d // bands)
    step = kb.abs().amax(-1, keepdim=True) / 127
    step = torch.where(step > 0, step, torch.ones_like(step))  # an all-zero band: codes 0, exact
    v = (kb / step).float()  # what the codec divides, in float32
    theta = v.double() - torch.floor(v.double())
    shift = (v.double() * step - kb).reshape(hkv, t, d)
    served = []
    for n in range(realizations):
        w = sr_round_grid(v.reshape(-1).contiguous(), 1.0, stream_key(n, uid, layer, 0))
        served.append((w.codes.double().reshape(hkv, t, bands, -1) * step).reshape(hkv, t, d))
    steps = step.expand_as(kb).reshape(hkv, t, d)
    return steps, theta.reshape(hkv, t, d), shift, torch.stack(served)


def _chernoff_tail(a: torch.Tensor, theta: torch.Tensor, log_term: torch.Tensor) -> torch.Tensor:
    """``min_lambda (sum_i log E e^{lambda a_i (B_i - theta_i)} + log_term) / lambda`` over :data:`LAMBDAS`
    scaled by each pair's ``sqrt(log_term / sum a^2)``; ``a``, ``theta``: ``(..., D)``."""
    scale = torch.sqrt(2 * log_term / (a * a).sum(-1).clamp_min(1e-300))  # the Gaussian optimum
    lam = scale.unsqueeze(-1) * LAMBDAS  # (..., L)
    x = lam.unsqueeze(-1) * a.unsqueeze(-2)  # (..., L, D)
    th = theta.unsqueeze(-2)
    # log(theta e^{x (1 - theta)} + (1 - theta) e^{-x theta}) = -x theta + log(1 + theta (e^x - 1))
    logm = -x * th + torch.log1p(th * torch.expm1(x))
    vals = (logm.sum(-1) + log_term.unsqueeze(-1)) / lam
    return vals.amin(-1)


def _log_mgf(a: torch.Tensor, theta: torch.Tensor, lam: float) -> torch.Tensor:
    """``log E e^{lam sum_i a_i (B_i - theta_i)}`` exactly (two-point), summed over the last axis."""
    x = lam * a
    return (-x * theta + torch.log1p(theta * torch.expm1(x))).sum(-1)


ETAS = torch.tensor([2.0 ** (k / 2) for k in range(-12, 13)], dtype=torch.float64)


def _variance_bound(p: torch.Tensor, vis: torch.Tensor, second: torch.Tensor, radius: torch.Tensor,
                    delta: torch.Tensor) -> torch.Tensor:
    """Pre-draw TV bound from the second moments ``second_t >= E (e^{X_t} - 1)^2`` (``(H, R, T)``).

    With ``w_t = e^{X_t} - 1``, ``Z = sum_t p_t e^{X_t}`` and ``h`` the heaviest key of ``p``:
    ``TV <= 1/2 sqrt(chi2)`` (Cauchy-Schwarz) and ``chi2 Z^2 = sum_t p_t (w_t - wbar)^2 <=
    sum_{t != h} p_t (w_t - w_h)^2 <= (1 + eta) S + (1 + 1/eta) (1 - p_h) w_h^2`` for every
    ``eta > 0``, with ``S = sum_{t != h} p_t w_t^2``. On the event ``|X_t| <= radius_t`` for every
    key (probability ``>= 1 - delta / 2``: the radii are taken at that level), ``w_t^2 <= m_t^2``
    with ``m_t = e^{radius_t} - 1`` and ``Z >= sum_t p_t e^{-radius_t}``. The terms of ``S`` are
    independent and lie in ``[0, b_t]``, ``b_t = p_t m_t^2``; conditioned on that product event
    their means grow by at most ``1 / (1 - delta)``. Bernstein at ``delta / 2``:
    ``S <= E S + sqrt(2 V L) + 2 b L / 3`` with ``V <= sum b_t E Y_t``, ``b = max b_t``,
    ``L = ln(2 / delta)``. The bound is the minimum over :data:`ETAS`, capped at 1.
    """
    heavy = torch.nn.functional.one_hot(p.argmax(-1), p.shape[-1]).bool()
    rest = vis & ~heavy
    m = torch.expm1(radius)
    b = torch.where(rest, p * m * m, torch.zeros_like(m))
    ey = torch.where(rest, p * second.clamp_min(0), torch.zeros_like(m)) / (1 - delta.unsqueeze(-1))
    big_l = torch.log(2 / delta)
    es = ey.sum(-1)
    s_up = es + torch.sqrt(2 * (b * ey).sum(-1) * big_l) + 2 * b.amax(-1) * big_l / 3
    ph = (p * heavy).sum(-1)
    mh = (m * heavy).sum(-1)
    z_lo = (p * torch.exp(-radius) * vis).sum(-1)
    eta = ETAS.reshape(-1, 1, 1)
    chi2z2 = ((1 + eta) * s_up + (1 + 1 / eta) * (1 - ph) * mh * mh).amin(0)
    return (0.5 * torch.sqrt(chi2z2) / z_lo).clamp_max(1.0)


def _layer_rows(q, k, scaling, groups, bands, realizations, uid, layer, deltas):
    """Every family's bound, the realized TV and the radius violations for the rows of one layer."""
    steps, theta, shift, served = _sr_keys(k[0], bands, realizations, uid, layer)
    hkv, t, d = steps.shape
    h, r = q.shape[1], q.shape[2]
    qh = q[0]  # (H, R, D)
    kv = torch.arange(h) // groups
    kx = k[0].double()[kv]  # (H, T, D)
    st, th, sh = steps[kv], theta[kv], shift[kv]
    pos = torch.arange(t - r, t)  # absolute position of each row; row j sees keys <= pos[j]
    vis = torch.arange(t).unsqueeze(0) <= pos.unsqueeze(1)  # (R, T)
    n_vis = vis.sum(-1).double()  # (R,)
    s_exact = scaling * torch.einsum("hrd,htd->hrt", qh, kx)
    neg = torch.finfo(torch.float64).min
    s_exact = s_exact.masked_fill(~vis, neg)
    p = torch.softmax(s_exact, -1) * vis
    a = scaling * qh.unsqueeze(2) * st.unsqueeze(1)  # (H, R, T, D)
    qb = qh.reshape(h, r, bands, -1)
    sb = st.reshape(h, t, bands, -1)[..., 0]  # (H, T, nb)
    l1 = torch.einsum("hrb,htb->hrt", qb.abs().sum(-1), sb)
    dplus = scaling * SHIFT * l1
    r1 = scaling * (1 + 2.0 ** -17) * l1
    delta = deltas.reshape(h, r)  # delta_i per (head, row)
    log3 = torch.log(2 * n_vis.unsqueeze(0) / delta).unsqueeze(-1)  # (H, R, 1)
    sum_a2 = (a * a).sum(-1)
    r3 = dplus + torch.sqrt(sum_a2 * log3 / 2)
    d_exact = scaling * torch.einsum("hrd,htd->hrt", qh, sh)
    log4 = torch.log(4 * n_vis.unsqueeze(0) / delta).unsqueeze(-1).expand(h, r, t)
    up = _chernoff_tail(a, th.unsqueeze(1).expand_as(a), log4)
    down = _chernoff_tail(-a, th.unsqueeze(1).expand_as(a), log4)
    r4 = d_exact.abs() + torch.maximum(up, down)
    # variance-aware (pre-draw, exact p): module docstring, family V
    th_a = th.unsqueeze(1).expand_as(a)
    m1 = torch.exp(d_exact + _log_mgf(a, th_a, 1.0))  # E e^{X_t}
    m2 = torch.exp(2 * d_exact + _log_mgf(a, th_a, 2.0))  # E e^{2 X_t}
    r3e = dplus + torch.sqrt(sum_a2 * (log3 + math.log(2)) / 2)  # C3 radii at delta_i / 2
    s3 = torch.exp(2 * dplus + sum_a2 / 2) - 2 * torch.exp(-dplus) + 1  # >= E (e^X - 1)^2, steps only
    bound_v = _variance_bound(p, vis, m2 - 2 * m1 + 1, r4, delta)
    bound_v3 = _variance_bound(p, vis, s3, r3e, delta)
    # per realization (post-draw): served distribution, realized TV, box families
    ks = served[:, kv]  # (N, H, T, D)
    s_served = (scaling * torch.einsum("hrd,nhtd->nhrt", qh, ks)).masked_fill(~vis, neg)
    ps = torch.softmax(s_served, -1) * vis
    tv = 0.5 * (ps - p.unsqueeze(0)).abs().sum(-1)  # (N, H, R)
    x = s_served - s_exact.unsqueeze(0)
    x = torch.where(vis, x, torch.zeros_like(x))
    dk = ks - kx.unsqueeze(0)
    c0 = scaling * torch.einsum("hrb,nhtb->nhrt", qb.norm(dim=-1), dk.reshape(*dk.shape[:3], bands, -1).norm(dim=-1))

    def box(radii):
        rr = torch.where(vis, radii, torch.zeros_like(radii)).expand_as(ps)
        return box_sup_bound(ps.reshape(-1, t), rr.reshape(-1, t)).reshape(ps.shape[:-1])

    bounds = {
        "C0_band_witness": box(c0 * (1 + 2.0 ** -30)),
        "C1_worst_case": box(r1.unsqueeze(0)),
        "C2_centred": torch.tanh(torch.where(vis, r1, torch.zeros_like(r1)).amax(-1) / 2).expand_as(tv),
        "C3_hoeffding": box(r3.unsqueeze(0)),
        "C4_two_point_mgf": box(r4.unsqueeze(0)),
        "V_variance_aware": bound_v.expand_as(tv),
        "V3_variance_hoeffding": bound_v3.expand_as(tv),
    }
    viol = {"C1_worst_case": int(((x.abs() > r1.unsqueeze(0)) & vis).sum()),
            "C3_hoeffding": int(((x.abs() > r3.unsqueeze(0)) & vis).sum()),
            "C4_two_point_mgf": int(((x.abs() > r4.unsqueeze(0)) & vis).sum())}
    return tv, bounds, viol, int(vis.sum()) * h * realizations


NAMES = {"C0_band_witness": "C0 band witness (deterministic, post-draw; the certified meter's form)",
         "C1_worst_case": "C1 worst-case band (deterministic, pre-draw)",
         "C2_centred": "C2 centred (deterministic, pre-draw)",
         "C3_hoeffding": "C3 sub-Gaussian / Hoeffding",
         "C4_two_point_mgf": "C4 exact two-point MGF (Chernoff)",
         "V_variance_aware": "V variance-aware (exact two-point moments)",
         "V3_variance_hoeffding": "V3 variance-aware (Hoeffding's lemma)"}
RADIUS_FAMILIES = ("C1_worst_case", "C3_hoeffding", "C4_two_point_mgf")


def markdown(result: dict) -> str:
    """The RESULTS.md table of a result file (the paper's table: non-vacuous layers and tightness)."""
    lines = ["| family | probabilistic | non-vacuous layers | tightness median | tightness max | bound violations "
             "| radius violations | witness |", "|---|---|---|---|---|---|---|---|"]
    for f, v in result["table"].items():
        med = "-" if v["tightness_median"] is None else f"{v['tightness_median']:.2f}"
        mx = "-" if v["tightness_max"] is None else f"{v['tightness_max']:.2f}"
        lines.append(f"| {NAMES[f]} | {'yes' if v['probabilistic'] else 'no'} | {v['non_vacuous']}/{v['layers']} | "
                     f"{med} | {mx} | {v['bound_violations']} | "
                     f"{v['radius_violations'] if f in RADIUS_FAMILIES else '-'} | {v['witness']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("bench/results/probabilistic_cpu.json"))
    ap.add_argument("--realizations", type=int, default=64)
    ap.add_argument("--rows", type=int, default=4, help="last query rows of each prompt per head")
    ap.add_argument("--bands", type=int, default=4)
    ap.add_argument("--delta-req", type=str, default="1/1000", help="risk budget per request (a fraction)")
    ap.add_argument("--no-long", action="store_true", help="the default prompts only")
    ap.add_argument("--long-only", action="store_true",
                    help="the long prompt only (its draws are the ones a run of every prompt would make)")
    ap.add_argument("--table", type=Path, default=None, metavar="JSON", help="print a result file's table and exit")
    args = ap.parse_args()
    if args.table is not None:
        print(markdown(json.loads(args.table.read_text())))
        return 0
    if args.realizations < 1 or args.rows < 1:
        print("--realizations and --rows must be positive")
        return 2
    if args.no_long and args.long_only:
        print("--no-long and --long-only exclude each other")
        return 2
    delta_req = Fraction(args.delta_req)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    gates = {"registered_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "realizations_min": 64, "bound_violations_max": 0, "radius_violations_max": 0,
             "delta_req": str(delta_req), "families": list(FAMILIES),
             "codec": f"SR int8 per band ({args.bands} bands), counter RNG"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    gates_path = args.out.with_name(args.out.stem + ".gates.json")
    gates_path.write_text(json.dumps(gates, indent=1) + "\n")  # registered before the run
    lm = load_model("smollm2")
    every = list(DEFAULT_PROMPTS) + [LONG_PROMPT]
    # uid = the prompt's index among all of them: its realizations (counter RNG streams) do not
    # depend on which prompts a run selects
    chosen = [(uid, pr) for uid, pr in enumerate(every)
              if not (args.no_long and pr == LONG_PROMPT) and not (args.long_only and pr != LONG_PROMPT)]
    per_layer: dict[int, dict] = {}
    records = []
    t0 = time.perf_counter()
    for uid, prompt in chosen:
        col = _collect(lm, prompt, args.rows)
        event = 0
        for li in sorted(col.layers):
            q, k, scaling, groups = col.layers[li]
            n_rows = q.shape[1] * q.shape[2]
            deltas = torch.tensor([float(telescoping_delta(delta_req, event + j)) for j in range(n_rows)],
                                  dtype=torch.float64)
            event += n_rows
            tv, bounds, viol, pairs = _layer_rows(q, k, scaling, groups, args.bands, args.realizations, uid, li, deltas)
            rec = {"prompt": uid, "layer": li, "rows": n_rows, "realizations": args.realizations,
                   "tv_max": float(tv.max()), "key_draws": pairs,
                   "bound_max": {f: float(b.max()) for f, b in bounds.items()},
                   "bound_violations": {f: int((tv > b).sum()) for f, b in bounds.items()},
                   "radius_violations": viol,
                   "delta_min": float(deltas.min())}
            records.append(rec)
            agg = per_layer.setdefault(li, {"tv_max": 0.0, "bound_max": {f: 0.0 for f in FAMILIES}})
            agg["tv_max"] = max(agg["tv_max"], rec["tv_max"])
            for f in FAMILIES:
                agg["bound_max"][f] = max(agg["bound_max"][f], rec["bound_max"][f])
        print(f"prompt {uid}: {time.perf_counter() - t0:.0f} s, {event} probabilistic certificates, "
              f"delta spent {float(delta_req) * event / (event + 1):.3g}", flush=True)
    table = {}
    for f in FAMILIES:
        ratios = [a["bound_max"][f] / a["tv_max"] for a in per_layer.values() if a["bound_max"][f] < 1 and a["tv_max"] > 0]
        table[f] = {"non_vacuous": sum(a["bound_max"][f] < 1 for a in per_layer.values()), "layers": len(per_layer),
                    "tightness_median": statistics.median(ratios) if ratios else None,
                    "tightness_max": max(ratios) if ratios else None,
                    "probabilistic": f in PROBABILISTIC, "witness": WITNESS[f],
                    "bound_violations": sum(r["bound_violations"][f] for r in records),
                    "radius_violations": sum(r["radius_violations"].get(f, 0) for r in records)}
    verdicts = {
        "realizations": args.realizations >= gates["realizations_min"],
        "bounds_never_beaten": all(v["bound_violations"] <= gates["bound_violations_max"] for v in table.values()),
        "radii_never_beaten": all(v["radius_violations"] <= gates["radius_violations_max"] for v in table.values()),
    }
    result = {"model": "smollm2", "bands": args.bands, "rows_per_prompt_and_head": args.rows,
              "prompts": len(chosen), "long_only": args.long_only,
              "long_prompt_tokens": None if args.no_long else len(lm.tokenizer(LONG_PROMPT)["input_ids"]),
              "realizations": args.realizations, "delta_req": str(delta_req), "tier": "empirical",
              "tier_reason": "no library theorem states the probabilistic families yet",
              "gates_file": gates_path.name, "gates": gates, "verdicts": verdicts, "table": table,
              "per_layer": {str(k): v for k, v in sorted(per_layer.items())}, "records": records,
              "seconds": time.perf_counter() - t0}
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, args.out)
    for f, v in table.items():
        print(f"{f:24s} non-vacuous {v['non_vacuous']}/{v['layers']}  tightness median "
              f"{v['tightness_median'] and round(v['tightness_median'], 2)} max {v['tightness_max'] and round(v['tightness_max'], 2)}"
              f"  bound viol {v['bound_violations']}  radius viol {v['radius_violations']}")
    print("gates:", verdicts)
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
