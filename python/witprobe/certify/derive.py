"""From a run record (``run.json``) to claims and obligations: a pure, deterministic function.

For each layer, the measured maxima (query coefficient, witness, banded score bound, e-form
excess) are rounded outward, the three read chains are built and evaluated, every form is
compared with the realized TV, and the tightest non-vacuous form is the claim. Obligations are
produced for every non-vacuous form. ``certify check`` calls this again on the stored
``run.json`` and must obtain the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from witprobe.calculus import rounding
from witprobe.calculus.bridges import ENTRY_SPECS
from witprobe.calculus.chains import FORMS, ReadInputs, read_chain
from witprobe.calculus.metrics import Metric
from witprobe.calculus.registry import DEFAULT_REGISTRY, TierRegistry
from witprobe.calculus.tiers import Tier, meet
from witprobe.formal.obligations import ChainObligation, reference_check

ATTN_TV = Metric("attn_dist", "tv", "read")

WRITE_SELF_CHECKS = {
    "viol_witness_below_residual": "witness W below the true residual ||Delta|| (triangle inequality broken)",
    "viol_witness_above_sqrt_bands": "witness W above sqrt(bands)*||Delta|| (Cauchy-Schwarz broken)",
}
READ_SELF_CHECKS = {
    "rows_plain_beaten": "rows whose plain bound is below the realized TV",
    "rows_centred_beaten": "rows whose centred bound is below the realized TV",
    "rows_eform_beaten": "rows whose e-form bound is below the realized TV",
    "latent_recon_mismatch": "key rows where W_UK c does not reproduce the key the model expanded",
}
# counters every layer of a memory class must carry (a missing one fails closed)
REQUIRED_READ_COUNTERS = {
    "dense_kv": ("rows_plain_beaten", "rows_centred_beaten", "rows_eform_beaten"),
    "latent": ("rows_plain_beaten", "rows_centred_beaten", "rows_eform_beaten", "latent_recon_mismatch"),
}
WRITE_TENSORS = {"dense_kv": ("key", "value"), "latent": ("latent", "rope")}


def self_check_meaning(name: str) -> str:
    """Human text of a self-check counter name (``<tensor>_viol_...`` or a read counter)."""
    if name in READ_SELF_CHECKS:
        return READ_SELF_CHECKS[name]
    for suffix, text in WRITE_SELF_CHECKS.items():
        if name.endswith("_" + suffix):
            return f"{name[: -len(suffix) - 1]}: {text}"
    return name


class DeriveError(ValueError):
    """The run record is malformed (the message names the field)."""


@dataclass
class FormResult:
    form: str
    bound: Fraction | None
    vacuous: bool
    beaten: bool
    obligation: str | None
    reason: str = ""
    proofs: tuple[str, ...] = ()


@dataclass
class Claim:
    """A per-layer claim ``TV(p, p') <= value`` in ``attn_dist:tv@read``."""

    id: str
    layer: int
    metric: Metric
    form: str | None
    value: Fraction | None
    vacuous: bool
    registered_tier: Tier
    realized_max: float
    forms: dict[str, FormResult] = field(default_factory=dict)

    @property
    def obligations(self) -> list[str]:
        if self.form is None:
            return []
        ob = self.forms[self.form].obligation
        return [ob] if ob else []

    @property
    def tightness(self) -> float | None:
        if self.value is None or self.realized_max <= 0:
            return None
        return float(self.value) / self.realized_max


@dataclass
class Derivation:
    claims: list[Claim]
    obligations: list[ChainObligation]
    self_checks: dict[str, int]
    failures: list[str]
    readings: list[dict[str, Any]]


def _stat(block: dict[str, Any], key: str, field_: str, where: str) -> float | None:
    entry = block.get(key)
    if not isinstance(entry, dict):
        raise DeriveError(f"{where}: missing statistic {key!r}")
    v = entry.get(field_)
    if v is not None and not isinstance(v, (int, float)):
        raise DeriveError(f"{where}: statistic {key}.{field_} is not a number")
    return v


def _counter(block: dict[str, Any], key: str, where: str) -> int:
    v = block.get(key, 0)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise DeriveError(f"{where}: counter {key!r} must be a nonnegative integer, got {v!r}")
    return v


def derive(run: dict[str, Any], registry: TierRegistry = DEFAULT_REGISTRY) -> Derivation:
    """Claims, obligations, self-checks and readings of a run record."""
    layers = run.get("layers")
    if not isinstance(layers, list) or not layers:
        raise DeriveError("run.json: 'layers' must be a nonempty list")
    reg_tier = registry.tier_of(ATTN_TV)
    claims: list[Claim] = []
    obligations: list[ChainObligation] = []
    checks: dict[str, int] = {}
    failures: list[str] = []
    readings: list[dict[str, Any]] = []
    for idx, layer in enumerate(layers):
        where = f"run.json layers[{idx}]"
        if not isinstance(layer, dict) or layer.get("layer") != idx:
            raise DeriveError(f"{where}: expected an object with 'layer': {idx}")
        write, read = layer.get("write"), layer.get("read")
        if not isinstance(write, dict) or not isinstance(read, dict):
            raise DeriveError(f"{where}: 'write' and 'read' must be objects")
        mclass = layer.get("memory_class")
        if mclass not in ENTRY_SPECS:
            raise DeriveError(f"{where}: memory_class {mclass!r} is not one of {sorted(ENTRY_SPECS)}")
        spec = ENTRY_SPECS[mclass]
        rows = _counter(read, "rows", where)
        for tensor in WRITE_TENSORS[mclass]:
            for suffix in WRITE_SELF_CHECKS:
                name = f"{tensor}_{suffix}"
                if name not in write and rows:
                    failures.append(f"layer {idx}: self-check counter {name} is missing (fail closed)")
                checks[name] = checks.get(name, 0) + _counter(write, name, where)
        for name in REQUIRED_READ_COUNTERS[mclass]:
            if name not in read and rows:
                failures.append(f"layer {idx}: self-check counter {name} is missing (fail closed)")
            checks[name] = checks.get(name, 0) + _counter(read, name, where)
        cid = f"L{idx:02d}.attn_tv"
        if rows == 0:
            failures.append(f"layer {idx}: no attention reads were observed (coverage)")
            claims.append(Claim(cid, idx, ATTN_TV, None, None, True, reg_tier, 0.0))
            readings.append({"layer": idx, "memory_class": mclass, "rows": 0})
            continue
        realized = _stat(read, "tv_realized", "max", where) or 0.0
        inp = ReadInputs(
            q_coef=rounding.up(_stat(read, "q_coef", "max", where), what=f"{where} q_coef"),
            w_max=rounding.up(_stat(read, "w_max", "max", where), what=f"{where} w_max"),
            c_max=rounding.up(_stat(read, "c_max", "max", where), what=f"{where} c_max"),
            eform_excess=rounding.up(_stat(read, "eform_excess", "max", where), what=f"{where} eform_excess"),
        )
        forms: dict[str, FormResult] = {}
        for form in FORMS:
            chain = read_chain(form, inp, spec)
            try:
                ev = chain.evaluate(0)
            except rounding.RoundingError as e:
                forms[form] = FormResult(form, None, True, False, None, f"outside the exp bound's range: {e}", chain.proofs)
                continue
            bound = ev.bound
            beaten = bound < Fraction(realized)
            if beaten:
                failures.append(f"layer {idx}: {form} bound {float(bound):.6g} beaten by realized TV {realized:.6g}")
            ob_ident = None
            if not ev.vacuous:
                ob = ChainObligation.from_evaluation(f"L{idx:02d}_{form}", cid, chain, ev)
                errs = reference_check(ob, registry)
                if errs:  # a false obligation is an internal error of the calculus
                    raise DeriveError(f"layer {idx} {form}: reference checker refused the obligation: {errs}")
                obligations.append(ob)
                ob_ident = ob.ident
            forms[form] = FormResult(form, bound, ev.vacuous, beaten, ob_ident, "", ev.proofs)
        usable = [f for f in forms.values() if f.bound is not None and not f.vacuous]
        if usable:
            best = min(usable, key=lambda f: (f.bound, FORMS.index(f.form)))
            claims.append(Claim(cid, idx, ATTN_TV, best.form, best.bound, False, meet(reg_tier, Tier.CERTIFIED),
                                realized, forms))
        else:
            bounded = [f for f in forms.values() if f.bound is not None]
            best_v = min((f.bound for f in bounded), default=None)
            claims.append(Claim(cid, idx, ATTN_TV, None, best_v, True, reg_tier, realized, forms))
        readings.append(_layer_readings(idx, mclass, write, read, where))
    return Derivation(claims, obligations, checks, failures, readings)


def _layer_readings(idx: int, mclass: str, write: dict[str, Any], read: dict[str, Any], where: str) -> dict[str, Any]:
    """Diagnostic readings (means, maxima, shares) of one layer: never bounds."""
    rows = _counter(read, "rows", where)
    main = WRITE_TENSORS[mclass][0]
    out: dict[str, Any] = {
        "layer": idx,
        "memory_class": mclass,
        "entries": (write.get(f"{main}_witness") or {}).get("n", 0),
        "rows": rows,
        "tv_realized_max": _stat(read, "tv_realized", "max", where),
        "tv_realized_mean": _stat(read, "tv_realized", "mean", where),
    }
    for tensor in WRITE_TENSORS[mclass]:
        out[f"{tensor}_rel_residual_mean"] = _stat(write, f"{tensor}_rel_residual", "mean", where)
        out[f"{tensor}_conservativeness_mean"] = _stat(write, f"{tensor}_conservativeness", "mean", where)
        out[f"{tensor}_conservativeness_min"] = _stat(write, f"{tensor}_conservativeness", "min", where)
        out[f"{tensor}_conservativeness_max"] = _stat(write, f"{tensor}_conservativeness", "max", where)
    for form in FORMS:
        out[f"rows_{form}_vacuous_share"] = _counter(read, f"rows_{form}_vacuous", where) / rows if rows else None
        out[f"{form}_row_bound_max"] = _stat(read, f"{form}_bound", "max", where)
    out["rows_best_vacuous_share"] = _counter(read, "rows_best_vacuous", where) / rows if rows else None
    return out
