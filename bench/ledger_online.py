"""Online ledger throughput with 8 accounts: events per second, and its overhead ratio.

    python bench/ledger_online.py [--workers 8] [--accounts 8]

Serves the recorded SmolLM2 traffic twice in this run over the same shared pool geometry: once
with the full ledger (certified writes, read checks, journal) and once as the baseline that only
stores exact bytes. Reports write events/s, read checks/s and wall-clock ratio (ledger/baseline).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import replace
from pathlib import Path

from witprobe.ledger.simulate import SimConfig, run_rank
from witprobe.ledger.trace import DEFAULT_FIXTURE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--accounts", type=int, default=8)
    a = ap.parse_args()
    cfg = SimConfig(trace=DEFAULT_FIXTURE, accounts=a.accounts, workers=a.workers)
    with tempfile.TemporaryDirectory() as tmp:
        base = run_rank(replace(cfg, ledger=False), Path(tmp) / "base")
        full = run_rank(cfg, Path(tmp) / "full")
    tf, tb = full["timing"], base["timing"]
    users = [x for x in full["accounts"] if x["kind"] == "user"]
    print(json.dumps({
        "accounts": a.accounts, "workers": a.workers,
        "write_events": full["n_write_events"], "read_checks": full["n_read_checks"],
        "write_events_per_s": tf["write_events_per_s"], "read_checks_per_s": tf["read_checks_per_s"],
        "ledger_wall_s": tf["wall_s"], "baseline_wall_s": tb["wall_s"], "ledger_over_baseline": tf["wall_s"] / tb["wall_s"],
        "user_retention_write": [round(x["retention"], 4) for x in users],
        "max_user_spend": max(x["delta_spent_float"] for x in users),
    }, indent=1))


if __name__ == "__main__":
    main()
