"""End-to-end readings of a run: the served next-token distribution and the greedy tokens.

The per-layer claims bound each attention read in isolation; nothing in the certificate bounds
how the per-layer errors compose through the network into the next-token distribution. This
module summarises what the run *measured* end to end (readings, never bounds), re-derived from
``run.json``:

- per generated step, ``TV(p, p')`` and ``KL(p || p')`` between the uncompressed model's and the
  served model's next-token distributions on the same served prefix (``requests[i].next_token_tv``,
  ``next_token_kl``, recorded by :func:`witprobe.certify.measure.next_token_divergence`);
- the greedy tokens: the agreeing prefix and the position-wise matches with the uncompressed
  greedy generation (which compounds: one early flip changes every later context).

``status`` is ``diverged`` when the largest next-token TV exceeds the run's
``config.e2e_tv_tolerance`` (default 0.1), ``close`` when it does not, ``not_measured`` when the
run has no reference (``--no-reference``) or predates these readings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from witprobe.certify.run_record import RequestRecord, RunRecord

DEFAULT_TV_TOLERANCE = 0.1
CLOSE, DIVERGED, NOT_MEASURED = "close", "diverged", "not_measured"


class EndToEndError(ValueError):
    """The run record's end-to-end readings are malformed (the message names the field)."""


@dataclass(frozen=True)
class EndToEnd:
    """Summary of the end-to-end readings (``certificate.summary.end_to_end``)."""

    status: str
    tv_tolerance: float
    steps: int
    next_token_tv_max: float | None
    next_token_tv_mean: float | None
    next_token_kl_max: float | None
    next_token_kl_mean: float | None
    steps_over_tolerance: int
    greedy_agreeing_prefix: int | None
    greedy_position_matches: int | None
    greedy_total: int | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _readings(v: list[float], where: str) -> list[float]:
    if any(x < 0 or x != x for x in v):
        raise EndToEndError(f"{where} holds a negative or NaN reading")
    return [float(x) for x in v]


def end_to_end(requests: list[RequestRecord], tolerance: float | None) -> EndToEnd:
    """The end-to-end summary of a run's requests (pure; ``certify check`` re-derives it);
    ``tolerance`` is ``config.e2e_tv_tolerance`` (``None``: the default 0.1)."""
    tol = DEFAULT_TV_TOLERANCE if tolerance is None else tolerance
    if not 0 <= tol <= 1:
        raise EndToEndError(f"run.json config.e2e_tv_tolerance must be a number in [0, 1], got {tol!r}")
    tvs: list[float] = []
    kls: list[float] = []
    agree = matches = total = 0
    has_greedy = has_steps = False
    for i, r in enumerate(requests):
        where = f"run.json requests[{i}]"
        if r.next_token_tv is not None or r.next_token_kl is not None:
            tv = _readings(r.next_token_tv or [], f"{where}.next_token_tv")
            kl = _readings(r.next_token_kl or [], f"{where}.next_token_kl")
            if len(tv) != len(kl) or len(tv) != len(r.served_tokens):
                raise EndToEndError(f"{where}: next_token_tv, next_token_kl and served_tokens differ in length")
            if any(x > 1 + 1e-12 for x in tv):
                raise EndToEndError(f"{where}.next_token_tv holds a TV above 1")
            tvs.extend(tv)
            kls.extend(kl)
            has_steps = True
        if r.agreeing_prefix is not None and r.reference_tokens is not None:
            has_greedy = True
            agree += r.agreeing_prefix
            matches += sum(a == b for a, b in zip(r.served_tokens, r.reference_tokens))
            total += len(r.served_tokens)
    if has_steps and tvs:
        status = DIVERGED if max(tvs) > tol else CLOSE
    else:
        status = NOT_MEASURED
    return EndToEnd(
        status=status,
        tv_tolerance=float(tol),
        steps=len(tvs),
        next_token_tv_max=max(tvs) if tvs else None,
        next_token_tv_mean=sum(tvs) / len(tvs) if tvs else None,
        next_token_kl_max=max(kls) if kls else None,
        next_token_kl_mean=sum(kls) / len(kls) if kls else None,
        steps_over_tolerance=sum(x > tol for x in tvs),
        greedy_agreeing_prefix=agree if has_greedy else None,
        greedy_position_matches=matches if has_greedy else None,
        greedy_total=total if has_greedy else None,
    )


def format_end_to_end(e: dict[str, Any]) -> str:
    """One line for the summary: status first, in capitals when the run diverged."""
    if e["status"] == NOT_MEASURED:
        return "end-to-end: not measured (no uncompressed reference); nothing end to end is bounded"
    head = "DIVERGED" if e["status"] == DIVERGED else "close"
    greedy = ""
    if e["greedy_total"]:
        greedy = (f", greedy tokens agreeing {e['greedy_agreeing_prefix']}/{e['greedy_total']} (prefix), "
                  f"{e['greedy_position_matches']}/{e['greedy_total']} (position-wise)")
    return (f"end-to-end: {head}: next-token TV max {e['next_token_tv_max']:.4f} (tolerance {e['tv_tolerance']:g}; "
            f"{e['steps_over_tolerance']}/{e['steps']} steps over), mean {e['next_token_tv_mean']:.4f}; "
            f"KL max {e['next_token_kl_max']:.4f} nats{greedy} (readings; no bound covers them)")


@dataclass(frozen=True)
class RunScope:
    """What a run covered, for the verdict text: the end-to-end readings, whether values were
    compressed, and the memory class of every layer."""

    end_to_end: EndToEnd
    values_compressed: bool | None
    layer_classes: dict[int, str]


def run_scope(run: RunRecord) -> RunScope:
    """The scope of a run record; malformed end-to-end readings raise ``ValueError`` naming the field."""
    classes = {layer.layer: layer.memory_class for layer in run.layers}
    return RunScope(end_to_end(run.requests, run.config.e2e_tv_tolerance), run.config.compress_values, classes)
