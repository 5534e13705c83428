"""The certificate record (``certificate.json``, schema ``witprobe-certificate/4``): typed, with a JSON Schema.

:func:`witprobe.certify.certificate.assemble` builds the certificate and checks it against these
types before it is written (:func:`parse_certificate`); ``certify check``, ``show`` and ``report``
read it through the same function, so a certificate whose fields are missing, unknown or of the
wrong type is refused with the JSON path of the problem. The JSON Schema
(``docs/schema/certificate.schema.json``, ``python -m witprobe.certify schema --certificate``) is
generated from the types; its SHA-256 is pinned per version (``SCHEMA_FINGERPRINTS``) like the
run record's.

A claim's ``extra`` has the type of its ``kind`` (:data:`EXTRA_TYPES`): the attention-TV claim
has none; the eviction, output, selection, pooling and recurrent claims carry their readings. All
numbers here are either exact (``{"exact": "p/q", "decimal_up": ...}``, :class:`ExactBound`),
counts, or float64 readings; a reading never poses as a bound.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from witprobe.certify.end_to_end import EndToEnd
from witprobe.certify.run_record import Reading
from witprobe.cliutil import InputError, read_json_object
from witprobe.typed_json import RecordError, decode, encode, field_doc, json_schema

CERT_SCHEMA = "witprobe-certificate/4"
CERT_SCHEMA_ID = "https://witprobe.dev/schema/certificate.schema.json"
SCHEMA_FINGERPRINTS = {CERT_SCHEMA: "6b6288b5afb5087f5661f3d5e25909df477b990434e42a3aebb4a1605335718b"}


def _f(doc: str, **kw: Any) -> Any:
    return field(metadata=field_doc(doc, **kw))


@dataclass(frozen=True)
class ExactBound:
    """An exact rational bound and its decimal rounded up (never below the bound)."""

    exact: str = _f("the exact rational, p/q")
    decimal_up: str = _f("6 decimal places, rounded up")


@dataclass(frozen=True)
class MutationGuard:
    """The mutation guard of a kernel-checked theorem: the same statement and proof with ``B``
    lowered to ``max(realized, B/2)`` (``B/2`` when the realized value is unknown) must be rejected."""

    status: str = _f("rejected (the kernel decides B: good), accepted (the theorem holds for a lower B: it "
                     "certifies nothing), error (the guard could not run), or not_run")
    lowered: ExactBound | None = _f("the lowered bound that was tried (null: not run)")
    reason: str = _f("why, when not rejected")


@dataclass(frozen=True)
class CoqClaimStatus:
    """What Coq said about the claim's theorem."""

    status: str = _f("kernel_checked, lemma_checked (accepted, but also at a lower bound), rejected, unchecked or none")
    theorem: str | None = _f("fully qualified theorem name (null: no theorem states the claim)")
    reason: str = _f("why, when not kernel_checked")
    guard: MutationGuard = _f("the mutation guard's outcome")


@dataclass(frozen=True)
class LeanClaimStatus:
    """What Lean said about the claim's theorem."""

    status: str = _f("kernel_checked, failed, unchecked or none")
    theorem: str | None = _f("fully qualified theorem name (null: no theorem states the claim)")
    reason: str = _f("why, when not kernel_checked")
    axioms: list[str] = _f("#print axioms of the theorem, when checked")


@dataclass(frozen=True)
class ArithmeticStatus:
    """The claim's arithmetic obligations in obligations/run.lean (never a certificate by themselves)."""

    status: str = _f("arithmetic_checked, unchecked, failed or none")
    reason: str = _f("why, when not arithmetic_checked")
    obligations: list[str] = _f("obligation identifiers")


@dataclass(frozen=True)
class ClaimKernels:
    """The proof kernels' verdicts on one claim."""

    coq: CoqClaimStatus = _f("Coq")
    lean: LeanClaimStatus = _f("Lean")
    lean_arithmetic: ArithmeticStatus = _f("Lean, arithmetic obligations only")


@dataclass(frozen=True)
class FormRecord:
    """One bound form of a layer (plain, centred, eform, boxsup): its value and how it was checked."""

    bound: ExactBound | None = _f("the layer's bound in this form (null: not computable, see note)")
    vacuous: bool = _f("bound >= 1")
    beaten_by_realized: bool = _f("the realized TV exceeded it (a failure)")
    obligation: str | None = _f("its arithmetic obligation, if any")
    lean_status: str = _f("status of that obligation")
    proofs: list[str] = _f("library theorems the form rests on")
    note: str = _f("why the form cannot be claimed, if it cannot")


@dataclass(frozen=True)
class TheoremConstant:
    """A measured constant in a claim theorem's statement: units / denominator, rounded up."""

    name: str = _f("its name in the statement")
    units: int = _f("numerator", minimum=0)
    denominator: int = _f("denominator (2^48)", minimum=1)
    decimal_up: str = _f("9 decimal places, rounded up")
    source: str = _f("what was measured")


@dataclass(frozen=True)
class TheoremRecord:
    """The per-run theorem whose statement is the claim (obligations/run.v, run_real.lean)."""

    theorem: str = _f("theorem name inside the run's module")
    form: str = _f("the bound form it states")
    shape: str = _f("the statement's shape (banded, latent, boxsup, evict, ...)")
    statement: str = _f("the Coq statement")
    lean_statement: str = _f("the Lean statement ('' when stated in Coq only)")
    lean_proved_by: list[str] = _f("Lean library theorems its proof applies")
    constants: list[TheoremConstant] = _f("the measured constants in the statement (the trust boundary)")
    measured: list[str] = _f("how each constant was measured, and its float64 allowance")
    proved_by: list[str] = _f("Coq library theorems its proof applies")


@dataclass(frozen=True)
class NoExtra:
    """No kind-specific readings (attention-TV claims)."""


@dataclass(frozen=True)
class EvictExtra:
    """Readings of an eviction claim (evict_tv)."""

    rows: int = _f("read rows metered", minimum=0)
    rows_evicting: int = _f("rows with at least one evicted key", minimum=0)
    evicted_keys_max: float | None = _f("most keys evicted in a row")
    evicted_keys_mean: float | None = _f("mean keys evicted per row")
    realized_mean: float | None = _f("mean realized TV(full, pruned)")
    row_bound_mean: float | None = _f("mean per-row bound")
    row_tightness_mean: float | None = _f("mean per-row bound / realized")
    rho: str | None = field(default=None, metadata=field_doc("layer maximum of RHO, rounded up", optional=True))
    reason: str | None = field(default=None, metadata=field_doc("why no bound was formed", optional=True))


@dataclass(frozen=True)
class OutputExtra:
    """Readings of the attention-output claim (attn_out)."""

    rows: int = _f("rows metered", minimum=0)
    tv_bound_used: str = _f("the TV bound B' = min(B, 1) used, decimal rounded up")
    tv_bound_trivial: bool = _f("B' = 1 (the TV claim was vacuous)")
    tv_term: str = _f("2 B' max spread, rounded up")
    value_term: str = _f("max value term, rounded up")
    spread_max: float = _f("max centred spread of the served values")
    realized_err_max: float = _f("max realized ||y - y_hat||")
    realized_err_mean: float | None = _f("mean realized ||y - y_hat||")


@dataclass(frozen=True)
class ProjectedOutputExtra:
    """Readings of the projected attention-output claim (attn_out_proj)."""

    opnorm_upper: str = _f("upper bound on ||W_o||_2, decimal rounded up")
    frobenius_upper: str = _f("upper bound on ||W_o||_F, decimal rounded up")
    tv_bound_used: str = _f("the TV bound B' used")
    tv_bound_trivial: bool = _f("B' = 1")
    tv_term: str = _f("sigma 2 B' max spread_l2, rounded up")
    value_term: str = _f("sigma max value_l2, rounded up")
    realized_err_max: float = _f("max realized ||W_o (Y - Y_hat)||")
    realized_err_mean: float | None = _f("mean realized ||W_o (Y - Y_hat)||")


@dataclass(frozen=True)
class SelectionExtra:
    """Readings of the Select stage of a sparse-attention layer (selection)."""

    rows: int = _f("selector rows", minimum=0)
    rows_trivial: int = _f("rows selecting every candidate", minimum=0)
    certified_rows_share: float | None = _f("share of rows whose top-k the witness certifies unchanged")
    top1_certified_share: float | None = _f("share of rows whose top-1 is certified")
    changed_rows_share: float | None = _f("share of rows whose selection changed")
    eta: dict[str, Reading] = _f("the deterministic-perturbation readings sel_eta*")


@dataclass(frozen=True)
class SelectionTotalExtra:
    """Readings of the composed storage + selection claim (attn_tv_total, empirical)."""

    rho_tail: float = _f("the empirical selector-to-attention bridge, layer maximum")
    rho_mean: float | None = _f("its mean")
    storage_bound: str = _f("the storage TV bound, rounded up")
    selection_term: str = _f("the selection term, rounded up")
    certified_rows_realized_max: float | None = _f("max realized total TV on certified-selection rows")
    empirical_bound_exceeded: bool = _f("the realized total TV exceeded the empirical bound")


@dataclass(frozen=True)
class PoolingProfile:
    """Gate-weight profile of one pooled tensor (readings)."""

    windows: int = _f("pooled windows", minimum=0)
    contract_linf_gain: int = _f("the l-infinity gain (1: convexity)")
    contract_l2_gain_max: float | None = _f("max ||w||_2")
    contract_l2_gain_mean: float | None = _f("mean ||w||_2")
    contract_l2_gain_min: float | None = _f("min ||w||_2")
    top1_norm_mean: float | None = _f("mean largest weight")
    entropy_n_mean: float | None = _f("mean normalized entropy")
    eff_frac_mean: float | None = _f("mean effective fraction")


@dataclass(frozen=True)
class PoolingExtra:
    """Readings of block pooling (pooling): per pooled tensor."""

    entry: PoolingProfile | None = field(default=None, metadata=field_doc("the entries' pooling", optional=True))
    index_entry: PoolingProfile | None = field(default=None, metadata=field_doc("the indexer entries' pooling",
                                                                                optional=True))


@dataclass(frozen=True)
class RecurrentExtra:
    """Contraction profile of a recurrent state (recurrent; observation only)."""

    tokens_x_channels: int = _f("decay values folded", minimum=0)
    mean_log_a: float | None = _f("mean log a_t")
    log_mean_a: float | None = _f("log of the mean a_t")
    mean_a: float | None = _f("mean a_t")
    half_life_from_mean_log_a: float | None = _f("ln 2 / -mean log a_t, steps")
    half_life_from_mean_a: float | None = _f("ln 2 / -log mean a_t, steps")
    near_one_share: float | None = _f("share of a_t near 1")
    a_histogram_edges: list[float] = _f("histogram bin edges of a_t")
    a_histogram: list[float] | None = _f("share of a_t per bin")
    channels: int = _f("channels profiled", minimum=0)
    channels_contracting: int = _f("channels with mean log a_t < 0", minimum=0)
    channel_mean_log_a_min: float | None = _f("smallest per-channel mean log a_t")
    channel_mean_log_a_max: float | None = _f("largest per-channel mean log a_t")
    groenwall_state_error_max: float | None = _f("max Groenwall state-error reading")


def extra_types() -> dict[str, type]:
    """The type of a claim's ``extra`` per claim ``kind``."""
    return {"attn_tv": NoExtra, "evict_tv": EvictExtra, "attn_out": OutputExtra, "attn_out_proj": ProjectedOutputExtra,
            "selection": SelectionExtra, "attn_tv_total": SelectionTotalExtra, "pooling": PoolingExtra,
            "recurrent": RecurrentExtra}


@dataclass(frozen=True)
class ClaimRecord:
    """One claim: a bound in a metric, its tier (machine-decided), and what checked it."""

    id: str = _f("claim id, e.g. L03.attn_tv")
    kind: str = _f("attn_tv, evict_tv, attn_out, attn_out_proj, selection, attn_tv_total, pooling or recurrent")
    layer: int = _f("layer index", minimum=0)
    metric: str = _f("the metric the bound is in (site:unit@stage)")
    form: str | None = _f("the bound form claimed (null: no bound)")
    bound: ExactBound | None = _f("the claimed bound (null: none)")
    vacuous: bool = _f("the bound says nothing (TV >= 1, or none)")
    registered_tier: str = _f("the tier the metric's registry allows")
    tier: str = _f("certified only when a kernel checked the theorem whose statement is the claim; else empirical")
    tier_reason: str = _f("why this tier")
    kernels: ClaimKernels = _f("the proof kernels' verdicts")
    theorem: TheoremRecord | None = _f("the per-run theorem stating the claim (null: none)")
    proofs: list[str] = _f("library theorems the claimed form rests on")
    realized_tv_max: float = _f("largest realized error on the layer (a reading)")
    tightness: float | None = _f("bound / realized (a reading)")
    forms: dict[str, FormRecord] = _f("every form computed for the layer")
    extra: Any = field(metadata=field_doc("kind-specific readings (type by kind)", by=("kind", extra_types)))


@dataclass(frozen=True)
class SelfCheckEntry:
    """One self-check counter's total over the run; nonzero fails the verdict."""

    count: int = _f("total", minimum=0)
    ok: bool = _f("count == 0")
    meaning: str = _f("what a nonzero count means")


@dataclass(frozen=True)
class ObligationEntry:
    """An arithmetic obligation (obligations/run.lean) and Lean's status on it."""

    ident: str = _f("identifier")
    claim_id: str = _f("the claim it belongs to")
    status: str = _f("Lean's status")
    reason: str = _f("why, when not checked")
    axioms: list[str] = _f("#print axioms, when checked")
    obligation: dict[str, Any] = _f("the obligation itself (re-checked by certify check with the reference checker)")


@dataclass(frozen=True)
class CoqRunStatus:
    """The Coq check of the run (obligations/run.v against the library)."""

    mode: str = _f("auto, required or off")
    status: str = _f("checked, unavailable, off, build_failed, ...")
    reason: str = _f("why, when not checked")
    toolchain: str | None = _f("coqc version")
    library_sha256: str | None = _f("SHA-256 of the library sources the check built")
    assumptions: list[str] = _f("Print Assumptions of the checked theorems (within assumptions_allowlist)")


@dataclass(frozen=True)
class LeanRunStatus:
    """A Lean check of the run."""

    mode: str = _f("auto, required or off")
    status: str = _f("checked, unavailable, off, build_failed, ...")
    reason: str = _f("why, when not checked")
    toolchain: str | None = _f("Lean version")


@dataclass(frozen=True)
class RunKernels:
    """The proof kernels' checks of the whole run."""

    coq: CoqRunStatus = _f("Coq on obligations/run.v")
    lean: LeanRunStatus = _f("Lean on obligations/run_real.lean")
    lean_arithmetic: LeanRunStatus = _f("Lean on obligations/run.lean")


@dataclass(frozen=True)
class CoverageRow:
    """Coverage of one memory class: layers observed with every self-check 0, and the headline reading."""

    model: str = _f("model name")
    family: str = _f("architecture family")
    memory_class: str = _f("plain_kv, latent_kv, sparse_selector or recurrent_state")
    layers_covered: int = _f("layers covered", minimum=0)
    layers_total: int = _f("layers of this class", minimum=0)
    headline: dict[str, float | int | None] = _f("the class's headline readings (medians or shares)")


@dataclass(frozen=True)
class BoundedScope:
    """What the run bounded, per claim kind."""

    kind: str = _f("claim kind")
    what: str = _f("in words")
    layers: int = _f("layers with a non-vacuous bound", minimum=0)
    of: int = _f("layers with this claim", minimum=0)
    tiers: dict[str, int] = _f("claims per tier")


@dataclass(frozen=True)
class WorstBound:
    """The largest non-vacuous attention-TV bound."""

    claim: str = _f("claim id")
    bound: ExactBound = _f("its bound")


@dataclass(frozen=True)
class LargestBound:
    """The largest non-vacuous TV bound over every TV claim, with its tier and realized value."""

    claim: str = _f("claim id")
    bound: ExactBound = _f("its bound")
    tier: str = _f("its tier")
    realized_max: float = _f("its realized maximum")


@dataclass(frozen=True)
class LargestRealized:
    """The largest realized TV over every TV claim."""

    claim: str = _f("claim id")
    realized_max: float = _f("the value")


@dataclass(frozen=True)
class CoqSummary:
    """Claim theorems stated and checked by Coq."""

    theorems: int = _f("stated", minimum=0)
    kernel_checked: int = _f("checked", minimum=0)
    rejected: list[str] = _f("rejected theorems")


@dataclass(frozen=True)
class LeanSummary:
    """Claim theorems stated and checked by Lean."""

    theorems: int = _f("stated", minimum=0)
    kernel_checked: int = _f("checked", minimum=0)
    failed: list[str] = _f("failed theorems")


@dataclass(frozen=True)
class Summary:
    """The verdict and its scope."""

    verdict: str = _f("pass or fail")
    headline: str = _f("the printed verdict line")
    layers: int = _f("attention-TV claims", minimum=0)
    non_vacuous_layers: int = _f("of which non-vacuous", minimum=0)
    tiers: dict[str, int] = _f("claims per tier")
    worst_bound: WorstBound | None = _f("largest non-vacuous attention-TV bound")
    coq: CoqSummary = _f("Coq")
    lean: LeanSummary = _f("Lean")
    bounded: list[BoundedScope] = _f("what was bounded")
    not_bounded: list[str] = _f("what was not")
    end_to_end: EndToEnd = _f("end-to-end readings (never bounds)")
    largest_tv_bound: LargestBound | None = _f("largest non-vacuous TV bound over every TV claim")
    largest_realized_tv: LargestRealized | None = _f("largest realized TV over every TV claim")


@dataclass(frozen=True)
class CertificateRecord:
    """A run's certificate: every claim with its machine-decided tier, the kernels' checks, the
    self-checks and the verdict; a deterministic function of run.json and the kernels' outcomes."""

    schema: str = _f("record version")
    run_json_sha256: str = _f("SHA-256 of the run.json it was derived from")
    coq_file: str | None = _f("obligations/run.v, if rendered")
    coq_sha256: str | None = _f("its SHA-256")
    lean_file: str | None = _f("obligations/run_real.lean, if rendered")
    lean_sha256: str | None = _f("its SHA-256")
    obligations_file: str | None = _f("obligations/run.lean, if rendered")
    obligations_sha256: str | None = _f("its SHA-256")
    kernels: RunKernels = _f("the kernels' checks of the run")
    assumptions_allowlist: list[str] = _f("the Coq axioms a checked theorem may rest on")
    obligations: list[ObligationEntry] = _f("arithmetic obligations")
    claims: list[ClaimRecord] = _f("every claim")
    self_checks: dict[str, SelfCheckEntry] = _f("every self-check counter's total")
    failures: list[str] = _f("why the verdict failed (empty on pass)")
    readings: list[dict[str, Any]] = _f("per-layer diagnostic readings (means, maxima, shares; never bounds)")
    coverage: list[CoverageRow] = _f("coverage per memory class")
    summary: Summary = _f("the verdict and its scope")

    def to_json(self) -> dict[str, Any]:
        return encode(self)


def parse_certificate(obj: Any, where: str = "certificate.json") -> CertificateRecord:
    """``obj`` (parsed JSON) as a :class:`CertificateRecord`; :class:`RecordError` naming the path otherwise."""
    if not isinstance(obj, dict):
        raise RecordError(f"{where}: expected an object, got {type(obj).__name__}")
    if obj.get("schema") != CERT_SCHEMA:
        raise RecordError(f"{where}.schema: {obj.get('schema')!r} is not {CERT_SCHEMA!r}")
    return decode(CertificateRecord, obj, where)


OLD_SCHEMA_HINTS = {
    "witprobe-certificate/1": " (schema /1 predates claim theorems checked by a kernel: re-run `certify run`)",
    "witprobe-certificate/2": " (schema /2 predates the per-run Lean claim theorems run_real.lean: re-run `certify run`)",
    "witprobe-certificate/3": " (schema /3 predates kernel-decided box bounds and the mutation guard: re-run `certify run`)",
}


def load_certificate(path: Path) -> dict[str, Any]:
    """Read ``path`` and check it against the certificate types; the parsed JSON object.

    :class:`witprobe.cliutil.InputError` (exit 2, one line) names the file and what is wrong: not
    JSON, a foreign or older schema (with what to do), or the JSON path of a malformed field."""
    cert = read_json_object(path)
    if cert.get("schema") != CERT_SCHEMA:
        schema = cert.get("schema")
        raise InputError(path, "schema", f"{schema!r} is not {CERT_SCHEMA!r}{OLD_SCHEMA_HINTS.get(schema, '')}")
    try:
        parse_certificate(cert)
    except RecordError as e:
        raise InputError(path, "", str(e)) from None
    return cert


def certificate_schema() -> dict[str, Any]:
    """The JSON Schema of ``certificate.json``, generated from :class:`CertificateRecord`."""
    return json_schema(CertificateRecord, CERT_SCHEMA_ID, f"witprobe certificate ({CERT_SCHEMA})",
                       const={"schema": CERT_SCHEMA})


def schema_text() -> str:
    """``certificate_schema()`` as committed in ``docs/schema/certificate.schema.json``."""
    return json.dumps(certificate_schema(), sort_keys=True, indent=1, ensure_ascii=True) + "\n"


def schema_fingerprint() -> str:
    return hashlib.sha256(schema_text().encode("utf-8")).hexdigest()
