"""Typed affine contracts, monotone transfer bridges, and chains.

A *contract* of a stage is ``e_out <= a * e_in + b``, holding except with probability ``delta``,
where ``e_in`` is measured in metric ``m_in`` and ``e_out`` in metric ``m_out``
(paper section 2). Series composition (paper eq. 4)::

    (a2, b2, delta2) o (a1, b1, delta1) = (a2*a1, a2*b1 + b2, delta1 + delta2)

is defined only when ``m_out`` of the first equals ``m_in`` of the second; otherwise
:class:`MetricMismatch` is raised. The tier of a composite is the meet of its parts.

A *bridge* is a contract between two different metrics that names the Lean theorem proving it.
Some bridges are not affine (the softmax bridges map a score error ``x`` to a TV bound such as
``tanh(x/4)``); they are :class:`Transfer` stages: monotone nondecreasing maps ``f`` with
``e_out <= f(e_in)``. A chain evaluates an upper bound stage by stage; since every stage is
monotone in its input, an upper bound of the input gives an upper bound of the output.

Evaluation works on the unit grid of :mod:`witprobe.calculus.rounding` (``2**-48``), rounding
up at every stage, and records the trace that the Lean kernel re-checks stage by stage.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from witprobe.calculus import rounding
from witprobe.calculus.metrics import Metric, as_metric
from witprobe.calculus.tiers import Tier, meet, meet_all

_PROOF_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class MetricMismatch(TypeError):
    """Two stages were composed whose metrics disagree (``m_out`` of one != ``m_in`` of the next)."""


def _exact(value: object, what: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
        raise TypeError(
            f"{what} must be an exact int or Fraction (floats enter only through "
            f"witprobe.calculus.rounding.up), got {type(value).__name__}"
        )
    return Fraction(value)


def _proof_names(proofs: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for p in proofs:
        if not isinstance(p, str) or not _PROOF_NAME.match(p):
            raise ValueError(f"proof name {p!r} is not a Lean declaration name")
        if p not in out:
            out.append(p)
    return tuple(out)


@dataclass(frozen=True)
class Contract:
    """An affine contract ``e_out <= a * e_in + b`` failing with probability ``delta``.

    Parameters
    ----------
    name:
        Stage name, e.g. ``"store"``.
    m_in, m_out:
        Input and output metrics (the contract's type).
    a, b:
        Gain and offset, exact nonnegative rationals (``b`` in units of ``m_out``).
    delta:
        Failure probability in ``[0, 1]``; ``0`` for deterministic certificates.
    tier:
        The tier the stage earns on its own.
    proofs:
        Lean declaration names proving the stage (required for bridges).
    source_only:
        The bound holds only at the exact input ``e_in = 0`` (a stage that measures the error it
        introduces but has no sound gain for upstream error). Such a stage may only start a chain.
    is_bridge:
        Whether this contract changes the metric (``m_in != m_out``) and is proved by ``proofs``.
    note:
        Free text; empirical bridges record where they were measured and where applied.
    """

    name: str
    m_in: Metric
    m_out: Metric
    a: Fraction
    b: Fraction
    delta: Fraction = Fraction(0)
    tier: Tier = Tier.CERTIFIED
    proofs: tuple[str, ...] = ()
    source_only: bool = False
    is_bridge: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "m_in", as_metric(self.m_in))
        object.__setattr__(self, "m_out", as_metric(self.m_out))
        a = _exact(self.a, f"contract {self.name!r}: gain a")
        b = _exact(self.b, f"contract {self.name!r}: offset b")
        d = _exact(self.delta, f"contract {self.name!r}: delta")
        if a < 0 or b < 0:
            raise ValueError(f"contract {self.name!r}: a and b must be nonnegative (a={a}, b={b})")
        if d < 0:
            raise ValueError(f"contract {self.name!r}: delta must be nonnegative, got {d}")
        if not isinstance(self.tier, Tier):
            raise TypeError(f"contract {self.name!r}: tier must be a Tier, got {self.tier!r}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "delta", d)
        object.__setattr__(self, "proofs", _proof_names(self.proofs))
        if self.is_bridge:
            if self.m_in == self.m_out:
                raise ValueError(f"bridge {self.name!r} must change the metric, but m_in == m_out == {self.m_in}")
            if not self.proofs and self.tier is not Tier.EMPIRICAL:
                raise ValueError(f"bridge {self.name!r} names no proof; only an empirical bridge may do that")

    def bound(self, e_in: Fraction) -> Fraction:
        """``a * e_in + b`` (exact)."""
        e = _exact(e_in, "e_in")
        if self.source_only and e != 0:
            raise ValueError(f"contract {self.name!r} holds only at the exact input e_in = 0, got {e}")
        return self.a * e + self.b

    def then(self, nxt: "Contract") -> "Contract":
        """``nxt o self``: this stage first, then ``nxt``."""
        return compose(nxt, self)

    def lean_fields(self) -> dict[str, int]:
        """Fields of ``Witprobe.Contract`` in units: ``den * e' <= num * e + off``."""
        num, den = self.a.numerator, self.a.denominator
        return {"num": num, "den": den, "off": den * rounding.to_units_up(self.b)}

    def step_units(self, u: int) -> int:
        """Least unit value ``v`` with ``den * v >= num * u + off`` (what the kernel checks)."""
        f = self.lean_fields()
        return rounding.ceil_div(f["num"] * u + f["off"], f["den"])


def compose(second: Contract, first: Contract) -> Contract:
    """Series composition ``second o first`` = ``(a2*a1, a2*b1 + b2, delta1 + delta2, meet)``.

    Raises :class:`MetricMismatch` unless ``first.m_out == second.m_in``.
    """
    if first.m_out != second.m_in:
        raise MetricMismatch(
            f"cannot compose {second.name!r} after {first.name!r}: "
            f"{first.name!r} outputs {first.m_out} but {second.name!r} expects {second.m_in}"
        )
    if second.source_only:
        raise ValueError(f"contract {second.name!r} holds only at an exact input and cannot follow {first.name!r}")
    return Contract(
        name=f"{second.name}.{first.name}",
        m_in=first.m_in,
        m_out=second.m_out,
        a=second.a * first.a,
        b=second.a * first.b + second.b,
        delta=first.delta + second.delta,
        tier=meet(second.tier, first.tier),
        proofs=first.proofs + second.proofs,
        source_only=first.source_only,
    )


def identity(metric: Metric | str, name: str = "id") -> Contract:
    """The identity contract ``(1, 0)`` on one metric: the unit of composition."""
    m = as_metric(metric)
    return Contract(name=name, m_in=m, m_out=m, a=Fraction(1), b=Fraction(0))


def bridge(
    name: str,
    m_in: Metric | str,
    m_out: Metric | str,
    a: Fraction | int,
    b: Fraction | int,
    proof: str,
    *,
    tier: Tier = Tier.CERTIFIED,
    source_only: bool = False,
) -> Contract:
    """A proved affine bridge between two metrics; ``proof`` names the Lean theorem."""
    if not proof:
        raise ValueError(f"bridge {name!r} must name the Lean theorem that proves it")
    return Contract(
        name=name, m_in=m_in, m_out=m_out, a=Fraction(a), b=Fraction(b), tier=tier,
        proofs=(proof,), is_bridge=True, source_only=source_only,
    )


def empirical_bridge(
    name: str,
    m_in: Metric | str,
    m_out: Metric | str,
    a: Fraction | int,
    b: Fraction | int,
    *,
    measured_on: str,
    applied_to: str,
) -> Contract:
    """A bridge replaced by a paired measurement: tier ``empirical``, no proof.

    It must say on which population it was measured and to which it is applied, because the
    measurement licenses nothing beyond an assumption of homogeneity between the two.
    """
    if not measured_on.strip() or not applied_to.strip():
        raise ValueError(f"empirical bridge {name!r} must state measured_on and applied_to")
    return Contract(
        name=name, m_in=m_in, m_out=m_out, a=Fraction(a), b=Fraction(b), tier=Tier.EMPIRICAL,
        is_bridge=True, note=f"measured on {measured_on}; applied to {applied_to}",
    )


class TransferKind(enum.Enum):
    """Monotone, non-affine bridges into the attention-distribution TV metric.

    - ``softmax_tv``: ``max_t |s_t - s'_t| <= x  =>  TV <= (e^{2x} - 1)/2`` (paper eq. tvbridge).
    - ``centred_tv``: ``max_t d_t - min_t d_t <= x  =>  TV <= tanh(x/4)`` (paper eq. tanhbound),
      with ``d = s' - s``; sharp by a two-point extremal argument.
    - ``eform_tv``: ``E_{p'}[e^{c}] - 1 <= x``, where ``|s_t - s'_t| <= c_t``,
      ``=>  TV <= ((1 + x)^2 - 1)/2 = x + x^2/2`` (P1 theorem ``tv_le_eform``).
    """

    SOFTMAX_TV = "softmax_tv"
    CENTRED_TV = "centred_tv"
    EFORM_TV = "eform_tv"

    @property
    def m_in(self) -> Metric:
        return {
            TransferKind.SOFTMAX_TV: Metric("score", "linf", "read"),
            TransferKind.CENTRED_TV: Metric("score", "osc", "read"),
            TransferKind.EFORM_TV: Metric("score", "eform_excess", "read"),
        }[self]

    @property
    def m_out(self) -> Metric:
        return Metric("attn_dist", "tv", "read")

    @property
    def proofs(self) -> tuple[str, ...]:
        """The theorems behind the step: the analytic bridge and, for exp forms, the exp bound."""
        return {
            TransferKind.SOFTMAX_TV: ("WitprobeAnalytic.softmax_tv_bridge", "WitprobeAnalytic.exp_le_expUpper"),
            TransferKind.CENTRED_TV: ("WitprobeAnalytic.tv_le_tanh", "WitprobeAnalytic.exp_le_expUpper"),
            TransferKind.EFORM_TV: ("WitprobeAnalytic.tv_le_eform",),
        }[self]

    @property
    def lean_name(self) -> str:
        return {
            TransferKind.SOFTMAX_TV: "softmaxTv",
            TransferKind.CENTRED_TV: "centredTv",
            TransferKind.EFORM_TV: "eformTv",
        }[self]

    def step_units(self, u: int) -> tuple[int, int]:
        """``(v, aux)``: the least output ``v`` (units) the kernel accepts, and its witness.

        ``aux`` is the exp upper bound ``E`` in units for the exponential forms, 0 otherwise.
        The inequalities are those of :func:`transfer_check_units`.
        """
        unit = rounding.UNIT
        if self is TransferKind.SOFTMAX_TV:
            e = rounding.exp_upper_units(2 * u, unit)  # E >= e^{2x}
            return rounding.ceil_div(e - unit, 2), e
        if self is TransferKind.CENTRED_TV:
            e = rounding.exp_upper_units(u, 2 * unit)  # E >= e^{x/2}
            return rounding.ceil_div(unit * (e - unit), e + unit), e
        # eform: v >= u + u^2 / (2 U)
        return u + rounding.ceil_div(u * u, 2 * unit), 0


def transfer_check_units(kind: TransferKind, u: int, v: int, aux: int) -> bool:
    """The kernel's check of one transfer step (mirrors ``Witprobe.Transfer.check``)."""
    unit = rounding.UNIT
    if kind is TransferKind.SOFTMAX_TV:
        return rounding.exp_upper_ok(2 * u, unit, aux) and aux <= 2 * v + unit
    if kind is TransferKind.CENTRED_TV:
        return rounding.exp_upper_ok(u, 2 * unit, aux) and unit * aux <= v * (aux + unit) + unit * unit
    return 2 * unit * u + u * u <= 2 * unit * v


@dataclass(frozen=True)
class Transfer:
    """A monotone bridge stage ``e_out <= f(e_in)`` of a fixed :class:`TransferKind`."""

    kind: TransferKind
    name: str = ""
    tier: Tier = Tier.CERTIFIED

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.kind.value)

    @property
    def m_in(self) -> Metric:
        return self.kind.m_in

    @property
    def m_out(self) -> Metric:
        return self.kind.m_out

    @property
    def proofs(self) -> tuple[str, ...]:
        return self.kind.proofs

    @property
    def delta(self) -> Fraction:
        return Fraction(0)

    source_only = False


Stage = Contract | Transfer


@dataclass(frozen=True)
class StageValue:
    """One step of an evaluated chain, in units of ``2**-48``: ``e_in -> e_out`` (+ witness)."""

    name: str
    kind: str
    m_in: Metric
    m_out: Metric
    e_in: int
    e_out: int
    aux: int = 0


@dataclass(frozen=True)
class ChainEvaluation:
    """The upper bound a chain gives for an input error, with its provenance."""

    m_in: Metric
    m_out: Metric
    e_in: int
    bound_units: int
    tier: Tier
    delta: Fraction
    proofs: tuple[str, ...]
    stages: tuple[StageValue, ...]

    @property
    def bound(self) -> Fraction:
        return rounding.from_units(self.bound_units)

    @property
    def vacuous(self) -> bool:
        """A TV bound ``>= 1`` says nothing (every TV is ``<= 1``)."""
        return self.m_out.is_distribution_tv and self.bound >= 1


@dataclass(frozen=True)
class Chain:
    """A sequence of stages whose metrics line up; built with :meth:`start` and :meth:`then`."""

    stages: tuple[Stage, ...] = field(default_factory=tuple)

    @classmethod
    def start(cls, stage: Stage) -> "Chain":
        return cls((stage,))

    def then(self, stage: Stage) -> "Chain":
        """Append ``stage``; raises :class:`MetricMismatch` if its input metric is not our output."""
        if not self.stages:
            return Chain((stage,))
        last = self.stages[-1]
        if last.m_out != stage.m_in:
            raise MetricMismatch(
                f"cannot attach {stage.name!r} (expects {stage.m_in}) after {last.name!r} (outputs {last.m_out})"
            )
        if stage.source_only:
            raise ValueError(f"stage {stage.name!r} holds only at an exact input and cannot follow {last.name!r}")
        return Chain(self.stages + (stage,))

    @property
    def m_in(self) -> Metric:
        return self.stages[0].m_in

    @property
    def m_out(self) -> Metric:
        return self.stages[-1].m_out

    @property
    def tier(self) -> Tier:
        return meet_all(s.tier for s in self.stages)

    @property
    def delta(self) -> Fraction:
        return sum((s.delta for s in self.stages), Fraction(0))

    @property
    def proofs(self) -> tuple[str, ...]:
        return _proof_names(p for s in self.stages for p in s.proofs)

    def compose(self) -> Contract:
        """The single affine contract of an all-affine chain (raises if a transfer is present)."""
        if not self.stages:
            raise ValueError("empty chain")
        out = self.stages[0]
        if not isinstance(out, Contract):
            raise TypeError(f"stage {out.name!r} is a transfer, not an affine contract")
        for s in self.stages[1:]:
            if not isinstance(s, Contract):
                raise TypeError(f"stage {s.name!r} is a transfer, not an affine contract")
            out = compose(s, out)
        return out

    def evaluate(self, e_in: Fraction | int = 0) -> ChainEvaluation:
        """Upper bound of the output error for input error ``e_in``, rounded up stage by stage."""
        if not self.stages:
            raise ValueError("cannot evaluate an empty chain")
        e = _exact(e_in, "e_in")
        if self.stages[0].source_only and e != 0:
            raise ValueError(f"chain starts at source-only stage {self.stages[0].name!r}; e_in must be 0")
        u = rounding.to_units_up(e)
        u0 = u
        trace: list[StageValue] = []
        for s in self.stages:
            if isinstance(s, Contract):
                v, aux, kind = s.step_units(u), 0, "affine"
            else:
                (v, aux), kind = s.kind.step_units(u), "transfer"
            trace.append(StageValue(s.name, kind, s.m_in, s.m_out, u, v, aux))
            u = v
        return ChainEvaluation(
            m_in=self.m_in, m_out=self.m_out, e_in=u0, bound_units=u, tier=self.tier,
            delta=self.delta, proofs=self.proofs, stages=tuple(trace),
        )


@dataclass(frozen=True)
class ParallelBound:
    """Independent error sources added in the same output metric (the paper's ``Chain.also``).

    ``e_out <= sum_i bound_i``; tier is the meet and failure probabilities add. The parts must end
    in the same metric: selector-score mass can only join an attention-TV sum after an explicit
    (empirical) bridge into ``attn_dist:tv@read``.
    """

    m_out: Metric
    parts: tuple[ChainEvaluation, ...]

    @property
    def bound(self) -> Fraction:
        return sum((p.bound for p in self.parts), Fraction(0))

    @property
    def tier(self) -> Tier:
        return meet_all(p.tier for p in self.parts)

    @property
    def delta(self) -> Fraction:
        return sum((p.delta for p in self.parts), Fraction(0))

    @property
    def proofs(self) -> tuple[str, ...]:
        return _proof_names(q for p in self.parts for q in p.proofs)

    @property
    def vacuous(self) -> bool:
        return self.m_out.is_distribution_tv and self.bound >= 1


def parallel(*parts: ChainEvaluation) -> ParallelBound:
    """Add evaluated chains that end in the same metric; raise :class:`MetricMismatch` otherwise."""
    if not parts:
        raise ValueError("parallel composition of nothing")
    m = parts[0].m_out
    for p in parts[1:]:
        if p.m_out != m:
            raise MetricMismatch(f"cannot add an error in {p.m_out} to one in {m}: bridge it first")
    return ParallelBound(m, tuple(parts))
