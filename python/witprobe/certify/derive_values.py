"""Claims on the values' effect: the attention-output error of a layer, before and after ``W_o``.

For a dense-KV layer whose attention TV claim is ``TV(p, p') <= B`` on every row, the output
meter (:func:`witprobe.probe.meters.output_rows`) records per row the centred spread of the served
values ``S = max_t (||v'_t - y_hat|| + W^v_t)``, the value term ``E = sum_t p'_t W^v_t`` and their
per-row l2 over heads. The layer claims are, with measured maxima rounded up
(:func:`witprobe.calculus.rounding.up`) and ``B' = min(B, 1)``::

    attn_out       max_rows ||y - y_hat||            <= 2 B' max S + max E
    attn_out_proj  max_rows ||W_o (Y - Y_hat)||     <= sigma_up (2 B' max S_l2 + max E_l2)

(the derivation is in :class:`witprobe.probe.meters.OutputRows`). ``sigma_up`` is the run's
recorded upper bound on ``||W_o||_2`` (:mod:`witprobe.calculus.opnorm`). Both are **empirical**:
no proof kernel checked these inequalities. Each is compared with the realized maximum; a bound
below it is a failure. When ``B >= 1`` the claim uses the trivial ``TV <= 1`` and is marked
vacuous (it is then only the served values' diameter plus the value term).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from witprobe.calculus import rounding
from witprobe.calculus.metrics import Metric
from witprobe.calculus.tiers import Tier
from witprobe.certify.run_record import LayerRecord, Reading, Statistic

OUTPUT_SCHEMAS = ("witprobe-run/3", "witprobe-run/4", "witprobe-run/5", "witprobe-run/6")  # run schemas whose dense-KV reads carry the output meter
ATTN_OUT = Metric("attn_out", "l2", "read")
ATTN_OUT_PROJ = Metric("attn_out_proj", "l2", "read")


def _max(read: dict[str, Reading], key: str, where: str) -> float:
    entry = read.get(key)
    v = entry.max if isinstance(entry, Statistic) else None
    if v is None:
        raise ValueError(f"{where}: statistic {key!r} has no maximum although output rows were read (fail closed)")
    return float(v)


def output_claims(idx: int, layer: LayerRecord, tv_claim: Any, schema: str, failures: list[str], where: str,
                  claim_cls: type) -> list[Any]:
    """The ``attn_out`` (and, with a recorded ``o_proj``, ``attn_out_proj``) claims of one dense-KV
    layer; updates ``failures`` with a beaten bound or a missing record. Its self-check counters
    (``rows_out_beaten``, ``rows_out_proj_beaten``) are required and totalled by derivation
    (:func:`witprobe.kinds.base.layer_required_counters`)."""
    read = layer.read
    rows = read.get("out_rows", 0)
    if not rows:
        if schema in OUTPUT_SCHEMAS and read.get("rows"):
            failures.append(f"layer {idx}: the attention-output meter recorded no rows (fail closed)")
        return []
    trivial = tv_claim.value is None or tv_claim.vacuous or tv_claim.value >= 1
    tv = Fraction(1) if trivial else tv_claim.value
    spread = rounding.up(_max(read, "out_spread", where), what=f"{where} out_spread")
    value = rounding.up(_max(read, "out_value_term", where), what=f"{where} out_value_term")
    realized = _max(read, "out_err", where)
    bound = 2 * tv * spread + value
    extra = {
        "tv_bound_used": rounding.decimal_up(tv, 6),
        "tv_bound_trivial": trivial,
        "tv_term": rounding.decimal_up(2 * tv * spread, 6),
        "value_term": rounding.decimal_up(value, 6),
        "spread_max": _max(read, "out_spread", where),
        "realized_err_max": realized,
        "realized_err_mean": _mean(read, "out_err"),
        "rows": rows,
    }
    out = [_claim(claim_cls, f"L{idx:02d}.attn_out", idx, ATTN_OUT, bound, trivial, realized, "attn_out", extra,
                  failures)]
    proj = layer.o_proj
    if proj is not None:
        try:
            sigma = rounding.parse_fraction(proj.opnorm_upper)
        except (TypeError, ValueError):
            failures.append(f"layer {idx}: o_proj.opnorm_upper is missing or not an exact rational (fail closed)")
            return out
        if sigma <= 0:
            failures.append(f"layer {idx}: o_proj.opnorm_upper must be positive (fail closed)")
            return out
        s_l2 = rounding.up(_max(read, "out_spread_l2", where), what=f"{where} out_spread_l2")
        v_l2 = rounding.up(_max(read, "out_value_l2", where), what=f"{where} out_value_l2")
        p_real = _max(read, "out_proj_err", where)
        p_bound = sigma * (2 * tv * s_l2 + v_l2)
        p_extra = {
            "opnorm_upper": proj.opnorm_upper_decimal,
            "frobenius_upper": proj.frobenius_upper_decimal,
            "tv_bound_used": rounding.decimal_up(tv, 6),
            "tv_bound_trivial": trivial,
            "tv_term": rounding.decimal_up(sigma * 2 * tv * s_l2, 6),
            "value_term": rounding.decimal_up(sigma * v_l2, 6),
            "realized_err_max": p_real,
            "realized_err_mean": _mean(read, "out_proj_err"),
        }
        out.append(_claim(claim_cls, f"L{idx:02d}.attn_out_proj", idx, ATTN_OUT_PROJ, p_bound, trivial, p_real,
                          "attn_out_proj", p_extra, failures))
    return out


def _mean(read: dict[str, Reading], key: str) -> float | None:
    entry = read.get(key)
    return entry.mean if isinstance(entry, Statistic) else None


def _claim(claim_cls: type, cid: str, idx: int, metric: Metric, bound: Fraction, trivial: bool, realized: float,
           kind: str, extra: dict[str, Any], failures: list[str]) -> Any:
    if bound < Fraction(realized):
        failures.append(f"layer {idx}: {kind} bound {float(bound):.6g} beaten by the realized error {realized:.6g}")
    return claim_cls(cid, idx, metric, "tv_spread", bound, trivial, Tier.EMPIRICAL, realized, kind=kind, extra=extra,
                     memory_class="dense_kv")
