"""Evidence tiers: certified > partial > empirical, composed by the meet (weakest link).

- ``certified``: a sound upper bound exists and is not saturated.
- ``partial``: the bound holds only on a decidable subset (e.g. rank-prefix rows with a margin
  larger than ``2*eps``).
- ``empirical``: an observation with no bound.

A composition takes the weakest tier of its parts, so nothing is upgraded by composing
(Lean: ``Witprobe.Tier.meet_rank_le_left``, ``Witprobe.Tier.meetAll_rank_le``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Tier(enum.Enum):
    """Evidence tier. ``rank`` orders them: empirical 0 < partial 1 < certified 2."""

    EMPIRICAL = "empirical"
    PARTIAL = "partial"
    CERTIFIED = "certified"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def lean_name(self) -> str:
        """Constructor of ``Witprobe.Tier`` (``partial`` is a Lean keyword: ``partialCert``)."""
        return {"empirical": "empirical", "partial": "partialCert", "certified": "certified"}[self.value]

    @classmethod
    def parse(cls, text: str) -> "Tier":
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"unknown tier {text!r}; expected one of certified, partial, empirical") from None

    def __str__(self) -> str:
        return self.value


_RANK = {Tier.EMPIRICAL: 0, Tier.PARTIAL: 1, Tier.CERTIFIED: 2}


def meet(s: Tier, t: Tier) -> Tier:
    """The weaker of two tiers (commutative, associative, idempotent)."""
    return s if s.rank <= t.rank else t


def meet_all(tiers: Iterable[Tier]) -> Tier:
    """Weakest link over a collection; the empty meet is ``certified`` (the unit of ``meet``)."""
    out = Tier.CERTIFIED
    for t in tiers:
        out = meet(out, t)
    return out
