"""Tightness of every bound form against the realized TV, per codec (issue 14, item 5).

For each codec (int8, int4, fp8-e4m3; the 2-bit KIVI codec exists as a class but has no
registered name, so it is skipped) one SmolLM2 run is measured on the default prompts plus one
prompt of at least 1,500 tokens, with the box-sup meter on; a second int8 run with the box-sup
meter off gives the metering time ratio. Per form (plain, centred, e-form, certified best, box-sup):
layers non-vacuous, median and max tightness (layer bound / layer realized TV max), witness bytes
per entry (the stored witness: ``bands`` float64 band residual norms per key and per value; the
box-sup needs nothing more). Bounds are the derivation's exact layer values (outward rounded).

    python bench/tightness.py --out bench/results/tightness_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from witprobe.certify.derive import derive  # noqa: E402
from witprobe.certify.measure import DEFAULT_PROMPTS, MeasureConfig, measure  # noqa: E402
from witprobe.models.zoo import load_model  # noqa: E402
from witprobe.probe import observer as observer_mod  # noqa: E402

CODECS = ("int8", "int4", "fp8-e4m3")
SKIPPED = {"kivi2": "KIVICodec exists in witprobe.memory.codecs but is not registered in CODECS (no name to run)"}
LONG_PROMPT = " ".join([DEFAULT_PROMPTS[3]] * 16)  # about 1,600 tokens


def _measure(lm, codec: str, prompts, new_tokens: int, box_sup: bool) -> tuple[dict, float]:
    orig = observer_mod.Observer.__init__

    def init(self, *a, **k):
        if not box_sup:
            k["box_sup"] = None
        orig(self, *a, **k)

    observer_mod.Observer.__init__ = init
    try:
        t0 = time.perf_counter()
        run = measure(lm, MeasureConfig(codec=codec, max_new_tokens=new_tokens, reference=False, prompts=prompts))
        return run, time.perf_counter() - t0
    finally:
        observer_mod.Observer.__init__ = orig


def _table(run: dict) -> dict:
    d = derive(run)
    attn = [c for c in d.claims if c.kind == "attn_tv"]
    out = {"failures": d.failures, "layers": len(attn), "forms": {}}
    per = {f: [] for f in ("plain", "centred", "eform", "certified", "boxsup")}
    for c in attn:
        for f in ("plain", "centred", "eform"):
            fr = c.forms[f]
            per[f].append((None if fr.bound is None else float(fr.bound), fr.vacuous))
        per["certified"].append((None if c.value is None else float(c.value), c.vacuous))
        box = c.extra.get("boxsup", {})
        b = box.get("bound")
        per["boxsup"].append((None if b is None else float(b["decimal_up"]), box.get("vacuous", True)))
    realized = [c.realized_max for c in attn]
    for f, vals in per.items():
        ok = [(b / r) for (b, v), r in zip(vals, realized) if b is not None and not v and r > 0]
        out["forms"][f] = {"non_vacuous": sum(1 for b, v in vals if b is not None and not v),
                           "tightness_median": statistics.median(ok) if ok else None,
                           "tightness_max": max(ok) if ok else None,
                           "tightness_per_layer": ok}
    out["realized_tv_max"] = max(realized)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("bench/results/tightness_cpu.json"))
    ap.add_argument("--new-tokens", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    lm = load_model("smollm2")
    prompts = tuple(DEFAULT_PROMPTS) + (LONG_PROMPT,)
    n_long = len(lm.tokenizer(LONG_PROMPT)["input_ids"])
    result = {"model": "smollm2", "bands": 4, "long_prompt_tokens": n_long, "new_tokens": args.new_tokens,
              "skipped": SKIPPED, "witness_bytes_per_entry": 4 * 8 * 2, "codecs": {}}
    for codec in CODECS:
        run, secs = _measure(lm, codec, prompts, args.new_tokens, True)
        row = _table(run)
        row["seconds_with_boxsup"] = secs
        if codec == "int8":
            _, base = _measure(lm, codec, prompts, args.new_tokens, False)
            row["seconds_without_boxsup"] = base
            result["metering_time_ratio_boxsup"] = secs / base
        result["codecs"][codec] = row
        print(codec, json.dumps({f: {k: v for k, v in d.items() if k != "tightness_per_layer"}
                                 for f, d in row["forms"].items()}), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print("metering time ratio (box-sup on / off, int8):", result.get("metering_time_ratio_boxsup"))


if __name__ == "__main__":
    main()
