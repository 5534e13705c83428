"""The paged compressed pool shared by all requests: families, pages, slots, prefix cache.

A pool has one or more **families** (e.g. key and value caches), each with its own page
geometry and allocator. A page of family ``f`` holds ``page_size`` consecutive positions of one
request in every namespace ``(layer, head)`` of ``f``; slot ``s = page * page_size + offset``.
Per family the pool keeps the served bytes, the exact bytes (the fallback and the audit's
reference), the entries' scale exponents, and the :class:`~witprobe.ledger.slots.SlotTable`
(state, generation, owner). Families are separate namespaces; ``collide_families=True`` (a fault
switch) makes them share one slot table, as two compressed-pool families that keyed owners by
``(layer, slot)`` alone did in the paper's first concurrent run.

Allocation (thread-safe, one lock per family): never-used and partial pages come from a FIFO
free list; full pages of finished requests stay cached in LRU order with their prefix hash and
are evicted (reused) when the free list is empty. **Reuse invalidation**: handing a page to a new
owner marks its slots unwritten and bumps their generation, before anyone can read them.

The prefix index maps a page's prefix hash to ``(page, generation, owner)``; it is not cleaned at
eviction but *validated* at lookup: an entry whose page generation moved on is dropped. With
invalidation switched off (``invalidate_on_reuse=False``, a fault switch) a reused page keeps its
old generation until rewritten, so a lookup in that window attaches another request's page: the
read checks then see a foreign, out-of-generation owner.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field

import numpy as np

from witprobe.ledger.slots import SlotState, SlotTable


class PoolError(RuntimeError):
    """The pool cannot satisfy a request (out of pages) or was used wrongly."""


@dataclass(frozen=True)
class FamilySpec:
    name: str
    page_size: int

    def __post_init__(self) -> None:
        if not self.name or self.page_size < 1:
            raise PoolError(f"bad pool family {self!r}")


@dataclass(frozen=True)
class PrefixHit:
    page: int
    gen: int
    owner: int


@dataclass
class Family:
    """One pool family: storage, identity map, allocator and prefix index."""

    spec: FamilySpec
    n_pages: int
    n_namespaces: int
    dim: int
    slots: SlotTable
    invalidate_on_reuse: bool = True
    served: np.ndarray = field(init=False)
    exact: np.ndarray = field(init=False)
    scale_exp: np.ndarray = field(init=False)
    refcount: np.ndarray = field(init=False)
    n_evictions: int = 0
    n_reuses: int = 0  # allocations of a page that held data before (free-list or evicted)
    n_prefix_hits: int = 0
    n_prefix_stale_dropped: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        n_slots = self.n_pages * self.spec.page_size
        self.served = np.zeros((self.n_namespaces, n_slots, self.dim), np.uint8)
        self.exact = np.zeros((self.n_namespaces, n_slots, self.dim), np.uint8)
        self.scale_exp = np.zeros((self.n_namespaces, n_slots), np.int16)
        self.refcount = np.zeros(self.n_pages, np.int64)
        self._free: deque[int] = deque(range(self.n_pages))
        self._cached: OrderedDict[int, int] = OrderedDict()  # page -> prefix hash (refcount 0)
        self._index: dict[int, PrefixHit] = {}
        self._ever_used = np.zeros(self.n_pages, bool)

    @property
    def page_size(self) -> int:
        return self.spec.page_size

    def page_slots(self, page: int) -> np.ndarray:
        return np.arange(page * self.page_size, (page + 1) * self.page_size)

    def allocate(self, n: int) -> list[int]:
        """``n`` pages for a new owner: free list first, then LRU eviction of cached pages."""
        with self.lock:
            if n > len(self._free) + len(self._cached):
                raise PoolError(f"family {self.spec.name}: out of pages ({n} wanted, "
                                f"{len(self._free)} free, {len(self._cached)} cached)")
            out = []
            for _ in range(n):
                if self._free:
                    page = self._free.popleft()
                else:
                    page, _h = self._cached.popitem(last=False)
                    self.n_evictions += 1
                if self._ever_used[page]:
                    self.n_reuses += 1
                    if self.invalidate_on_reuse:
                        self.slots.invalidate(self.page_slots(page))
                self._ever_used[page] = True
                self.refcount[page] = 1
                out.append(page)
            return out

    def lookup(self, hashes: list[int]) -> list[PrefixHit]:
        """Longest valid cached prefix (pages pinned); stale index entries are dropped."""
        hits: list[PrefixHit] = []
        with self.lock:
            for h in hashes:
                hit = self._index.get(h)
                if hit is None:
                    break
                first = hit.page * self.page_size
                slots = self.page_slots(hit.page)
                valid = bool((self.slots.gen[:, first] == hit.gen).all()
                             and (self.slots.state[:, slots] != SlotState.UNWRITTEN).all())
                if not valid:
                    del self._index[h]
                    self.n_prefix_stale_dropped += 1
                    break
                if self.refcount[hit.page] == 0:
                    self._cached.pop(hit.page, None)
                self.refcount[hit.page] += 1
                self.n_prefix_hits += 1
                hits.append(hit)
        return hits

    def release(self, pages: list[int], hashes: dict[int, tuple[int, int]]) -> None:
        """Drop one reference per page; a page reaching 0 is cached (if ``hashes`` names it) or freed.

        ``hashes`` maps a page to ``(prefix hash, owner)`` for the full pages this owner wrote.
        """
        with self.lock:
            for page in pages:
                self.refcount[page] -= 1
                if self.refcount[page] < 0:
                    raise PoolError(f"family {self.spec.name}: page {page} released twice")
                if page in hashes:
                    h, owner = hashes[page]
                    gen = int(self.slots.gen[0, page * self.page_size])
                    self._index[h] = PrefixHit(page, gen, owner)
                if self.refcount[page] == 0:
                    if page in hashes:
                        self._cached[page] = hashes[page][0]
                    elif page not in self._cached:
                        self._free.append(page)

    def stats(self) -> dict[str, int]:
        with self.lock:
            return {
                "n_pages": self.n_pages, "page_size": self.page_size, "free": len(self._free),
                "cached": len(self._cached), "in_use": int((self.refcount > 0).sum()),
                "evictions": self.n_evictions, "reuses": self.n_reuses, "prefix_hits": self.n_prefix_hits,
                "prefix_stale_dropped": self.n_prefix_stale_dropped,
            }


class PagedPool:
    """All families of one replica's pool."""

    def __init__(self, specs: list[FamilySpec], n_pages: dict[str, int], n_namespaces: int, dim: int, *,
                 invalidate_on_reuse: bool = True, collide_families: bool = False) -> None:
        if len({s.name for s in specs}) != len(specs):
            raise PoolError("pool family names must be distinct")
        self.invalidate_on_reuse = invalidate_on_reuse
        self.collide_families = collide_families
        self.families: dict[str, Family] = {}
        shared: SlotTable | None = None
        if collide_families:
            shared = SlotTable(n_namespaces, max(n_pages[s.name] * s.page_size for s in specs))
        for s in specs:
            table = shared if shared is not None else SlotTable(n_namespaces, n_pages[s.name] * s.page_size)
            self.families[s.name] = Family(s, n_pages[s.name], n_namespaces, dim, table, invalidate_on_reuse)

    def namespaces_disjoint(self) -> bool:
        """Whether every family has its own identity map (no namespace collision)."""
        tables = [id(f.slots) for f in self.families.values()]
        return len(set(tables)) == len(tables)


def prefix_hashes(tokens: list[int], page_size: int, n_full: int, salt: int = 0) -> list[int]:
    """Chained hashes of the first ``n_full`` full pages of ``tokens`` (deterministic across processes)."""
    out, h = [], hash((salt, page_size))
    for i in range(n_full):
        h = hash((h, tuple(tokens[i * page_size:(i + 1) * page_size])))
        out.append(h)
    return out


__all__ = ["FamilySpec", "Family", "PagedPool", "PoolError", "PrefixHit", "prefix_hashes"]
