"""Replay throughput on one core: entry reads per second, and the ratio to a bare Parquet scan.

    python bench/ledger_replay.py [--reads PATH]

Without ``--reads`` the entry-read trace is expanded from the recorded SmolLM2 witnesses
(``tests/fixtures/ledger``) into a temporary file. Both numbers are measured in this run, with
pyarrow and numpy limited to one thread; the target is >= 10M replayed entry reads per second.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from witprobe.ledger.replay import THRESHOLDS, expand_reads, replay  # noqa: E402
from witprobe.ledger.trace import DEFAULT_FIXTURE  # noqa: E402


def scan(path: Path) -> tuple[int, float]:
    """Baseline: decode the three columns the replay reads, nothing else."""
    t0 = time.perf_counter()
    n = 0
    for rb in pq.ParquetFile(path).iter_batches(batch_size=1 << 21, columns=["request", "witness", "qn"]):
        n += len(rb.column(1).to_numpy(zero_copy_only=False))
    return n, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reads", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = a.reads
        if path is None:
            path = Path(tmp) / "reads.parquet"
            expand_reads(DEFAULT_FIXTURE, path)
        best_scan = min(scan(path)[1] for _ in range(a.repeat))
        runs = [replay(path, THRESHOLDS) for _ in range(a.repeat)]
        best = min(runs, key=lambda r: r.wall_s)
        n = best.n_reads
        out = {
            "entry_reads": n,
            "thresholds": len(THRESHOLDS),
            "replay_s": best.wall_s,
            "replay_reads_per_s": n / best.wall_s,
            "scan_s": best_scan,
            "scan_reads_per_s": n / best_scan,
            "replay_over_scan": best.wall_s / best_scan,
            "target_reads_per_s": 10_000_000,
            "meets_target": n / best.wall_s >= 10_000_000,
            "threads": 1,
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
