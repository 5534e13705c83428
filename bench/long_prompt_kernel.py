"""The kernel on a long prompt (issue 24's acceptance): every non-vacuous layer certified by Coq, its time and rows.

Runs ``python -m witprobe.certify run --prompts LONG --query-aligned 48 --max-new-tokens 4`` on
``bench/tightness.py``'s ``LONG_PROMPT`` (1,581 tokens; 1,611 with the chat template) with int8 and
Coq required, then reads the run directory it wrote (or ``--from DIR``, a run made by that command)
and times ``coqc`` alone on its ``obligations/run.v`` against a fresh build of the library:

- claims per tier, and for the certified ones the kernel's status and the mutation guard's
  (the statement with ``B`` lowered to ``max(realized, B/2)`` must be rejected);
- tightness (bound over realized TV) of the certified claims: median and worst;
- rows shipped to the kernel's box checker per form, of the rows read; float literals; file sizes;
- the whole command's wall time and peak RSS (its process tree), and ``coqc``'s own on ``run.v``.

    python bench/long_prompt_kernel.py --out bench/results/long_prompt_kernel.json
    python bench/long_prompt_kernel.py --from runs/long --out bench/results/long_prompt_kernel.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))
SCHEMA = "witprobe-bench-long-prompt-kernel/1"


def run_certify(out: Path) -> dict[str, Any]:
    from tightness import LONG_PROMPT

    with tempfile.TemporaryDirectory() as tmp:
        prompts = Path(tmp) / "long.txt"
        prompts.write_text(" ".join(LONG_PROMPT.split()) + "\n")
        cmd = [sys.executable, "-m", "witprobe.certify", "run", "--prompts", str(prompts), "--query-aligned", "48",
               "--max-new-tokens", "4", "--coq", "required", "--out", str(out)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        wall = time.perf_counter() - t0
    return {"command": "python -m witprobe.certify run --prompts LONG --query-aligned 48 --max-new-tokens 4 "
                       "--coq required", "exit": proc.returncode, "wall_s": round(wall, 1),
            "peak_rss_kib_children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}


def time_coqc(run_v: Path) -> dict[str, Any]:
    """``coqc`` on ``run.v`` alone, against a fresh build of the library (the kernel's time)."""
    from witprobe.formal.coq_runner import build_library, find_coqc, find_library

    tc, why = find_coqc()
    lib = find_library()
    if tc is None or lib is None:
        return {"status": "not run", "reason": why or "no library"}
    build = build_library(tc, lib)
    with tempfile.TemporaryDirectory() as tmp:
        v = Path(tmp) / "run.v"
        v.write_bytes(run_v.read_bytes())
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run([str(tc.coqc), "-q", "-R", str(build.root / "Witprobe"), "Witprobe", str(v)], cwd=tmp,
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"status": "accepted" if p.returncode == 0 else "rejected", "exit": p.returncode, "wall_s": round(wall, 1),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "peak_rss_kib": after.ru_maxrss, "toolchain": tc.version, "stderr_tail": p.stderr[-400:]}


def summarize(d: Path) -> dict[str, Any]:
    cert = json.loads((d / "certificate.json").read_text())
    run = json.loads((d / "run.json").read_text())
    tv = [c for c in cert["claims"] if c["kind"] == "attn_tv"]
    certified = [c for c in tv if c["tier"] == "certified"]
    tight = [c["tightness"] for c in certified if isinstance(c.get("tightness"), (int, float))]
    shipped: dict[str, dict[str, int]] = {}
    for form in ("boxsup", "qa_boxsup"):  # the certificate's readings (what `certify show` prints)
        rows = [r for r in cert.get("readings", []) if f"{form}_rows_shipped" in r]
        if rows:
            shipped[form] = {"rows_shipped": sum(r[f"{form}_rows_shipped"] for r in rows),
                             "rows_read": sum(r[f"{form}_rows_seen"] for r in rows),
                             "float_literals": sum(r[f"{form}_literals"] for r in rows)}
    return {
        "prompt_tokens": run["requests"][0].get("prompt_tokens") if run.get("requests") else None,
        "layers": len(run["layers"]), "non_vacuous_layers": cert["summary"]["non_vacuous_layers"],
        "attn_tv_tiers": {t: sum(c["tier"] == t for c in tv) for t in sorted({c["tier"] for c in tv})},
        "forms_certified": sorted({c["form"] for c in certified}),
        "kernel": {"kernel_checked": sum(c["kernels"]["coq"]["status"] == "kernel_checked" for c in certified),
                   "guard_rejected": sum(c["kernels"]["coq"].get("guard", {}).get("status") == "rejected"
                                         for c in certified),
                   "library_sha256": cert["kernels"]["coq"]["library_sha256"]},
        "tightness": {"median": statistics.median(tight), "worst": max(tight)} if tight else None,
        "rows": shipped,
        "files_bytes": {"run.json": (d / "run.json").stat().st_size,
                        "obligations/run.v": (d / "obligations" / "run.v").stat().st_size},
        "headline": cert["summary"]["headline"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="src", type=Path, default=None, help="summarize this run directory instead")
    ap.add_argument("--run-dir", type=Path, default=ROOT / "runs" / "long-prompt-qa48")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    rec: dict[str, Any] = {"schema": SCHEMA}
    d = a.src
    if d is None:
        rec["certify_run"] = run_certify(a.run_dir)
        d = a.run_dir
    rec["run"] = summarize(d)
    rec["coqc_run_v"] = time_coqc(d / "obligations" / "run.v")
    print(json.dumps(rec, indent=1))
    if a.out:
        a.out.write_text(json.dumps(rec, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
