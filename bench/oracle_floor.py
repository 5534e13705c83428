"""The floor of every per-key-radius certificate: the box supremum with the *true* score errors.

Every deterministic TV certificate witprobe builds (bands, query-aligned, any witness that bounds
each key's score error ``|s_t - s'_t| <= c_t``) must, to be sound, bound

    sup { TV(softmax s, p') : |s_t - s'_t| <= c_t }  >=  sup { ... : |s_t - s'_t| <= |e_t| }

where ``e_t = s_t - s'_t`` is the realized score error (the oracle radii: the smallest radii any
sound witness can have; the supremum is nondecreasing in every radius). So the oracle box
supremum, divided by the realized TV, is a floor on the tightness of *every* such certificate on
that row; the layer's floor is ``max_rows floor_row / max_rows TV_row`` (the layer claim is the
maximum over rows). This script measures it on SmolLM2, int8 and int4, the default prompts plus
one prompt of about 1,600 tokens (issue 14's acceptance set).

The floor is computed from *below*: ``F(A) = a/(a+b) - p'(A)`` (``a = sum_A p' e^{|e|}``,
``b = sum_{A^c} p' e^{-|e|}``) is attained by a score vector in the oracle box for every key set
``A`` (module docstring of :mod:`witprobe.probe.box_sup`), so the maximum of ``F`` over the
prefixes of four orderings of the keys (by ``|e_t|``, by ``p'_t`` ascending, by ``p'_t |e_t|``, and
by the realized error ``e_t`` descending) is a lower bound of the oracle supremum. A reported floor
is therefore never above the true one, and never below the realized TV: the prefixes by ``e_t``
include ``{t : p_t > p'_t} = {t : e_t > log sum_u p'_u e^{e_u}}``, where ``F`` is the realized TV. For comparison it also reports the box meter's *upper* bound
with the oracle radii (:func:`witprobe.probe.box_sup.box_sup_bound`) and the certified claim's
tightness of the same run.

    python bench/oracle_floor.py --out bench/results/oracle_floor_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from witprobe.certify.derive import derive  # noqa: E402
from witprobe.certify.measure import DEFAULT_PROMPTS, MeasureConfig, measure  # noqa: E402
from witprobe.models.zoo import load_model  # noqa: E402
from witprobe.probe import observer as observer_mod  # noqa: E402
from witprobe.probe.box_sup import box_sup_bound  # noqa: E402
from witprobe.probe.meters import witness_bytes_per_entry  # noqa: E402

LONG_PROMPT = " ".join([DEFAULT_PROMPTS[3]] * 16)  # about 1,600 tokens (as bench/tightness.py)


def prefix_floor(ps: torch.Tensor, r: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """``max_k F(first k keys of order)`` per row: a lower bound of the box supremum.

    ``ps``, ``r``: ``(R, T)`` float64 served distribution and radii (0 on hidden keys);
    ``order``: ``(R, T)`` key indices."""
    p = torch.gather(ps, -1, order)
    rr = torch.gather(r, -1, order)
    up, vp = p * torch.exp(rr), p * torch.exp(-rr)
    a = torch.cumsum(up, -1)
    b = vp.sum(-1, keepdim=True) - torch.cumsum(vp, -1)
    f = a / (a + b) - torch.cumsum(p, -1)
    return f.amax(-1).clamp_min(0.0)


def oracle_rows(s_exact: torch.Tensor, s_served: torch.Tensor, visible: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per row ``(B, H, Q)``: realized TV, the oracle floor (lower bound) and the box meter's
    oracle upper bound, all float64."""
    hidden = torch.full_like(s_exact, -float("inf"), dtype=torch.float64)
    s, sp = s_exact.to(torch.float64), s_served.to(torch.float64)
    p = torch.softmax(torch.where(visible, s, hidden), -1)
    ps = torch.softmax(torch.where(visible, sp, hidden), -1)
    tv = 0.5 * (p - ps).abs().sum(-1)
    e = torch.where(visible, s - sp, torch.zeros_like(s))
    r = e.abs()
    lead, t = ps.shape[:-1], ps.shape[-1]
    ps2, r2, e2 = ps.reshape(-1, t), r.reshape(-1, t), e.reshape(-1, t)
    orders = [torch.argsort(r2, -1, descending=True), torch.argsort(ps2, -1),
              torch.argsort(ps2 * r2, -1, descending=True), torch.argsort(e2, -1, descending=True)]
    floor = torch.stack([prefix_floor(ps2, r2, o) for o in orders]).amax(0).reshape(lead)
    upper = box_sup_bound(ps, r)
    return {"tv": tv, "floor": floor, "upper": upper}


class Recorder:
    """Per layer: row maxima of realized TV, oracle floor and oracle upper bound."""

    def __init__(self) -> None:
        self.layer = -1
        self.max = defaultdict(lambda: {"tv": 0.0, "floor": 0.0, "upper": 0.0})
        self.row_ratios: dict[int, list[float]] = defaultdict(list)

    def fold(self, rows: dict[str, torch.Tensor]) -> None:
        m = self.max[self.layer]
        for k in ("tv", "floor", "upper"):
            m[k] = max(m[k], float(rows[k].max()))
        keep = rows["tv"] > 1e-6
        self.row_ratios[self.layer].extend((rows["floor"][keep] / rows["tv"][keep]).tolist())


def patched(recorder: Recorder):
    """Wrap the observer's read meter so each read also folds the oracle rows of its layer."""
    real_rows = observer_mod.read_rows_from_scores
    real_read = observer_mod.Observer.observe_read

    def rows(s_exact, s_served, visible, *args, **kw):  # noqa: ANN001, ANN002, ANN003
        recorder.fold(oracle_rows(s_exact, s_served, visible))
        return real_rows(s_exact, s_served, visible, *args, **kw)

    def observe_read(self, module, *args, **kw):  # noqa: ANN001, ANN002, ANN003
        recorder.layer = int(module.layer_idx)
        return real_read(self, module, *args, **kw)

    observer_mod.read_rows_from_scores = rows
    observer_mod.Observer.observe_read = observe_read
    return lambda: (setattr(observer_mod, "read_rows_from_scores", real_rows),
                    setattr(observer_mod.Observer, "observe_read", real_read))


def run_codec(lm, codec: str, prompts: tuple[str, ...], new_tokens: int, bands: int = 4) -> dict:
    rec = Recorder()
    restore = patched(rec)
    try:
        run = measure(lm, MeasureConfig(codec=codec, bands=bands, max_new_tokens=new_tokens, reference=False,
                                        prompts=prompts))
    finally:
        restore()
    d = derive(run)
    claims = {c.layer: c for c in d.claims if c.kind == "attn_tv"}
    layers = []
    for i in sorted(rec.max):
        m, c = rec.max[i], claims[i]
        realized = c.realized_max
        layers.append({
            "layer": i,
            "realized_tv_max": realized,
            "realized_tv_max_recomputed": m["tv"],
            "oracle_floor_max": m["floor"],
            "oracle_upper_max": m["upper"],
            "floor_tightness": m["floor"] / realized if realized > 0 else None,
            "oracle_upper_tightness": m["upper"] / realized if realized > 0 else None,
            "certified_form": c.form,
            "certified_tightness": c.tightness,
            "row_floor_ratio_median": statistics.median(rec.row_ratios[i]) if rec.row_ratios[i] else None,
        })
    ft = [x["floor_tightness"] for x in layers if x["floor_tightness"] is not None]
    ct = [x["certified_tightness"] for x in layers if x["certified_tightness"] is not None]
    return {"layers": layers, "failures": d.failures,
            "floor_tightness_median": statistics.median(ft), "floor_tightness_max": max(ft),
            "floor_tightness_min": min(ft), "layers_floor_above_3": sum(x > 3 for x in ft),
            "layers_floor_above_2_5": sum(x > 2.5 for x in ft), "layers_floor_above_2": sum(x > 2 for x in ft),
            "certified_tightness_median": statistics.median(ct) if ct else None,
            "certified_tightness_max": max(ct) if ct else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--codecs", nargs="+", default=["int8", "int4"])
    ap.add_argument("--new-tokens", type=int, default=4)
    ap.add_argument("--no-long", action="store_true", help="the default prompts only")
    ap.add_argument("--bands", type=int, default=4, help="witness bands (the certified column depends on it; the "
                                                         "floor does not)")
    a = ap.parse_args(argv)
    torch.manual_seed(0)
    lm = load_model("smollm2")
    prompts = tuple(DEFAULT_PROMPTS) + (() if a.no_long else (LONG_PROMPT,))
    result = {"model": "smollm2", "bands": a.bands, "witness_bytes_per_entry": 2 * witness_bytes_per_entry(a.bands),
              "new_tokens": a.new_tokens,
              "prompts": "DEFAULT_PROMPTS" + ("" if a.no_long else " + LONG_PROMPT (about 1,600 tokens)"),
              "what": "floor = lower bound of the box supremum with the true score errors as radii, over the "
                      "realized TV; no per-key-radius certificate can be tighter on that layer",
              "codecs": {}}
    for codec in a.codecs:
        t0 = time.perf_counter()
        row = run_codec(lm, codec, prompts, a.new_tokens, a.bands)
        row["seconds"] = time.perf_counter() - t0
        result["codecs"][codec] = row
        print(codec, {k: v for k, v in row.items() if k not in ("layers", "failures")}, flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
