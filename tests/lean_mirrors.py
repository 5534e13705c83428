"""Python mirrors of Lean theorems that no witprobe command uses: the tests check them against
the Lean statements' decisions (one module, outside the package).

The aggregation-key rule, mirroring ``Witprobe/KeyRule.lean``.

Ledger counters (reads, owner changes, restorations, spends) are aggregated under a key. A key
that omits one of owner, layer, page, slot, generation, step merges events that differ in that
dimension, so the count can no longer be attributed: a stale-generation read looks like a fresh
one, two owners' spends land in one account. :func:`covers` is the decidable check
(Lean ``Witprobe.covers``); :func:`collision` builds the counterexample of
``Witprobe.missing_dim_collides`` for a key that fails it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


class Dim(enum.Enum):
    """Dimensions an event is identified by (constructors of ``Witprobe.Dim``)."""

    OWNER = "owner"
    LAYER = "layer"
    PAGE = "page"
    SLOT = "slot"
    GENERATION = "generation"
    STEP = "step"


REQUIRED: tuple[Dim, ...] = (Dim.OWNER, Dim.LAYER, Dim.PAGE, Dim.SLOT, Dim.GENERATION, Dim.STEP)


class KeyRuleViolation(ValueError):
    """A counter was keyed by a key that does not cover every required dimension."""


def _dims(key: Iterable[Dim | str]) -> tuple[Dim, ...]:
    return tuple(d if isinstance(d, Dim) else Dim(d) for d in key)


def missing(key: Iterable[Dim | str]) -> tuple[Dim, ...]:
    """The required dimensions the key does not list, in the order of :data:`REQUIRED`."""
    have = set(_dims(key))
    return tuple(d for d in REQUIRED if d not in have)


def covers(key: Iterable[Dim | str]) -> bool:
    """The key rule (Lean ``Witprobe.covers``)."""
    return not missing(key)


def key_of(key: Iterable[Dim | str], event: Mapping[Dim, int]) -> tuple[int, ...]:
    """The value an event aggregates under (Lean ``Witprobe.keyOf``)."""
    return tuple(event[d] for d in _dims(key))


def collision(key: Iterable[Dim | str]) -> tuple[dict[Dim, int], dict[Dim, int]] | None:
    """Two events differing in a missing dimension with the same key value, or ``None`` if the
    key covers every required dimension (Lean ``Witprobe.missing_dim_collides``)."""
    gaps = missing(key)
    if not gaps:
        return None
    d = gaps[0]
    zero = {x: 0 for x in Dim}
    indicator = {x: (1 if x is d else 0) for x in Dim}
    return indicator, zero


@dataclass(frozen=True)
class KeyedCount:
    """A count that can only be built under a covering key (Lean ``Witprobe.KeyedCount``)."""

    key: tuple[Dim, ...]
    count: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", _dims(self.key))
        gaps = missing(self.key)
        if gaps:
            raise KeyRuleViolation(
                f"aggregation key {[d.value for d in self.key]} misses {[d.value for d in gaps]}; "
                "events differing only there would be counted together"
            )
