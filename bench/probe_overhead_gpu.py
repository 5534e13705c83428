"""Overhead of the always-on probe with CUDA graphs on (GPU only; refuses without CUDA).

For each batch size (a setting, with its own noise floor) and each probe configuration, one run
prefills eagerly, warms up three decode steps on a side stream, captures **one decode step** in a
CUDA graph and replays it ``--steps`` times. Each replay is timed with CUDA events (per-token
latency, p99); throughput is tokens over the wall time of all replays. Configurations:

- ``off``: transformers ``StaticCache``;
- ``one_layer``: ``ProbedStaticCache`` with a declared one-layer subset and the fused Triton meter;
- ``all_layers``: every layer, fused Triton meter (the diagnostic full-coverage mode);
- ``all_layers_torch``: every layer, the graph-safe torch meter (many kernels per call).

The unfused reference meter cannot be captured (it indexes with a data-dependent boolean mask);
its cost is measured per invocation, eagerly, beside the fused meters, which are also timed inside
a graph of 64 invocations (the paper's per-invocation figure).

After every probed run the snapshot is taken outside the capture and checked by the gate with
replay liveness: the device execution counter must exceed the host call count, which froze at
capture (host = prefill + warm-up + capture = 5 per slot; device = prefill + warm-up + replays).

    TRITON_INTERPRET=0 python bench/probe_overhead_gpu.py --out bench/results/probe_overhead_gpu.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

EXIT_NO_GPU = 3


def _refuse(msg: str) -> int:
    print(f"probe_overhead_gpu: {msg}; nothing was measured (the CPU benchmark is bench/probe_overhead.py)",
          file=sys.stderr)
    return EXIT_NO_GPU


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=256, help="graph replays (decode steps) per run")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch-sizes", default="1,8,32")
    ap.add_argument("--layer", type=int, default=None, help="the declared one-layer subset (default: middle)")
    ap.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16")
    ap.add_argument("--out", default="bench/results/probe_overhead_gpu.json")
    args = ap.parse_args(argv)

    if os.environ.get("TRITON_INTERPRET", "0").lower() not in ("", "0", "false", "no", "off"):
        return _refuse("TRITON_INTERPRET is set; unset it (or set 0) so that Triton compiles for the GPU")
    import torch

    if not torch.cuda.is_available():
        return _refuse("no CUDA device (torch.cuda.is_available() is False)")
    try:
        import witprobe.kernels.band_meter  # noqa: F401
    except ImportError as e:
        return _refuse(f"the fused meter needs triton ({e})")

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from probe_bench_lib import OpCounter, RunResult, compare_settings, environment, runs_json, time_call, write_json
    from static_decode import StaticDecoder
    from transformers import StaticCache

    from witprobe.probe.gate import Expectations, check, format_result
    from witprobe.models.zoo import load_model
    from witprobe.probe.accumulators import Accumulator
    from witprobe.probe.band_meter import BandMeter, BandMeterSpec
    from witprobe.probe.probed_cache import ProbedStaticCache
    from witprobe.probe.runtime import ProbeConfig, ProbeRuntime

    dev = torch.device("cuda")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    lm = load_model("smollm2", attn_implementation="sdpa")
    model = lm.model.to(device=dev, dtype=dtype)
    tok = lm.tokenizer
    mc = model.config
    n_layers = mc.num_hidden_layers
    head_dim = getattr(mc, "head_dim", None) or mc.hidden_size // mc.num_attention_heads
    layer = n_layers // 2 if args.layer is None else args.layer
    prompt = "Explain, step by step, how a transformer model uses attention to process a long document."
    base_ids = tok(prompt, return_tensors="pt")["input_ids"].to(dev)
    warmup = 3
    max_len = base_ids.shape[1] + warmup + args.steps + 2
    configs = {
        "off": None,
        "one_layer": ProbeConfig(layers=(layer,), meter="triton"),
        "all_layers": ProbeConfig(layers=None, meter="triton"),
        "all_layers_torch": ProbeConfig(layers=None, meter="torch"),
    }
    liveness: list[dict] = []

    def run(batch: int, name: str, rnd: int) -> RunResult:
        ids = base_ids.repeat(batch, 1)
        cfg = configs[name]
        rt = None if cfg is None else ProbeRuntime(n_layers, cfg, dev)  # allocated before capture
        cache = StaticCache(config=mc, max_cache_len=max_len) if rt is None else ProbedStaticCache(rt, max_len)
        dec = StaticDecoder(model, cache, ids, max_len)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dec.prefill()
        torch.cuda.synchronize()
        prefill = time.perf_counter() - t0
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                dec.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            dec.step()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps)]
        t0 = time.perf_counter()
        for i in range(args.steps):
            starts[i].record()
            graph.replay()
            ends[i].record()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        step_s = [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends, strict=True)]
        # throughput uses the wall time of all replays; scale the event times to it
        scale = wall / sum(step_s)
        r = RunResult(name, batch, rnd, [t * scale for t in step_s], prefill)
        if rt is not None:
            rt.graph_safe = True
            snap = rt.snapshot({"bench": "probe_overhead_gpu", "batch": batch, "round": rnd})
            res = check(snap, Expectations(layers=len(rt.declared_layers), paths=("key", "value"), replay=True))
            slot = next(iter(snap["slots"].values()))
            liveness.append({
                "setting": name, "batch": batch, "round": rnd, "gate_passed": res.passed,
                "host_calls_per_slot": slot["host_calls"], "device_calls_per_slot": slot["device_calls"],
                "expected_host": 1 + warmup + 1, "expected_device": 1 + warmup + args.steps,
            })
            if not res.passed:
                print(format_result(res), file=sys.stderr)
        del graph
        return r

    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    runs: list[RunResult] = []
    names = list(configs)
    t_start = time.time()
    for b in batch_sizes:
        run(b, "off", -1)  # warm-up, discarded (Triton JIT, cuBLAS heuristics)
        run(b, "one_layer", -1)
        for rnd in range(args.repeats):
            order = names[rnd % len(names):] + names[: rnd % len(names)]
            for name in order:
                r = run(b, name, rnd)
                runs.append(r)
                print(f"batch {b} round {rnd} {name:<17} {r.throughput:9.1f} tok/s  p99 {r.p99_ms:7.3f} ms", flush=True)
    comparison = compare_settings(runs)

    # meter per invocation: eager (reference, torch, triton) and inside a graph (torch, triton)
    spec = BandMeterSpec(4, (8,))
    meters = []
    for rows in sorted({b * mc.num_key_value_heads for b in batch_sizes} | {256}):
        x = torch.randn(rows, head_dim, device=dev, dtype=dtype)
        row: dict = {"rows": rows, "dim": head_dim}
        for impl in ("reference", "torch", "triton"):
            acc = Accumulator(dev)
            meter = BandMeter(spec, impl, dev)
            block = meter.declare(acc)
            ex = torch.zeros((), dtype=torch.int64, device=dev)

            def fn(meter=meter, acc=acc, block=block, ex=ex, x=x):
                meter(x, acc, block, ex)

            eager = time_call(fn, torch.cuda.synchronize)
            with OpCounter() as oc:
                fn()
            rec = {"eager_us": eager * 1e6, "torch_ops": oc.count, "kernel_launches": 1 if impl == "triton" else oc.count}
            if impl != "reference":
                g = torch.cuda.CUDAGraph()
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    fn()
                torch.cuda.current_stream().wait_stream(s)
                with torch.cuda.graph(g):
                    for _ in range(64):
                        fn()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(20):
                    g.replay()
                torch.cuda.synchronize()
                rec["graph_us"] = (time.perf_counter() - t0) / (20 * 64) * 1e6
            row[impl] = rec
        row["unfused_over_triton_eager"] = row["reference"]["eager_us"] / row["triton"]["eager_us"]
        row["torch_over_triton_graph"] = row["torch"]["graph_us"] / row["triton"]["graph_us"]
        meters.append(row)

    record = {
        "schema": "witprobe-bench-probe/1",
        "what": "probe overhead on SmolLM2-135M decode, CUDA graphs on; meter cost per invocation",
        "command": "python bench/probe_overhead_gpu.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "environment": environment("cuda"),
        "config": {"model": "smollm2", "dtype": args.dtype, "num_layers": n_layers, "declared_layer": layer,
                   "steps": args.steps, "repeats": args.repeats, "batch_sizes": batch_sizes, "warmup": warmup},
        "wall_s": time.time() - t_start,
        "comparison": comparison,
        "liveness": liveness,
        "liveness_all_passed": all(x["gate_passed"] for x in liveness),
        "meter": meters,
        "runs": runs_json(runs),
    }
    path = write_json(args.out, record)
    print()
    for b, res in comparison.items():
        nf = res["noise_floor"]
        print(f"batch {b}: noise floor throughput +-{nf['throughput']:.2%}  p99 +-{nf['p99']:.2%}")
        for name, s in res["settings"].items():
            print(f"  {name:<17} {s['throughput_tok_s_median']:9.1f} tok/s  p99 {s['p99_ms_median']:7.3f} ms  "
                  f"d_thr {s['delta_throughput']:+.2%} ({'inside' if s['throughput_inside_noise_floor'] else 'OUTSIDE'})"
                  f"  d_p99 {s['delta_p99']:+.2%} ({'inside' if s['p99_inside_noise_floor'] else 'OUTSIDE'})")
    for m in meters:
        print(f"meter rows {m['rows']:>4}: unfused {m['reference']['eager_us']:.1f} us ({m['reference']['torch_ops']} "
              f"launches)  torch {m['torch']['graph_us']:.2f} us/graph  triton {m['triton']['graph_us']:.2f} us/graph "
              f"(1 launch)  unfused/triton x{m['unfused_over_triton_eager']:.1f}")
    print(f"liveness: {sum(x['gate_passed'] for x in liveness)}/{len(liveness)} probed runs pass the gate "
          f"(median device calls per slot {statistics.median(x['device_calls_per_slot'] for x in liveness)})")
    print(f"wrote {path}")
    return 0 if record["liveness_all_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
