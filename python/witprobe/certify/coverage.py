"""The coverage table of a run: per memory class, layers covered and the headline reading.

Mirrors the paper's Table 1: for KV and latent KV the median (over layers) of the mean relative
residual and of the mean conservativeness ``W/||Delta||``; for a sparse selector the share of
selector rows whose top-1 (and whole top-k) is certified unchanged by the indexer-key witness; for
a recurrent state the range of the per-layer mean contraction factor. A layer is *covered* when it
was observed (reads or state writes) and every self-check counter of that layer is recorded and 0
(the counters its memory kind must carry, :mod:`witprobe.kinds`, and any other it recorded).
Headlines are readings (medians, shares), never bounds.
"""

from __future__ import annotations

import statistics
from typing import Any

from witprobe.certify.run_record import LayerRecord, RunRecord, as_record, count
from witprobe.kinds.base import layer_required_counters
from witprobe.kinds.registry import KINDS
from witprobe.self_checks import is_self_check, record_of

# the classes whose headline is the main stored tensor's residual (the kind's first write tensor)
MAIN_TENSOR = {"plain_kv", "latent_kv"}


def _layer_clean(layer: LayerRecord, box_sup: bool, query_aligned: bool) -> bool:
    """Every self-check counter (:mod:`witprobe.self_checks`) recorded and 0: the ones the layer
    must carry (:func:`witprobe.kinds.base.layer_required_counters`; a missing one is not clean)
    and any other the layer recorded."""
    kind = KINDS.get(layer.memory_class)
    write, read = layer.write, layer.read
    if kind is not None:
        for name in layer_required_counters(kind, layer, box_sup, query_aligned):
            if (write if record_of(name) == "write" else read).get(name) != 0:
                return False
    for block in (write, read):
        for k, v in block.items():
            if is_self_check(k) and v != 0:
                return False
    return True


def box_sup_on(run: RunRecord) -> bool:
    """Whether the run metered the box bound: ``config.box_sup``, absent meaning on (``certify run
    --box-sup off`` records ``false``)."""
    return run.config.box_sup is not False


def _observed(layer: LayerRecord) -> bool:
    return bool(layer.read.get("rows", 0)) or bool(layer.read.get("state_writes", 0))


def coverage(run: RunRecord | dict[str, Any]) -> list[dict[str, Any]]:
    """One row per memory class present in the run (typed, or its parsed ``run.json`` object)."""
    run = as_record(run)
    box_sup = box_sup_on(run)
    classes: dict[str, list[LayerRecord]] = {}
    for layer in run.layers:
        kind = KINDS.get(layer.memory_class)
        for cls in kind.classes if kind is not None else ():
            classes.setdefault(cls, []).append(layer)
    rows = []
    for cls, ls in classes.items():
        covered = [x for x in ls if _observed(x) and _layer_clean(x, box_sup, run.config.query_aligned is not None)]
        row: dict[str, Any] = {
            "model": run.model.name,
            "family": run.model.family,
            "memory_class": cls,
            "layers_covered": len(covered),
            "layers_total": len(ls),
        }
        if cls in MAIN_TENSOR:
            rel, cons = [], []
            for x in covered:
                t = KINDS[x.memory_class].main_tensor
                if f"{t}_rel_residual" in x.write:
                    rel.append(_mean(x.write, f"{t}_rel_residual"))
                    c = _mean(x.write, f"{t}_conservativeness")
                    if c is not None:  # None when every residual is 0 (a lossless store: eviction codecs)
                        cons.append(c)
            row["headline"] = {
                "rel_residual_median": statistics.median(rel) if rel else None,
                "conservativeness_median": statistics.median(cons) if cons else None,
            }
        elif cls == "sparse_selector":
            n = sum(count(x.read, "sel_rows") for x in covered)
            top1 = sum(count(x.read, "sel_cert_witness_top1") for x in covered)
            full = sum(count(x.read, "sel_cert_witness") for x in covered)
            row["headline"] = {
                "top1_certified_share": top1 / n if n else None,
                "topk_certified_share": full / n if n else None,
                "selector_rows": n,
            }
        elif cls == "recurrent_state":
            means = [m for x in covered if "a_t" in x.read and (m := _mean(x.read, "a_t")) is not None]
            row["headline"] = {
                "a_mean_min": min(means) if means else None,
                "a_mean_max": max(means) if means else None,
            }
        rows.append(row)
    return rows


def _mean(block: dict, key: str) -> float | None:
    """The mean of statistic ``key`` (``TypeError`` if the name holds a counter: a malformed record)."""
    stat = block[key]
    if isinstance(stat, int):
        raise TypeError(f"coverage: {key} is a counter, not a statistic")
    return stat.mean


def format_coverage(rows: list[dict[str, Any]]) -> list[str]:
    """Human lines: ``model | family | class | covered/total | headline``."""
    out = []
    for r in rows:
        h = r.get("headline", {})
        if r["memory_class"] in MAIN_TENSOR:
            rel, cons = h.get("rel_residual_median"), h.get("conservativeness_median")
            text = (f"residual {100 * rel:.3f}%, conserv. {cons:.2f}x" if rel is not None and cons is not None
                    else "no reading")
        elif r["memory_class"] == "sparse_selector":
            t1, tk = h.get("top1_certified_share"), h.get("topk_certified_share")
            text = (f"top-1 certified {100 * t1:.2f}%, top-k {100 * tk:.2f}% ({h.get('selector_rows')} rows)"
                    if t1 is not None else "no selector rows")
        else:
            lo, hi = h.get("a_mean_min"), h.get("a_mean_max")
            text = f"a_mean in [{lo:.3f}, {hi:.3f}]" if lo is not None else "no reading"
        out.append(f"{r['model']} | {r['family']} | {r['memory_class']} | "
                   f"{r['layers_covered']}/{r['layers_total']} | {text}")
    return out
