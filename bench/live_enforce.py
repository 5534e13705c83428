"""Enforce mode and the kernel audit on the live engine: fallback rate, next-token TV and greedy
agreement against the uncompressed model at several tau, and the injected kernel faults.

    python bench/live_enforce.py [--requests 16] [--max-new-tokens 8] [--taus 0.5 0.2 0.1 0.03]
        [--budgets 0.5 0.25 0.1]
        [--out bench/results/live_enforce.json]

One process loads SmolLM2-135M-Instruct (``paged|eager``, CPU) and runs the same 16 chat prompts
through transformers' continuous batching (page size 16, 96 blocks, 64 tokens per forward,
greedy, EOS disabled):

1. ``exact``: the engine without witprobe (no compression: the uncompressed model);
2. ``served``: the ledger (e4m3 writes) with the live bound and the exact side pool, no enforcement;
   its per-(request, layer) bounds give ``tau_half_median`` = half their median (the acceptance's tau);
3. ``enforce@T`` for ``tau_half_median`` and each ``--taus``: rows whose bound exceeds ``T`` are
   served exact;
4. ``budget@f`` for each ``--budgets`` fraction ``f``: admission on the request's cumulative bound
   (``LiveConfig(request_budget=B)``, no tau) with ``B = f`` times the median over requests of
   ``served``'s ``bound_sum`` (the summed live bounds of every row a request read): a request is
   served compressed until its summed bound would pass ``B``, then exact.

For each run: the fallback rate (rows served exact / rows), rows whose realized TV beat the bound
(must be 0), the next-token TV against ``exact`` at every position where the two runs' greedy
prefixes still agree (a forward hook on ``lm_head`` reads the engine's next-token logits; the
first generated token is always compared), greedy agreement (requests whose whole continuation
equals ``exact``'s; generated tokens equal position by position), the side pool's bytes, and
wall time. Then the audit: each fault of :mod:`witprobe.serving.kernel_faults` with audit 1 %,
requests sent one at a time until the first mismatch (at most 4); and a clean run with every
(row, head) audited.
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

import torch


def _run(lm, prompts: dict[str, list[int]], max_new: int, cfg, sequential: bool = False, stop_on_mismatch: bool = False):
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    from witprobe.serving.attach import attach, detach

    model = lm.model
    gen = GenerationConfig(max_new_tokens=max_new, do_sample=False, eos_token_id=-1)
    cb = ContinuousBatchingConfig(page_size=16, num_blocks=96, max_batch_tokens=64, use_async_batching=False, use_cuda_graph=False)
    mgr = model.init_continuous_batching(generation_config=gen, continuous_batching_config=cb)
    plen = {rid: len(ids) for rid, ids in prompts.items()}
    dists: dict[tuple[str, int], torch.Tensor] = {}

    def hook(_mod, _inp, out):
        reqs = list(mgr.batch_processor.inputs_and_outputs.requests_in_batch)
        if out.shape[1] != len(reqs):
            return
        for i, r in enumerate(reqs):
            rid, pos = str(r.state.request_id), int(r.state.position_offset)
            if rid in plen and pos >= plen[rid]:
                dists[(rid, pos)] = torch.softmax(out[0, i].double(), -1)

    h = model.lm_head.register_forward_hook(hook)
    out: dict[str, list[int]] = {}
    sent = 0
    with tempfile.TemporaryDirectory() as tmp:
        led = attach(mgr, cfg, journal=Path(tmp) / "journal.sqlite") if cfg is not None else None
        if led is None:
            mgr.warmup()
        mgr.start()
        t0 = time.perf_counter()
        try:
            waves = [[rid] for rid in prompts] if sequential else [list(prompts)]
            for wave in waves:
                for rid in wave:
                    mgr.add_request(prompts[rid], request_id=rid, max_new_tokens=max_new)
                    sent += 1
                done = 0
                while done < len(wave):
                    r = mgr.get_result(timeout=600)
                    if r is None:
                        raise RuntimeError("engine stalled")
                    if r.is_finished():
                        out[r.request_id] = list(r.generated_tokens)
                        done += 1
                if stop_on_mismatch and led is not None and led.meter.totals["audit_mismatches"]:
                    break
            wall = time.perf_counter() - t0
        finally:
            mgr.stop(block=True, timeout=60)
            h.remove()
            model._cached_continuous_batching_manager = None
        verdicts = {rid: led.verdict(rid) for rid in out} if led is not None else {}
        meter = None
        if led is not None:
            detach(led)
            meter = led.meter
    return {"tokens": out, "dists": dists, "wall_s": wall, "verdicts": verdicts, "sent": sent,
            "totals": dict(meter.totals, audit_worst_ratio=meter.audit_worst_ratio) if meter is not None else None,
            "side_pool_bytes": meter.side_pool_bytes if meter is not None else 0,
            "witness_bytes": meter.witness_bytes if meter is not None else 0}


def _compare(run: dict, exact: dict, plen: dict[str, int]) -> dict:
    tvs, first = [], []
    for rid, toks in exact["tokens"].items():
        got = run["tokens"].get(rid, [])
        for k in range(len(toks)):
            key = (rid, plen[rid] + k)
            if key in run["dists"] and key in exact["dists"]:
                tv = 0.5 * float((run["dists"][key] - exact["dists"][key]).abs().sum())
                tvs.append(tv)
                if k == 0:
                    first.append(tv)
            if k >= len(got) or got[k] != toks[k]:
                break  # past the first disagreement the two runs condition on different tokens
    n_tok = sum(len(t) for t in exact["tokens"].values())
    same = sum(a == b for rid, t in exact["tokens"].items() for a, b in zip(t, run["tokens"].get(rid, [])))
    return {"next_token_tv_first": {"median": statistics.median(first), "max": max(first)} if first else None,
            "next_token_tv_agreeing_prefix": {"n": len(tvs), "median": statistics.median(tvs), "max": max(tvs)} if tvs else None,
            "greedy_requests_identical": sum(run["tokens"].get(r) == t for r, t in exact["tokens"].items()),
            "greedy_tokens_equal": same, "tokens": n_tok}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--taus", type=float, nargs="*", default=[0.5, 0.2, 0.1, 0.03])
    ap.add_argument("--budgets", type=float, nargs="*", default=[0.5, 0.25, 0.1],
                    help="request budgets, as fractions of the median per-request bound sum of the unenforced run")
    ap.add_argument("--fault-requests", type=int, default=4)
    ap.add_argument("--clean-audit-requests", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "live_enforce.json")
    a = ap.parse_args()
    import transformers

    from witprobe.ledger.trace import PROMPTS
    from witprobe.models.zoo import load_model
    from witprobe.serving.config import LiveConfig
    from witprobe.serving.kernel_faults import KERNEL_FAULTS, inject

    torch.set_num_threads(a.threads)
    lm = load_model("smollm2", attn_implementation="paged|eager")

    def ids(text: str) -> list[int]:
        return list(lm.tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                                     return_dict=True)["input_ids"])

    prompts = {f"req-{i}": ids(PROMPTS[i % len(PROMPTS)]) for i in range(a.requests)}
    plen = {r: len(v) for r, v in prompts.items()}
    load0 = os.getloadavg()
    exact = _run(lm, prompts, a.max_new_tokens, None)
    print(f"[bench] exact {exact['wall_s']:.1f} s", file=sys.stderr)
    served = _run(lm, prompts, a.max_new_tokens, LiveConfig(keep_exact=True))
    layer_bounds = [b for v in served["verdicts"].values() for b in v["attention"]["bound_max_per_layer"]]
    tau_half = statistics.median(layer_bounds) / 2
    rows = []

    bound_sum_median = statistics.median(v["attention"]["bound_sum"] for v in served["verdicts"].values())

    def row(name: str, tau, r: dict, budget=None) -> dict:
        t = r["totals"]
        exhausted = sum(bool(v["attention"].get("budget", {}).get("exhausted")) for v in r["verdicts"].values())
        return {"run": name, "tau": tau, "request_budget": budget, "requests_budget_exhausted": exhausted,
                "rows": t["rows"], "rows_enforced": t["rows_enforced"],
                "fallback_rate": t["rows_enforced"] / t["rows"], "bound_beaten": t["bound_beaten"],
                "side_pool_bytes": r["side_pool_bytes"], "witness_bytes": r["witness_bytes"], "wall_s": r["wall_s"],
                **_compare(r, exact, plen)}

    rows.append(row("served (no enforcement)", None, served))
    for tau in [tau_half, *a.taus]:
        r = _run(lm, prompts, a.max_new_tokens, LiveConfig(tau=tau))
        rows.append(row(f"enforce@{tau:.4g}", tau, r))
        print(f"[bench] tau={tau:.4g}: fallback {rows[-1]['fallback_rate']:.3f}, "
              f"first-token TV median {rows[-1]['next_token_tv_first']['median']:.4f}", file=sys.stderr)
    for frac in a.budgets:
        budget = frac * bound_sum_median
        r = _run(lm, prompts, a.max_new_tokens, LiveConfig(request_budget=budget))
        rows.append(row(f"budget@{frac:g}", None, r, budget))
        print(f"[bench] budget {frac:g} x median bound sum ({budget:.4g}): fallback {rows[-1]['fallback_rate']:.3f}, "
              f"first-token TV median {rows[-1]['next_token_tv_first']['median']:.4f}", file=sys.stderr)
    faults = []
    for fault in KERNEL_FAULTS:
        with inject(fault):
            r = _run(lm, dict(list(prompts.items())[:a.fault_requests]), 2, LiveConfig(audit_rate=0.01), sequential=True,
                     stop_on_mismatch=True)
        t = r["totals"]
        faults.append({"fault": fault, "audit_rate": 0.01, "requests_until_caught": r["sent"] if t["audit_mismatches"] else None,
                       "audit_rows": t["audit_rows"], "mismatches": t["audit_mismatches"]})
        print(f"[bench] fault {fault}: caught after {faults[-1]['requests_until_caught']} request(s)", file=sys.stderr)
    clean = _run(lm, dict(list(prompts.items())[:a.clean_audit_requests]), 2, LiveConfig(audit_rate=1.0))
    rec = {
        "schema": "witprobe-bench-live-enforce/2",
        "command": "python bench/live_enforce.py " + " ".join(sys.argv[1:]),
        "workload": {"requests": a.requests, "max_new_tokens": a.max_new_tokens, "page_size": 16, "num_blocks": 96,
                     "max_batch_tokens": 64, "threads": a.threads, "model": "SmolLM2-135M-Instruct",
                     "codec": "the ledger's e4m3 write path (drop_bits 2)"},
        "env": {"torch": torch.__version__, "transformers": transformers.__version__, "cpus": os.cpu_count(),
                "loadavg_start": load0, "loadavg_end": os.getloadavg()},
        "layer_bound_median": statistics.median(layer_bounds), "tau_half_median": tau_half,
        "bound_sum_median": bound_sum_median,
        "runs": rows,
        "faults": faults,
        "clean_audit": {"requests": a.clean_audit_requests, "audit_rate": 1.0, "audit_rows": clean["totals"]["audit_rows"],
                        "mismatches": clean["totals"]["audit_mismatches"],
                        "worst_error_over_allowance": clean["totals"]["audit_worst_ratio"]},
        "exact_wall_s": exact["wall_s"],
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps({k: rec[k] for k in ("tau_half_median", "faults", "clean_audit")}, indent=1))
    for r in rows:
        print(f"{r['run']:<26} fallback {r['fallback_rate']:.3f}  TV1 med {r['next_token_tv_first']['median']:.4f} "
              f"max {r['next_token_tv_first']['max']:.4f}  greedy same {r['greedy_requests_identical']}/{a.requests}  beaten {r['bound_beaten']}")


if __name__ == "__main__":
    main()
