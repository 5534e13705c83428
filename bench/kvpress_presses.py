"""kvpress presses on SmolLM2, certified by ``certify run --press``: per-layer bounds and realized TV.

For each press (KnormPress, SnapKVPress, ExpectedAttentionPress at ``compression_ratio`` 0.5, and
SnapKVPress with a 16-token window) this runs ``certify run --press`` on SmolLM2-135M-Instruct with
one 69-token prompt and 8 greedy tokens, and records from ``certificate.json``, per layer: the
eviction TV bound (``evict_tv``, decimal rounded up), the largest realized TV, the tier, whether the
bound is vacuous, and from ``run.json`` the decode rows that read past an evicted entry (how many,
how many have a vacuous bound, the mean row bound and the mean realized TV over them); and the
end-to-end readings. The bound must hold against every realized value:
a bound beaten by reality fails the bench (exit 1).

Run from the main environment, it re-runs itself in the kvpress environment of
``scripts/kvpress_env.py`` (kvpress 0.5.5 and transformers 5.2). ``--out`` is written atomically.

    python bench/kvpress_presses.py --out bench/results/kvpress_cpu.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = ("Read the following notes and summarize them in two sentences. The team met on Monday to review the "
          "quarterly results. Sales grew in the northern region but fell slightly in the south, where two large "
          "customers delayed their orders. The new product line shipped on time and early reviews are positive. "
          "Support tickets rose after the launch and most were about installation.")
PRESSES = ("kvpress:KnormPress(compression_ratio=0.5)", "kvpress:SnapKVPress(compression_ratio=0.5)",
           "kvpress:SnapKVPress(compression_ratio=0.5, window_size=16)",
           "kvpress:ExpectedAttentionPress(compression_ratio=0.5)")
NEW_TOKENS = 8


def _in_kvpress_env() -> None:
    """Re-run this script in the kvpress environment when kvpress is not importable here."""
    if importlib.util.find_spec("kvpress") is not None:
        return
    spec = importlib.util.spec_from_file_location("kvpress_env", ROOT / "scripts" / "kvpress_env.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    py = mod.ensure()
    sys.exit(subprocess.run([str(py), str(Path(__file__).resolve()), *sys.argv[1:]], cwd=ROOT).returncode)


def _one(press: str, work: Path) -> dict:
    from witprobe.certify.cli import main

    out = work / press.replace(":", "_").replace("(", "_").replace(")", "").replace(", ", "_").replace("=", "")
    code = main(["run", "--quiet", "--press", press, "--prompt", PROMPT, "--max-new-tokens", str(NEW_TOKENS),
                 "--out", str(out)])
    cert = json.loads((out / "certificate.json").read_text())
    layers = []
    for c in cert["claims"]:
        if c["kind"] != "evict_tv":
            continue
        realized = c["realized_tv_max"]
        if realized is None or realized != realized or Fraction(realized) > Fraction(c["bound"]["exact"]):
            raise SystemExit(f"{press}: {c['id']} bound {c['bound']['decimal_up']} beaten by realized {realized}")
        layers.append({"layer": c["layer"], "bound": c["bound"]["decimal_up"], "realized": realized,
                       "tier": c["tier"], "vacuous": c["vacuous"]})
    run = json.loads((out / "run.json").read_text())
    for x in layers:  # the decode rows that read past an evicted entry: how many, how many vacuous, means
        rd = run["layers"][x["layer"]]["read"]
        n = rd["evict_rows_evicting"]  # prefill rows and rows that see no evicted entry add 0 to both sums
        x.update(rows_evicting=n, rows_vacuous=rd["rows_evict_vacuous"],
                 row_bound_sum=rd["evict_bound"]["sum"], row_realized_sum=rd["evict_tv_realized"]["sum"])
    rows = sum(x["rows_evicting"] for x in layers)
    e2e = cert["summary"]["end_to_end"]
    return {"press": press, "exit": code, "verdict": cert["summary"]["verdict"], "layers": layers,
            "rows_evicting": rows, "rows_vacuous": sum(x["rows_vacuous"] for x in layers),
            "row_bound_mean": sum(x["row_bound_sum"] for x in layers) / rows,
            "row_realized_mean": sum(x["row_realized_sum"] for x in layers) / rows,
            "non_vacuous_layers": [x["layer"] for x in layers if not x["vacuous"]],
            "certified_layers": [x["layer"] for x in layers if x["tier"] == "certified"],
            "end_to_end": e2e}


def table(record: dict) -> list[str]:
    """The markdown table of docs/KVPRESS.md, from a record this bench wrote."""
    out = ["| press | exit | next-token TV max (end to end) | greedy tokens agreeing | layers with bound < 1 "
           "(all certified) | decode rows past an evicted entry | rows with bound >= 1 | mean row bound | "
           "mean realized TV | largest realized TV |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p in record["presses"]:
        e = p["end_to_end"]
        below = ", ".join(f"L{x['layer']:02d}" for x in p["layers"] if not x["vacuous"])
        out.append(f"| `{p['press'].split(':', 1)[1]}` | {p['exit']} | {e['next_token_tv_max']:.4f} | "
                   f"{e['greedy_agreeing_prefix']}/{e['greedy_total']} | {len(p['non_vacuous_layers'])} ({below}) | "
                   f"{p['rows_evicting']} | {p['rows_vacuous']} | {p['row_bound_mean']:.4f} | "
                   f"{p['row_realized_mean']:.4f} | {max(x['realized'] for x in p['layers']):.4f} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    args = ap.parse_args()
    _in_kvpress_env()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, press in enumerate(PRESSES, 1):
            print(f"[{i}/{len(PRESSES)}] {press}", file=sys.stderr, flush=True)
            rows.append(_one(press, Path(tmp)))
    record = {"what": __doc__.splitlines()[0], "prompt": PROMPT, "new_tokens": NEW_TOKENS,
              "transformers": importlib.metadata.version("transformers"),
              "kvpress": importlib.metadata.version("kvpress"), "torch": importlib.metadata.version("torch"),
              "presses": rows}
    tmp_out = args.out.with_name(args.out.name + ".partial")
    tmp_out.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp_out, args.out)
    print("\n".join(table(record)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
