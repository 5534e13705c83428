"""The obligation model and its Python reference checker (exact integers).

An obligation is one typed chain of one claim, with the trace of unit-grid upper bounds the
calculus computed. It is exactly what a rendered Lean file states as ``cert.check = true``:
the reference checker below evaluates the *same* decision procedure as ``Witprobe.ChainCert.check``
(plus the metric wiring that Lean checks by elaboration), in exact integers, and refuses to emit
an obligation it finds false. ``decide`` in Lean can then only fail on a Lean-side error, never
on data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from witprobe.calculus import rounding
from witprobe.calculus.contracts import (
    Chain,
    ChainEvaluation,
    Contract,
    Transfer,
    TransferKind,
    transfer_check_units,
)
from witprobe.calculus.metrics import Metric
from witprobe.calculus.registry import DEFAULT_REGISTRY, TierRegistry
from witprobe.calculus.tiers import Tier, meet_all

IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
LEAN_KEYWORDS = frozenset(
    """sorry admit axiom axioms native_decide implemented_by extern def theorem lemma example abbrev
    instance structure inductive class where with fun match do let have show from at by in end
    namespace section open import export universe variable set_option macro syntax partial unsafe
    private protected noncomputable mutual deriving if then else for unless return true false
    calc nomatch nofun termination_by decreasing_by""".split()
)


class ObligationError(ValueError):
    """An obligation is malformed or false; nothing is rendered for it."""


def check_ident(name: str) -> str:
    """A generated Lean identifier: ASCII ``[A-Za-z][A-Za-z0-9_]*``, never a keyword."""
    if not isinstance(name, str) or not IDENT.match(name) or name in LEAN_KEYWORDS:
        raise ObligationError(f"{name!r} is not an acceptable generated Lean identifier")
    return name


def check_nat(value: object, what: str) -> int:
    """A natural-number literal (Python int, not bool, >= 0)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ObligationError(f"{what} must be a natural number, got {value!r}")
    return value


@dataclass(frozen=True)
class StageSpec:
    """One stage as rendered: an affine contract in units, or a transfer kind."""

    kind: str  # "affine" | "transfer"
    m_in: str  # Python metric text
    m_out: str
    num: int = 0
    den: int = 1
    off: int = 0
    delta: int = 0
    tier: Tier = Tier.CERTIFIED
    transfer: TransferKind | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "m_in": self.m_in, "m_out": self.m_out}
        if self.kind == "affine":
            d.update(num=self.num, den=self.den, off=self.off, delta=self.delta, tier=self.tier.value)
        else:
            assert self.transfer is not None
            d["transfer"] = self.transfer.value
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "StageSpec":
        if d.get("kind") == "affine":
            return cls(
                "affine", d["m_in"], d["m_out"], check_nat(d["num"], "num"), check_nat(d["den"], "den"),
                check_nat(d["off"], "off"), check_nat(d["delta"], "delta"), Tier.parse(d["tier"]),
            )
        if d.get("kind") == "transfer":
            return cls("transfer", d["m_in"], d["m_out"], transfer=TransferKind(d["transfer"]))
        raise ObligationError(f"unknown stage kind {d.get('kind')!r}")

    @property
    def stage_tier(self) -> Tier:
        return self.tier if self.kind == "affine" else Tier.CERTIFIED

    @property
    def stage_delta(self) -> int:
        return self.delta if self.kind == "affine" else 0

    def check_step(self, u: int, v: int, aux: int) -> bool:
        """Mirror of ``Witprobe.RawStage.check``."""
        if self.kind == "affine":
            return self.den > 0 and self.num * u + self.off <= self.den * v
        assert self.transfer is not None
        return transfer_check_units(self.transfer, u, v, aux)


@dataclass(frozen=True)
class ChainObligation:
    """A per-run chain certificate: ``ident`` names the Lean declarations it renders to."""

    ident: str
    claim_id: str
    stages: tuple[StageSpec, ...]
    input_units: int
    trace: tuple[tuple[int, int], ...]
    claim_units: int
    tier: Tier
    delta_budget: int

    @property
    def theorem(self) -> str:
        return f"{self.ident}_ok"

    @classmethod
    def from_evaluation(cls, ident: str, claim_id: str, chain: Chain, ev: ChainEvaluation) -> "ChainObligation":
        """Build the obligation of an evaluated chain (the claim is its final bound)."""
        specs: list[StageSpec] = []
        for s in chain.stages:
            if isinstance(s, Contract):
                f = s.lean_fields()
                specs.append(StageSpec(
                    "affine", str(s.m_in), str(s.m_out), f["num"], f["den"], f["off"],
                    rounding.to_units_up(s.delta), s.tier,
                ))
            elif isinstance(s, Transfer):
                specs.append(StageSpec("transfer", str(s.m_in), str(s.m_out), transfer=s.kind))
            else:  # pragma: no cover - the chain type admits nothing else
                raise ObligationError(f"unsupported stage {s!r}")
        return cls(
            ident=check_ident(ident),
            claim_id=claim_id,
            stages=tuple(specs),
            input_units=ev.e_in,
            trace=tuple((sv.e_out, sv.aux) for sv in ev.stages),
            claim_units=ev.bound_units,
            tier=ev.tier,
            delta_budget=sum(s.stage_delta for s in specs),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "ident": self.ident,
            "claim_id": self.claim_id,
            "stages": [s.to_json() for s in self.stages],
            "input_units": self.input_units,
            "trace": [[v, a] for v, a in self.trace],
            "claim_units": self.claim_units,
            "tier": self.tier.value,
            "delta_budget": self.delta_budget,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "ChainObligation":
        try:
            return cls(
                ident=check_ident(d["ident"]),
                claim_id=str(d["claim_id"]),
                stages=tuple(StageSpec.from_json(s) for s in d["stages"]),
                input_units=check_nat(d["input_units"], "input_units"),
                trace=tuple((check_nat(v, "trace value"), check_nat(a, "trace witness")) for v, a in d["trace"]),
                claim_units=check_nat(d["claim_units"], "claim_units"),
                tier=Tier.parse(d["tier"]),
                delta_budget=check_nat(d["delta_budget"], "delta_budget"),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ObligationError(f"malformed obligation: {e}") from e


def wiring_errors(ob: ChainObligation, registry: TierRegistry = DEFAULT_REGISTRY) -> list[str]:
    """What Lean would reject at elaboration: unknown metrics or stages that do not line up."""
    errs: list[str] = []
    for i, s in enumerate(ob.stages):
        for m in (s.m_in, s.m_out):
            try:
                entry = registry.require(Metric.parse(m))
            except Exception as e:  # noqa: BLE001 - report every reason
                errs.append(f"stage {i}: {e}")
                continue
            if not entry.lean:
                errs.append(f"stage {i}: metric {m} has no Witprobe.Metric constructor")
        if s.kind == "transfer" and s.transfer is not None:
            if (str(s.transfer.m_in), str(s.transfer.m_out)) != (s.m_in, s.m_out):
                errs.append(f"stage {i}: transfer {s.transfer.value} is typed {s.transfer.m_in} -> {s.transfer.m_out}")
        if i and ob.stages[i - 1].m_out != s.m_in:
            errs.append(f"stage {i}: expects {s.m_in} but stage {i - 1} outputs {ob.stages[i - 1].m_out}")
    if not ob.stages:
        errs.append("empty chain")
    return errs


def reference_check(ob: ChainObligation, registry: TierRegistry = DEFAULT_REGISTRY) -> list[str]:
    """Evaluate the obligation exactly as Lean will; return the reasons it is false (empty = true).

    Mirrors ``Witprobe.ChainCert.check``: the trace, the tier meet, the delta budget, and the
    non-vacuity of a certified claim; plus the metric wiring Lean checks by elaboration.
    """
    errs = wiring_errors(ob, registry)
    if len(ob.trace) != len(ob.stages):
        errs.append(f"trace has {len(ob.trace)} steps for {len(ob.stages)} stages")
    else:
        u = ob.input_units
        for i, (s, (v, aux)) in enumerate(zip(ob.stages, ob.trace)):
            if not s.check_step(u, v, aux):
                errs.append(f"stage {i} ({s.kind}): claimed output {v} units does not bound input {u}")
            u = v
        if u > ob.claim_units:
            errs.append(f"claim {ob.claim_units} units is below the traced bound {u}")
    if meet_all(s.stage_tier for s in ob.stages) is not ob.tier:
        errs.append(f"claimed tier {ob.tier} is not the meet of the stages")
    if sum(s.stage_delta for s in ob.stages) > ob.delta_budget:
        errs.append("stage deltas exceed the delta budget")
    if ob.tier is Tier.CERTIFIED and ob.claim_units >= rounding.UNIT:
        errs.append("a certified TV claim must be below 1.0 (vacuous bound)")
    return errs
