"""Every built-in codec on SmolLM2: tightness of each bound, stored and witness bytes, end to end.

For each codec this measures one run (``witprobe.certify.measure``; the default prompts unless
``--prompt`` is given), derives the certificate without proof kernels (tiers are then empirical;
the bounds and their realizations are the same), and records per codec:

- the layers whose attention-TV bound is non-vacuous, the median and max tightness
  (``bound / realized``) of the TV, eviction-TV, attention-output and projected-output claims;
- whether any bound was beaten (the run fails then) and the self-checks;
- bytes per stored entry of width ``D`` (codes plus scales, as the format stores them; for an
  eviction policy, per retained entry, which is exact) and bytes of witness per entry
  (``bands`` float64 band residual norms, :func:`witprobe.probe.meters.witness_bytes_per_entry`);
- the end-to-end readings: next-token TV max/mean, KL max, greedy agreement.

Run: ``python bench/codecs.py --out bench/results/codecs_cpu.json [--max-new-tokens 16]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from witprobe.certify.pipeline import certificate_without_kernels
from witprobe.certify.measure import DEFAULT_PROMPTS, MeasureConfig, environment, measure
from witprobe.certify.end_to_end import DIVERGED
from witprobe.memory.codecs import (CODECS, BandIntCodec, EvictionCodec, FP8E4M3Codec, KIVIKVCodec, MantissaMaskCodec,
                                    PackedCodec, make_codec)
from witprobe.memory.quantized_cache import QuantizedCacheCodec
from witprobe.models.zoo import load_model
from witprobe.probe.meters import witness_bytes_per_entry

SCHEMA = "witprobe-bench-codecs/1"


def stored_bytes_per_entry(codec, d: int) -> float:
    """Bytes one stored entry of width ``d`` takes in the codec's format (codes plus scales)."""
    if isinstance(codec, BandIntCodec):
        return d * codec.bits / 8 + 4 * codec.bands
    if isinstance(codec, FP8E4M3Codec):
        return d  # one byte per element; the per-tensor scale is amortized
    if isinstance(codec, MantissaMaskCodec):
        return d * (32 - codec.drop_bits) / 8
    if isinstance(codec, PackedCodec):
        return codec._fmt().bytes_per_entry(d)
    if isinstance(codec, KIVIKVCodec):  # quantized part: codes plus fp16 scale and zero per group
        return d * codec.bits / 8 + 2 * 2 * d / codec.group_size
    if isinstance(codec, QuantizedCacheCodec):  # codes plus a 16-bit scale and shift per group
        return d * codec.nbits / 8 + 2 * 2 * d / codec.q_group_size
    if isinstance(codec, EvictionCodec):  # a retained entry is exact; an evicted one keeps only its witness
        return 2 * d
    raise ValueError(f"stored_bytes_per_entry: no byte count for codec {type(codec).__name__}")


def verdict_cell(verdict: str, e2e: dict) -> str:
    """The verdict as the bench table prints it: never a bare ``pass`` beside an end-to-end divergence."""
    return f"{verdict}, diverged end to end" if verdict == "pass" and e2e.get("status") == DIVERGED else verdict


def _tight(claims, kind):
    t = [c["tightness"] for c in claims if c["kind"] == kind and not c["vacuous"] and c["tightness"]]
    return {"median": statistics.median(t) if t else None, "max": max(t) if t else None, "layers": len(t)}


def bench_codec(loaded, name: str, bands: int, max_new_tokens: int, prompts: tuple[str, ...]) -> dict:
    t0 = time.monotonic()
    cfg = MeasureConfig(codec=name, bands=bands, max_new_tokens=max_new_tokens, prompts=prompts, e2e_tv_tolerance=0.1)
    run = measure(loaded, cfg).to_json()
    cert = certificate_without_kernels(run)
    claims = cert["claims"]
    s = cert["summary"]
    d = run["model"]["head_dim"]
    codec = make_codec(name, bands)
    return {
        "codec": name,
        "summary": CODECS[name].summary,
        "verdict": s["verdict"],
        "headline": s["headline"],
        "failures": cert["failures"],
        "self_checks_nonzero": {k: v["count"] for k, v in cert["self_checks"].items() if v["count"]},
        "attn_tv_non_vacuous_layers": s["non_vacuous_layers"],
        "layers": s["layers"],
        "tightness": {k: _tight(claims, k) for k in ("attn_tv", "evict_tv", "attn_out", "attn_out_proj")},
        "key_rel_residual_median": statistics.median(r["key_rel_residual_mean"] for r in cert["readings"]),
        "stored_bytes_per_entry": stored_bytes_per_entry(codec, d),
        "stored_bytes_scope": "per retained entry" if isinstance(codec, EvictionCodec) else "per entry",
        "exact_bytes_per_entry": 2 * d,  # bfloat16/float16 serving
        "witness_bytes_per_entry": witness_bytes_per_entry(bands),
        "end_to_end": s["end_to_end"],
        "seconds": time.monotonic() - t0,
    }


def table(rows: list[dict]) -> str:
    """The markdown table of bench rows (bench/RESULTS.md prints it as is); medians of tightness."""
    f = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
    lines = ["| codec | verdict | attn TV non-vac. | TV tight med / max | evict TV non-vac. | out tight med | "
             "proj tight med | stored bytes/entry | witness B | next-tok TV max | greedy |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        e, t = r["end_to_end"], r["tightness"]
        ev = t.get("evict_tv", {"layers": 0, "median": None})
        scope = " (retained)" if r.get("stored_bytes_scope") == "per retained entry" else ""
        lines.append(
            f"| {r['codec']} | {verdict_cell(r['verdict'], e)} | {r['attn_tv_non_vacuous_layers']}/{r['layers']} | "
            f"{f(t['attn_tv']['median'])} / {f(t['attn_tv']['max'])} | "
            f"{ev['layers']}/{r['layers'] if r.get('stored_bytes_scope') == 'per retained entry' else '-'} | "
            f"{f(t['attn_out']['median'])} | {f(t['attn_out_proj']['median'])} | "
            f"{r['stored_bytes_per_entry']:.0f} of {r['exact_bytes_per_entry']}{scope} | {r['witness_bytes_per_entry']} | "
            f"{e['next_token_tv_max']:.3f} | {e['greedy_agreeing_prefix']}/{e['greedy_total']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--codecs", nargs="+", default=sorted(CODECS), choices=sorted(CODECS))
    p.add_argument("--bands", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--prompt", action="append", default=None)
    p.add_argument("--merge", action="store_true",
                   help="keep the other codecs' rows of an existing --out (same model, bands, tokens and prompts)")
    p.add_argument("--table", action="store_true", help="print the table of an existing --out and exit")
    args = p.parse_args(argv)
    if args.table:
        print(table(json.loads(args.out.read_text(encoding="utf-8"))["codecs"]))
        return 0
    loaded = load_model("smollm2")
    prompts = tuple(args.prompt) if args.prompt else DEFAULT_PROMPTS
    rows = []
    for name in args.codecs:
        print(f"[bench] {name}", file=sys.stderr, flush=True)
        rows.append(bench_codec(loaded, name, args.bands, args.max_new_tokens, prompts))
    record = {"schema": SCHEMA, "environment": environment(), "model": "smollm2", "bands": args.bands,
              "max_new_tokens": args.max_new_tokens, "prompts": list(prompts), "codecs": rows}
    if args.merge and args.out.is_file():
        old = json.loads(args.out.read_text(encoding="utf-8"))
        for key in ("schema", "model", "bands", "max_new_tokens", "prompts"):
            if old.get(key) != record[key]:
                print(f"--merge: {args.out} has a different {key}; not merging", file=sys.stderr)
                return 2
        fresh = {r["codec"] for r in rows}
        rows = sorted([r for r in old["codecs"] if r["codec"] not in fresh] + rows, key=lambda r: r["codec"])
        record["codecs"] = rows
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    print(table(rows))
    return 0 if all(r["verdict"] == "pass" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
