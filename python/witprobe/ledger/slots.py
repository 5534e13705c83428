"""Slot state, generation and owner of every entry of a compressed pool (paper 5.6, Fig. slotstate).

A slot ``(namespace, slot)`` is in one of four states::

    unwritten --certified write, authorized--> masked --audit: W > radius--> restored_exact
    unwritten --policy rejects / unattributable--> kept_exact
    any state --reuse (page reallocated)--> unwritten, generation + 1, no owner

Reuse invalidation happens when a page is handed to a new owner, *before any read*: a holder of an
old handle then sees a newer generation. The table also keeps, per slot, the owner uid, the
realized witness and radius of the served bytes, and the id of the write event that produced
them. A namespace is one ``(layer, head)`` of one pool family; two families that shared one table
(a namespace collision) would overwrite each other's owners.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field

import numpy as np

NO_OWNER = -1


class SlotState(enum.IntEnum):
    UNWRITTEN = 0
    MASKED = 1
    KEPT_EXACT = 2
    RESTORED_EXACT = 3


STATE_NAMES = {s: s.name.lower() for s in SlotState}
#: The states as plain ints: numpy compares an array with an ``IntEnum`` member about 4x slower.
UNWRITTEN, MASKED, KEPT_EXACT, RESTORED_EXACT = (int(s) for s in SlotState)


@dataclass
class ReadTally:
    """Outcome counts of read checks (each read = one query reading one entry)."""

    n_reads: int = 0
    n_read_unwritten: int = 0
    n_read_out_of_generation: int = 0
    n_read_masked: int = 0
    n_read_kept_exact: int = 0
    n_read_restored_exact: int = 0
    n_read_foreign_attributed: int = 0
    n_read_foreign_unattributed: int = 0
    n_retained: int = 0
    n_fallback_exact_read: int = 0
    n_served_over_radius: int = 0

    def add(self, other: "ReadTally") -> None:
        for k in self.__dataclass_fields__:
            setattr(self, k, getattr(self, k) + getattr(other, k))


@dataclass
class SlotTable:
    """Identity map of one pool family: arrays ``(n_namespaces, n_slots)``."""

    n_namespaces: int
    n_slots: int
    state: np.ndarray = field(init=False)
    gen: np.ndarray = field(init=False)
    owner: np.ndarray = field(init=False)
    witness: np.ndarray = field(init=False)
    radius: np.ndarray = field(init=False)
    write_id: np.ndarray = field(init=False)
    n_invalidated: int = 0
    n_reuse_at_write: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        shape = (self.n_namespaces, self.n_slots)
        self.state = np.zeros(shape, np.uint8)
        self.gen = np.zeros(shape, np.int64)
        self.owner = np.full(shape, NO_OWNER, np.int64)
        self.witness = np.zeros(shape, np.float64)
        self.radius = np.zeros(shape, np.float64)
        self.write_id = np.full(shape, -1, np.int64)

    def invalidate(self, slots: np.ndarray) -> None:
        """Reuse: every namespace of ``slots`` becomes unwritten, ownerless, generation + 1."""
        with self.lock:
            self.state[:, slots] = UNWRITTEN
            self.gen[:, slots] += 1
            self.owner[:, slots] = NO_OWNER
            self.witness[:, slots] = 0.0
            self.radius[:, slots] = 0.0
            self.n_invalidated += int(np.size(slots))

    def write(
        self, ns: np.ndarray, slots: np.ndarray, owner: int, state: np.ndarray, witness: np.ndarray,
        radius: np.ndarray, write_id: int,
    ) -> int:
        """Record a certified write; returns how many slots were live (rewritten without invalidation).

        A live slot being rewritten is a reuse that was not invalidated at allocation: its
        generation is bumped here, at the write (the paper's rewrite-time transition), which is
        too late for a reader that validated the old generation in between.
        """
        with self.lock:
            live = self.state[ns, slots] != UNWRITTEN
            n_live = int(live.sum())
            if n_live:
                self.gen[ns[live], slots[live]] += 1
                self.n_reuse_at_write += n_live
            self.state[ns, slots] = state
            self.owner[ns, slots] = owner
            self.witness[ns, slots] = witness
            self.radius[ns, slots] = radius
            self.write_id[ns, slots] = write_id
            return n_live

    def check_reads(
        self, ns: np.ndarray, slots: np.ndarray, exp_gen: np.ndarray, exp_owner: np.ndarray, mult: np.ndarray,
        reader: int, w_thr: float,
    ) -> ReadTally:
        """Check distinct entries read ``mult`` times each by ``reader`` (all arrays the same length).

        ``exp_gen``/``exp_owner`` are what the reader's handle expects (the generation it attached
        and the writer it attributes the entry to).
        """
        if np.size(ns) == 0:
            return ReadTally()
        return self.check_read_segments(ns, slots, exp_gen, exp_owner, mult, reader, w_thr, np.zeros(1, np.int64))[0]

    def check_read_segments(
        self, ns: np.ndarray, slots: np.ndarray, exp_gen: np.ndarray, exp_owner: np.ndarray, mult: np.ndarray,
        reader: int | np.ndarray, w_thr: float, starts: np.ndarray,
    ) -> list[ReadTally]:
        """:meth:`check_reads` of several readers at once: one tally per segment ``starts[k] ..
        starts[k+1] - 1`` of the (equal-length, nonempty) arrays; ``reader`` is one uid or one per entry.

        Each outcome is a mask over the entries; a segment's count is the exact integer sum of
        ``mult`` over the segment's entries in the mask (``np.add.reduceat``), so a tally equals
        :meth:`check_reads` of that segment alone.
        """
        st = self.state[ns, slots]
        gen = self.gen[ns, slots]
        own = self.owner[ns, slots]
        w = self.witness[ns, slots]
        rad = self.radius[ns, slots]
        stale = gen != exp_gen
        unwritten = (st == UNWRITTEN) & ~stale
        ok = ~stale & ~unwritten
        foreign = ok & (own != reader)
        attributed = foreign & (own == exp_owner)
        masked = ok & (st == MASKED)
        retained = masked & (w <= w_thr)
        outcomes = {  # ReadTally's fields, in order
            "n_reads": np.ones_like(ok),
            "n_read_unwritten": unwritten,
            "n_read_out_of_generation": stale,
            "n_read_masked": masked,
            "n_read_kept_exact": ok & (st == KEPT_EXACT),
            "n_read_restored_exact": ok & (st == RESTORED_EXACT),
            "n_read_foreign_attributed": attributed,
            "n_read_foreign_unattributed": (foreign & ~attributed) | (ok & (own == reader) & (exp_owner != reader)),
            "n_retained": retained,
            "n_fallback_exact_read": masked & ~retained,
            "n_served_over_radius": masked & (w > rad),
        }
        counts = np.add.reduceat(np.stack(list(outcomes.values())) * np.asarray(mult, np.int64), starts, axis=1)
        return [ReadTally(**dict(zip(outcomes, map(int, col)))) for col in counts.T]
