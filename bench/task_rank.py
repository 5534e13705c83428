"""Do the per-layer bounds rank compression configurations the way task damage does?

For each configuration (codec) on SmolLM2 this measures one run on the default prompts
(``witprobe.certify.measure``, box meter on), derives the certificate without proof kernels (the
bounds and their realizations are the same; tiers are empirical), and reads two tasks beside it
(``witprobe.certify.tasks``: the built-in needle in a haystack, 8 haystacks of about 300 tokens,
and perplexity on the shipped passages), served compressed and uncompressed. Per configuration:

- ``max_bound`` / ``mean_bound``: the largest and the mean over layers of the layer's attention TV
  bound (the claimed bound of its ``attn_tv`` claim, or of its ``evict_tv`` claim where the codec
  evicts; the larger of the two per layer; a vacuous bound counts as 1);
- ``vacuous_layers``: how many layers' bound is vacuous (1);
- ``max_realized`` / ``mean_realized``: the same for the realized TV (a reading);
- ``niah_drop``: uncompressed minus compressed accuracy; ``ppl_rise``: compressed over
  uncompressed perplexity, minus 1.

Then Spearman's rank correlation (average ranks for ties) between each bound summary and each
damage, and, for comparison, between the realized TV and the damage. A correlation over a constant
column is undefined and is reported as ``null`` with the reason, never as a number.

Run: ``python bench/task_rank.py --out bench/results/task_rank_cpu.json`` (about 35 min on 2 cores).
The built-in eviction policies stand in for kvpress presses: kvpress does not install beside
transformers 5.24 (issue 28).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

from witprobe.certify.pipeline import certificate_without_kernels
from witprobe.certify.measure import MeasureConfig, environment, measure
from witprobe.models.zoo import load_model

SCHEMA = "witprobe-bench-task-rank/1"
CONFIGS = ("int8", "int6", "fp8-e4m3", "int4", "int2", "kivi2", "kivi2-r32", "evict-streaming-256",
           "evict-streaming", "evict-h2o-256", "evict-h2o", "evict-snapkv-256", "evict-snapkv")
TASKS = ("niah", "ppl")
SUMMARIES = ("max_bound", "mean_bound", "vacuous_layers", "max_realized", "mean_realized")
DAMAGES = ("niah_drop", "ppl_rise")


def ranks(xs: list[float]) -> list[float]:
    """Ranks 1..n, ties given their average rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: list[float], ys: list[float]) -> tuple[float | None, str]:
    """Spearman's rho (Pearson on average ranks), or ``None`` with why it is undefined."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None, f"needs at least 3 pairs, got {len(xs)}"
    if any(not math.isfinite(v) for v in (*xs, *ys)):
        raise ValueError("a NaN or an infinity among the values (never a correlation)")
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    if sx == 0 or sy == 0:
        return None, "one column is constant"
    return sum((a - mx) * (b - my) for a, b in zip(rx, ry)) / (sx * sy), ""


def per_layer(claims: list[dict], key: str) -> list[float]:
    """Per layer, the larger of its attn_tv and evict_tv values (``bound``: the claimed bound,
    1 where vacuous; ``realized``: the realized TV max)."""
    layers: dict[int, float] = {}
    for c in claims:
        if c["kind"] not in ("attn_tv", "evict_tv"):
            continue
        v = (1.0 if c["vacuous"] else float(c["bound"]["decimal_up"])) if key == "bound" else float(c["realized_tv_max"] or 0.0)
        layers[c["layer"]] = max(layers.get(c["layer"], 0.0), v)
    return [layers[k] for k in sorted(layers)]


def bench_config(loaded, codec: str, max_new_tokens: int) -> dict:
    t0 = time.monotonic()
    cfg = MeasureConfig(codec=codec, max_new_tokens=max_new_tokens, tasks=TASKS)
    run = measure(loaded, cfg).to_json()
    cert = certificate_without_kernels(run)
    bounds, real = per_layer(cert["claims"], "bound"), per_layer(cert["claims"], "realized")
    tasks = {t["task"]: t for t in run["tasks"]}
    beaten = any(f.get("beaten_by_realized") for c in cert["claims"] for f in c.get("forms", {}).values())
    return {
        "codec": codec, "verdict": cert["summary"]["verdict"], "bound_beaten": beaten,
        "max_bound": max(bounds), "mean_bound": statistics.fmean(bounds),
        "vacuous_layers": sum(1 for b in bounds if b >= 1.0),
        "max_realized": max(real), "mean_realized": statistics.fmean(real),
        "niah_compressed": tasks["niah"]["compressed"], "niah_uncompressed": tasks["niah"]["uncompressed"],
        "niah_drop": tasks["niah"]["uncompressed"] - tasks["niah"]["compressed"],
        "ppl_compressed": tasks["ppl"]["compressed"], "ppl_uncompressed": tasks["ppl"]["uncompressed"],
        "ppl_rise": tasks["ppl"]["compressed"] / tasks["ppl"]["uncompressed"] - 1.0,
        "seconds": round(time.monotonic() - t0, 1),
    }


def correlations(rows: list[dict]) -> list[dict]:
    out = []
    for s in SUMMARIES:
        for d in DAMAGES:
            rho, why = spearman([r[s] for r in rows], [r[d] for r in rows])
            out.append({"summary": s, "damage": d, "n": len(rows), "spearman": rho, **({"undefined": why} if why else {})})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS))
    ap.add_argument("--max-new-tokens", type=int, default=16)
    args = ap.parse_args(argv)
    loaded = load_model("smollm2")
    rows: list[dict] = []
    for i, codec in enumerate(args.configs, start=1):
        rows.append(bench_config(loaded, codec, args.max_new_tokens))
        r = rows[-1]
        print(f"[{i}/{len(args.configs)}] {codec}: max bound {r['max_bound']:.4f}, mean {r['mean_bound']:.4f}; niah "
              f"{r['niah_compressed']:.3f} vs {r['niah_uncompressed']:.3f}; ppl {r['ppl_compressed']:.3f} vs "
              f"{r['ppl_uncompressed']:.3f} ({r['seconds']} s)", file=sys.stderr, flush=True)
        doc = {"schema": SCHEMA, "model": "smollm2", "tasks": list(TASKS), "max_new_tokens": args.max_new_tokens,
               "environment": environment(), "configs": rows,
               "correlations": correlations(rows) if len(rows) >= 3 else []}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        tmp.replace(args.out)  # a partial result is whole after every configuration
    for c in doc["correlations"]:
        rho = "undefined (" + c["undefined"] + ")" if c["spearman"] is None else f"{c['spearman']:+.3f}"
        print(f"spearman({c['summary']}, {c['damage']}) over {c['n']}: {rho}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
