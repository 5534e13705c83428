"""The self-check counters: one table of every counter whose nonzero value is an implementation error.

A self-check counts events that a theorem or an exact identity says cannot happen (a witness
below the residual it bounds, a bound below the error it bounds, a flip inside a region certified
flip-free, a recomputation that does not reproduce what the model did). Every count must be 0;
a nonzero count fails the certificate's verdict (``certify``), uncovers the layer in the coverage
table, and fails the soundness stage of the probe gate (``python -m witprobe.gate``). A counter a
memory kind must carry but did not record fails closed (:mod:`witprobe.certify.derive`).

Each :class:`SelfCheck` names the counter (exactly, or as a pattern with ``{tensor}``, ``{eta}``,
``{rank}``, ``{bits}`` or ``{radius}`` fields), where it is recorded (the ``write`` or ``read``
block of a ``run.json`` layer, or a ``probe`` snapshot slot), what it means, and the probe-gate
failure class it raises. :func:`lookup` is the one predicate every consumer uses; a counter that is
not in the table but is named like one (``viol``, ``beaten``, ``mismatch``, ``flip_in``) is treated
as a self-check too, so a new counter fails closed until it is given a meaning here.

Standard library only: the probe gate imports this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

WITNESS_VIOLATION = "witness_violation"
FLIP_IN_CERTIFIED_REGION = "flip_in_certified_region"
RECORDS = ("write", "read", "probe")
_FIELD = {"tensor": r"[a-z][a-z0-9_]*?", "eta": r"[0-9.e-]+", "rank": r"[0-9]+", "bits": r"[0-9]+",
          "radius": r".*"}
_LOOKS_LIKE = ("viol", "beaten", "mismatch", "flip_in")


@dataclass(frozen=True)
class SelfCheck:
    """One self-check counter (or family of counters).

    Attributes
    ----------
    pattern:
        The counter name; ``{field}`` parts match a tensor name, an eta, a rank, a bit width or a
        radius.
    record:
        Where it is recorded: ``write``/``read`` (a ``run.json`` layer block) or ``probe``.
    meaning:
        What a nonzero count means; ``{name}`` and the pattern's fields are filled in.
    failure:
        The probe-gate failure class of a nonzero count.
    """

    pattern: str
    record: str
    meaning: str
    failure: str = WITNESS_VIOLATION
    _regex: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.record not in RECORDS:
            raise ValueError(f"self-check {self.pattern}: record {self.record!r} is not one of {RECORDS}")
        parts = re.split(r"\{(\w+)\}", self.pattern)
        rx = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>{_FIELD[p]})" for i, p in enumerate(parts))
        object.__setattr__(self, "_regex", re.compile(rx + r"\Z"))

    @property
    def regex(self) -> str:
        """The counter names this entry matches, as a plain regular expression (no named groups;
        the JSON Schema of ``run.json`` uses it, anchored)."""
        parts = re.split(r"\{(\w+)\}", self.pattern)
        return "".join(re.escape(p) if i % 2 == 0 else f"(?:{_FIELD[p]})" for i, p in enumerate(parts))

    def match(self, name: str) -> dict[str, str] | None:
        m = self._regex.match(name)
        return None if m is None else m.groupdict()

    def describe(self, name: str) -> str:
        fields = self.match(name) or {}
        return self.meaning.format(name=name, **fields)


# write-side self-checks of every stored tensor (the band witness inequalities)
WITNESS_BELOW_RESIDUAL = SelfCheck(
    "{tensor}_viol_witness_below_residual", "write",
    "{tensor}: witness W below the true residual ||Delta|| (triangle inequality broken)")
WITNESS_ABOVE_SQRT_BANDS = SelfCheck(
    "{tensor}_viol_witness_above_sqrt_bands", "write",
    "{tensor}: witness W above sqrt(bands)*||Delta|| (Cauchy-Schwarz broken)")
WRITE_CHECKS = (WITNESS_BELOW_RESIDUAL, WITNESS_ABOVE_SQRT_BANDS)

# read-side self-checks of the attention-output meter (dense KV, run schema /3)
OUTPUT_CHECKS = (
    SelfCheck("rows_out_beaten", "read", "rows whose attention-output error exceeds its per-row bound"),
    SelfCheck("rows_out_proj_beaten", "read", "rows whose projected output error exceeds its per-row bound"),
)

# read-side self-checks of the eviction meter (dense KV under an eviction codec)
EVICT_CHECKS = (
    SelfCheck("rows_evict_beaten", "read",
              "rows whose eviction bound RHO/(1+RHO) is below the realized TV of full vs pruned attention"),
    SelfCheck("rows_evict_mass_mismatch", "read",
              "rows whose realized TV of full vs pruned attention differs from the evicted mass (Eviction.tv_pruned_evicted_mass)"),
    SelfCheck("rows_evict_viol_upper", "read",
              "rows with an evicted logit above its band-norm bound U_t (Cauchy-Schwarz broken)"),
)

TABLE: tuple[SelfCheck, ...] = WRITE_CHECKS + OUTPUT_CHECKS + EVICT_CHECKS + (
    SelfCheck("rows_plain_beaten", "read", "rows whose plain bound is below the realized TV"),
    SelfCheck("rows_centred_beaten", "read", "rows whose centred bound is below the realized TV"),
    SelfCheck("rows_eform_beaten", "read", "rows whose e-form bound is below the realized TV"),
    SelfCheck("rows_boxsup_beaten", "read", "rows whose box bound is below the realized TV"),
    SelfCheck("rows_qa_boxsup_beaten", "read",
              "rows whose box bound over the query-aligned radii min(c_band, c_qa) is below the realized TV"),
    SelfCheck("rows_qa_centred_beaten", "read",
              "rows whose centred bound over the query-aligned radii is below the realized TV"),
    SelfCheck("keys_qa_radius_beaten", "read",
              "visible keys whose score error |s - s'| exceeds their query-aligned radius c_qa"),
    SelfCheck("latent_recon_mismatch", "read",
              "key rows where W_UK c does not reproduce the key the model expanded"),
    SelfCheck("indexer_recon_mismatch", "read",
              "indexer rows whose recomputed top-k differs from the model's selection"),
    SelfCheck("sel_flip_in_witness_cert", "read",
              "rows whose selection changed although the witness certified it unchanged", FLIP_IN_CERTIFIED_REGION),
    SelfCheck("sel_mass_bound_beaten", "read", "rows whose realized swapped selector mass exceeds its witness bound"),
    SelfCheck("rows_total_beaten_on_certified", "read",
              "certified-selection rows whose end-to-end TV beats the storage bound"),
    SelfCheck("v4_key_mismatch", "read", "query rows whose read keys differ from cat(served window, served entries)"),
    SelfCheck("entry_pool_viol", "write", "pooled windows whose largest gate weight is below 1/B"),
    SelfCheck("index_entry_pool_viol", "write", "indexer pooled windows whose largest gate weight is below 1/B"),
    SelfCheck("sel_eta{eta}_flip_in_cert_r{rank}", "read",
              "{name}: flips of the deterministic perturbation inside the eta-certified region",
              FLIP_IN_CERTIFIED_REGION),
    # the always-on probe's band meter (witprobe-probe/1 snapshots)
    SelfCheck("viol_low_int{bits}", "probe", "entries whose int{bits} witness is below the true residual"),
    SelfCheck("viol_high_int{bits}", "probe", "entries whose int{bits} witness is above sqrt(bands) times the residual"),
    SelfCheck("flip_in_cert{radius}", "probe", "flips inside the region certified flip-free", FLIP_IN_CERTIFIED_REGION),
)


_BIT_WIDTH = re.compile(r"_int([0-9]+)\Z")


def probe_witness_gaps(counters: Iterable[str]) -> list[str]:
    """The band meter's witness self-checks a probe slot lacks (empty: complete).

    Every bit width ``b`` the slot reports (in any ``..._int{b}`` counter, ``zero_residual_int{b}``
    included) must carry every ``{bits}`` self-check of the ``probe`` record (``viol_low_int{b}``
    and ``viol_high_int{b}``): one of them alone would let the other direction go unchecked. A
    slot that reports no bit width lacks them all (``viol_*``)."""
    names = set(counters)
    templates = [c.pattern for c in TABLE if c.record == "probe" and "{bits}" in c.pattern]
    bits = sorted({m.group(1) for k in names if (m := _BIT_WIDTH.search(k))}, key=int)
    if not bits:
        return ["viol_*"]
    return [t.format(bits=b) for b in bits for t in templates if t.format(bits=b) not in names]


def lookup(name: str) -> SelfCheck | None:
    """The table entry of counter ``name``; ``None`` if ``name`` is not a self-check counter."""
    return next((c for c in TABLE if c.match(name) is not None), None)


def looks_like(name: str) -> bool:
    """Named like a self-check although not in the table (treated as one: fail closed)."""
    return any(part in name for part in _LOOKS_LIKE)


def is_self_check(name: str) -> bool:
    """Whether a nonzero count of ``name`` is an implementation error (table or name, fail closed)."""
    return lookup(name) is not None or looks_like(name)


def failure_class(name: str) -> str | None:
    """The probe-gate failure class of counter ``name`` (``None`` if it is no self-check)."""
    c = lookup(name)
    if c is not None:
        return c.failure
    if not looks_like(name):
        return None
    return FLIP_IN_CERTIFIED_REGION if "flip_in" in name else WITNESS_VIOLATION


def meaning(name: str) -> str:
    """Human text of a self-check counter (the name itself if the table does not know it)."""
    c = lookup(name)
    return name if c is None else c.describe(name)


def write_counters(tensor: str) -> tuple[str, ...]:
    """The write-side self-check counters every stored tensor carries, in table order."""
    return tuple(c.pattern.format(tensor=tensor) for c in WRITE_CHECKS)


LOOKS_LIKE_REGEX = "|".join(f".*{p}.*" for p in _LOOKS_LIKE)


def counter_patterns(record: str) -> dict[str, str]:
    """``{regex: meaning}`` of every self-check counter recorded in ``record`` (``write``/``read``),
    plus the names that look like one: the typed ``run.json`` records require these keys to hold a
    count (an integer ``>= 0``), and its JSON Schema states it (``patternProperties``)."""
    if record not in ("write", "read"):
        raise ValueError(f"counter_patterns: record {record!r} is not write or read")
    out = {c.regex: c.meaning.replace("{name}: ", "") for c in TABLE if c.record == record}
    out[LOOKS_LIKE_REGEX] = "named like a self-check counter (viol, beaten, mismatch, flip_in): a count, treated as one"
    return out


def record_of(name: str) -> str:
    """The ``run.json`` block (``write``/``read``) or ``probe`` that records counter ``name``."""
    c = lookup(name)
    if c is None:
        raise KeyError(f"{name!r} is not a self-check counter of the table")
    return c.record
