"""The floor of metering: FLOPs and bytes per read row of attention and of each meter, counted and timed.

Issue 27 item 1. One decode step of one SmolLM2 layer (``H = 9`` query heads, ``Hkv = 3`` KV heads,
``D = 64``, 4 bands; ``Q = 1`` row per head) at context ``T``, on synthetic float32 keys and values
with int8-sized residuals. Every component runs the witprobe code the observer runs on a read
(:mod:`witprobe.probe.meters`, :mod:`witprobe.probe.box_sup`), on the same inputs, interleaved
with eager attention in one process (``--repeats`` rounds, the median kept):

==================  ===========================================================  =====================
component           what it computes per row (``T`` keys, ``D`` dims, ``nb`` bands)  FLOPs per row (count)
==================  ===========================================================  =====================
attention           ``softmax(q K^T s) V``, float32 (eager)                        ``4 T D + 5 T``
scores64            exact and served ``q K^T`` in float64 and their error bound     ``6 T D + 2 T``
radii               ``c_t = s sum_b ||q_b|| ||dk_{t,b}||``                          ``2 T nb``
tv_realized         two float64 softmaxes and ``1/2 sum |p - p'|``                 ``13 T``
centred_eform       ``max c``, ``sum p' expm1(c)``                                   ``4 T``
box_sup             pool (``log``, scatter) then ``2 x 16 x 65`` certificate terms   ``~10 T + 2.6e5``
output              ``p V``, ``p' V'``, ``||v'_t - y'||``, spread, value term       ``6 T D + 8 T``
==================  ===========================================================  =====================

``scores64_repeated`` and ``output_repeated`` are the same two meters on the layout used before
issue 27 (the float64 cache repeated per query head on every step), timed in the same rounds for
the before/after ratio; they are not part of ``all_meters``.

Bytes per row: attention reads ``2 T D`` float32 (keys and values of its KV head, shared by the
``H/Hkv`` query heads of a group); the float64 meters as written re-cast the whole cache
(``2 x 2 T D`` float64 per KV head per step, exact and served) and materialise ``(rows, T)``
float64 temporaries (about 35 passes). The floor of a meter that fuses into the pass over ``K'``
reads ``T nb`` witness norms (``8 nb`` bytes a key) beyond attention's own ``K'``.

Readings only (``bench/RESULTS.md``):

    python bench/meter_floor.py --contexts 512 2048 8192 --out bench/results/meter_floor_cpu.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from witprobe.probe.box_sup import DEFAULT_SPEC, box_sup_rows  # noqa: E402
from witprobe.probe.meters import (ScoreComponent, band_norms, component_radii, dense_scores,  # noqa: E402
                                   output_rows, score_error)

H, HKV, D, NB = 9, 3, 64, 4
SCHEMA = "witprobe-bench-meter-floor/1"


def flops(component: str, t: int) -> float:
    """The counted FLOPs per read row (module docstring), the box meter's constant included."""
    g, k, j = 2, DEFAULT_SPEC.intervals, DEFAULT_SPEC.buckets + 1
    box_terms = g * k * j * (2 * 6 + 10 * 3 + 2 * 4)  # hints (terms, bisection) and both interval ends
    return {"attention": 4 * t * D + 5 * t, "scores64": 6 * t * D + 2 * t, "scores64_repeated": 6 * t * D + 2 * t,
            "output_repeated": 6 * t * D + 8 * t,
            "radii": 2 * t * NB, "tv_realized": 13 * t, "centred_eform": 4 * t, "box_sup": 10 * t + box_terms,
            "output": 6 * t * D + 8 * t}[component]


def bytes_floor(component: str, t: int) -> float:
    """Bytes per read row a fused pass must read: attention its K and V (float32, per row of a
    group: shared), a fused meter only the witness norms it adds (float64, ``nb`` per key) and,
    for realized readings, the exact keys or values."""
    share = HKV / H
    return {"attention": 2 * t * D * 4 * share, "scores64": t * D * 4 * share, "scores64_repeated": t * D * 4 * share,
            "output_repeated": t * D * 4 * share + t * 8,
            "radii": t * NB * 8 * share, "tv_realized": 0.0, "centred_eform": 0.0, "box_sup": 0.0,
            "output": t * D * 4 * share + t * 8}[component]


def inputs(t: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, H, 1, D, generator=g)
    k = torch.randn(1, HKV, t, D, generator=g)
    v = torch.randn(1, HKV, t, D, generator=g)
    step = k.abs().amax(-1, keepdim=True) / 127
    k_hat = (k / step).round() * step  # int8 per row
    v_hat = (v / step).round() * step
    kb = band_norms((k - k_hat).to(torch.float64), NB)
    vb = band_norms((v - v_hat).to(torch.float64), NB).sum(-1)
    return {"q": q, "k": k, "v": v, "k_hat": k_hat, "v_hat": v_hat, "kb": kb, "vb": vb}


def components(x: dict[str, torch.Tensor]) -> dict[str, Callable[[], Any]]:
    """Each component as a closure over precomputed inputs (what it needs from the ones before)."""
    grp = H // HKV
    s = D ** -0.5
    q64 = x["q"].to(torch.float64)
    ke = x["k"].to(torch.float64).repeat_interleave(grp, 1)
    ks = x["k_hat"].to(torch.float64).repeat_interleave(grp, 1)
    se, ss = q64 @ ke.transpose(-1, -2) * s, q64 @ ks.transpose(-1, -2) * s
    vis = torch.ones_like(se, dtype=torch.bool)
    comp = ScoreComponent(band_norms(q64, NB), x["kb"].repeat_interleave(grp, 1))
    c = component_radii([comp], s, se.shape)
    p, ps = torch.softmax(se, -1), torch.softmax(ss, -1)
    ve, vs = x["v"].to(torch.float64), x["v_hat"].to(torch.float64)  # per KV head (the witness cache's read_values)
    wv = x["vb"].repeat_interleave(grp, 1)
    kf = x["k_hat"].repeat_interleave(grp, 1)
    vf = x["v_hat"].repeat_interleave(grp, 1)

    def attention() -> Any:
        w = torch.softmax(x["q"] @ kf.transpose(-1, -2) * s, -1)
        return w @ vf

    def scores64() -> Any:
        return dense_scores(x["q"], x["k"], x["k_hat"], x["kb"], s, grp)

    def tv() -> Any:
        return 0.5 * (torch.softmax(se, -1) - torch.softmax(ss, -1)).abs().sum(-1)

    def centred_eform() -> Any:
        return torch.tanh(c.amax(-1) / 2), (ps * torch.expm1(c)).sum(-1)

    def scores64_repeated() -> Any:  # the layout before issue 27: the cache repeated per query head, every step
        a = x["q"].to(torch.float64)
        kr = x["k_hat"].to(torch.float64).repeat_interleave(grp, 1)
        return (a @ x["k"].to(torch.float64).repeat_interleave(grp, 1).transpose(-1, -2) * s,
                a @ kr.transpose(-1, -2) * s, score_error(a, kr, s))

    def output_repeated() -> Any:
        return output_rows(p, ps, vis, ve.repeat_interleave(grp, 1), vs.repeat_interleave(grp, 1), wv,
                           torch.tanh(c.amax(-1) / 2))

    return {"attention": attention, "scores64": scores64, "scores64_repeated": scores64_repeated,
            "output_repeated": output_repeated,
            "radii": lambda: component_radii([comp], s, se.shape), "tv_realized": tv, "centred_eform": centred_eform,
            "box_sup": lambda: box_sup_rows(ps, c, DEFAULT_SPEC),
            "output": lambda: output_rows(p, ps, vis, ve, vs, wv, torch.tanh(c.amax(-1) / 2))}


def measure(t: int, repeats: int) -> dict[str, Any]:
    fns = components(inputs(t))
    times: dict[str, list[float]] = {n: [] for n in fns}
    for _ in range(repeats):  # interleaved: every component once per round
        for n, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[n].append(time.perf_counter() - t0)
    rows = H  # one decode row per query head
    att = statistics.median(times["attention"])
    out = {}
    for n, ts in times.items():
        med = statistics.median(ts)
        out[n] = {"us_per_row": med / rows * 1e6, "x_attention": med / att, "flops_per_row": flops(n, t),
                  "flops_x_attention": flops(n, t) / flops("attention", t), "floor_bytes_per_row": bytes_floor(n, t)}
    meters = [n for n in fns if n != "attention" and not n.endswith("_repeated")]  # the references are not summed
    out["all_meters"] = {"x_attention": sum(out[n]["x_attention"] for n in meters),
                         "flops_x_attention": sum(out[n]["flops_x_attention"] for n in meters)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", type=int, nargs="+", default=[512, 2048, 8192])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    res = {"schema": SCHEMA, "model_shape": {"H": H, "Hkv": HKV, "D": D, "bands": NB}, "threads": a.threads,
           "repeats": a.repeats, "torch": torch.__version__, "machine": platform.machine(), "contexts": {}}
    for t in a.contexts:
        res["contexts"][str(t)] = r = measure(t, a.repeats)
        print(f"T={t}: " + ", ".join(f"{n} {v['x_attention']:.1f}x ({v.get('flops_x_attention', 0):.2f}x flops)"
                                      for n, v in r.items() if n != "attention"), flush=True)
    if a.out:
        a.out.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
