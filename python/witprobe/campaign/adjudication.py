"""The adjudication calculus for controlled comparisons, mirroring ``Witprobe/Adjudication.lean``.

A run is a *total* reading of the registered fields plus its accuracy in per-mille. A
comparison of arm ``a`` against arm ``b`` names the fields it manipulates and the fields it
declares as mediators. A :class:`CausalFinding` can only be built when

- the premises hold: every registered field that is neither manipulated nor a declared mediator
  is equal across the arms, and
- the manipulation is active: something is manipulated and every manipulated field differs.

Otherwise construction raises :class:`InferenceRejected` with the offending fields. The
paper's campaign (section 8.4) rejected two of its own inferences; :data:`PAPER_RUNS` and the
comparisons below reproduce both, with the same verdicts as the Lean theorems
``Witprobe.concurrency_inference_rejected`` and ``Witprobe.crossCode_inference_rejected``.
Readings the paper does not report are set equal across the arms of each comparison; code tags
are small ids (0 = efb8e95, 1 = e22d5d8), as in Lean.

The calculus does not depend on the paper's fields: a run carries its own ``registered`` tuple
(default: the paper's :data:`REGISTERED`), its readings must be total over it, and two runs are
comparable only when they register the same fields. :mod:`witprobe.campaign.ledger` registers the
ledger campaign's fields this way.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field


class Field(enum.Enum):
    """Registered confounders, observed mediators and intervention switches."""

    WORKERS = "workers"
    RING128 = "ring128"
    RING4 = "ring4"
    CODE_TAG = "codeTag"
    SEED = "seed"
    PROBE_SET = "probeSet"
    EVICT128 = "evict128"
    EVICT4 = "evict4"
    ABLATE_EXTRA = "ablateExtra"
    DECODE_TRANSLATE = "decodeTranslate"


REGISTERED: tuple[Field, ...] = tuple(Field)


class InferenceRejected(ValueError):
    """A comparison does not license a causal finding."""


def _label(f: Hashable) -> str:
    return f.value if isinstance(f, enum.Enum) else str(f)


@dataclass(frozen=True)
class Run:
    """A run: an integer reading for every registered field and the outcome in per-mille."""

    name: str
    reads: Mapping[Hashable, int]
    acc_pm: int
    registered: tuple[Hashable, ...] = REGISTERED

    def __post_init__(self) -> None:
        unknown = [k for k in self.reads if k not in self.registered]
        if unknown:
            raise ValueError(f"run {self.name}: unregistered fields {unknown}")
        absent = [_label(f) for f in self.registered if f not in self.reads]
        if absent:
            raise ValueError(f"run {self.name}: readings must be total; missing {absent}")
        bad = [_label(k) for k, v in self.reads.items() if isinstance(v, bool) or not isinstance(v, int)]
        if bad or isinstance(self.acc_pm, bool) or not isinstance(self.acc_pm, int):
            raise ValueError(f"run {self.name}: readings and outcome must be integers (not: {bad or ['acc_pm']})")
        object.__setattr__(self, "reads", dict(self.reads))
        object.__setattr__(self, "registered", tuple(self.registered))


@dataclass(frozen=True)
class Comparison:
    """Arm ``a`` against arm ``b``, manipulating ``manipulated``, declaring ``mediators``."""

    a: Run
    b: Run
    manipulated: tuple[Hashable, ...] = ()
    mediators: tuple[Hashable, ...] = ()

    def __post_init__(self) -> None:
        if self.a.registered != self.b.registered:
            raise ValueError(f"{self.a.name} and {self.b.name} register different fields: not comparable")
        stray = [_label(f) for f in (*self.manipulated, *self.mediators) if f not in self.a.registered]
        if stray:
            raise ValueError(f"manipulated or mediator fields are not registered: {stray}")

    def confounded(self) -> list[Hashable]:
        """Registered fields that differ but are neither manipulated nor declared mediators."""
        return [
            f for f in self.a.registered
            if f not in self.manipulated and f not in self.mediators and self.a.reads[f] != self.b.reads[f]
        ]

    def premises_hold(self) -> bool:
        """Lean ``Witprobe.premisesHold``."""
        return not self.confounded()

    def inactive(self) -> list[Hashable]:
        """Manipulated fields that do not differ across the arms."""
        return [f for f in self.manipulated if self.a.reads[f] == self.b.reads[f]]

    def manipulation_active(self) -> bool:
        """Lean ``Witprobe.manipulationActive``."""
        return bool(self.manipulated) and not self.inactive()


@dataclass(frozen=True)
class CausalFinding:
    """A comparison that licenses a causal claim; construction checks both conditions."""

    cmp: Comparison
    claim: str = field(default="")

    def __post_init__(self) -> None:
        reasons: list[str] = []
        bad = self.cmp.confounded()
        if bad:
            reasons.append(
                "premises fail: " + ", ".join(
                    f"{_label(f)} differs ({self.cmp.a.reads[f]} vs {self.cmp.b.reads[f]}) and is not declared"
                    for f in bad
                )
            )
        if not self.cmp.manipulated:
            reasons.append("nothing is manipulated")
        elif self.cmp.inactive():
            reasons.append("manipulated but equal: " + ", ".join(_label(f) for f in self.cmp.inactive()))
        if reasons:
            raise InferenceRejected(f"{self.cmp.a.name} vs {self.cmp.b.name}: " + "; ".join(reasons))

    @property
    def effect_pm(self) -> int:
        """Accuracy of arm ``a`` minus arm ``b``, per-mille."""
        return self.cmp.a.acc_pm - self.cmp.b.acc_pm


def run(name: str, acc_pm: int, **reads: int) -> Run:
    """A run from keyword readings (field values as in :class:`Field`); all fields required."""
    return Run(name, {Field(k): v for k, v in reads.items()}, acc_pm)


_BASE = dict(workers=1, ring128=513, ring4=513, codeTag=0, seed=0, probeSet=0, evict128=0, evict4=0,
             ablateExtra=0, decodeTranslate=0)

PAPER_RUNS: dict[str, Run] = {
    "q6o": run("q6o", 1000, **_BASE),
    "q6n": run("q6n", 750, **{**_BASE, "workers": 4, "evict128": 216, "evict4": 215}),
    "q6p2": run("q6p2", 583, **{**_BASE, "workers": 4, "evict128": 216, "evict4": 215, "codeTag": 1}),
}


def naive_concurrency() -> Comparison:
    """Rejected inference 1: serial clean, concurrent degrades, hence concurrency-dependent."""
    return Comparison(PAPER_RUNS["q6o"], PAPER_RUNS["q6n"], (Field.WORKERS,), ())


def concurrency_via_eviction() -> Comparison:
    """The honest version: eviction counts declared as mediators."""
    return Comparison(PAPER_RUNS["q6o"], PAPER_RUNS["q6n"], (Field.WORKERS,), (Field.EVICT128, Field.EVICT4))


def cross_code_variance() -> Comparison:
    """Rejected inference 2: q6n vs q6p2 (different code under test) read as run-to-run variance."""
    return Comparison(PAPER_RUNS["q6n"], PAPER_RUNS["q6p2"], (), ())


def adjudicate(comparisons: Iterable[Comparison]) -> list[tuple[Comparison, CausalFinding | None, str]]:
    """Each comparison with its finding, or ``None`` and the reason it was rejected."""
    out: list[tuple[Comparison, CausalFinding | None, str]] = []
    for c in comparisons:
        try:
            out.append((c, CausalFinding(c), ""))
        except InferenceRejected as e:
            out.append((c, None, str(e)))
    return out
