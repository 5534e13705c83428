"""From a run record (``run.json``) to claims and obligations: a pure, deterministic function.

For each layer, the measured maxima (query coefficient, witness, banded score bound, e-form
excess) are rounded outward, the three read chains are built and evaluated, every form is
compared with the realized TV, and the tightest non-vacuous form is the claim. Obligations are
produced for every non-vacuous form. ``certify check`` calls this again on the stored
``run.json`` and must obtain the same bytes.
"""

from __future__ import annotations

import dataclasses

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from witprobe.calculus import float_error, rounding
from witprobe.certify.box_certificate import BoxDataError, BoxLayerData, layer_data
from witprobe.certify.coverage import box_sup_on, coverage
from witprobe.certify.derive_values import output_claims
from witprobe.certify.end_to_end import RunScope, run_scope
from witprobe.certify.run_record import LayerRecord, Reading, RunRecord, Statistic, as_record
from witprobe.calculus import bridges
from witprobe.calculus.contracts import Chain, ChainEvaluation, parallel
from witprobe.calculus.chains import FORMS, ReadMaxima, read_chain
from witprobe.calculus.metrics import Metric
from witprobe.calculus.registry import DEFAULT_REGISTRY, TierRegistry
from witprobe.calculus.tiers import Tier, meet
from witprobe.formal.claim_theorems import (ClaimTheorem, boxsup_qa_theorem, boxsup_theorem, claim_theorem,
                                            evict_theorem)
from witprobe.formal.obligations import ChainObligation, reference_check
from witprobe.kinds.base import QA_SHAPES, layer_required_counters
from witprobe.kinds.registry import KINDS
from witprobe.self_checks import is_self_check, record_of
from witprobe.typed_json import RecordError, encode

ATTN_TV = Metric("attn_dist", "tv", "read")

STATE_CONTRACTION = Metric("state", "contraction", "read")


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
    evaluation: ChainEvaluation | None = None
    box: BoxLayerData | None = None  # box forms: the rows and cap the kernel's checker reads


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
    kind: str = "attn_tv"
    extra: dict[str, Any] = field(default_factory=dict)
    proofs: tuple[str, ...] = ()
    memory_class: str = ""

    @property
    def obligations(self) -> list[str]:
        if self.form is None or self.form not in self.forms:
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
    coverage: list[dict[str, Any]] = field(default_factory=list)
    theorems: list[ClaimTheorem] = field(default_factory=list)
    scope: RunScope | None = None  # end-to-end readings and what the run compressed (verdict text)

    @property
    def lean_theorems(self) -> list[ClaimTheorem]:
        """The theorems also stated in Lean (``obligations/run_real.lean``); eviction theorems are Coq only."""
        return [t for t in self.theorems if t.has_lean]


Block = dict[str, Reading]  # a layer's write or read block (run_record.LayerRecord)


def _stat(block: Block, key: str, field_: str, where: str) -> float | None:
    """Field ``field_`` (``n``, ``mean``, ``min``, ``max``, ...) of statistic ``key``; a missing
    statistic (or a counter under its name) fails closed."""
    entry = block.get(key)
    if not isinstance(entry, Statistic):
        raise DeriveError(f"{where}: missing statistic {key!r}")
    return getattr(entry, field_)


def _counter(block: Block, key: str, where: str) -> int:
    v = block.get(key, 0)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise DeriveError(f"{where}: counter {key!r} must be a nonnegative integer, got {v!r}")
    return v


MAGNITUDE_SCHEMAS = ("witprobe-run/2", "witprobe-run/3", "witprobe-run/4", "witprobe-run/5", "witprobe-run/6")  # run schemas whose reads record fp_width, keys_visible, score_err, ...


def _positive_int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 1:
        raise DeriveError(f"{what} must be a positive integer, got {v!r}")
    return int(v)


def _recorded_max(block: Block, key: str, where: str) -> float:
    v = _stat(block, key, "max", where)
    if v is None:
        raise DeriveError(f"{where}: statistic {key!r} has no maximum although rows were read (fail closed)")
    return v


def _run_context(run: RunRecord) -> int:
    """Longest request in tokens, prompt plus generated (a bound on the keys of any read)."""
    if not run.requests:
        raise DeriveError("run.json: 'requests' must be a nonempty list (the context length bounds the error analysis)")
    return max(r.prompt_tokens + len(r.served_tokens) for r in run.requests)


def float_sizes(run: RunRecord, mclass: str, read: Block, where: str
                ) -> tuple[float_error.Sizes, Fraction | None, Fraction | None]:
    """Sizes and recorded score magnitudes of one layer for the float64 error analysis.

    Runs of a magnitude schema record the width, the keys per row, the served-score error and
    the score magnitude per layer. Older runs (``witprobe-run/1``) record none of them: the width
    is the model's head dimension (for latent layers at least ``LEGACY_LATENT_WIDTH``, an
    assumption: the latent width is not recorded), the keys are bounded by the longest request
    plus a sink column, and the magnitudes are unknown (``None``), so only the size terms are
    checked (docs/TRUST_BOUNDARY.md).
    """
    bands = _positive_int(run.config.bands, "run.json config.bands")
    components = KINDS[mclass].score_components
    if run.schema in MAGNITUDE_SCHEMAS:
        width = _positive_int(_recorded_max(read, "fp_width", where), f"{where} fp_width")
        keys = _positive_int(_recorded_max(read, "keys_visible", where), f"{where} keys_visible")
        err = Fraction(_recorded_max(read, "score_err", where))
        amax = Fraction(_recorded_max(read, "score_abs_max", where))
        return float_error.Sizes(width, bands, components, keys), err, amax
    width = _positive_int(run.model.head_dim, "run.json model.head_dim")
    if components == 2:  # a latent layer (nope and rope components)
        width = max(width, float_error.LEGACY_LATENT_WIDTH)
    return float_error.Sizes(width, bands, components, _run_context(run) + 1), None, None


def as_run(run: RunRecord | dict[str, Any]) -> RunRecord:
    """``run`` typed: a parsed ``run.json`` object is checked against the record types
    (:func:`witprobe.certify.run_record.parse_run`); a problem is a :class:`DeriveError` naming the field."""
    try:
        return as_record(run)
    except RecordError as e:
        raise DeriveError(str(e)) from None


def derive(run: RunRecord | dict[str, Any], registry: TierRegistry = DEFAULT_REGISTRY) -> Derivation:
    """Claims, obligations, self-checks and readings of a run record (typed, or its parsed JSON)."""
    run = as_run(run)
    layers = run.layers
    if not layers:
        raise DeriveError("run.json: 'layers' must be a nonempty list")
    reg_tier = registry.tier_of(ATTN_TV)
    claims: list[Claim] = []
    obligations: list[ChainObligation] = []
    checks: dict[str, int] = {}
    failures: list[str] = []
    readings: list[dict[str, Any]] = []
    theorems: list[ClaimTheorem] = []
    box_on = box_sup_on(run)
    qa_on = run.config.query_aligned is not None
    for idx, layer in enumerate(layers):
        where = f"run.json layers[{idx}]"
        write, read = layer.write, layer.read
        mclass = layer.memory_class
        if mclass not in KINDS:
            raise DeriveError(f"{where}: memory_class {mclass!r} is not one of {sorted(KINDS)}")
        kind = KINDS[mclass]
        spec = kind.score
        rows = _counter(read, "rows", where) if kind.reads else _counter(read, "state_writes", where)
        required = layer_required_counters(kind, layer, box_on, qa_on)
        for name in required:
            block = write if record_of(name) == "write" else read
            if name not in block and rows:
                failures.append(f"layer {idx}: self-check counter {name} is missing (fail closed)")
            checks[name] = checks.get(name, 0) + _counter(block, name, where)
        for block in (write, read):  # every other self-check the layer recorded (e.g. the eta flips)
            for name in sorted(block):
                if name not in required and is_self_check(name):
                    checks[name] = checks.get(name, 0) + _counter(block, name, where)
        if not kind.reads:
            if rows == 0:
                failures.append(f"layer {idx}: no recurrent-state writes were observed (coverage)")
            claims.append(_recurrent_claim(idx, layer, read, write, where))
            readings.append({"layer": idx, "memory_class": mclass, "state_writes": rows,
                             "state_rel_residual_mean": _stat(write, "state_rel_residual", "mean", where)
                             if "state_rel_residual" in write else None})
            continue
        cid = f"L{idx:02d}.attn_tv"
        if rows == 0:
            failures.append(f"layer {idx}: no attention reads were observed (coverage)")
            claims.append(Claim(cid, idx, ATTN_TV, None, None, True, reg_tier, 0.0))
            readings.append({"layer": idx, "memory_class": mclass, "rows": 0})
            continue
        realized = _stat(read, "tv_realized", "max", where) or 0.0
        sizes, score_err, score_abs_max = float_sizes(run, mclass, read, where)
        c_max = rounding.up(_stat(read, "c_max", "max", where), what=f"{where} c_max")
        mags = float_error.Magnitudes(score_err, score_abs_max, c_max)
        failures.extend(f"layer {idx}: {p} (fail closed)" for p in float_error.margin_problems(sizes, mags))
        inp = ReadMaxima(
            q_coef=rounding.up(_stat(read, "q_coef", "max", where), what=f"{where} q_coef"),
            w_max=rounding.up(_stat(read, "w_max", "max", where), what=f"{where} w_max"),
            c_max=c_max,
            # E_p'[e^c] - 1 is a sum of nonnegative terms (relative error), plus an absolute floor
            # for probabilities that underflow in float64 (docs/TRUST_BOUNDARY.md)
            eform_excess=rounding.up(_stat(read, "eform_excess", "max", where), what=f"{where} eform_excess")
            + float_error.eform_floor(sizes.keys, c_max),
        )
        forms: dict[str, FormResult] = {}
        evals = {}
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
            forms[form] = FormResult(form, bound, ev.vacuous, beaten, ob_ident, "", ev.proofs, ev)
            evals[form] = ev
        if "boxsup_bound" in read and not box_on:
            failures.append(f"layer {idx}: boxsup: the run records box-sup bounds, yet its config says the meter was off")
        elif "boxsup_bound" in read:
            forms[BOXSUP] = _boxsup(idx, read, where, realized, sizes.keys, score_err, score_abs_max, c_max,
                                    kind.theorem_shape in BOXSUP_SHAPES, failures, layer=layer)
        elif box_on:
            failures.append(f"layer {idx}: boxsup: the run records no box-sup bound, yet its config says the meter "
                            "was on (fail closed)")
        if "qa_boxsup_bound" in read and not qa_on:
            failures.append(f"layer {idx}: qa_boxsup: the run records query-aligned bounds, yet its config records no "
                            "query-aligned witness")
        elif "qa_boxsup_bound" in read:
            qa_c_max = rounding.up(_stat(read, "qa_c_max", "max", where), what=f"{where} qa_c_max")
            forms[QA_BOXSUP] = _boxsup(idx, read, where, realized, sizes.keys, score_err, score_abs_max, qa_c_max,
                                       kind.theorem_shape in QA_SHAPES, failures, QA_BOXSUP, layer)
        elif qa_on and kind.theorem_shape in QA_SHAPES and box_on:
            failures.append(f"layer {idx}: qa_boxsup: the run's config records a query-aligned witness, yet this "
                            "dense-KV layer records no query-aligned bound (fail closed)")
        usable = [f for f in forms.values() if f.bound is not None and not f.vacuous and not f.reason]
        chain_usable = [f for f in usable if f.form in FORMS]
        best_eval = evals[min(chain_usable, key=_form_order).form] if chain_usable else None
        if usable:
            best = min(usable, key=_form_order)
            attn = Claim(cid, idx, ATTN_TV, best.form, best.bound, False, meet(reg_tier, Tier.CERTIFIED),
                         realized, forms, memory_class=mclass)
            realized_units = rounding.to_units_up(rounding.up(realized))
            if best.form == BOXSUP:
                theorems.append(boxsup_theorem(cid, rounding.to_units_up(best.bound), kind.theorem_shape,
                                               best.box.rows_coq, best.box.cap_units, realized_units))
            elif best.form == QA_BOXSUP:
                theorems.append(boxsup_qa_theorem(cid, rounding.to_units_up(best.bound), best.box.rows_coq,
                                                  best.box.cap_units, realized_units))
            else:
                theorems.append(claim_theorem(cid, best.form, mclass, evals[best.form],
                                              rounding.to_units_up(inp.q_coef)))
        else:
            bounded = [f for f in forms.values() if f.bound is not None and not f.reason]
            best_v = min((f.bound for f in bounded), default=None)
            attn = Claim(cid, idx, ATTN_TV, None, best_v, True, reg_tier, realized, forms, memory_class=mclass)
        claims.append(attn)
        tv_for_output = attn
        if mclass == "dense_kv" and "evict_rows" in read:  # an eviction codec: full vs pruned attention
            evict, th = _evict_claim(idx, read, where, reg_tier, failures)
            claims.append(evict)
            if th is not None:
                theorems.append(th)
            tv_for_output = _composed_tv(attn, evict)
        if mclass == "dense_kv":  # the values' effect: attention output before and after W_o
            claims.extend(output_claims(idx, layer, tv_for_output, run.schema, failures, where, Claim))
        if kind.selection:
            claims.extend(_selection_claims(idx, read, where, best_eval, registry, failures,
                                            run.schema in MAGNITUDE_SCHEMAS, sizes.keys))
        if kind.pooling:
            claims.append(_pooling_claim(idx, write, where))
        reading = _layer_readings(idx, mclass, write, read, where)
        for f in (forms.get(BOXSUP), forms.get(QA_BOXSUP)):
            if f is not None and f.box is not None:  # what the kernel's box checker was handed
                reading[f"{f.form}_rows_shipped"] = f.box.shipped
                reading[f"{f.form}_rows_seen"] = f.box.seen
                reading[f"{f.form}_literals"] = f.box.literals
        readings.append(reading)
    return Derivation(claims, obligations, checks, failures, readings, coverage(run), theorems, run_scope(run))


def _evict_claim(idx: int, read: Block, where: str, reg_tier: Tier, failures: list[str]
                 ) -> tuple[Claim, ClaimTheorem | None]:
    """The eviction claim ``L.evict_tv``: ``TV(full attention, pruned attention) <= B`` on every read
    row of the layer, with ``B = RHO / (1 + RHO)`` and ``RHO`` the layer maximum of the meter's
    ``evict_rho`` rounded up (``coq/Witprobe/Eviction.v``, ``evict_banded_claim``).

    Certified-candidate: its per-run theorem (Coq only) is stated when ``RHO`` is finite; the
    certificate prints it ``certified`` only if Coq checks that theorem. The realized TV of full vs
    pruned attention (``evict_tv_realized``) is compared with ``B``; a bound below it fails.
    """
    cid = f"L{idx:02d}.evict_tv"
    rows = _counter(read, "evict_rows", where)
    realized = _stat(read, "evict_tv_realized", "max", where) or 0.0
    extra: dict[str, Any] = {
        "rows": rows,
        "rows_evicting": _counter(read, "evict_rows_evicting", where),
        "evicted_keys_max": _stat(read, "evict_keys", "max", where),
        "evicted_keys_mean": _stat(read, "evict_keys", "mean", where),
        "realized_mean": _stat(read, "evict_tv_realized", "mean", where),
        "row_bound_mean": _stat(read, "evict_bound", "mean", where),
        "row_tightness_mean": _stat(read, "evict_tightness", "mean", where),
    }
    rho_max = _stat(read, "evict_rho", "max", where) or 0.0
    try:
        rho = rounding.up(rho_max, what=f"{where} evict_rho")
    except rounding.RoundingError as e:
        extra["reason"] = f"RHO is not finite: {e}"
        return Claim(cid, idx, ATTN_TV, "evict", None, True, reg_tier, realized, kind="evict_tv", extra=extra,
                     memory_class="dense_kv"), None
    rho_units = rounding.to_units_up(rho)
    rho_q = rounding.from_units(rho_units)
    b_units = rounding.to_units_up(rho_q / (1 + rho_q))
    bound = rounding.from_units(b_units)
    if bound < Fraction(realized):
        failures.append(f"layer {idx}: evict bound {float(bound):.6g} beaten by realized TV {realized:.6g}")
    extra["rho"] = rounding.decimal_up(rho_q, 9)
    vacuous = bound >= 1
    claim = Claim(cid, idx, ATTN_TV, "evict", bound, vacuous, meet(reg_tier, Tier.CERTIFIED), realized,
                  kind="evict_tv", extra=extra, memory_class="dense_kv",
                  proofs=("Witprobe.Eviction.evict_banded_claim",))
    return claim, (None if vacuous else evict_theorem(cid, rho_units, b_units))


def _composed_tv(attn: Claim, evict: Claim) -> Claim:
    """The TV bound of full exact attention vs the served (pruned, stored) attention, for the output
    claims: the storage bound plus the eviction bound (triangle inequality), ``None`` if either is."""
    if attn.value is None or evict.value is None:
        return dataclasses.replace(attn, value=None, vacuous=True)
    total = attn.value + evict.value
    return dataclasses.replace(attn, value=total, vacuous=attn.vacuous or evict.vacuous or total >= 1)


BOXSUP = "boxsup"
BOXSUP_SHAPES = ("banded", "latent")
"""Theorem shapes whose box theorem is in the library (``BoxSup.box_banded_claim``,
``ClaimsLatent.box_latent_claim``); DeepSeek-V4's sink shape (and the score level) has none yet."""
BOXSUP_PROOFS = ("Witprobe.BoxSup.tv_le_box",)
BOXSUP_NO_THEOREM = ("no library theorem states the box bound for this memory kind's score bridge yet "
                     "(the box theorems cover dense KV and latent KV): reported beside the certified forms, "
                     "never claimed")
QA_BOXSUP = "qa_boxsup"
QA_BOXSUP_PROOFS = ("Witprobe.BoxSup.tv_le_box", "Witprobe.QueryAligned.qa_score_bridge")
CLAIM_ORDER = FORMS + (BOXSUP, QA_BOXSUP)


def _form_order(f: FormResult) -> tuple[Fraction, int]:
    """Tightest bound first; on a tie the earlier form of :data:`CLAIM_ORDER` (the chain forms first)."""
    return f.bound, CLAIM_ORDER.index(f.form)


def _boxsup(idx: int, read: Block, where: str, realized: float, keys: int, score_err: Fraction | None,
            score_abs_max: Fraction | None, c_max: Fraction, has_theorem: bool, failures: list[str],
            form: str = BOXSUP, layer: LayerRecord | None = None) -> FormResult:
    """The layer's box bound, rounded outward from the meter's row maximum to units of ``2**-48``.

    ``up(max_rows B_row) * (1 + boxsup_rel) + boxsup_floor`` (see :mod:`witprobe.probe.box_sup` and
    :func:`witprobe.calculus.float_error.boxsup_rel`); a bound below the realized TV is a failure.
    ``form`` is ``boxsup`` (radii ``c_band``: ``read.boxsup_bound``) or ``qa_boxsup`` (radii
    ``min(c_band, c_qa)``: ``read.qa_boxsup_bound``, with ``c_max`` their layer maximum
    ``read.qa_c_max``). A claim may use it only where ``has_theorem`` (the kind's shape has the
    form's box theorem); otherwise the form carries the reason and is reported beside the others.
    A claimable form also carries the checker's data (:mod:`witprobe.certify.box_certificate`) from
    the layer's ``box_rows``: without them (a run recorded before schema /5) the kernel cannot
    decide the bound, and the form is reported, not claimed.
    """
    reason = "" if has_theorem else BOXSUP_NO_THEOREM
    proofs = (BOXSUP_PROOFS if form == BOXSUP else QA_BOXSUP_PROOFS) if has_theorem else ()
    if score_err is None or score_abs_max is None:
        failures.append(f"layer {idx}: {form}: the run records no score magnitudes for its float64 analysis (fail closed)")
        return FormResult(form, None, True, False, None, "no score magnitudes recorded", proofs)
    problems = float_error.boxsup_problems(keys, score_err, score_abs_max)
    if problems:
        where_ = "" if form == BOXSUP else f"{form}: "  # the problems name the box meter already
        failures.extend(f"layer {idx}: {where_}{p} (fail closed)" for p in problems)
        return FormResult(form, None, True, False, None, "; ".join(problems), proofs)
    raw = rounding.up(_recorded_max(read, f"{form}_bound", where), what=f"{where} {form}_bound")
    exact = raw * (1 + float_error.boxsup_rel(keys, score_err, score_abs_max)) + float_error.boxsup_floor(keys, c_max)
    bound = rounding.from_units(rounding.to_units_up(exact))
    beaten = bound < Fraction(realized)
    if beaten:
        failures.append(f"layer {idx}: {form} bound {float(bound):.6g} beaten by realized TV {realized:.6g}")
    box = None
    if has_theorem:
        rows = None if layer is None or layer.box_rows is None else layer.box_rows.get(form)
        if rows is None:
            reason = ("no rows recorded for the kernel's box checker (read box_rows, schema /5): "
                      "the kernel cannot decide this bound")
        else:
            try:
                box = layer_data(rows, float_error.boxsup_rel(keys, score_err, score_abs_max), keys,
                                 f"{where}.box_rows.{form}", bound)
            except BoxDataError as e:
                failures.append(f"layer {idx}: {e} (fail closed)")
                reason = str(e)
    return FormResult(form, bound, bound >= 1, beaten, None, reason, proofs, box=box)


def _half_life(log_a: float | None) -> float | None:
    """Steps for a unit error to halve, ``ln 2 / -log a``; None when nothing contracts."""
    if log_a is None or log_a >= 0:
        return None
    return math.log(2) / -log_a


def _recurrent_claim(idx: int, layer: LayerRecord, read: Block, write: Block, where: str) -> Claim:
    """Observation only: the contraction profile of a recurrent layer, channel identity kept."""
    e_log = _stat(read, "log_a_t", "mean", where) if "log_a_t" in read else None
    mean_a = _stat(read, "a_t", "mean", where) if "a_t" in read else None
    n = _stat(read, "a_t", "n", where) if "a_t" in read else 0
    hist = [_counter(read, f"a_hist_{i}", where) for i in range(5)]
    per = layer.channels.mean_log_a if layer.channels is not None else []
    contracting = [v for v in per if v < 0]
    extra = {
        "tokens_x_channels": n,
        "mean_log_a": e_log,
        "log_mean_a": math.log(mean_a) if mean_a else None,
        "mean_a": mean_a,
        "half_life_from_mean_log_a": _half_life(e_log),
        "half_life_from_mean_a": _half_life(math.log(mean_a)) if mean_a else None,
        "near_one_share": _counter(read, "a_near_one", where) / n if n else None,
        "a_histogram_edges": [0, 0.5, 0.9, 0.99, 0.999, 1.0],
        "a_histogram": [h / n for h in hist] if n else None,
        "channels": len(per),
        "channels_contracting": len(contracting),
        "channel_mean_log_a_min": min(per) if per else None,
        "channel_mean_log_a_max": max(per) if per else None,
        "groenwall_state_error_max": _stat(read, "state_groenwall", "max", where) if "state_groenwall" in read else None,
    }
    return Claim(f"L{idx:02d}.state", idx, STATE_CONTRACTION, None, None, False, Tier.EMPIRICAL, 0.0,
                 kind="recurrent", extra=extra)


def _pooling_claim(idx: int, write: Block, where: str) -> Claim:
    """Block pooling of compressed entries: not an error source, reported with both contracts.

    Pooling acts on uncompressed token projections; a token-level error upstream of it would be
    attenuated per channel with gain ``||w||_2`` (l2 form, Cauchy-Schwarz, ``in [1/sqrt(B), 1]``)
    or passed with gain 1 (l-infinity form, convexity). Quoting the l2 gain alone would suggest an
    unconditional attenuation, so both are reported. The profile (top1_norm, entropy, effective
    fraction) is empirical.
    """
    extra: dict[str, Any] = {}
    for tensor in ("entry", "index_entry"):
        key = f"{tensor}_pool_w_l2"
        if key not in write:
            continue
        extra[tensor] = {
            "windows": _counter(write, f"{tensor}_pool_windows", where),
            "contract_linf_gain": 1,
            "contract_l2_gain_max": _stat(write, key, "max", where),
            "contract_l2_gain_mean": _stat(write, key, "mean", where),
            "contract_l2_gain_min": _stat(write, key, "min", where),
            "top1_norm_mean": _stat(write, f"{tensor}_pool_top1_norm", "mean", where),
            "entropy_n_mean": _stat(write, f"{tensor}_pool_entropy_n", "mean", where),
            "eff_frac_mean": _stat(write, f"{tensor}_pool_eff_frac", "mean", where),
        }
    return Claim(f"L{idx:02d}.pooling", idx, Metric("pool", "l2_gain", "write"), None, None, False, Tier.EMPIRICAL,
                 0.0, kind="pooling", extra=extra)


SELECTION_MEASURED_ON = "truncation sets: attention vs selector mass outside the served top-k, same candidates"
SELECTION_APPLIED_TO = "swap sets: tokens the compression moves in or out of the top-k"


def _selection_claims(idx: int, read: Block, where: str, attn_eval, registry: TierRegistry,
                      failures: list[str], magnitudes: bool = False, legacy_keys: int = 1) -> list[Claim]:
    """The Select stage of a DSA layer and the end-to-end composition with the read chain.

    ``L.selection`` bounds the swapped selector-score mass (certified, selector units). The
    composed ``L.attn_tv_total`` adds it to the attention bound only through the empirical
    selector-to-attention bridge ``rho`` (its maximum over the layer's rows), so it is empirical.
    """
    sel_rows = _counter(read, "sel_rows", where)
    cert_rows = _counter(read, "sel_cert_witness", where)
    b_s_max = _stat(read, "sel_b_S_witness", "max", where) or 0.0
    b_s = rounding.up(b_s_max, what=f"{where} sel_b_S_witness")
    if magnitudes and sel_rows:
        keys = _positive_int(_recorded_max(read, "sel_candidates", where), f"{where} sel_candidates")
        eps_max = Fraction(_recorded_max(read, "sel_eps_max", where))
        problems = float_error.selection_problems(keys, Fraction(_recorded_max(read, "sel_score_abs_max", where)), eps_max)
    else:  # runs without the magnitudes: only the size term is checked
        keys, eps_max = legacy_keys, Fraction(0)
        problems = float_error.selection_problems(keys, Fraction(0), eps_max)
    failures.extend(f"layer {idx}: {p} (fail closed)" for p in problems)
    if cert_rows < sel_rows:  # an uncertified row may have contestable keys whose probability underflowed
        b_s += float_error.selection_floor(keys, eps_max)
    realized_bs = _stat(read, "sel_b_S_realized", "max", where) or 0.0
    sel_metric = Metric("selector_dist", "tv", "select")
    sel_chain = Chain.start(bridges.selection_contract(b_s))
    sel_eval = sel_chain.evaluate(0)
    extra = {
        "rows": sel_rows,
        "rows_trivial": _counter(read, "sel_rows_trivial", where),
        "certified_rows_share": cert_rows / sel_rows if sel_rows else None,
        "top1_certified_share": _counter(read, "sel_cert_witness_top1", where) / sel_rows if sel_rows else None,
        "changed_rows_share": _counter(read, "sel_changed", where) / sel_rows if sel_rows else None,
        "eta": {k: encode(read[k]) for k in sorted(read) if k.startswith("sel_eta")},
    }
    out = [Claim(f"L{idx:02d}.selection", idx, sel_metric, "witness", sel_eval.bound, False,
                 meet(registry.tier_of(sel_metric), sel_chain.tier), realized_bs, kind="selection", extra=extra,
                 proofs=sel_eval.proofs)]
    rho_max = _stat(read, "rho", "max", where)
    total_realized = _stat(read, "tv_total_realized", "max", where) or 0.0
    if attn_eval is None or rho_max is None:
        return out
    rho = rounding.up(rho_max, what=f"{where} rho")
    total_chain = sel_chain.then(
        bridges.selector_to_attention(rho, measured_on=SELECTION_MEASURED_ON, applied_to=SELECTION_APPLIED_TO))
    total = parallel(attn_eval, total_chain.evaluate(0))
    extra_t = {
        "rho_tail": float(rho),
        "rho_mean": _stat(read, "rho", "mean", where),
        "storage_bound": rounding.decimal_up(attn_eval.bound, 6),
        "selection_term": rounding.decimal_up(total.bound - attn_eval.bound, 6),
        "certified_rows_realized_max": _stat(read, "tv_total_realized_certified", "max", where),
        "empirical_bound_exceeded": total.bound < Fraction(total_realized),
    }
    out.append(Claim(f"L{idx:02d}.attn_tv_total", idx, ATTN_TV, "parallel", total.bound, total.vacuous, total.tier,
                     total_realized, kind="attn_tv_total", extra=extra_t, proofs=total.proofs))
    return out


def _layer_readings(idx: int, mclass: str, write: Block, read: Block, where: str) -> dict[str, Any]:
    """Diagnostic readings (means, maxima, shares) of one layer: never bounds."""
    rows = _counter(read, "rows", where)
    main = KINDS[mclass].main_tensor
    out: dict[str, Any] = {
        "layer": idx,
        "memory_class": mclass,
        "main_tensor": main,
        "entries": _stat(write, f"{main}_witness", "n", where) if f"{main}_witness" in write else 0,
        "rows": rows,
        "tv_realized_max": _stat(read, "tv_realized", "max", where),
        "tv_realized_mean": _stat(read, "tv_realized", "mean", where),
    }
    for tensor in KINDS[mclass].write_tensors:
        out[f"{tensor}_rel_residual_mean"] = _stat(write, f"{tensor}_rel_residual", "mean", where)
        out[f"{tensor}_conservativeness_mean"] = _stat(write, f"{tensor}_conservativeness", "mean", where)
        out[f"{tensor}_conservativeness_min"] = _stat(write, f"{tensor}_conservativeness", "min", where)
        out[f"{tensor}_conservativeness_max"] = _stat(write, f"{tensor}_conservativeness", "max", where)
    for form in FORMS:
        out[f"rows_{form}_vacuous_share"] = _counter(read, f"rows_{form}_vacuous", where) / rows if rows else None
        out[f"{form}_row_bound_max"] = _stat(read, f"{form}_bound", "max", where)
    out["rows_best_vacuous_share"] = _counter(read, "rows_best_vacuous", where) / rows if rows else None
    if "boxsup_bound" in read:
        out["boxsup_row_bound_max"] = _stat(read, "boxsup_bound", "max", where)
        out["rows_boxsup_vacuous_share"] = _counter(read, "rows_boxsup_vacuous", where) / rows if rows else None
    return out
