"""Replica coupling under ``torch.distributed`` (gloo, CPU): ranks realize the same draws.

Every rank serves the same traffic over its own copy of the pool with its own accounts (as
tensor-parallel replicas of a replicated latent cache do). Rank 0 picks the server nonce and
broadcasts it; because the stochastic-rounding key ``(nonce, uid, layer, counter)`` contains no
rank, every rank draws the same bits, and the write-side fields of every account
(:data:`~witprobe.ledger.accounts.WRITE_KEYS`, including a digest of every masked byte) must agree
field for field; ``delta`` is then spent once per logical event. After the run the ranks exchange
those fields with ``all_gather_object`` and rank 0 writes ``coupling.json``. Read-side counts are
per-rank shards and are not compared.

The rendezvous is a ``file://`` store inside the (absolute) output directory: a relative path in a
``file://`` URL would be read as a host name and every run would share one file at the root,
where a stale one from an earlier run blocks the rendezvous until gloo times out.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from witprobe.ledger.accounts import WRITE_KEYS
from witprobe.safe_output import atomic_write

COUPLING_FILE = "coupling.json"
RENDEZVOUS_TIMEOUT_S = 300


def _fields(snap: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for a in snap["accounts"]:
        name = a["rid"] if a["kind"] == "user" else f"{a['kind']}:{a['uid']}"
        out[str(name)] = {k: a.get(k) for k in WRITE_KEYS}
    return out


def compare(tables: list[dict[str, dict[str, Any]]]) -> list[str]:
    """Differences between ranks' write-side tables, over the union of accounts."""
    union = sorted(set().union(*[set(t) for t in tables]))
    out = []
    for name in union:
        rows = [t.get(name) for t in tables]
        if any(r is None for r in rows):
            out.append(f"{name}: missing on ranks {[i for i, r in enumerate(rows) if r is None]}")
        elif any(r != rows[0] for r in rows):
            out.append(f"{name}: fields differ across ranks")
    return out


def _worker(rank: int, world: int, cfg: Any, out: str, init_file: str, progress: bool) -> None:
    import signal

    import torch
    import torch.distributed as dist

    from witprobe.ledger.simulate import run_rank

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles an interrupt and terminates the ranks
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=Path(init_file).absolute().as_uri(), rank=rank, world_size=world,
                            timeout=timedelta(seconds=RENDEZVOUS_TIMEOUT_S))
    try:
        box = [cfg.nonce if cfg.nonce is not None else secrets.randbits(32)] if rank == 0 else [None]
        dist.broadcast_object_list(box, src=0)
        snap = run_rank(replace(cfg, nonce=int(box[0])), Path(out), rank, progress=progress and rank == 0)
        tables: list[Any] = [None] * world
        dist.all_gather_object(tables, _fields(snap))
        if rank == 0:
            diffs = compare(tables)
            body = {"backend": "gloo", "world_size": world, "nonce": int(box[0]), "identical": not diffs,
                    "accounts": len(tables[0]), "fields": list(WRITE_KEYS), "differences": diffs}
            atomic_write(Path(out) / COUPLING_FILE, json.dumps(body, indent=1, sort_keys=True) + "\n")
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run_replicas(cfg: Any, out: Path, progress: bool = False) -> None:
    """Spawn ``cfg.ranks`` processes, each serving the full trace; rank 0 writes ``coupling.json``.

    On an interrupt (or any failure) every rank process is terminated before this returns, so
    nothing keeps writing into ``out`` afterwards.
    """
    import torch.multiprocessing as mp

    out = Path(out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    init_file = out / ".dist_init"
    if init_file.exists():
        init_file.unlink()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    ctx = mp.start_processes(_worker, args=(cfg.ranks, cfg, str(out), str(init_file), progress), nprocs=cfg.ranks,
                             join=False, start_method="spawn")
    try:
        while not ctx.join():
            pass
    finally:
        for proc in ctx.processes:
            if proc.is_alive():
                proc.terminate()
        for proc in ctx.processes:
            proc.join()
        if init_file.exists():
            init_file.unlink()
