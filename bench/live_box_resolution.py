"""The live meter's box resolution: time against tightness, on the box evaluations of a real serving run.

    python bench/live_box_resolution.py [--requests 16] [--max-new-tokens 8] [--rounds 3]
        [--specs 16x64 8x32 8x16 4x16] [--out bench/results/live_box_resolution.json]

One process loads SmolLM2-135M-Instruct (``paged|eager``, CPU, one torch thread) and serves 16 chat
prompts through transformers' continuous batching with the ledger and the live bound on every layer
(``bench/serving_throughput.py``'s ``bound`` mode). Every call of the live meter to
:func:`witprobe.probe.box_sup.box_sup_bound` is recorded: its served distributions ``p'`` and radii
``c`` (``(S, H, Q, T)`` float64, exactly the meter's inputs). Each resolution ``KxG`` (``K``
intervals, ``G`` buckets; :class:`~witprobe.probe.box_sup.BoxSupSpec`) then re-evaluates every
recorded call, ``--rounds`` times, interleaved with the order rotated each round.

Per resolution: the median over rounds of the seconds for all calls, and per row (rows with a
positive reference bound) the ratio of its bound to the reference resolution's (the first of
``--specs``): median, 90th percentile and maximum. Any resolution is sound (the box theorem holds
for any grid and any buckets); a finer one is tighter and slower. The live meter's choice
(:data:`witprobe.serving.read_meter.LIVE_BOX`) is recorded beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _spec(text: str):
    from witprobe.probe.box_sup import BoxSupSpec

    k, g = text.lower().split("x")
    return BoxSupSpec(intervals=int(k), buckets=int(g))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--specs", nargs="+", default=["16x64", "8x32", "8x16", "4x16"])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "live_box_resolution.json")
    a = ap.parse_args()
    specs = {s: _spec(s) for s in a.specs}
    import transformers

    import witprobe.serving.read_meter as read_meter
    from serving_throughput import run_once
    from witprobe.ledger.trace import PROMPTS
    from witprobe.models.zoo import load_model
    from witprobe.probe.box_sup import box_sup_bound

    torch.set_num_threads(1)
    lm = load_model("smollm2", attn_implementation="paged|eager")
    prompts = [list(lm.tokenizer.apply_chat_template([{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
                                                     add_generation_prompt=True, return_dict=True)["input_ids"])
               for i in range(a.requests)]
    calls: list[tuple[torch.Tensor, torch.Tensor]] = []
    meter_box = read_meter.box_sup_bound

    def recording(p, c, spec):
        calls.append((p.clone(), c.clone()))
        return meter_box(p, c, spec)

    read_meter.box_sup_bound = recording
    try:
        served = run_once(lm.model, lm.tokenizer, prompts, a.max_new_tokens, "bound")
    finally:
        read_meter.box_sup_bound = meter_box
    rows = sum(p[..., 0].numel() for p, _ in calls)
    print(f"[bench] recorded {len(calls)} box calls, {rows} rows ({served['wall_s']:.1f} s served)", file=sys.stderr)
    load0 = os.getloadavg()
    seconds: dict[str, list[float]] = {s: [] for s in specs}
    bounds: dict[str, torch.Tensor] = {}
    names = list(specs)
    for k in range(a.rounds):
        for name in names[k % len(names):] + names[:k % len(names)]:
            t0 = time.perf_counter()
            out = [box_sup_bound(p, c, specs[name]).reshape(-1) for p, c in calls]
            seconds[name].append(time.perf_counter() - t0)
            bounds[name] = torch.cat(out)
            print(f"[bench] round {k + 1}/{a.rounds} {name}: {seconds[name][-1]:.2f} s", file=sys.stderr)
    ref_name = names[0]
    ref = bounds[ref_name]
    if not bool(torch.isfinite(torch.stack(list(bounds.values()))).all()):
        raise SystemExit("a bound is not a number")
    pos = ref > 0
    results = {}
    for name in names:
        r = bounds[name][pos] / ref[pos]
        results[name] = {"intervals": specs[name].intervals, "buckets": specs[name].buckets,
                         "seconds_median": statistics.median(seconds[name]), "seconds": seconds[name],
                         "time_over_reference": statistics.median(seconds[name]) / statistics.median(seconds[ref_name]),
                         "bound_over_reference_median": float(r.median()), "bound_over_reference_p90": float(r.quantile(0.9)),
                         "bound_over_reference_max": float(r.max()), "bound_median": float(bounds[name].median())}
    live = read_meter.LIVE_BOX
    rec = {
        "schema": "witprobe-bench-live-box/1",
        "command": "python bench/live_box_resolution.py " + " ".join(sys.argv[1:]),
        "workload": {"requests": a.requests, "max_new_tokens": a.max_new_tokens, "rounds": a.rounds, "threads": 1,
                     "model": "SmolLM2-135M-Instruct", "mode": "bound (ledger + live bound, every layer)"},
        "env": {"torch": torch.__version__, "transformers": transformers.__version__, "cpus": os.cpu_count(),
                "loadavg_start": load0, "loadavg_end": os.getloadavg()},
        "calls": len(calls), "rows": rows, "rows_positive_reference": int(pos.sum()), "reference": ref_name,
        "live_box": f"{live.intervals}x{live.buckets}",
        "specs": results,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps({k: {x: v[x] for x in ("seconds_median", "time_over_reference", "bound_over_reference_median",
                                             "bound_over_reference_p90")} for k, v in results.items()}, indent=1))


if __name__ == "__main__":
    main()
