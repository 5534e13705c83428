"""The owner ledger: reads of foreign-owned entries are attributed to their writer (paper 5.6).

Every certified write records its writer uid in the slot table. A read whose entry was written by
another account is *foreign*; it is legitimate when the reader's handle names that writer (a
prefix-cache hit), and it is then counted against the writer's entries (``reads_by_others``), not
against the reader's budget. A write event spends its ``delta`` once, however many readers it
has: reads are deterministic checks and spend 0 (Lean ``SharedRead.shared_read_sound``: the union
ranges over write events, never over readers).
"""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np


class OwnerLedger:
    """Tallies of foreign reads per writer uid. Thread-safe."""

    def __init__(self) -> None:
        self.reads_by_writer: Counter[int] = Counter()
        self._lock = threading.Lock()

    def attribute(self, reader: int | np.ndarray, owners: np.ndarray, mult: np.ndarray) -> int:
        """Attribute the foreign reads among ``owners`` (one per distinct entry read ``mult`` times);
        ``reader`` is one uid or one per entry."""
        foreign = (owners != reader) & (owners >= 0)
        if not foreign.any():
            return 0
        uniq, inv = np.unique(owners[foreign], return_inverse=True)
        sums = np.bincount(inv, weights=mult[foreign]).astype(np.int64)
        with self._lock:
            for w, n in zip(uniq.tolist(), sums.tolist()):
                self.reads_by_writer[int(w)] += int(n)
        return int(sums.sum())
