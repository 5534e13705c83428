"""Replay throughput on one core: entry reads per second, measured in one run.

    python bench/ledger_replay.py [--reads PATH] [--repeat 5] [--out bench/results/ledger_replay.json]

Without ``--reads`` the entry-read trace is expanded from the recorded SmolLM2 witnesses
(``tests/fixtures/ledger``) into a temporary file. Measured here, interleaved round-robin with
pyarrow and numpy on one thread: the histogram sweep (``replay``), the reference searchsorted
replay (``replay_reference``) and a bare Parquet decode of the three columns. The best of
``--repeat`` runs of each is reported, with the ratio between them; both replays must give
identical sweeps (checked here). Target: >= 50M entry reads/s for ``replay``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from witprobe.ledger.replay import THRESHOLDS, expand_reads, replay, replay_reference  # noqa: E402
from witprobe.ledger.trace import DEFAULT_FIXTURE  # noqa: E402

TARGET = 50_000_000


def scan(path: Path) -> float:
    """Baseline: decode the three columns the replay reads, nothing else (seconds)."""
    t0 = time.perf_counter()
    pf = pq.ParquetFile(path)
    for g in range(pf.metadata.num_row_groups):
        pf.read_row_group(g, columns=["request", "witness", "qn"], use_threads=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reads", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("bench/results/ledger_replay.json"))
    a = ap.parse_args()
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        path = a.reads
        if path is None:
            path = Path(tmp) / "reads.parquet"
            expand_reads(DEFAULT_FIXTURE, path)
        walls: dict[str, list[float]] = {"replay": [], "replay_reference": [], "scan": []}
        sweeps = {}
        for _ in range(a.repeat):  # interleaved, so load changes hit all three alike
            for name, fn in (("replay", replay), ("replay_reference", replay_reference)):
                res = fn(path, THRESHOLDS)
                walls[name].append(res.wall_s)
                sweeps[name] = res
            walls["scan"].append(scan(path))
        n = sweeps["replay"].n_reads
        a_, b_ = sweeps["replay"], sweeps["replay_reference"]
        identical = (a_.retained, a_.qn_max, a_.per_request_retention_median, a_.n_reads) == \
            (b_.retained, b_.qn_max, b_.per_request_retention_median, b_.n_reads)
        best = {k: min(v) for k, v in walls.items()}
        out = {
            "schema": "witprobe-bench-ledger-replay/1",
            "command": "python bench/ledger_replay.py" + (f" --reads {a.reads}" if a.reads else "") + f" --repeat {a.repeat}",
            "entry_reads": n,
            "thresholds": len(THRESHOLDS),
            "trace_bytes": path.stat().st_size,
            "row_groups": pq.ParquetFile(path).metadata.num_row_groups,
            "best_s": best,
            "all_s": walls,
            "reads_per_s": {k: n / v for k, v in best.items()},
            "median_reads_per_s": {k: n / float(np.median(v)) for k, v in walls.items()},
            "replay_speedup_over_reference": best["replay_reference"] / best["replay"],
            "replay_over_scan": best["replay"] / best["scan"],
            "sweeps_identical": identical,
            "target_reads_per_s": TARGET,
            "meets_target": n / best["replay"] >= TARGET,
            "threads": 1,
            "load_average_start_end": [load0[0], os.getloadavg()[0]],
            "environment": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                            "numpy": np.__version__, "pyarrow": pa.__version__},
        }
    if not identical:
        raise SystemExit("replay and replay_reference disagree: the benchmark is void")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = a.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(out, indent=1) + "\n")
    tmp_out.replace(a.out)
    print(json.dumps({k: out[k] for k in ("entry_reads", "reads_per_s", "replay_speedup_over_reference",
                                          "sweeps_identical", "meets_target", "load_average_start_end")}, indent=1))


if __name__ == "__main__":
    main()
