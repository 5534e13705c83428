"""The per-layer table printed by ``certify run`` (and ``certify show``)."""

from __future__ import annotations

from fractions import Fraction

from fractions import Fraction

from typing import Any, TextIO

from witprobe.calculus import rounding


def _num(x: Any, fmt: str = "{:.4f}") -> str:
    return "-" if x is None else fmt.format(x)


def _bound(b: dict[str, Any] | None, vacuous: bool = False) -> str:
    """A bound printed with 4 decimals, rounded up from its exact value (never below the bound)."""
    if b is None:
        return "-"
    s = rounding.decimal_up(rounding.parse_fraction(b["exact"]), 4)
    return f"{s}*" if vacuous else s


def _up(text: str | None, digits: int) -> str:
    """An upper bound stored as a decimal or ``num/den`` string, printed rounded *up* at ``digits``
    places (slicing the string would truncate it, printing less than the bound)."""
    if not text:
        return "-"
    return rounding.decimal_up(Fraction(text), digits)


def _tier(c: dict[str, Any], verified: bool) -> str:
    """The tier cell: ``unverified`` for every claim of a certificate that does not re-derive
    (:mod:`witprobe.certify.recorded`): its tiers are not witprobe's."""
    return c["tier"] if verified else "UNVERIFIED"


CLAIM_FIELDS = ("id", "kind", "layer", "bound", "vacuous", "tier")  # what every claim of a certificate carries


def require_claims(cert: dict[str, Any]) -> None:
    """Read every claim's common fields, whichever table prints it (or none does): a claim
    without a tier, or with a tier witprobe does not know, is a corrupt certificate (fail closed)."""
    from witprobe.calculus.tiers import Tier

    known = {t.value for t in Tier}
    for c in cert["claims"]:
        for k in CLAIM_FIELDS:
            _ = c[k]  # a tracked read: a missing field names its JSON path
        if c["tier"] not in known:
            raise ValueError(f"tier {c['tier']!r} is not one of {sorted(known)}")


def print_table(cert: dict[str, Any], out: TextIO, verified: bool = True) -> None:
    """Layer | rel. residual | W/||D|| | realized TV | plain | e-form | centred | box | claimed bound | form | tightness | tier.

    The box column is printed when the run metered it; a box bound is claimed only where the box
    theorem covers the layer's memory kind (``docs/CERTIFICATES.md``). With ``verified`` false
    every tier prints as ``UNVERIFIED``.
    """
    require_claims(cert)
    readings = {r["layer"]: r for r in cert["readings"]}
    head = (
        f"{'layer':>5} {'rel.res%':>8} {'W/|D|':>6} {'TV real':>8} {'plain':>7} {'e-form':>7} {'centred':>7} "
        f"{'box':>7} {'qa box':>7} {'bound':>7} {'form':>9} {'tight':>6} {'tier':>9}"
    )
    print(head, file=out)
    print("-" * len(head), file=out)
    for c in (c for c in cert["claims"] if c["kind"] == "attn_tv"):
        r = readings.get(c["layer"], {})
        f = c["forms"]
        main = r.get("main_tensor", "key")
        rel = r.get(f"{main}_rel_residual_mean")
        cells = " ".join(f"{_bound(f.get(k, {}).get('bound'), f.get(k, {}).get('vacuous', False)):>7}"
                         for k in ("plain", "eform", "centred", "boxsup", "qa_boxsup"))
        print(
            f"{c['layer']:>5} {_num(rel * 100 if rel is not None else None, '{:.3f}'):>8} "
            f"{_num(r.get(f'{main}_conservativeness_mean'), '{:.2f}'):>6} {_num(c['realized_tv_max']):>8} {cells} "
            f"{_bound(c['bound'], c['vacuous']):>7} {c['form'] or '-':>9} {_num(c['tightness'], '{:.1f}'):>6} "
            f"{_tier(c, verified):>9}",
            file=out,
        )
    print("(* = vacuous: a TV bound >= 1 says nothing; bounds are rounded up; the claim is the tightest non-vacuous "
          "form its theorem covers; qa box: the box bound over the query-aligned radii, '-' when the run stored no "
          "query-aligned witness)", file=out)
    print_evictions(cert, out, verified)
    print_outputs(cert, out, verified)
    print_recurrent(cert, out)
    print_pooling(cert, out)
    sel = {c["layer"]: c for c in cert["claims"] if c["kind"] == "selection"}
    if sel:
        tot = {c["layer"]: c for c in cert["claims"] if c["kind"] == "attn_tv_total"}
        head = (f"{'layer':>5} {'rows':>5} {'cert%':>6} {'top1%':>6} {'b_S wit':>8} {'b_S real':>8} "
                f"{'rho':>6} {'total':>7} {'TV real':>8} {'tier':>9}")
        print("\nselection (selector-score mass) and end-to-end TV through the empirical rho bridge:", file=out)
        print(head, file=out)
        print("-" * len(head), file=out)
        for layer, c in sorted(sel.items()):
            e = c["extra"]
            t = tot.get(layer)
            pct = lambda x: "-" if x is None else f"{100 * x:.1f}"  # noqa: E731
            print(
                f"{layer:>5} {e['rows']:>5} {pct(e['certified_rows_share']):>6} {pct(e['top1_certified_share']):>6} "
                f"{_bound(c['bound']):>8} {_num(c['realized_tv_max']):>8} "
                f"{_num(t['extra']['rho_tail'] if t else None, '{:.2f}'):>6} {_bound(t['bound'], t['vacuous']) if t else '-':>7} "
                f"{_num(t['realized_tv_max'] if t else None):>8} {_tier(t, verified) if t else '-':>9}",
                file=out,
            )


def print_outputs(cert: dict[str, Any], out: TextIO, verified: bool = True) -> None:
    """Attention-output error per layer (values compressed or not), before and after ``W_o``."""
    outs = {c["layer"]: c for c in cert["claims"] if c["kind"] == "attn_out"}
    if not outs:
        return
    projs = {c["layer"]: c for c in cert["claims"] if c["kind"] == "attn_out_proj"}
    head = (f"{'layer':>5} {'|y-y^| real':>11} {'bound':>9} {'TV term':>9} {'V term':>9} {'tight':>6} "
            f"{'|Wo(.)| real':>12} {'bound':>9} {'tight':>6} {'|Wo|_2<=':>8} {'tier':>9}")
    print("\nattention output ||y - y_hat|| per row, and after the output projection (empirical bounds):", file=out)
    print(head, file=out)
    print("-" * len(head), file=out)
    for layer, c in sorted(outs.items()):
        e, p = c["extra"], projs.get(layer)
        pe = p["extra"] if p else {}
        print(
            f"{layer:>5} {_num(e['realized_err_max']):>11} {_bound(c['bound'], c['vacuous']):>9} "
            f"{_up(e['tv_term'], 6):>9} {_up(e['value_term'], 6):>9} {_num(c['tightness'], '{:.1f}'):>6} "
            f"{_num(p['extra']['realized_err_max'] if p else None):>12} "
            f"{_bound(p['bound'], p['vacuous']) if p else '-':>9} {_num(p['tightness'] if p else None, '{:.1f}'):>6} "
            f"{_up(pe.get('opnorm_upper'), 4):>8} {_tier(c, verified):>9}",
            file=out,
        )
    print("(* = the layer's TV bound is vacuous: only the trivial TV <= 1 is used)", file=out)


def print_evictions(cert: dict[str, Any], out: TextIO, verified: bool = True) -> None:
    """Eviction codecs: per layer, TV(full, pruned attention) realized vs the bound RHO/(1+RHO)."""
    ev = [c for c in cert["claims"] if c["kind"] == "evict_tv"]
    if not ev:
        return
    head = (f"{'layer':>5} {'TV real':>8} {'bound':>8} {'RHO':>12} {'tight':>6} {'rows evicting':>14} "
            f"{'evicted max':>11} {'tier':>9}")
    print("\neviction: TV of full vs pruned attention per row, bound from retained logits and evicted band norms:",
          file=out)
    print(head, file=out)
    print("-" * len(head), file=out)
    for c in ev:
        e = c["extra"]
        print(f"{c['layer']:>5} {_num(c['realized_tv_max']):>8} {_bound(c['bound'], c['vacuous']):>8} "
              f"{_up(e.get('rho'), 9):>12} {_num(c['tightness'], '{:.2f}'):>6} "
              f"{e['rows_evicting']:>6}/{e['rows']:<7} {_num(e.get('evicted_keys_max'), '{:.0f}'):>11} "
              f"{_tier(c, verified):>9}", file=out)
    print("(the attention table above bounds the stored entries on the retained keys; eviction is this table)",
          file=out)


def print_recurrent(cert: dict[str, Any], out: TextIO) -> None:
    """Recurrent layers: the contraction profile (observation only)."""
    rec = [c for c in cert["claims"] if c["kind"] == "recurrent"]
    if not rec:
        return
    head = (f"{'layer':>5} {'E[log a]':>9} {'log E[a]':>9} {'t1/2 log':>8} {'t1/2 mean':>9} {'a>.999':>7} "
            f"{'contracting':>11} {'Groenwall':>9}")
    print("\nrecurrent state (observation only; E[log a] governs contraction, not the mean):", file=out)
    print(head, file=out)
    print("-" * len(head), file=out)
    for c in rec:
        e = c["extra"]
        print(
            f"{c['layer']:>5} {_num(e['mean_log_a']):>9} {_num(e['log_mean_a']):>9} "
            f"{_num(e['half_life_from_mean_log_a'], '{:.2f}'):>8} {_num(e['half_life_from_mean_a'], '{:.2f}'):>9} "
            f"{_num(e['near_one_share'], '{:.3f}'):>7} {e['channels_contracting']:>5}/{e['channels']:<5} "
            f"{_num(e['groenwall_state_error_max'], '{:.4f}'):>9}",
            file=out,
        )


def print_pooling(cert: dict[str, Any], out: TextIO) -> None:
    """Block pooling of compressed entries: both contracts' gains and the concentration profile."""
    pool = [c for c in cert["claims"] if c["kind"] == "pooling"]
    if not pool:
        return
    head = (f"{'layer':>5} {'entries':>11} {'windows':>7} {'l2 gain min/mean/max':>22} {'linf':>4} "
            f"{'top1_n':>6} {'entr_n':>6} {'eff':>5}")
    print("\npooling (not an error source; gains a token-level error would see):", file=out)
    print(head, file=out)
    print("-" * len(head), file=out)
    for c in pool:
        for tensor, e in c["extra"].items():
            gains = f"{e['contract_l2_gain_min']:.3f}/{e['contract_l2_gain_mean']:.3f}/{e['contract_l2_gain_max']:.3f}"
            print(f"{c['layer']:>5} {tensor:>11} {e['windows']:>7} {gains:>22} {e['contract_linf_gain']:>4} "
                  f"{_num(e['top1_norm_mean'], '{:.3f}'):>6} {_num(e['entropy_n_mean'], '{:.3f}'):>6} "
                  f"{_num(e['eff_frac_mean'], '{:.2f}'):>5}", file=out)


def _kernel_line(name: str, summary: dict[str, Any], outcome: dict[str, Any], refused: str) -> str:
    """``coq: 30/30 kernel-checked`` (+ why not checked, + the theorems the kernel refused)."""
    line = f"{name}: {summary['kernel_checked']}/{summary['theorems']} kernel-checked"
    if outcome["status"] != "checked" and outcome["reason"]:
        line += f" ({outcome['status']}: {outcome['reason']})"
    if summary[refused]:
        line += f"; {refused.upper()}: {', '.join(summary[refused])}"
    return line


def print_summary(cert: dict[str, Any], out: TextIO, problems: list[str] | None = None) -> None:
    """The summary below the table. ``problems``: why the certificate does not verify
    (:func:`witprobe.certify.recorded.verify_recorded`); then the verdict line says ``NOT VERIFIED``
    and never the certificate's own verdict (``None``: not verified here, e.g. by ``certify run``)."""
    from witprobe.certify.coverage import format_coverage
    from witprobe.certify.recorded import VERIFIED_NOTE

    s = cert["summary"]
    print("coverage: model | family | memory class | layers covered | headline reading", file=out)
    for line in format_coverage(cert.get("coverage", [])):
        print(f"  {line}", file=out)
    lean = cert["kernels"]["lean"]
    arith = cert["kernels"]["lean_arithmetic"]
    coq = cert["kernels"]["coq"]
    checks = cert["self_checks"]
    bad = {k: v["count"] for k, v in checks.items() if not v["ok"]}
    tiers = ", ".join(f"{k} {v}" for k, v in s["tiers"].items())
    if problems:
        print(f"verdict: NOT VERIFIED ({len(problems)} problem(s) below; the certificate's own verdict is not "
              "shown: run `certify check DIR`)", file=out)
        print(f"layers: {s['layers']}  non-vacuous: {s['non_vacuous_layers']}", file=out)
    elif "headline" in s:
        print(f"verdict: {s['headline']}", file=out)
        print(f"layers: {s['layers']}  non-vacuous: {s['non_vacuous_layers']}  tiers: {tiers}", file=out)
        print_scope(s, out)
    else:  # a certificate made before the scope summary: its own lines, and what it lacks
        print(f"verdict: {s['verdict']}  layers: {s['layers']}  non-vacuous: {s['non_vacuous_layers']}  tiers: {tiers}",
              file=out)
        if s["worst_bound"]:
            print(f"largest certified-form bound: {s['worst_bound']['bound']['decimal_up']} "
                  f"({s['worst_bound']['claim']})", file=out)
        print("note: this certificate predates the scope summary (bounded / not bounded / end-to-end); "
              "re-run `certify run` for it", file=out)
    print(f"self-checks: {'all 0' if not bad else f'{len(bad)} nonzero'}", file=out)
    for k in sorted(bad):  # the meaning is the table's (witprobe.self_checks), stored in the certificate
        print(f"  SELF-CHECK {k} = {bad[k]}: {checks[k]['meaning']}", file=out)
    print(_kernel_line("coq", s["coq"], coq, "rejected"), file=out)
    print_decided(cert, out)
    print(_kernel_line("lean", s["lean"], lean, "failed"), file=out)
    n = len(cert["obligations"])
    kc = sum(1 for o in cert["obligations"] if o["status"] == "kernel_checked")
    line = f"lean arithmetic: {arith['status']} ({kc}/{n} obligations checked; arithmetic does not certify)"
    if arith["reason"]:
        line += f": {arith['reason']}"
    print(line, file=out)
    for f in cert["failures"]:
        print(f"FAILED: {f}", file=out)
    if problems is not None:
        for p in problems:
            print(f"NOT VERIFIED: {p}", file=out)
        if not problems:
            print(VERIFIED_NOTE, file=out)


def print_decided(cert: dict[str, Any], out: TextIO) -> None:
    """What the kernel decided: the mutation guard's outcomes and the box rows shipped to it."""
    guards: dict[str, int] = {}
    for c in cert["claims"]:
        g = c["kernels"]["coq"].get("guard")
        if g and g["status"] != "not_run":
            guards[g["status"]] = guards.get(g["status"], 0) + 1
    if guards:
        parts = ", ".join(f"{n} {k}" for k, n in sorted(guards.items()))
        print(f"mutation guard (B lowered to max(realized, B/2); the kernel must reject it): {parts}", file=out)
    for form in ("boxsup", "qa_boxsup"):
        rows = [r for r in cert.get("readings", []) if f"{form}_rows_shipped" in r]
        if rows:
            shipped = sum(r[f"{form}_rows_shipped"] for r in rows)
            seen = sum(r[f"{form}_rows_seen"] for r in rows)
            lits = sum(r[f"{form}_literals"] for r in rows)
            share = f"{100 * shipped / seen:.1f}%" if seen else "-"
            print(f"{form} rows shipped to the kernel's checker: {shipped} of {seen} ({share}), {lits} float literals; "
                  "the others are under each layer's cap C", file=out)


def print_scope(s: dict[str, Any], out: TextIO) -> None:
    """What was bounded, what was not, the largest per-layer bound with its realization, end to end."""
    from witprobe.certify.end_to_end import format_end_to_end

    for b in s.get("bounded", []):
        tiers = ", ".join(f"{k} {v}" for k, v in b["tiers"].items()) or "none"
        print(f"bounded: {b['what']}: {b['layers']}/{b['of']} layers ({tiers})", file=out)
    for text in s.get("not_bounded", []):
        print(f"not bounded: {text}", file=out)
    big = s.get("largest_tv_bound")
    if big:
        exact = big["bound"].get("exact")  # a bound that prints as 1.000000 but is below 1 says so
        b = Fraction(exact) if isinstance(exact, str) else Fraction(0)
        near = f" = 1 - {float(1 - b):.1e}, nearly vacuous" if Fraction(999_999, 10**6) < b < 1 else ""
        print(f"largest per-layer TV bound: {big['bound']['decimal_up']}{near} ({big['claim']}, {big['tier']}; "
              f"realized there {big['realized_max']:.4f}; per layer, not end to end)", file=out)
    real = s.get("largest_realized_tv")
    if real:
        print(f"largest realized per-layer TV: {real['realized_max']:.4f} ({real['claim']}; a reading)", file=out)
    if s.get("end_to_end"):
        print(format_end_to_end(s["end_to_end"]), file=out)
