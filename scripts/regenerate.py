"""Regenerate every committed artifact: ``python scripts/regenerate.py [--bench] [--only NAME] [--list]``.

One table, :data:`STEPS`, names each committed output under ``artifacts/`` and ``bench/results/``
with the command that writes it. By default the frozen runs under ``artifacts/`` are rebuilt
(a few minutes); ``--bench`` also reruns the benchmarks (much longer: see ``bench/RESULTS.md``).
Steps run one after the other, each printing its command first; the first failing step stops
the run with its exit status. ``tests/test_regenerate.py`` checks that every committed file under
those folders belongs to a step, so an artifact without a documented command cannot land.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Step:
    """One regeneration: ``argv`` (run from the repository root) writes ``outputs``.

    ``outputs`` are repository-relative paths (a folder covers every file below it);
    ``copy`` is an optional ``(from, to)`` copied after the command succeeds.
    """

    name: str
    outputs: tuple[str, ...]
    argv: tuple[str, ...]
    bench: bool = False
    copy: tuple[str, str] | None = None
    minutes: float = 1.0


PY = sys.executable
STEPS: tuple[Step, ...] = (
    Step("coverage", ("artifacts/coverage",),
         (PY, "-m", "witprobe.certify", "coverage", "--out", "artifacts/coverage", "--force"), minutes=3),
    Step("query_aligned", ("artifacts/query_aligned/smollm2-int8-qa48",),
         (PY, "-m", "witprobe.certify", "run", "--query-aligned", "48", "--out",
          "artifacts/query_aligned/smollm2-int8-qa48", "--force", "--quiet"), minutes=4),
    Step("campaign", ("artifacts/campaign/ledger_findings.json",),
         (PY, "-m", "witprobe.ledger", "campaign", "--out", "runs/campaign", "--force"),
         copy=("runs/campaign/findings.json", "artifacts/campaign/ledger_findings.json"), minutes=3),
    Step("probe_overhead", ("bench/results/probe_overhead_cpu.json",),
         (PY, "bench/probe_overhead.py", "--steps", "32", "--repeats", "7", "--batch-sizes", "1,4",
          "--threads", "1", "--out", "bench/results/probe_overhead_cpu.json"), bench=True, minutes=20),
    Step("codecs", ("bench/results/codecs_cpu.json",),
         (PY, "bench/codecs.py", "--out", "bench/results/codecs_cpu.json"), bench=True, minutes=15),
    Step("tightness", ("bench/results/tightness_cpu.json",),
         (PY, "bench/tightness.py", "--new-tokens", "4", "--out", "bench/results/tightness_cpu.json"),
         bench=True, minutes=30),
    Step("long_context", ("bench/results/long_context_cpu.json",),
         (PY, "bench/long_context.py", "--out", "bench/results/long_context_cpu.json"), bench=True, minutes=120),
    Step("long_context_8k", ("bench/results/long_context_8k_cpu.json",),
         (PY, "bench/long_context.py", "--lengths", "8192", "--modes", "unmetered", "metered_no_boxsup",
          "--timeout-s", "5400", "--out", "bench/results/long_context_8k_cpu.json"), bench=True, minutes=70),
    Step("oracle_floor", ("bench/results/oracle_floor_cpu.json",),
         (PY, "bench/oracle_floor.py", "--out", "bench/results/oracle_floor_cpu.json"), bench=True, minutes=15),
    Step("oracle_floor_16_bands", ("bench/results/oracle_floor_b16_cpu.json",),
         (PY, "bench/oracle_floor.py", "--bands", "16", "--out", "bench/results/oracle_floor_b16_cpu.json"),
         bench=True, minutes=15),
    Step("tightness_query_aligned", ("bench/results/tightness_qa_cpu.json",),
         (PY, "bench/tightness.py", "--query-aligned", "48", "64", "--codecs", "int8", "int4", "--new-tokens", "4",
          "--out", "bench/results/tightness_qa_cpu.json"), bench=True, minutes=45),
    Step("tightness_query_aligned_more", ("bench/results/tightness_qa_more_cpu.json",),
         (PY, "bench/tightness.py", "--query-aligned", "64", "--codecs", "fp8-e4m3", "kivi2", "--new-tokens", "4",
          "--out", "bench/results/tightness_qa_more_cpu.json"), bench=True, minutes=40),
    Step("probabilistic", ("bench/results/probabilistic_cpu.json", "bench/results/probabilistic_cpu.gates.json"),
         (PY, "bench/probabilistic.py", "--no-long", "--out", "bench/results/probabilistic_cpu.json"), bench=True,
         minutes=20),
    Step("probabilistic_long", ("bench/results/probabilistic_long_cpu.json",
                                "bench/results/probabilistic_long_cpu.gates.json"),
         (PY, "bench/probabilistic.py", "--long-only", "--out", "bench/results/probabilistic_long_cpu.json"),
         bench=True, minutes=10),
    Step("eviction_long", ("bench/results/eviction_long.json",),
         (PY, "bench/eviction_long.py"), bench=True, minutes=12),
    Step("ledger_replay", ("bench/results/ledger_replay.json",),
         (PY, "bench/ledger_replay.py", "--repeat", "5"), bench=True, minutes=5),
    Step("serving_throughput", ("bench/results/serving_throughput.json",),
         (PY, "bench/serving_throughput.py"), bench=True, minutes=12),
    Step("live_enforce", ("bench/results/live_enforce.json",),
         (PY, "bench/live_enforce.py"), bench=True, minutes=12),
    Step("live_box_resolution", ("bench/results/live_box_resolution.json",),
         (PY, "bench/live_box_resolution.py"), bench=True, minutes=3),
    Step("serving_kill", ("bench/results/serving_kill.json",),
         (PY, "bench/serving_kill.py"), bench=True, minutes=10),
    Step("kill_cli_live", ("bench/results/kill_cli.json",),
         (PY, "bench/kill_cli.py", "--trials", "20", "--max-delay", "15", "--commands", "ledger live",
          "--out", "bench/results/kill_cli.json"), bench=True, minutes=15),
    Step("task_rank", ("bench/results/task_rank_cpu.json",),
         (PY, "bench/task_rank.py", "--out", "bench/results/task_rank_cpu.json"), bench=True, minutes=40),
    Step("kvpress", ("bench/results/kvpress_cpu.json",),  # re-runs itself in scripts/kvpress_env.py's environment
         (PY, "bench/kvpress_presses.py", "--out", "bench/results/kvpress_cpu.json"), bench=True, minutes=10),
    Step("fuzz_cli", ("bench/results/fuzz_cli.json",),
         (PY, "bench/fuzz_cli.py", "--cases", "320", "--seed", "29", "--json", "bench/results/fuzz_cli.json"),
         bench=True, minutes=30),
    Step("meter_floor", ("bench/results/meter_floor_cpu.json",),
         (PY, "bench/meter_floor.py", "--contexts", "512", "2048", "8192", "--out", "bench/results/meter_floor_cpu.json"),
         bench=True, minutes=3),
    Step("long_prompt_kernel", ("bench/results/long_prompt_kernel.json",),
         (PY, "bench/long_prompt_kernel.py", "--out", "bench/results/long_prompt_kernel.json"), bench=True, minutes=45),
    Step("kill_cli_certify", ("bench/results/kill_cli_certify.json",),
         (PY, "bench/kill_cli.py", "--trials", "20", "--max-delay", "15", "--commands", "certify run",
          "--out", "bench/results/kill_cli_certify.json"), bench=True, minutes=6),
)


def covered(path: str) -> bool:
    """Whether a repository-relative file is written by some step."""
    return any(path == out or path.startswith(out.rstrip("/") + "/") for s in STEPS for out in s.outputs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", action="store_true", help="also rerun the benchmarks (long)")
    ap.add_argument("--only", action="append", choices=[s.name for s in STEPS], help="run only these steps")
    ap.add_argument("--list", action="store_true", help="print the steps and exit")
    a = ap.parse_args(argv)
    steps = [s for s in STEPS if (a.only and s.name in a.only) or (not a.only and (a.bench or not s.bench))]
    if a.list:
        for s in STEPS:
            print(f"{s.name}\t{'bench' if s.bench else 'artifact'}\t~{s.minutes:g} min\t{' '.join(s.outputs)}")
        return 0
    for i, s in enumerate(steps, 1):
        shown = " ".join("python" if x == PY else x for x in s.argv)
        print(f"[{i}/{len(steps)}] {s.name} (~{s.minutes:g} min): {shown}", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        rc = subprocess.call(list(s.argv), cwd=ROOT)
        if rc != 0:
            print(f"regenerate: step {s.name} failed with exit {rc}", file=sys.stderr)
            return rc
        if s.copy:
            shutil.copyfile(ROOT / s.copy[0], ROOT / s.copy[1])
        print(f"[{i}/{len(steps)}] {s.name} done in {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
