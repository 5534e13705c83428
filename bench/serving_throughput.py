"""Serving throughput with witprobe off, the ledger alone, and the ledger with the live read meter, as ratios measured in one run.

    python bench/serving_throughput.py [--requests 16] [--max-new-tokens 8] [--repeats 4] [--threads 1] [--modes off ledger ...]
        [--out bench/results/serving_throughput.json]

Modes (:data:`MODES`): ``off`` (no witprobe), ``ledger`` (the ledger, no read meter), ``bound1``
(the live bound on layer 15 only, a declared one-layer subset), ``bound`` (every layer),
``bound_audit`` (every layer, audit 1 %). Each mode's ratio is median(mode) / median(off) of
tokens/s, and the live bound's marginal cost is also given against ``ledger``.

One process loads SmolLM2-135M-Instruct once (``attn_implementation="paged|eager"``, CPU) and runs
the same workload through transformers' continuous batching (``ContinuousBatchingManager``: 16
chat prompts submitted together, greedy, EOS disabled, page size 16, 96 blocks, 64 tokens per
forward), alternating ledger off / ledger on (``witprobe.serving.attach``: certified writes of
every key and value entry, read checks, byte audit of what the model read, journal with
``synchronous=NORMAL``), ``--repeats`` times each, order rotated each round. Throughput =
generated tokens / wall seconds from the first submission to the last result. The ratio is
median(on) / median(off) of tokens/s. Greedy tokens are compared: the ledger serves e4m3 bytes,
so outputs may differ from the fp32 baseline, and the count of differing requests is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


MODES = {
    "off": None,
    "ledger": {"live_bound": False},
    "bound1": {"bound_layers": (15,)},
    "bound": {},
    "bound_audit": {"audit_rate": 0.01},
}


def run_once(model, tok, prompts: list[list[int]], max_new: int, mode: str) -> dict:
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    from witprobe.serving.attach import attach, detach
    from witprobe.serving.config import LiveConfig

    gen = GenerationConfig(max_new_tokens=max_new, do_sample=False, eos_token_id=-1)
    cb = ContinuousBatchingConfig(page_size=16, num_blocks=96, max_batch_tokens=64, use_async_batching=False, use_cuda_graph=False)
    mgr = model.init_continuous_batching(generation_config=gen, continuous_batching_config=cb)
    with tempfile.TemporaryDirectory() as tmp:
        kw = MODES[mode]
        led = attach(mgr, LiveConfig(**kw), journal=Path(tmp) / "journal.sqlite") if kw is not None else None
        if led is None:
            mgr.warmup()
        mgr.start()
        t0 = time.perf_counter()
        for i, ids in enumerate(prompts):
            mgr.add_request(ids, request_id=f"req-{i}", max_new_tokens=max_new)
        out = {}
        while len(out) < len(prompts):
            r = mgr.get_result(timeout=600)
            if r is None:
                raise RuntimeError("engine stalled")
            if r.is_finished():
                out[r.request_id] = list(r.generated_tokens)
        wall = time.perf_counter() - t0
        mgr.stop(block=True, timeout=60)
        extra = {}
        if led is not None:
            detach(led)
            extra = {"write_events": led.n_write_events, "read_checks": led.n_read_checks, "batches": led.n_batches,
                     "journal_records": led.journal.head[0]}
            if led.meter is not None:
                extra["read_meter"] = dict(led.meter.totals)
    model._cached_continuous_batching_manager = None
    n_tok = sum(len(v) for v in out.values())
    return {"mode": mode, "wall_s": wall, "tokens": n_tok, "tokens_per_s": n_tok / wall, "outputs": out, **extra}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--modes", nargs="+", choices=tuple(MODES), default=list(MODES))
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "serving_throughput.json")
    a = ap.parse_args()
    import torch
    import transformers

    from witprobe.ledger.trace import PROMPTS
    from witprobe.models.zoo import load_model

    torch.set_num_threads(a.threads)
    lm = load_model("smollm2", attn_implementation="paged|eager")
    prompts = [list(lm.tokenizer.apply_chat_template([{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}],
                                                     add_generation_prompt=True, return_dict=True)["input_ids"]) for i in range(a.requests)]
    load0 = os.getloadavg()
    modes = list(dict.fromkeys(["off", *a.modes]))
    runs = []
    for k in range(a.repeats):
        order = modes[k % len(modes):] + modes[:k % len(modes)]  # rotated each round
        for mode in order:
            r = run_once(lm.model, lm.tokenizer, prompts, a.max_new_tokens, mode)
            print(f"[bench] {mode:<12} {r['tokens_per_s']:.2f} tok/s ({r['wall_s']:.1f} s)", file=sys.stderr)
            runs.append(r)
    med = {m: statistics.median(r["tokens_per_s"] for r in runs if r["mode"] == m) for m in modes}
    first = {m: next(r for r in runs if r["mode"] == m) for m in modes}
    off0 = first["off"]["outputs"]
    rec = {
        "schema": "witprobe-bench-serving/2",
        "command": "python bench/serving_throughput.py " + " ".join(sys.argv[1:]),
        "workload": {"requests": a.requests, "max_new_tokens": a.max_new_tokens, "repeats": a.repeats, "page_size": 16,
                     "num_blocks": 96, "max_batch_tokens": 64, "threads": a.threads, "model": "SmolLM2-135M-Instruct"},
        "env": {"torch": torch.__version__, "transformers": transformers.__version__, "cpus": os.cpu_count(),
                "loadavg_start": load0, "loadavg_end": os.getloadavg()},
        "tokens_per_s": med,
        "ratio_over_off": {m: med[m] / med["off"] for m in modes},
        "ratio_over_ledger": {m: med[m] / med["ledger"] for m in modes} if "ledger" in med else None,
        "requests_with_different_tokens": {m: sum(first[m]["outputs"][k] != off0[k] for k in off0) for m in modes},
        "runs": [{k: v for k, v in r.items() if k != "outputs"} for r in runs],
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps({k: rec[k] for k in ("tokens_per_s", "ratio_over_off", "ratio_over_ledger", "requests_with_different_tokens")}, indent=1))


if __name__ == "__main__":
    main()
