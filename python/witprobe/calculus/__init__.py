"""The contract calculus: metrics as types, tiers, affine contracts, bridges and chains.

Everything that crosses the trust boundary here is an exact :class:`fractions.Fraction`;
floats enter only through :mod:`witprobe.calculus.rounding`, rounded outward.
"""

from witprobe.calculus.metrics import Metric, MetricError
from witprobe.calculus.tiers import Tier, meet, meet_all
from witprobe.calculus.contracts import (
    Chain,
    ChainEvaluation,
    Contract,
    MetricMismatch,
    StageValue,
    Transfer,
    TransferKind,
    compose,
)
from witprobe.calculus.registry import (
    DEFAULT_REGISTRY,
    RegisteredMetric,
    TierRegistry,
    UnregisteredMetric,
)

__all__ = [
    "Chain",
    "ChainEvaluation",
    "Contract",
    "DEFAULT_REGISTRY",
    "Metric",
    "MetricError",
    "MetricMismatch",
    "RegisteredMetric",
    "StageValue",
    "Tier",
    "TierRegistry",
    "Transfer",
    "TransferKind",
    "UnregisteredMetric",
    "compose",
    "meet",
    "meet_all",
]
