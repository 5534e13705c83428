"""``kill -9`` of the two long-running commands, repeated: what does the next run find?

    python bench/kill_cli.py [--trials 20] [--out bench/results/kill_cli.json]

For each command, ``certify run`` (``--model qwen3 --coq off``, the zoo's smallest real model)
and ``ledger live`` (SmolLM2 served by transformers' continuous batching, 8 requests):

1. ``--trials`` times: start the command on the same ``--out``, send SIGKILL after a delay that
   varies over the trials (from 1 s to well into the measurement), wait for it (and, for
   ``live``, for its server child, which watches its parent and shuts down). Each trial after
   the first starts on whatever the killed one before it left.
2. Then run the command once more to completion on that ``--out`` (with ``--force`` where a killed
   run had already completed and renamed its output into place: replacing it must succeed).

A trial is clean when the killed command left no ``--out`` (the directory is renamed into place
only when complete), and the final run exits 0 (``certify run``: any verdict exit 0/5; ``live``:
the gate's 0) with nothing left beside ``--out`` but what it wrote: no partial folder, no lock
file, no orphaned server process. Counts go to ``bench/results/kill_cli.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "certify run": ["-m", "witprobe.certify", "run", "--model", "qwen3", "--coq", "off", "--lean", "off",
                    "--max-new-tokens", "4", "--quiet"],
    "ledger live": ["-m", "witprobe.ledger", "live", "--requests", "8", "--concurrency", "4", "--max-new-tokens", "4",
                    "--quiet"],
}
FINAL_OK = {"certify run": (0, 5), "ledger live": (0,)}


def _servers() -> set[int]:
    out = subprocess.run(["pgrep", "-f", "witprobe.serving.server"], capture_output=True, text=True)
    return {int(x) for x in out.stdout.split()}


def trial_set(name: str, trials: int, max_delay: float, root: Path) -> dict:
    out = root / "out"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    before = _servers()
    killed = []
    for i in range(trials):
        delay = 1.0 + (max_delay - 1.0) * i / max(1, trials - 1)
        t0 = time.monotonic()
        force = ["--force"] if out.exists() else []  # a run that completed before its kill: replace it, as a user would
        p = subprocess.Popen([sys.executable, *COMMANDS[name], "--out", str(out), *force], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        finished = p.poll() is not None
        if not finished:
            os.kill(p.pid, signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + 30
        while _servers() - before and time.monotonic() < deadline:
            time.sleep(0.5)
        killed.append({"delay_s": round(delay, 2), "finished_before_kill": finished, "rc": p.returncode,
                       "out_exists_after": out.exists(), "orphan_servers": len(_servers() - before),
                       "leftovers": sorted(x.name for x in root.iterdir() if x.name != "out"),
                       "wall_s": round(time.monotonic() - t0, 2)})
        print(f"[bench] {name} trial {i}: killed after {delay:.1f} s, out exists {out.exists()}, "
              f"beside it: {killed[-1]['leftovers']}", file=sys.stderr)
    force = ["--force"] if out.exists() else []
    f = subprocess.run([sys.executable, *COMMANDS[name], "--out", str(out), *force], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=3600)
    left = sorted(x.name for x in root.iterdir() if x.name != "out")
    return {"command": name, "trials": killed, "n_killed": sum(not k["finished_before_kill"] for k in killed),
            "out_after_kill": sum(k["out_exists_after"] for k in killed),
            "orphan_servers": max((k["orphan_servers"] for k in killed), default=0),
            "final_rc": f.returncode, "final_ok": f.returncode in FINAL_OK[name],
            "final_stderr_tail": f.stderr.strip().splitlines()[-3:], "leftovers_after_final": left}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    ap.add_argument("--max-delay", type=float, default=20.0, help="the last trial's delay before SIGKILL (s)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "kill_cli.json")
    a = ap.parse_args()
    sets = []
    for name in a.commands:
        with tempfile.TemporaryDirectory() as tmp:
            sets.append(trial_set(name, a.trials, a.max_delay, Path(tmp)))
            print(json.dumps({k: v for k, v in sets[-1].items() if k != "trials"}), file=sys.stderr)
    rec = {"schema": "witprobe-bench-kill-cli/1", "command": "python bench/kill_cli.py " + " ".join(sys.argv[1:]),
           "sets": sets, "clean": all(s["final_ok"] and not s["leftovers_after_final"] and s["out_after_kill"] == 0
                                      and s["orphan_servers"] == 0 for s in sets)}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps({"clean": rec["clean"], "killed": {s["command"]: s["n_killed"] for s in sets}}))


if __name__ == "__main__":
    main()
