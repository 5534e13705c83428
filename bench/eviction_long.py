"""One >= 1,500-token eviction measurement on SmolLM2 (not a timed test): bound vs realized TV of
full vs pruned attention per layer, for one eviction codec.

    PYTHONPATH=python nice python bench/eviction_long.py [CODEC] [OUT.json]

The prompt is the built-in notes prompt repeated until it has at least 1,500 tokens; 4 tokens
are generated. Prints, per layer, the realized maximum, the layer bound RHO/(1+RHO) and the mean
row bound; writes the per-layer numbers to OUT.json (default bench/results/eviction_long.json).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from witprobe.certify.derive import derive
from witprobe.certify.measure import DEFAULT_PROMPTS, MeasureConfig, measure
from witprobe.models.zoo import load_model

MIN_TOKENS = 1500


def main(codec: str = "evict-streaming-256", out: str = "bench/results/eviction_long.json") -> int:
    loaded = load_model("smollm2")
    base = DEFAULT_PROMPTS[-1]
    prompt = base
    while len(loaded.tokenizer(prompt)["input_ids"]) < MIN_TOKENS:
        prompt += " " + base
    t0 = time.time()
    run = measure(loaded, MeasureConfig(model="smollm2", codec=codec, max_new_tokens=4, prompts=(prompt,),
                                        reference=False)).to_json()
    d = derive(run)
    rows = []
    for c, layer in zip((c for c in d.claims if c.kind == "evict_tv"), run["layers"]):
        r = layer["read"]
        rows.append({"layer": c.layer, "realized_max": c.realized_max, "bound": float(c.value) if c.value else None,
                     "vacuous": c.vacuous, "row_bound_mean": r["evict_bound"]["mean"],
                     "row_realized_mean": r["evict_tv_realized"]["mean"], "rows": r["evict_rows"],
                     "rows_evicting": r["evict_rows_evicting"], "rows_beaten": r["rows_evict_beaten"]})
        print(f"L{c.layer:02d} realized {c.realized_max:.4f} bound {rows[-1]['bound']} "
              f"row-bound mean {rows[-1]['row_bound_mean']:.4f} row-realized mean {rows[-1]['row_realized_mean']:.4f}")
    res = {"codec": codec, "prompt_tokens": run["requests"][0]["prompt_tokens"], "seconds": time.time() - t0,
           "failures": d.failures, "self_checks_nonzero": {k: v for k, v in d.self_checks.items() if v},
           "layers": rows}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(res, indent=1))
    print(f"prompt tokens {res['prompt_tokens']}, failures {len(d.failures)}, nonzero self-checks "
          f"{res['self_checks_nonzero']}, {res['seconds']:.0f} s")
    return 0 if not d.failures and not res["self_checks_nonzero"] else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
