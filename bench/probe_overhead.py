"""Overhead of the always-on probe on SmolLM2 decoding (CPU, eager; no graphs).

Measures, in one run:

1. decode throughput and p99 per-token latency with the probe **off** (a plain ``DynamicCache``),
   on a **declared one-layer subset** (fused torch meter), on **all layers** (fused torch meter),
   and on all layers with the **unfused** reference meter; each batch size is a setting with its
   own noise floor from repeated probe-off runs (settings interleaved round-robin, rotated each
   round, after one discarded warm-up run);
2. the band meter per invocation: unfused reference vs fused torch path (time and op count) and
   the Triton kernel (one launch; under ``TRITON_INTERPRET=1`` its time is the interpreter's and
   says nothing about speed).

Ratios are printed and written as JSON (``--out``). Definitions: ``probe_bench_lib``.

    python bench/probe_overhead.py --out bench/results/probe_overhead_cpu.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if not os.environ.get("TRITON_INTERPRET"):
    os.environ["TRITON_INTERPRET"] = "1"  # CPU only: Triton can run here only in its interpreter
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_bench_lib import (  # noqa: E402
    OpCounter,
    RunResult,
    compare_settings,
    environment,
    runs_json,
    time_call,
    write_json,
)

from witprobe.probe.accumulators import Accumulator  # noqa: E402
from witprobe.probe.band_meter import BandMeter, BandMeterSpec  # noqa: E402
from witprobe.probe.probed_cache import ProbedCache  # noqa: E402
from witprobe.probe.runtime import ProbeConfig, ProbeRuntime  # noqa: E402

SCHEMA = "witprobe-bench-probe/1"
PROMPT = "Explain, step by step, how a transformer model uses attention to process a long document."


def settings(num_layers: int, layer: int) -> dict[str, ProbeConfig | None]:
    return {
        "off": None,
        "one_layer": ProbeConfig(layers=(layer,), meter="torch"),
        "all_layers": ProbeConfig(layers=None, meter="torch"),
        "all_layers_unfused": ProbeConfig(layers=None, meter="reference"),
    }


def decode_run(model, ids: torch.Tensor, cfg: ProbeConfig | None, steps: int, setting: str, rnd: int) -> RunResult:
    from transformers import DynamicCache

    n_layers = model.config.num_hidden_layers
    if cfg is None:
        cache = DynamicCache()
        rt = None
    else:
        rt = ProbeRuntime(n_layers, cfg)  # allocated before the timed region
        cache = ProbedCache(rt)
    step_s: list[float] = []
    with torch.no_grad():
        t0 = time.perf_counter()
        out = model(input_ids=ids, cache=cache)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        prefill = time.perf_counter() - t0
        toks = [int(nxt[0, 0])]
        for _ in range(steps):
            t0 = time.perf_counter()
            out = model(input_ids=nxt, cache=cache)
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            step_s.append(time.perf_counter() - t0)
            toks.append(int(nxt[0, 0]))
    if rt is not None:  # liveness, outside the timed region: every declared slot ran every step
        expect = steps + 1
        calls = rt.exec_table[list(rt.declared_layers)]
        if not bool((calls == expect).all()) or int(rt.exec_table.sum()) != expect * calls.numel():
            raise RuntimeError(f"{setting}: device counters {rt.exec_table.tolist()} != {expect} on declared layers")
    return RunResult(setting, int(ids.shape[0]), rnd, step_s, prefill, toks)


def meter_bench(num_kv_heads: int, head_dim: int, batch_sizes: list[int], prompt_len: int, bands: int) -> list[dict]:
    """Per-invocation cost of the three meter implementations on the decode and prefill shapes."""
    spec = BandMeterSpec(bands, (8,))
    shapes = {f"decode_b{b}": b * num_kv_heads for b in batch_sizes}
    shapes["prefill_b1"] = min(256, num_kv_heads * prompt_len)
    impls = ["reference", "torch"]
    try:
        import witprobe.kernels.band_meter  # noqa: F401

        impls.append("triton")
    except ImportError:
        pass
    g = torch.Generator().manual_seed(0)
    out = []
    for name, rows in shapes.items():
        x = torch.randn(rows, head_dim, generator=g)
        row: dict = {"shape": name, "rows": rows, "dim": head_dim}
        for impl in impls:
            acc = Accumulator("cpu")
            meter = BandMeter(spec, impl, "cpu")
            block = meter.declare(acc)
            ex = torch.zeros((), dtype=torch.int64)

            def fn(meter=meter, acc=acc, block=block, ex=ex, x=x):
                meter(x, acc, block, ex)

            interp = impl == "triton"
            sec = time_call(fn, lambda: None, min_time_s=0.05 if interp else 0.3, max_iters=3 if interp else 5000)
            with OpCounter() as oc:
                fn()
            row[impl] = {
                "us_per_call": sec * 1e6,
                "torch_ops": oc.count,
                "kernel_launches": 1 if impl == "triton" else oc.count,
                "timing_meaningful": not interp,
            }
        row["unfused_over_fused_torch_time"] = row["reference"]["us_per_call"] / row["torch"]["us_per_call"]
        row["unfused_over_fused_torch_ops"] = row["reference"]["torch_ops"] / row["torch"]["torch_ops"]
        if "triton" in row:
            row["unfused_ops_over_triton_launches"] = row["reference"]["torch_ops"] / row["triton"]["kernel_launches"]
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=32, help="timed decode steps per run")
    ap.add_argument("--repeats", type=int, default=5, help="runs per setting and batch size (probe-off included)")
    ap.add_argument("--batch-sizes", default="1,4")
    ap.add_argument("--layer", type=int, default=None, help="the declared one-layer subset (default: middle layer)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="bench/results/probe_overhead_cpu.json")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    from witprobe.models.zoo import load_model

    lm = load_model("smollm2")
    model, tok = lm.model, lm.tokenizer
    mc = model.config
    n_layers = mc.num_hidden_layers
    head_dim = getattr(mc, "head_dim", None) or mc.hidden_size // mc.num_attention_heads
    layer = n_layers // 2 if args.layer is None else args.layer
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    confs = settings(n_layers, layer)
    base_ids = tok(PROMPT, return_tensors="pt")["input_ids"]
    runs: list[RunResult] = []
    names = list(confs)
    t_start = time.time()
    load_start = os.getloadavg()
    for b in batch_sizes:
        ids = base_ids.repeat(b, 1)
        decode_run(model, ids, None, min(8, args.steps), "warmup", -1)  # discarded
        for rnd in range(args.repeats):
            order = names[rnd % len(names):] + names[: rnd % len(names)]
            for name in order:
                r = decode_run(model, ids, confs[name], args.steps, name, rnd)
                runs.append(r)
                print(f"batch {b} round {rnd} {name:<20} {r.throughput:8.2f} tok/s  p99 {r.p99_ms:7.2f} ms",
                      flush=True)
    same = {tuple(r.tokens) for r in runs if r.batch == batch_sizes[0]}
    comparison = compare_settings(runs)
    meters = meter_bench(mc.num_key_value_heads, head_dim, batch_sizes, int(base_ids.shape[1]), 4)
    record = {
        "schema": SCHEMA,
        "what": "probe overhead on SmolLM2-135M decode, CPU eager (no graphs); meter cost per invocation",
        "command": "python bench/probe_overhead.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "environment": environment("cpu"),
        "config": {
            "model": "smollm2", "num_layers": n_layers, "declared_layer": layer, "steps": args.steps,
            "repeats": args.repeats, "batch_sizes": batch_sizes, "prompt_tokens": int(base_ids.shape[1]),
            "bands": 4, "bits": [8], "row_cap": 256,
        },
        "greedy_tokens_identical_across_settings": len(same) == 1,
        "wall_s": time.time() - t_start,
        "load_average_start_end": [list(load_start), list(os.getloadavg())],
        "comparison": comparison,
        "meter": meters,
        "runs": runs_json(runs),
        "caliber": [
            "CPU eager decode on a shared 2-core machine: the noise floor is large and is the yardstick",
            "the Triton meter's time under TRITON_INTERPRET=1 is the numpy interpreter's, not a speed",
            "op counts are torch operator calls excluding views; on a GPU each is one kernel launch",
        ],
    }
    path = write_json(args.out, record)
    print()
    for b, res in comparison.items():
        nf = res["noise_floor"]
        print(f"batch {b}: probe-off noise floor  throughput +-{nf['throughput']:.2%}  p99 +-{nf['p99']:.2%} "
              f"({nf['n_off_runs']} runs)")
        for name, s in res["settings"].items():
            print(f"  {name:<20} {s['throughput_tok_s_median']:8.2f} tok/s  p99 {s['p99_ms_median']:7.2f} ms  "
                  f"d_thr {s['delta_throughput']:+.2%} ({'inside' if s['throughput_inside_noise_floor'] else 'OUTSIDE'})"
                  f"  d_p99 {s['delta_p99']:+.2%} ({'inside' if s['p99_inside_noise_floor'] else 'OUTSIDE'})"
                  f"  cost x{s['cost_ratio']:.3f}")
    for m in meters:
        line = (f"meter {m['shape']:<11} rows {m['rows']:>3}: unfused {m['reference']['us_per_call']:8.1f} us "
                f"({m['reference']['torch_ops']} ops)  fused torch {m['torch']['us_per_call']:7.1f} us "
                f"({m['torch']['torch_ops']} ops)  ratio x{m['unfused_over_fused_torch_time']:.2f}")
        if "triton" in m:
            line += f"  triton 1 launch (interpreter {m['triton']['us_per_call'] / 1e3:.1f} ms, not a speed)"
        print(line)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
