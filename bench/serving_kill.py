"""``kill -9`` of the live server under load, repeated: committed journal events lost (must be 0).

    python bench/serving_kill.py [--trials 10] [--out bench/results/serving_kill.json]

Each trial (:func:`witprobe.serving.crash.kill_trial`) starts the server on loopback, drives 24
requests from 8 concurrent clients while polling the committed journal head over HTTP, sends
SIGKILL after a delay that varies across trials (1.5 s to 9 s after the server is ready), then
verifies the journal on disk and looks up every head observed before the kill.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from witprobe.serving.crash import kill_trial


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "serving_kill.json")
    a = ap.parse_args()
    trials = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.trials):
            delay = 1.5 + 7.5 * i / max(1, a.trials - 1)
            t = kill_trial(Path(tmp) / f"t{i}", delay, requests=24, concurrency=8, max_new_tokens=8)
            print(f"[bench] trial {i}: delay {delay:.1f} s, observed {t.observed} heads (max seq {t.max_observed_seq}), "
                  f"{t.records_after} records on disk, verify {'ok' if t.verify_ok else 'BAD'}, "
                  f"{'closed' if t.closed else 'unclosed'}, lost {t.lost}", file=sys.stderr)
            trials.append(t.as_dict())
    rec = {"schema": "witprobe-bench-serving-kill/1", "command": "python bench/serving_kill.py " + " ".join(sys.argv[1:]),
           "trials": trials, "n_trials": len(trials), "lost_total": sum(t["lost"] for t in trials),
           "all_verified": all(t["verify_ok"] for t in trials), "all_unclosed": all(not t["closed"] for t in trials)}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps({k: rec[k] for k in ("n_trials", "lost_total", "all_verified", "all_unclosed")}))


if __name__ == "__main__":
    main()
