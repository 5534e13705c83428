"""The catalogue of proved bridges, one constructor each, with the Lean theorem it cites.

Affine bridges are :class:`~witprobe.calculus.contracts.Contract` values with ``is_bridge=True``;
the softmax bridges are monotone :class:`~witprobe.calculus.contracts.Transfer` stages.
Theorem names prefixed ``Witprobe.`` live in the core library (``Witprobe/``), those prefixed
``WitprobeAnalytic.`` in the optional Mathlib package (``analytic/``); a test checks that every
name cited here is declared in one of them.
"""

from __future__ import annotations

from fractions import Fraction

from witprobe.calculus.contracts import Contract, Transfer, TransferKind, bridge
from witprobe.calculus.metrics import Metric

ENTRY_WRITE = Metric("entry", "l2", "write")
ENTRY_READ = Metric("entry", "l2", "read")
SCORE_LINF = Metric("score", "linf", "read")
SCORE_OSC = Metric("score", "osc", "read")
SCORE_EFORM = Metric("score", "eform_excess", "read")
ATTN_TV = Metric("attn_dist", "tv", "read")

STORAGE_PROOF = "WitprobeAnalytic.band_witness_ge_residual"
SCORE_PROOF = "WitprobeAnalytic.score_bridge"
BANDED_SCORE_PROOF = "WitprobeAnalytic.score_bridge_banded"
OSC_PROOF = "Witprobe.osc_le_two_linf"


def storage_contract(w_max: Fraction) -> Contract:
    """Update stage ``(1, W)``: ``||x_read - x|| <= e_in + W`` with ``W = max_t sum_b ||Delta_{t,b}||``.

    ``e_in`` is the error the entry already carried when written (0 for the model's own values).
    """
    return Contract(
        name="store", m_in=ENTRY_WRITE, m_out=ENTRY_READ, a=Fraction(1), b=w_max,
        proofs=(STORAGE_PROOF,),
    )


def score_bridge(q_coef: Fraction) -> Contract:
    """Score bridge ``|scale<q,k> - scale<q,k'>| <= scale*||q||*||k - k'||`` (Cauchy-Schwarz).

    ``q_coef`` is ``scale * max ||q||`` over the query rows of the layer.
    """
    return bridge("score_bridge", ENTRY_READ, SCORE_LINF, q_coef, 0, SCORE_PROOF)


def banded_score_bridge(q_coef: Fraction, c_max: Fraction) -> Contract:
    """Per-key, per-band score bridge fused with storage: ``(scale*||q||, C)``.

    ``|Delta s_t| <= scale*||q||*e_in + c_t`` with ``c_t = scale * sum_b ||q_b|| * ||Delta k_{t,b}||``
    (Cauchy-Schwarz on each band, then the triangle inequality), and ``C = max`` of ``c_t`` over
    the rows and keys of the layer.
    """
    return bridge("banded_score_bridge", ENTRY_WRITE, SCORE_LINF, q_coef, c_max, BANDED_SCORE_PROOF)


def osc_bridge() -> Contract:
    """``max_t d_t - min_t d_t <= 2 * max_t |d_t|``: gain 2, no offset."""
    return bridge("osc_bridge", SCORE_LINF, SCORE_OSC, 2, 0, OSC_PROOF)


def eform_moment(excess_max: Fraction) -> Contract:
    """Source stage of the e-form: ``E_{p'}[e^{c}] - 1 <= x`` at the exact input.

    The moment is taken under the served distribution ``p'``; it has no sound gain for upstream
    error, so the stage is ``source_only``.
    """
    return bridge(
        "eform_moment", ENTRY_WRITE, SCORE_EFORM, 0, excess_max, BANDED_SCORE_PROOF, source_only=True
    )


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
    names: list[str] = [STORAGE_PROOF, SCORE_PROOF, BANDED_SCORE_PROOF, OSC_PROOF]
    for kind in TransferKind:
        names.extend(kind.proofs)
    return tuple(dict.fromkeys(names))
