"""The catalogue of proved bridges, one constructor each, with the Lean theorem it cites.

Affine bridges are :class:`~witprobe.calculus.contracts.Contract` values with ``is_bridge=True``;
the softmax bridges are monotone :class:`~witprobe.calculus.contracts.Transfer` stages.
Theorem names prefixed ``Witprobe.`` live in the core library (``Witprobe/``), those prefixed
``WitprobeAnalytic.`` in the optional Mathlib package (``analytic/``); a test checks that every
name cited here is declared in one of them.

The storage and score bridges depend on the memory class: a dense KV entry's residual reaches the
logits through the query (``scale * ||q||``), a latent residual through the effective query
``u = W_UK^T q_nope`` (and the rope key through ``q_pe``). They are different metrics
(``entry:l2`` versus ``latent:l2``), so a latent storage bound cannot be fed to the dense score
bridge: that composition raises :class:`~witprobe.calculus.contracts.MetricMismatch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from witprobe.calculus.contracts import Contract, Transfer, TransferKind, bridge
from witprobe.calculus.metrics import Metric

SCORE_LINF = Metric("score", "linf", "read")
SCORE_OSC = Metric("score", "osc", "read")
SCORE_EFORM = Metric("score", "eform_excess", "read")
ATTN_TV = Metric("attn_dist", "tv", "read")
SELECTOR_TV = Metric("selector_dist", "tv", "select")
OSC_PROOF = "Witprobe.osc_le_two_linf"
SELECTION_PROOF = "Witprobe.selectionContract_holds"


@dataclass(frozen=True)
class EntrySpec:
    """Metrics and theorems of one stored-entry kind (dense KV entry or MLA latent)."""

    name: str
    write: Metric
    read: Metric
    storage_proof: str
    score_proof: str
    banded_proof: str


DENSE_KV = EntrySpec(
    name="dense_kv",
    write=Metric("entry", "l2", "write"),
    read=Metric("entry", "l2", "read"),
    storage_proof="WitprobeAnalytic.band_witness_ge_residual",
    score_proof="WitprobeAnalytic.score_bridge",
    banded_proof="WitprobeAnalytic.score_bridge_banded",
)

LATENT = EntrySpec(
    name="latent",
    write=Metric("latent", "l2", "write"),
    read=Metric("latent", "l2", "read"),
    storage_proof="WitprobeAnalytic.band_witness_ge_residual",
    score_proof="WitprobeAnalytic.latent_score_bridge",
    banded_proof="WitprobeAnalytic.latent_score_bridge_banded",
)

ENTRY_SPECS = {s.name: s for s in (DENSE_KV, LATENT)}


def storage_contract(w_max: Fraction, spec: EntrySpec = DENSE_KV) -> Contract:
    """Update stage ``(1, W)``: ``||x_read - x|| <= e_in + W`` with ``W = max_t sum_b ||Delta_{t,b}||``.

    ``e_in`` is the error the entry already carried when written (0 for the model's own values).
    For a latent entry, ``W`` sums the latent and rope-key witnesses.
    """
    return Contract(name="store", m_in=spec.write, m_out=spec.read, a=Fraction(1), b=w_max,
                    proofs=(spec.storage_proof,))


def score_bridge(q_coef: Fraction, spec: EntrySpec = DENSE_KV) -> Contract:
    """Score bridge ``|Delta s| <= q_coef * ||Delta entry||`` (Cauchy-Schwarz).

    Dense KV: ``q_coef = scale * max ||q||``. Latent: ``q_coef = scale * max(||u||, ||q_pe||)``.
    """
    return bridge("score_bridge", spec.read, SCORE_LINF, q_coef, 0, spec.score_proof)


def banded_score_bridge(q_coef: Fraction, c_max: Fraction, spec: EntrySpec = DENSE_KV) -> Contract:
    """Per-key, per-band score bridge fused with storage: ``(q_coef, C)``.

    ``|Delta s_t| <= q_coef * e_in + c_t`` with ``c_t = scale * sum_b ||q_b|| * ||Delta k_{t,b}||``
    (per component for a latent), and ``C = max`` of ``c_t`` over the rows and keys of the layer.
    """
    return bridge("banded_score_bridge", spec.write, SCORE_LINF, q_coef, c_max, spec.banded_proof)


def osc_bridge() -> Contract:
    """``max_t d_t - min_t d_t <= 2 * max_t |d_t|``: gain 2, no offset."""
    return bridge("osc_bridge", SCORE_LINF, SCORE_OSC, 2, 0, OSC_PROOF)


def eform_moment(excess_max: Fraction, spec: EntrySpec = DENSE_KV) -> Contract:
    """Source stage of the e-form: ``E_{p'}[e^{c}] - 1 <= x`` at the exact input.

    The moment is taken under the served distribution ``p'``; it has no sound gain for upstream
    error, so the stage is ``source_only``.
    """
    return bridge("eform_moment", spec.write, SCORE_EFORM, 0, excess_max, spec.banded_proof, source_only=True)


def selection_contract(b_s: Fraction) -> Contract:
    """Selection lemma as an additive contract ``(1, (m_out + m_in)/2)`` in selector-score mass.

    Selection does not amplify upstream error (gain 1); ``b_s`` is the witness bound of the
    swapped selector mass (0 on rows whose top-k set is provably unchanged).
    """
    return Contract(name="selection", m_in=SELECTOR_TV, m_out=SELECTOR_TV, a=Fraction(1), b=b_s,
                    proofs=(SELECTION_PROOF,))


def selector_to_attention(rho: Fraction, *, measured_on: str, applied_to: str) -> Contract:
    """The selector-to-attention step: a paired measurement ``rho``, tier empirical (no theorem)."""
    from witprobe.calculus.contracts import empirical_bridge

    return empirical_bridge("selector_to_attention", SELECTOR_TV, ATTN_TV, rho, 0,
                            measured_on=measured_on, applied_to=applied_to)


def softmax_tv() -> Transfer:
    """``TV <= (e^{2 eps} - 1)/2`` from a uniform score error ``eps``."""
    return Transfer(TransferKind.SOFTMAX_TV)


def centred_tv() -> Transfer:
    """``TV <= tanh(osc/4)`` from the oscillation of the score error."""
    return Transfer(TransferKind.CENTRED_TV)


def eform_tv() -> Transfer:
    """``TV <= ((1 + x)^2 - 1)/2`` from the e-form excess ``x``."""
    return Transfer(TransferKind.EFORM_TV)


def cited_proofs() -> tuple[str, ...]:
    """Every theorem name this catalogue cites (for the Lean cross-check test)."""
    names: list[str] = [OSC_PROOF, SELECTION_PROOF]
    for spec in ENTRY_SPECS.values():
        names.extend([spec.storage_proof, spec.score_proof, spec.banded_proof])
    for kind in TransferKind:
        names.extend(kind.proofs)
    return tuple(dict.fromkeys(names))
