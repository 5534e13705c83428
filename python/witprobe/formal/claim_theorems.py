"""Per-run claim theorems: each certified-candidate claim stated as a theorem about real numbers.

A layer claim ``TV(p, p') <= B`` becomes one Coq theorem whose statement *is* the claim, with the
run's measured constants as exact rationals (units of ``2**-48``, rounded outward). The statement
depends on the claim's form and memory class (``s`` exact scores, ``s'`` served, ``n`` keys):

- ``centred``: for all ``n, s, s'`` with ``|s_t - s'_t| <= C`` for ``t < n``, ``TV <= B``;
  for dense KV the banded form: for every query ``q`` and keys ``k, k'`` split into ``nb`` bands
  (widths ``w``), with ``scale * sum_b ||q_b|| ||k_{t,b} - k'_{t,b}|| <= C`` for every key,
  the TV of ``softmax(scale <q, k_t>)`` and ``softmax(scale <q, k'_t>)`` is at most ``B``;
- ``plain``: as centred with the radius ``E = Q * W``; for dense KV from ``scale ||q|| <= Q`` and
  ``sum_b ||k_{t,b} - k'_{t,b}|| <= W``;
- ``eform``: for all ``n > 0``, ``s, s'`` and per-key radii ``c`` with ``|s_t - s'_t| <= c_t`` and
  ``E_{p'}[e^{c}] <= 1 + X``, ``TV <= B``;
- latent (MLA) caches state it on the latent meter's radius ``lradius`` (effective query
  ``u = W_UK^T q_nope`` against the latent residual bands, plus the RoPE bands);
- memory classes with an attention sink (DeepSeek-V4) state the same over keys plus one sink
  column whose logit is identical in both distributions.

What is *measured* (trusted, float64, rounded outward; see ``docs/TRUST_BOUNDARY.md``) and what is
*proved* (the library theorems the proof applies) is recorded per theorem.
"""

from __future__ import annotations

from dataclasses import dataclass

from witprobe.calculus import rounding
from witprobe.calculus.contracts import ChainEvaluation
from witprobe.formal.obligations import check_ident
from witprobe.kinds.registry import KINDS

UNIT_DEN = rounding.UNIT



class ClaimTheoremError(ValueError):
    """A claim cannot be stated as a theorem (unknown form, malformed evaluation)."""


@dataclass(frozen=True)
class Constant:
    """A rational constant of a claim theorem: ``units / 2**48``, with where it comes from."""

    name: str
    units: int
    source: str

    @property
    def coq(self) -> str:
        return f"({int(self.units)} / {UNIT_DEN})"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "units": self.units, "denominator": UNIT_DEN, "source": self.source,
                "decimal_up": rounding.decimal_up(rounding.from_units(self.units), 9)}


@dataclass(frozen=True)
class ClaimTheorem:
    """One per-run theorem: its name, statement, proof script and trust record.

    ``shape``: ``banded`` (dense KV, hypothesis on query and key-residual band norms), ``latent``
    (MLA, hypothesis on the latent meter's radius), ``sink`` (score level plus a sink column) or
    ``score`` (score level: the measured radius bounds the score error by the memory class's
    bridge, a library theorem the per-run statement does not restate).
    """

    claim_id: str
    theorem: str
    form: str
    shape: str  # "banded", "score" or "sink"
    statement: str
    proof: str
    constants: tuple[Constant, ...]
    measured: tuple[str, ...]
    proved_by: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "theorem": self.theorem,
            "form": self.form,
            "shape": self.shape,
            "statement": self.statement,
            "constants": [c.to_json() for c in self.constants],
            "measured": list(self.measured),
            "proved_by": list(self.proved_by),
        }


def theorem_name(claim_id: str) -> str:
    """``L03.attn_tv`` -> ``L03_attn_tv`` (validated identifier)."""
    return check_ident(claim_id.replace(".", "_"))


_SCORE_HYP = "(forall t, (t < n)%nat -> Rabs (s t - s' t) <= {c})"
_TV = "tv n (softmax n s) (softmax n s')"
_TV_SINK = "tv (S n) (softmax (S n) (extend s n sigma)) (softmax (S n) (extend s' n sigma))"
_BANDED_BINDERS = ("forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) "
                   "(k k' : nat -> nat -> nat -> R),\n  0 <= scale ->\n  ")
_LATENT_BINDERS = ("forall (n dn nbc nbr : nat) (wc wr : nat -> nat) (scale : R) (W : nat -> nat -> R) "
                   "(qn qr : nat -> R)\n         (c c' kr kr' : nat -> nat -> R),\n  ")
_LATENT_ARGS = "dn nbc nbr wc wr scale W qn qr"
_LATENT_TV = (f"tv n (softmax n (lscores {_LATENT_ARGS} c kr))\n"
              f"     (softmax n (lscores {_LATENT_ARGS} c' kr'))")
_BANDED_TV = ("tv n (softmax n (fun t => scale * bdot nb w q (k t)))\n"
              "     (softmax n (fun t => scale * bdot nb w q (k' t)))")

MEASURED_TEXT = {
    "C": "C: max over query rows and keys of c_t = scale * sum_b ||q_b|| * ||k_{t,b} - k'_{t,b}|| (read.c_max)",
    "Q": "Q: max over query rows of scale * ||q|| (read.q_coef)",
    "W": "W: max over keys of the band witness sum_b ||k_{t,b} - k'_{t,b}|| (read.w_max)",
    "E": "E: the score radius Q * W of the plain chain (from read.q_coef and read.w_max)",
    "X": "X: max over query rows of E_{p'}[e^{c_t}] - 1 (read.eform_excess)",
}


def claim_theorem(claim_id: str, form: str, memory_class: str, ev: ChainEvaluation, q_units: int = 0) -> ClaimTheorem:
    """The theorem of one layer claim, from its chosen form's chain evaluation (units of 2**-48).

    ``q_units`` is the plain chain's score-bridge gain ``Q`` in units (the banded plain form states
    it as a hypothesis on the query).
    """
    name = theorem_name(claim_id)
    stages = ev.stages
    b = Constant("B", ev.bound_units, f"claimed bound of {claim_id} ({form} chain, rounded up)")
    kind = KINDS.get(memory_class)  # the template: banded, latent, sink (read distribution with a sink column)
    shape = kind.theorem_shape if kind is not None and kind.theorem_shape else "score"
    interval = "interval with (i_prec 60)"
    if form == "centred":
        if len(stages) != 3:
            raise ClaimTheoremError(f"{claim_id}: centred chain has {len(stages)} stages, expected 3")
        c = Constant("C", stages[0].e_out, "layer maximum of read.c_max, rounded outward")
        consts = (c, b)
        measured = (MEASURED_TEXT["C"],)
        if shape == "banded":
            stmt = (_BANDED_BINDERS
                    + f"(forall t, (t < n)%nat -> scale * banded_witness nb w q (bdiff (k t) (k' t)) <= {c.coq}) ->\n  "
                    + f"{_BANDED_TV} <= {b.coq}")
            proof = f"apply centred_banded_claim; [lra | unfold tanh; {interval}]."
            proved = ("Witprobe.ClaimsBanded.centred_banded_claim", "Witprobe.ScoreBridge.score_bridge_banded",
                      "Witprobe.SoftmaxTV.tv_le_tanh_radius")
        elif shape == "latent":
            stmt = (_LATENT_BINDERS + "0 <= scale ->\n  "
                    + f"(forall t, (t < n)%nat -> lradius {_LATENT_ARGS} c c' kr kr' t <= {c.coq}) ->\n  "
                    + f"{_LATENT_TV} <= {b.coq}")
            proof = f"apply centred_latent_claim; [lra | unfold tanh; {interval}]."
            proved = ("Witprobe.ClaimsLatent.centred_latent_claim", "Witprobe.LatentBridge.latent_score_bridge_banded",
                      "Witprobe.SoftmaxTV.tv_le_tanh_radius")
        elif shape == "sink":
            stmt = (f"forall (n : nat) (s s' : nat -> R) (sigma : R),\n  {_SCORE_HYP.format(c=c.coq)} ->\n  "
                    f"{_TV_SINK} <= {b.coq}")
            proof = f"apply centred_sink_claim; [lra | unfold tanh; {interval}]."
            proved = ("Witprobe.Claims.centred_sink_claim", "Witprobe.SoftmaxTV.tv_sink_le_tanh_radius")
        else:
            stmt = f"forall (n : nat) (s s' : nat -> R),\n  {_SCORE_HYP.format(c=c.coq)} ->\n  {_TV} <= {b.coq}"
            proof = f"apply centred_claim; [lra | unfold tanh; {interval}]."
            proved = ("Witprobe.Claims.centred_claim", "Witprobe.SoftmaxTV.tv_le_tanh_radius")
    elif form == "plain":
        shape = "score" if shape == "latent" else shape
        if len(stages) != 3:
            raise ClaimTheoremError(f"{claim_id}: plain chain has {len(stages)} stages, expected 3")
        e = Constant("E", stages[1].e_out, "score radius of the plain chain (q_coef * w_max, rounded up)")
        measured = (MEASURED_TEXT["Q"], MEASURED_TEXT["W"], MEASURED_TEXT["E"])
        body = f"{_SCORE_HYP.format(c=e.coq)} ->\n  "
        if shape == "banded":
            qc = Constant("Q", q_units, "layer maximum of read.q_coef, rounded outward")
            wc = Constant("W", stages[0].e_out, "layer maximum of read.w_max, rounded outward")
            consts = (qc, wc, b)
            stmt = (_BANDED_BINDERS + f"scale * bnorm nb w q <= {qc.coq} ->\n  "
                    f"(forall t, (t < n)%nat -> sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) <= {wc.coq}) ->\n  "
                    f"{_BANDED_TV} <= {b.coq}")
            proof = f"apply plain_banded_claim; [lra | lra | {interval}]."
            proved = ("Witprobe.ClaimsBanded.plain_banded_claim", "Witprobe.ScoreBridge.score_bridge_plain",
                      "Witprobe.SoftmaxTV.tv_le_plain")
        elif shape == "sink":
            consts = (e, b)
            stmt = f"forall (n : nat) (s s' : nat -> R) (sigma : R),\n  {body}{_TV_SINK} <= {b.coq}"
            proof = f"apply plain_sink_claim; [lra | {interval}]."
            proved = ("Witprobe.Claims.plain_sink_claim", "Witprobe.SoftmaxTV.tv_le_plain",
                      "Witprobe.SoftmaxTV.sink_radius")
        else:
            consts = (e, b)
            stmt = f"forall (n : nat) (s s' : nat -> R),\n  {body}{_TV} <= {b.coq}"
            proof = f"apply plain_claim; [lra | {interval}]."
            proved = ("Witprobe.Claims.plain_claim", "Witprobe.SoftmaxTV.tv_le_plain")
    elif form == "eform":
        if len(stages) != 2:
            raise ClaimTheoremError(f"{claim_id}: e-form chain has {len(stages)} stages, expected 2")
        x = Constant("X", stages[0].e_out, "layer maximum of read.eform_excess, rounded outward")
        consts = (x, b)
        measured = (MEASURED_TEXT["X"],)
        if shape == "banded":
            stmt = ("forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) "
                    "(k k' : nat -> nat -> nat -> R),\n  (0 < n)%nat -> 0 <= scale ->\n  "
                    "emoment n (fun t => scale * bdot nb w q (k' t))\n"
                    "          (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t)))"
                    f" <= 1 + {x.coq} ->\n  {_BANDED_TV} <= {b.coq}")
            proof = "apply eform_banded_claim; lra."
            proved = ("Witprobe.ClaimsBanded.eform_banded_claim", "Witprobe.ScoreBridge.score_bridge_banded",
                      "Witprobe.SoftmaxTV.tv_le_eform")
        elif shape == "latent":
            stmt = (_LATENT_BINDERS + "(0 < n)%nat -> 0 <= scale ->\n  "
                    + f"emoment n (lscores {_LATENT_ARGS} c' kr') (lradius {_LATENT_ARGS} c c' kr kr') <= 1 + {x.coq} ->\n  "
                    + f"{_LATENT_TV} <= {b.coq}")
            proof = "apply eform_latent_claim; lra."
            proved = ("Witprobe.ClaimsLatent.eform_latent_claim", "Witprobe.LatentBridge.latent_score_bridge_banded",
                      "Witprobe.SoftmaxTV.tv_le_eform")
        elif shape == "sink":
            stmt = ("forall (n : nat) (s s' c : nat -> R) (sigma : R),\n  "
                    "(forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) -> 0 <= c n ->\n  "
                    f"emoment (S n) (extend s' n sigma) c <= 1 + {x.coq} ->\n  {_TV_SINK} <= {b.coq}")
            proof = "apply eform_sink_claim; lra."
            proved = ("Witprobe.Claims.eform_sink_claim", "Witprobe.SoftmaxTV.tv_le_eform")
        else:
            stmt = ("forall (n : nat) (s s' c : nat -> R),\n  (0 < n)%nat ->\n  "
                    "(forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) ->\n  "
                    f"emoment n s' c <= 1 + {x.coq} ->\n  {_TV} <= {b.coq}")
            proof = "apply eform_claim; lra."
            proved = ("Witprobe.Claims.eform_claim", "Witprobe.SoftmaxTV.tv_le_eform")
    else:
        raise ClaimTheoremError(f"{claim_id}: no theorem shape for form {form!r}")
    return ClaimTheorem(claim_id, name, form, shape, stmt, proof, consts, measured, proved)
