"""Request identity on the write path (paper 5.6, "Request identity" and "Fail-closed identity").

- **UIDs** are monotone integers handed out by :class:`UidAllocator`, never reused; uid 0 is the
  warmup account (server-warmup batches that carry no request identity).
- **Request start** is detected on the write path: the first *extend* (prefill) row of a client
  request opens its account, before its first write is accounted, so account boundaries equal
  request boundaries. Later extend chunks of the same request (chunked prefill) and its decode
  rows reuse that account.
- **Per-row attribution**: a batch's new entries are laid out row by row; decode rows carry one
  token each (row-aligned), extend rows are segmented by the prefix sums of their extend lengths.
  :func:`attribute` returns the uid of every token, or ``None`` when the plan does not account
  for exactly the entries written.
- **Fail closed**: a batch that cannot be attributed is written exact, spends nothing, and adds
  its entries to ``identity_fail_closed``. A row identified only by the sequence-length-drop
  fallback (read-only deployments: no request id, a batch position whose length dropped) is
  attributed but counted in ``uid_group_fallbacks``; the gate requires both counters to be 0.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

WARMUP_UID = 0


class IdentityError(RuntimeError):
    """A uid was reused or an identity invariant broke."""


class UidAllocator:
    """Monotone uids, never reused (thread-safe). ``0`` is reserved for the warmup account."""

    def __init__(self) -> None:
        self._next = WARMUP_UID + 1
        self._lock = threading.Lock()
        self._issued: set[int] = {WARMUP_UID}

    def new(self) -> int:
        with self._lock:
            uid = self._next
            self._next += 1
            if uid in self._issued:  # cannot happen with a monotone counter; kept as an invariant
                raise IdentityError(f"uid {uid} would be reused")
            self._issued.add(uid)
            return uid

    @property
    def issued(self) -> int:
        return self._next - 1


@dataclass(frozen=True)
class Row:
    """One row of a batch plan.

    ``rid`` is the client request id (``None`` for warmup rows and for read-only deployments);
    ``mode`` is ``"extend"`` (prefill chunk) or ``"decode"``; ``n_tokens`` entries per namespace;
    ``seq_len`` is the row's sequence length after this batch; ``position`` its batch position
    (used only by the sequence-length fallback).
    """

    rid: str | None
    mode: str
    n_tokens: int
    seq_len: int
    position: int = 0
    warmup: bool = False


@dataclass
class IdentityTracker:
    """Maps rows to account uids; opens accounts at request start. Thread-safe.

    ``split_on_every_extend`` is a fault switch: a naive detector that treats every extend row as
    a new request splits a chunked-prefill request into several accounts (the gate must notice).
    """

    uids: UidAllocator = field(default_factory=UidAllocator)
    split_on_every_extend: bool = False
    identity_fail_closed: int = 0
    identity_fail_closed_batches: int = 0
    uid_group_fallbacks: int = 0
    _by_rid: dict[str, int] = field(default_factory=dict)
    _by_position: dict[int, tuple[int, int]] = field(default_factory=dict)  # position -> (uid, seq_len)
    _opened: list[tuple[int, str | None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def row_uid(self, row: Row) -> int | None:
        """The account of one row, opening it at request start; ``None`` if unattributable."""
        with self._lock:
            if row.warmup:
                return WARMUP_UID
            if row.rid is not None:
                uid = self._by_rid.get(row.rid)
                if row.mode == "extend" and (uid is None or self.split_on_every_extend):
                    uid = self.uids.new()
                    self._by_rid[row.rid] = uid
                    self._opened.append((uid, row.rid))
                return uid  # a decode row of a request never started is unattributable (None)
            # read-only fallback: a sequence-length drop at a batch position starts a new request
            prev = self._by_position.get(row.position)
            if prev is None or row.seq_len < prev[1]:
                uid = self.uids.new()
                self._opened.append((uid, None))
            else:
                uid = prev[0]
            self._by_position[row.position] = (uid, row.seq_len)
            self.uid_group_fallbacks += 1
            return uid

    def fail_closed(self, n_entries: int) -> None:
        with self._lock:
            self.identity_fail_closed += n_entries
            self.identity_fail_closed_batches += 1

    @property
    def opened(self) -> list[tuple[int, str | None]]:
        """``(uid, rid)`` of every account opened, in order."""
        with self._lock:
            return list(self._opened)


def attribute(rows: Sequence[Row], row_uids: Sequence[int | None], n_tokens: int) -> np.ndarray | None:
    """uid of each of the batch's ``n_tokens`` new tokens, laid out row by row; ``None`` if impossible.

    Decode rows must carry exactly one token; extend rows are segmented by the prefix sums of
    their ``n_tokens``. Any row without a uid, or a plan whose token count differs from the
    entries written, makes the whole batch unattributable.
    """
    if len(rows) != len(row_uids) or any(u is None for u in row_uids):
        return None
    lens = []
    for r in rows:
        if r.mode == "decode" and r.n_tokens != 1:
            return None
        if r.mode not in ("decode", "extend") or r.n_tokens < 1:
            return None
        lens.append(r.n_tokens)
    if sum(lens) != n_tokens:
        return None
    return np.repeat(np.asarray(row_uids, dtype=np.int64), lens)
