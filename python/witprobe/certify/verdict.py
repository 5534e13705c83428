"""The verdict of a certificate and what it covers: what was bounded, what was not.

``verdict`` is ``pass`` when every self-check is 0, no bound was beaten by the realized error and
every required record was present; ``fail`` otherwise. A ``pass`` says only that the *per-layer*
bounds held: it never says the compressed model behaves like the uncompressed one. So the summary
also states, from the claims themselves:

- ``bounded``: per claim kind, how many layers carry a non-vacuous bound and with which tiers;
- ``not_bounded``: every quantity the run touched that no bound covers (vacuous layers, values
  of memory classes without an output bound, the recurrent state, the end-to-end next-token
  distribution and the greedy tokens);
- ``end_to_end``: the end-to-end readings (:mod:`witprobe.certify.end_to_end`), with ``status``
  ``close``, ``diverged`` or ``not_measured``;
- ``headline``: one line that puts the verdict, its scope and the end-to-end status together, so
  ``pass`` is never printed alone next to a hidden divergence.

Exit codes of ``certify run`` (docs/CERTIFICATES.md): 0 when the verdict is ``pass`` and the run
did not diverge end to end; 5 (:data:`EXIT_DIVERGED`) when the verdict is ``pass`` but the largest
next-token TV exceeds the run's tolerance; 1 when the verdict is ``fail`` (whatever end to end).
"""

from __future__ import annotations

from typing import Any

from witprobe.calculus import rounding
from witprobe.certify.end_to_end import DIVERGED, NOT_MEASURED

EXIT_DIVERGED = 5

# claim kinds that bound a quantity, with the human name of the quantity
BOUNDED_KINDS = {
    "attn_tv": "attention-distribution TV (keys)",
    "attn_tv_total": "attention TV incl. selection changes",
    "evict_tv": "attention TV from eviction (full vs pruned attention)",
    "selection": "swapped selector mass",
    "attn_out": "attention-output error ||y - y_hat||",
    "attn_out_proj": "output-projection error ||W_o (y - y_hat)||",
}
TV_KINDS = ("attn_tv", "attn_tv_total", "evict_tv")
ATTENTION_CLASSES = ("dense_kv", "latent", "latent_indexed", "v4_sliding", "v4_hca", "v4_csa")


def _layers_text(layers: list[int], limit: int = 8) -> str:
    shown = ", ".join(f"L{i:02d}" for i in layers[:limit])
    return shown + (f", ... ({len(layers)} layers)" if len(layers) > limit else "")


def bounded_and_not(claims: list[dict[str, Any]], values_compressed: bool | None,
                    layer_classes: dict[int, str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Per bounded kind: layers with a non-vacuous bound and the tiers; and the unbounded quantities."""
    bounded: list[dict[str, Any]] = []
    not_bounded: list[str] = []
    for kind, what in BOUNDED_KINDS.items():
        cs = [c for c in claims if c["kind"] == kind]
        if not cs:
            continue
        ok = [c for c in cs if c["bound"] is not None and not c["vacuous"]]
        tiers: dict[str, int] = {}
        for c in ok:
            tiers[c["tier"]] = tiers.get(c["tier"], 0) + 1
        bounded.append({"kind": kind, "what": what, "layers": len(ok), "of": len(cs),
                        "tiers": dict(sorted(tiers.items()))})
        bad = sorted(c["layer"] for c in cs if c["bound"] is None or c["vacuous"])
        if bad:
            not_bounded.append(f"{what} on {len(bad)}/{len(cs)} layers (vacuous or no reads: {_layers_text(bad)})")
    out_layers = {c["layer"] for c in claims if c["kind"] == "attn_out"}
    attn_layers = sorted(i for i, k in layer_classes.items() if k in ATTENTION_CLASSES)
    missing = [i for i in attn_layers if i not in out_layers]
    if missing and values_compressed is not False:
        classes = sorted({layer_classes[i] for i in missing})
        not_bounded.append(f"attention output (the values' effect) on {len(missing)}/{len(attn_layers)} attention "
                           f"layers ({', '.join(classes)}: no output bound for this memory class)")
    rec = sorted(c["layer"] for c in claims if c["kind"] == "recurrent")
    if rec:
        not_bounded.append(f"recurrent state error on {len(rec)} layers (observation only)")
    not_bounded.append("end-to-end next-token distribution and greedy tokens (readings only: per-layer bounds "
                       "do not compose into a bound on them here)")
    return bounded, not_bounded


def largest_tv_bound(claims: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The largest non-vacuous per-layer TV bound over every TV claim (storage and with selection)."""
    tv = [c for c in claims if c["kind"] in TV_KINDS and c["bound"] is not None and not c["vacuous"]]
    worst = max(tv, key=lambda c: rounding.parse_fraction(c["bound"]["exact"]), default=None)
    if worst is None:
        return None
    return {"claim": worst["id"], "bound": worst["bound"], "tier": worst["tier"],
            "realized_max": worst["realized_tv_max"]}


def largest_realized_tv(claims: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The largest realized per-layer TV over every TV claim (a reading)."""
    tv = [c for c in claims if c["kind"] in TV_KINDS]
    worst = max(tv, key=lambda c: c["realized_tv_max"], default=None)
    return None if worst is None else {"claim": worst["id"], "realized_max": worst["realized_tv_max"]}


def headline(ok: bool, bounded: list[dict[str, Any]], e2e: dict[str, Any]) -> str:
    """``pass (per-layer bounds held; ...)`` or ``fail (...)``, with the end-to-end status."""
    scope = ""
    for kind, name in (("attn_tv", "attention TV"), ("evict_tv", "eviction TV")):
        b = next((b for b in bounded if b["kind"] == kind), None)
        if b:  # under eviction the storage TV alone says nothing of the evicted keys: both are stated
            scope += f"; {name} bounded on {b['layers']}/{b['of']} layers"
    if ok:
        head = f"pass (per-layer bounds held, self-checks 0{scope})"
    else:
        head = f"fail (a self-check failed, a bound was beaten or a record is missing{scope})"
    if e2e["status"] == DIVERGED:
        return head + f"; end-to-end DIVERGED (next-token TV max {e2e['next_token_tv_max']:.4f} > {e2e['tv_tolerance']:g})"
    if e2e["status"] == NOT_MEASURED:
        return head + "; end-to-end not measured"
    return head + f"; end-to-end close (next-token TV max {e2e['next_token_tv_max']:.4f} <= {e2e['tv_tolerance']:g})"


def run_exit_code(summary: dict[str, Any], ok_code: int, fail_code: int) -> int:
    """The documented exit code of ``certify run`` for a certificate summary."""
    if summary["verdict"] != "pass":
        return fail_code
    if (summary.get("end_to_end") or {}).get("status") == DIVERGED:
        return EXIT_DIVERGED
    return ok_code


def scope_summary(ok: bool, claims: list[dict[str, Any]], scope: Any) -> dict[str, Any]:
    """The summary fields that state the verdict's scope (``scope`` is a
    :class:`witprobe.certify.end_to_end.RunScope`)."""
    e2e = scope.end_to_end.to_json()
    bounded, not_bounded = bounded_and_not(claims, scope.values_compressed, scope.layer_classes)
    return {
        "headline": headline(ok, bounded, e2e),
        "bounded": bounded,
        "not_bounded": not_bounded,
        "end_to_end": e2e,
        "largest_tv_bound": largest_tv_bound(claims),
        "largest_realized_tv": largest_realized_tv(claims),
    }
