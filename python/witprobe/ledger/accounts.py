"""Accounts: one per request uid (plus the warmup account), each with its own budget, e-process,
write-side record and read-side tallies (paper 5.6; anchor notes 3.3 record fields).

Write-side fields are the ones replicas must agree on field for field (:data:`WRITE_KEYS`);
read-side counts are per-rank shards and are not compared.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from witprobe.calculus.rounding import fraction_text
from witprobe.ledger.budget import Budget
from witprobe.ledger.eprocess import EProcess
from witprobe.ledger.slots import ReadTally

WRITE_KEYS = (
    "n_write_events", "n_prob_events", "n_det_events", "delta_spent", "n_entries_written", "n_authorized",
    "n_fallback_exact", "n_auth_violations", "draw_digest",
)


@dataclass
class Account:
    """One request's ledger. ``kind`` is ``"user"`` or ``"warmup"``; ``rid`` the client request id."""

    uid: int
    kind: str
    rid: str | None
    budget: Budget
    eprocess: EProcess = field(default_factory=EProcess)
    n_write_events: int = 0
    n_entries_written: int = 0
    n_authorized: int = 0
    n_fallback_exact: int = 0
    n_auth_violations: int = 0
    n_slot_reuses: int = 0
    n_factors_skipped_no_randomness: int = 0
    w_max_compressed: float | None = None
    read: ReadTally = field(default_factory=ReadTally)
    n_read_steps: int = 0
    qn_max: float | None = None
    reads_by_others: int = 0
    assumptions: Counter = field(default_factory=Counter)
    _digest: Any = field(default_factory=hashlib.sha256, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update_digest(self, data: bytes) -> None:
        self._digest.update(data)

    @property
    def draw_digest(self) -> str:
        return self._digest.hexdigest()

    def record(self) -> dict[str, Any]:
        """JSON record (exact spend as ``num/den`` text)."""
        b = self.budget
        return {
            "uid": self.uid,
            "kind": self.kind,
            "rid": self.rid,
            "delta_req": fraction_text(b.delta_req),
            "delta_spent": fraction_text(b.spent),
            "delta_spent_float": float(b.spent),
            "n_prob_events": b.n_prob_events,
            "n_det_events": b.n_det_events,
            "n_write_events": self.n_write_events,
            "n_entries_written": self.n_entries_written,
            "n_authorized": self.n_authorized,
            "n_compressed": self.n_authorized - self.n_auth_violations,
            "n_fallback_exact": self.n_fallback_exact,
            "n_auth_violations": self.n_auth_violations,
            "n_slot_reuses": self.n_slot_reuses,
            "n_factors_skipped_no_randomness": self.n_factors_skipped_no_randomness,
            "retention": (self.n_authorized / self.n_entries_written) if self.n_entries_written else None,
            "w_max_compressed": self.w_max_compressed,
            "draw_digest": self.draw_digest,
            "eprocess": self.eprocess.record(),
            "read": asdict(self.read),
            "n_read_steps": self.n_read_steps,
            "qn_max": self.qn_max,
            "reads_by_others": self.reads_by_others,
            "assumptions": dict(self.assumptions),
        }


class AccountBook:
    """All accounts of one rank, plus the global e-process that never resets. Thread-safe."""

    def __init__(self, delta_req: Fraction) -> None:
        self.delta_req = Fraction(delta_req)
        self.accounts: dict[int, Account] = {}
        self.global_eprocess = EProcess()
        self._lock = threading.Lock()

    def open(self, uid: int, kind: str, rid: str | None) -> Account:
        with self._lock:
            if uid in self.accounts:
                raise ValueError(f"account {uid} is already open (uids are never reused)")
            acc = Account(uid=uid, kind=kind, rid=rid, budget=Budget(self.delta_req))
            self.accounts[uid] = acc
            return acc

    def get(self, uid: int) -> Account:
        try:
            return self.accounts[uid]
        except KeyError:
            raise KeyError(f"no account for uid {uid}") from None

    def get_or_open(self, uid: int, kind: str, rid: str | None) -> Account:
        with self._lock:
            acc = self.accounts.get(uid)
        return acc if acc is not None else self.open(uid, kind, rid)


#: Metrics the ledger emits in its records (each must be registered; checked at snapshot time).
EMITTED_METRICS = (
    "entry:sr_radius@write", "entry:sr_witness@write", "request:delta_spent@ledger",
    "request:eprocess_log_m@ledger", "entry:retention@read", "entry:retention@write", "attn_dist:tv@read",
)


def emitted_metrics() -> dict[str, str]:
    """``metric -> tier`` of everything a ledger record carries; an unregistered metric raises."""
    from witprobe.calculus.registry import DEFAULT_REGISTRY

    return {m: DEFAULT_REGISTRY.require(m).tier.value for m in EMITTED_METRICS}
