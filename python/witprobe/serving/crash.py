"""``kill -9`` of the serving process under load: does the journal lose a committed event?

One trial: start the server (:func:`witprobe.serving.live.start_server`), drive concurrent
requests, and poll ``GET /journal/head`` (the server reports only *committed* heads: a record is
committed when :meth:`~witprobe.ledger.journal.Journal.append_many` returns). After ``delay_s``
the server gets ``SIGKILL``. Then the journal on disk must

- verify (chain, hashes, ledger arithmetic) up to its last record, and report itself unclosed;
- contain every ``(seq, hash)`` head observed before the kill, with that exact hash.

``lost`` counts the observed heads that are missing or differ: the acceptance is 0.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from witprobe.ledger.journal import connect, verify


@dataclass
class KillTrial:
    """Outcome of one trial (seqs are journal record numbers)."""

    delay_s: float
    observed: int = 0  # distinct committed heads observed over HTTP before the kill
    max_observed_seq: int = 0
    records_after: int = 0
    lost: int = 0
    verify_ok: bool = False
    closed: bool = True
    reason: str = ""
    lost_seqs: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def kill_trial(out: Path, delay_s: float, *, requests: int = 32, concurrency: int = 8, max_new_tokens: int = 8,
               start_timeout: float = 300.0) -> KillTrial:
    """Run one trial in the empty directory ``out`` (see the module docstring)."""
    from witprobe.serving.live import _get, drive, start_server

    out.mkdir(parents=True, exist_ok=True)
    proc, port = start_server(out, ["--max-new-tokens", str(max_new_tokens)], start_timeout)
    heads: dict[int, str] = {}
    stop = threading.Event()

    def poll() -> None:
        import json

        while not stop.is_set():
            text = _get(f"http://127.0.0.1:{port}/journal/head", timeout=5)
            if text:
                h = json.loads(text)
                if h.get("seq"):
                    heads[int(h["seq"])] = str(h["hash"])
            time.sleep(0.02)

    poller = threading.Thread(target=poll, daemon=True)
    load = threading.Thread(target=drive, args=(port, requests, concurrency, max_new_tokens, 60.0, 120.0), daemon=True)
    poller.start()
    load.start()
    time.sleep(delay_s)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stop.set()
    poller.join(10)
    t = KillTrial(delay_s=delay_s, observed=len(heads), max_observed_seq=max(heads, default=0))
    j = out / "journal.sqlite"
    res = verify(j)
    t.verify_ok, t.closed, t.records_after, t.reason = res.ok, res.closed, res.n_records, res.reason
    db = connect(j, readonly=True)
    try:
        have = dict(db.execute("SELECT seq, hash FROM journal").fetchall())
    finally:
        db.close()
    t.lost_seqs = sorted(s for s, h in heads.items() if have.get(s) != h)
    t.lost = len(t.lost_seqs)
    return t
