"""Bounds versus readings: two record types that never mix.

A :class:`Bound` is an exact upper bound with its tier and proofs; a :class:`Reading` is an
observation (a realized error, a mean, a median, a ratio). Contracts accept only exact numbers
derived from bounds, and a reading never gains a tier above ``empirical``: a diagnostic reading
cannot pose as a bound (paper section 4, "bound vs diagnostic reading").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from witprobe.calculus.metrics import Metric, as_metric
from witprobe.calculus.registry import DEFAULT_REGISTRY, TierRegistry
from witprobe.calculus.tiers import Tier

STATISTICS = ("value", "max", "min", "mean", "median", "count", "ratio", "quantile")


def is_vacuous(metric: Metric, value: Fraction) -> bool:
    """A TV bound ``>= 1`` is vacuous: every total variation is at most 1."""
    return metric.is_distribution_tv and value >= 1


@dataclass(frozen=True)
class Bound:
    """An exact upper bound in ``metric``; ``tier`` is what the registry grants it."""

    metric: Metric
    value: Fraction
    tier: Tier
    proofs: tuple[str, ...] = ()
    registry: TierRegistry = field(default=DEFAULT_REGISTRY, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metric", as_metric(self.metric))
        entry = self.registry.require(self.metric)
        if entry.kind == "reading":
            raise TypeError(f"{self.metric} is registered as a reading and cannot be a bound")
        if not isinstance(self.value, Fraction):
            raise TypeError(f"bound in {self.metric} must be an exact Fraction, got {type(self.value).__name__}")
        if self.tier.rank > entry.tier.rank:
            raise ValueError(f"{self.metric} can earn at most {entry.tier}, not {self.tier}")

    @property
    def vacuous(self) -> bool:
        return is_vacuous(self.metric, self.value)


@dataclass(frozen=True)
class Reading:
    """A diagnostic observation: a float with the statistic it is (never a bound)."""

    metric: Metric
    value: float
    statistic: str = "value"
    note: str = ""
    registry: TierRegistry = field(default=DEFAULT_REGISTRY, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metric", as_metric(self.metric))
        self.registry.require(self.metric)
        if self.statistic not in STATISTICS:
            raise ValueError(f"reading statistic must be one of {STATISTICS}, got {self.statistic!r}")
        if not isinstance(self.value, (int, float)) or isinstance(self.value, bool):
            raise TypeError(f"reading value must be a number, got {type(self.value).__name__}")
        if math.isnan(float(self.value)):
            raise ValueError(f"reading {self.metric} is NaN")

    @property
    def tier(self) -> Tier:
        return Tier.EMPIRICAL
