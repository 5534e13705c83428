"""The read chains of attention memory, per layer: storage witness -> score -> softmax.

Three sound forms of the same claim, ``TV(p, p') <= bound`` between the exact attention
distribution ``p`` and the served one ``p'`` at the same query (paper sections 2.3 and 3.3):

- ``plain``: ``eps = q_coef * max_t W_t``, ``TV <= (e^{2 eps} - 1)/2``;
- ``centred``: ``C = max_t c_t``, osc ``<= 2C``, ``TV <= tanh(C/2)``;
- ``eform``: ``x = max_rows E_{p'}[e^{c}] - 1``, ``TV <= x + x^2/2``.

Each is a typed :class:`~witprobe.calculus.contracts.Chain` from the entry's write metric
(``entry:l2@write`` or ``latent:l2@write``) to ``attn_dist:tv@read``; building one with a wrong
wiring raises :class:`~witprobe.calculus.contracts.MetricMismatch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from witprobe.calculus import bridges
from witprobe.calculus.bridges import DENSE_KV, EntrySpec
from witprobe.calculus.contracts import Chain

FORMS = ("plain", "centred", "eform")


@dataclass(frozen=True)
class ReadMaxima:
    """Per-layer measured maxima that feed the read chains (exact, already rounded outward)."""

    q_coef: Fraction  # gain of the score bridge (scale * max ||q||, or its latent analogue)
    w_max: Fraction  # max_t W_t over the entries read
    c_max: Fraction  # max over rows and keys of c_t
    eform_excess: Fraction  # max over rows of E_p'[e^c] - 1


def plain_chain(inp: ReadMaxima, spec: EntrySpec = DENSE_KV) -> Chain:
    return (
        Chain.start(bridges.storage_contract(inp.w_max, spec))
        .then(bridges.score_bridge(inp.q_coef, spec))
        .then(bridges.softmax_tv())
    )


def centred_chain(inp: ReadMaxima, spec: EntrySpec = DENSE_KV) -> Chain:
    return (
        Chain.start(bridges.banded_score_bridge(inp.q_coef, inp.c_max, spec))
        .then(bridges.osc_bridge())
        .then(bridges.centred_tv())
    )


def eform_chain(inp: ReadMaxima, spec: EntrySpec = DENSE_KV) -> Chain:
    return Chain.start(bridges.eform_moment(inp.eform_excess, spec)).then(bridges.eform_tv())


def read_chain(form: str, inp: ReadMaxima, spec: EntrySpec = DENSE_KV) -> Chain:
    """The chain of one form (``plain``, ``centred`` or ``eform``) for one entry kind."""
    if form == "plain":
        return plain_chain(inp, spec)
    if form == "centred":
        return centred_chain(inp, spec)
    if form == "eform":
        return eform_chain(inp, spec)
    raise ValueError(f"unknown read-chain form {form!r}; expected one of {FORMS}")
