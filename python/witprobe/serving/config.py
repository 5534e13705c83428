"""Knobs of a ledger attached to a live engine (recorded in the journal's ``open`` record)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from witprobe.calculus.rounding import fraction_text

#: Fault names: the same as ``ledger simulate`` (:data:`witprobe.ledger.simulate.FAULTS`).
FAULTS = ("none", "no-reuse-invalidation", "family-collision", "split-accounts", "drop-plan", "sr-coarse")
FAMILIES = ("key", "value")
DEFAULT_AUTH_THR = {"key": 9.0, "value": 0.3}
WARMUP_PREFIX = "warmup-"
DROP_PLAN_PERIOD = 7  # drop-plan: batches b with b % 7 == 3 announce one token more than they write


class LiveConfigError(ValueError):
    """A live-ledger option is invalid (the message names it)."""


@dataclass(frozen=True)
class LiveConfig:
    """Parameters of the attached ledger.

    ``auth_thr`` / ``read_thr`` are the write-authorization and read thresholds ``W_thr`` per
    family, in the entries' real units; ``delta_req`` the per-request budget; ``nonce`` the
    server nonce of the RNG key ``(nonce, uid, layer * 2 + family, counter)``; requests whose id
    starts with ``warmup_prefix`` are server warmup (the warmup account, uid 0).

    The live read meter (:mod:`witprobe.serving.read_meter`): ``live_bound`` turns it on for
    ``bound_layers`` (``None``: every layer); ``tau`` in ``(0, 1)`` enforces (rows whose bound exceeds
    it are served exact; implies ``keep_exact``); ``audit_rate`` in ``[0, 1]`` is the fraction of
    (row, head) pairs whose kernel output is audited (sampled with ``audit_seed``); ``keep_exact``
    keeps the exact side pool, which also measures each row's realized TV. ``request_budget`` ``B``
    admits a request's reads on its cumulative bound: while the summed live bounds of the rows it
    was served compressed stay within ``B`` its reads are admitted; the read that would pass ``B``,
    and every later one, is served exact (implies ``keep_exact``).
    """

    nonce: int = 0x5EED
    delta_req: Fraction = Fraction(1, 100)
    auth_thr: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_AUTH_THR))
    read_thr: dict[str, float] | None = None
    drop_bits: int = 2
    bands: int = 1
    fault: str = "none"
    warmup_prefix: str = WARMUP_PREFIX
    synchronous: str = "NORMAL"
    live_bound: bool = True
    bound_layers: tuple[int, ...] | None = None
    tau: float | None = None
    audit_rate: float = 0.0
    keep_exact: bool = False
    audit_seed: int = 0
    request_budget: float | None = None

    def __post_init__(self) -> None:
        if self.fault not in FAULTS:
            raise LiveConfigError(f"unknown fault {self.fault!r}; choose from {', '.join(FAULTS)}")
        d = Fraction(self.delta_req)
        if not 0 < d <= 1:
            raise LiveConfigError(f"delta_req must lie in (0, 1], got {d}")
        object.__setattr__(self, "delta_req", d)
        if self.read_thr is None:
            object.__setattr__(self, "read_thr", dict(self.auth_thr))
        for what, m in (("auth_thr", self.auth_thr), ("read_thr", self.read_thr)):
            for fam in FAMILIES:
                v = m.get(fam) if isinstance(m, dict) else None
                if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                    raise LiveConfigError(f"{what}[{fam!r}] must be a finite nonnegative number, got {v!r}")
        if not self.warmup_prefix:
            raise LiveConfigError("warmup_prefix must be nonempty")
        if self.tau is not None and not (isinstance(self.tau, (int, float)) and not isinstance(self.tau, bool)
                                         and 0 < self.tau < 1):
            raise LiveConfigError(f"tau must be a number in (0, 1) (a TV distance), got {self.tau!r}")
        if not (isinstance(self.audit_rate, (int, float)) and not isinstance(self.audit_rate, bool)
                and 0 <= self.audit_rate <= 1):
            raise LiveConfigError(f"audit_rate must be a number in [0, 1], got {self.audit_rate!r}")
        if self.bound_layers is not None:
            bl = tuple(self.bound_layers)
            if not bl or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in bl):
                raise LiveConfigError(f"bound_layers must be a nonempty list of layer indices, got {self.bound_layers!r}")
            object.__setattr__(self, "bound_layers", bl)
        b = self.request_budget
        if b is not None and not (isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b) and b > 0):
            raise LiveConfigError(f"request_budget must be a positive finite number (summed TV bounds), got {b!r}")
        if (self.tau is not None or self.audit_rate > 0 or self.keep_exact or b is not None) and not self.live_bound:
            raise LiveConfigError("tau, request_budget, audit_rate and keep_exact need the live bound (live_bound=True)")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["delta_req"] = fraction_text(self.delta_req)
        return d
