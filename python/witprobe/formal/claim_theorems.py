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
  ``u = W_UK^T q_nope`` against the latent residual bands, plus the RoPE bands), the plain form on
  the meter's query gain ``scale * lqnorm`` and per-key band sums ``lwidth``;
- memory classes with an attention sink (DeepSeek-V4) state the banded (dense KV) forms over the
  keys plus one sink column whose logit ``sigma`` is one binder shared by both distributions
  (``coq/Witprobe/ClaimsSink.v``): the V4 meter witnesses its keys exactly as dense KV.

What is *measured* (trusted, float64, rounded outward; see ``docs/TRUST_BOUNDARY.md``) and what is
*proved* (the library theorems the proof applies) is recorded per theorem.

Each theorem is rendered twice from this one record: in Coq (``statement``, ``proof``; the file
``obligations/run.v``) and in Lean (``lean_statement``, ``lean_proof``; ``obligations/run_real.lean``),
with the same name, the same hypotheses, the same conclusion and the same rational constants. The
Coq proofs close the numeric side condition with ``interval``; the Lean proofs with a rational
upper bound on ``e^t`` (``(N/(N - t))^N``, ``exp_le_expUpper``) and ``norm_num``: for the
centred form with the very ``N = EXP_N`` Python's chain used, so the goal is true by construction
(:func:`lean_side_condition` re-checks every goal in exact arithmetic).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

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
    def value(self) -> Fraction:
        return Fraction(int(self.units), UNIT_DEN)

    @property
    def coq(self) -> str:
        return f"({int(self.units)} / {UNIT_DEN})"

    @property
    def lean(self) -> str:
        return f"(({int(self.units)} : ℝ) / {UNIT_DEN})"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "units": self.units, "denominator": UNIT_DEN, "source": self.source,
                "decimal_up": rounding.decimal_up(rounding.from_units(self.units), 9)}


@dataclass(frozen=True)
class LeanSide:
    """One numeric side condition of a Lean proof, as the exact rational goal ``norm_num`` closes.

    ``kind``: ``tanh`` (``((N/(N-t))^N - 1)/((N/(N-t))^N + 1) <= B`` with ``t = C``), ``plain``
    (``((N/(N-t))^N - 1)/2 <= B`` with ``t = 2E``) or ``eform`` (``X + X^2/2 <= B``, ``n = 0``).
    ``coq_only`` marks a theorem stated in Coq only (eviction and box claims: no Lean proof, so no
    Lean goal; :func:`lean_side_condition` refuses it rather than call it true).
    """

    kind: str
    t: Fraction
    bound: Fraction
    n: int = 0


@dataclass(frozen=True)
class ClaimTheorem:
    """One per-run theorem: its name, statement, proof script and trust record, in Coq and Lean.

    ``shape``: ``banded`` (dense KV, hypothesis on query and key-residual band norms), ``latent``
    (MLA, hypothesis on the latent meter's radius, or for the plain form on its query gain and
    per-key band sums), ``sink`` (DeepSeek-V4: the banded hypotheses over the keys, plus a sink
    column with one shared logit) or ``score`` (score level: the measured radius bounds the score
    error by the memory class's bridge, a library theorem the per-run statement does not restate;
    :func:`claim_theorem` states it only for a memory class without a theorem shape), ``evict`` (dense KV
    under an eviction codec: full vs pruned attention, :func:`evict_theorem`) or ``boxsup``
    (dense KV, the box bound: banded radii and a box certificate, :func:`boxsup_theorem`) or
    ``boxsup_qa`` (dense KV, the box bound over query-aligned or banded radii,
    :func:`boxsup_qa_theorem`).

    A theorem with an empty ``lean_statement`` is stated in Coq only (no Lean library lemma
    states it yet; :attr:`has_lean`): the Lean file leaves it out and its Lean status is unchecked.
    """

    claim_id: str
    theorem: str
    form: str
    shape: str  # "banded", "latent", "score", "sink", "evict", "boxsup", "boxsup_latent" or "boxsup_qa"
    statement: str
    proof: str
    constants: tuple[Constant, ...]
    measured: tuple[str, ...]
    proved_by: tuple[str, ...]
    lean_statement: str
    lean_proof: str
    lean_proved_by: tuple[str, ...]
    lean_side: LeanSide
    definitions: str = ""  # Coq definitions the statement names (a box claim's shipped rows), before it
    realized_units: int | None = None  # the claim's realized value in units of 2**-48, rounded up; None: unknown

    @property
    def has_lean(self) -> bool:
        """Whether the theorem is also stated in Lean (``obligations/run_real.lean``)."""
        return bool(self.lean_statement)

    def to_json(self) -> dict[str, object]:
        return {
            "theorem": self.theorem,
            "form": self.form,
            "shape": self.shape,
            "statement": self.statement,
            "lean_statement": self.lean_statement,
            "lean_proved_by": list(self.lean_proved_by),
            "constants": [c.to_json() for c in self.constants],
            "measured": list(self.measured),
            "proved_by": list(self.proved_by),
        }


def theorem_name(claim_id: str) -> str:
    """``L03.attn_tv`` -> ``L03_attn_tv`` (validated identifier)."""
    return check_ident(claim_id.replace(".", "_"))


# Coq spellings of the statement parts (``run.v``) ...
_SCORE_HYP = "(forall t, (t < n)%nat -> Rabs (s t - s' t) <= {c})"
_TV = "tv n (softmax n s) (softmax n s')"
_BANDED_BINDERS = ("forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) "
                   "(k k' : nat -> nat -> nat -> R),\n  ")
_LATENT_BINDERS = ("forall (n dn nbc nbr : nat) (wc wr : nat -> nat) (scale : R) (W : nat -> nat -> R) "
                   "(qn qr : nat -> R)\n         (c c' kr kr' : nat -> nat -> R),\n  ")
_LATENT_ARGS = "dn nbc nbr wc wr scale W qn qr"
_LATENT_TV = (f"tv n (softmax n (lscores {_LATENT_ARGS} c kr))\n"
              f"     (softmax n (lscores {_LATENT_ARGS} c' kr'))")
_BANDED_TV = ("tv n (softmax n (fun t => scale * bdot nb w q (k t)))\n"
              "     (softmax n (fun t => scale * bdot nb w q (k' t)))")
_BANDED_RADIUS = "scale * banded_witness nb w q (bdiff (k t) (k' t))"
_BANDED_W = "sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b))"
_SINK_BINDERS = ("forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) "
                 "(k k' : nat -> nat -> nat -> R)\n         (sigma : R),\n  ")
_SINK_S = "(fun t => scale * bdot nb w q (k t))"
_SINK_S2 = "(fun t => scale * bdot nb w q (k' t))"
_SINK_TV = (f"tv (S n) (softmax (S n) (extend {_SINK_S} n sigma))\n"
            f"         (softmax (S n) (extend {_SINK_S2} n sigma))")
_SINK_RADIUS = f"(extend (fun t => {_BANDED_RADIUS}) n 0)"
_LATENT_Q = "scale * lqnorm dn nbc nbr wc wr W qn qr"
_LATENT_W = "lwidth nbc nbr wc wr c c' kr kr' t"

# ... and their Lean spellings (``run_real.lean``): the same terms, Lean syntax, continuation
# lines indented for the template's ``theorem NAME :`` at column 0
_L_SCORE_HYP = "(∀ t, t < n → |s t - s' t| ≤ {c})"
_L_TV = "tv n (softmax n s) (softmax n s')"
_L_BANDED_BINDERS = ("∀ (n nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) "
                     "(k k' : ℕ → ℕ → ℕ → ℝ),\n      ")
_L_LATENT_BINDERS = ("∀ (n dn nbc nbr : ℕ) (wc wr : ℕ → ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) "
                     "(qn qr : ℕ → ℝ)\n        (c c' kr kr' : ℕ → ℕ → ℝ),\n      ")
_L_LATENT_TV = (f"tv n (softmax n (lscores {_LATENT_ARGS} c kr))\n"
                f"        (softmax n (lscores {_LATENT_ARGS} c' kr'))")
_L_BANDED_TV = ("tv n (softmax n (fun t => scale * bdot nb w q (k t)))\n"
                "        (softmax n (fun t => scale * bdot nb w q (k' t)))")
_L_SINK_BINDERS = ("∀ (n nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) "
                   "(k k' : ℕ → ℕ → ℕ → ℝ)\n        (sigma : ℝ),\n      ")
_L_SINK_TV = (f"tv (n + 1) (softmax (n + 1) (extend {_SINK_S} n sigma))\n"
              f"        (softmax (n + 1) (extend {_SINK_S2} n sigma))")
_NL = "\n      "  # between the Lean statement's hypotheses

MEASURED_TEXT = {
    "C": "C: max over query rows and keys of c_t = scale * sum_b ||q_b|| * ||k_{t,b} - k'_{t,b}|| (read.c_max)",
    "Q": "Q: max over query rows of scale * ||q|| (read.q_coef)",
    "W": "W: max over keys of the band witness sum_b ||k_{t,b} - k'_{t,b}|| (read.w_max)",
    "E": "E: the score radius Q * W of the plain chain (from read.q_coef and read.w_max)",
    "X": "X: max over query rows of E_{p'}[e^{c_t}] - 1 (read.eform_excess)",
}

# exponents N of the Lean proofs' exp bound (N/(N - t))^N, tried in order (the first is the chain's)
LEAN_EXP_NS = (rounding.EXP_N, 4 * rounding.EXP_N, 16 * rounding.EXP_N)


def exp_upper_exact(n: int, t: Fraction) -> Fraction:
    """``(N/(N - t))^N`` for ``0 <= t < N``: the rational upper bound of ``e^t`` the Lean proofs use
    (``WitprobeAnalytic.exp_le_expUpper``), exact."""
    if not 0 <= t < n:
        raise ClaimTheoremError(f"exp argument {t} outside [0, {n})")
    return (Fraction(n) / (n - t)) ** n


def lean_side_condition(side: LeanSide) -> bool:
    """Whether the numeric goal a Lean proof leaves to ``norm_num`` is true (exact arithmetic).

    A ``coq_only`` side has no Lean goal at all: asking for its truth is an error (nothing was
    decided, so it is not "true").
    """
    if side.kind == "coq_only":
        raise ClaimTheoremError("a Coq-only theorem has no Lean side condition")
    if side.kind == "eform":
        return side.t >= 0 and side.t + side.t * side.t / 2 <= side.bound
    if not (0 <= side.t < side.n):
        return False
    e = exp_upper_exact(side.n, side.t)
    if side.kind == "tanh":
        return (e - 1) / (e + 1) <= side.bound
    if side.kind == "plain":
        return (e - 1) / 2 <= side.bound
    raise ClaimTheoremError(f"unknown side condition kind {side.kind!r}")


def _exp_side(kind: str, t: Fraction, bound: Fraction) -> LeanSide:
    """The side condition with the first ``N`` of :data:`LEAN_EXP_NS` that makes it true (the
    first one if none does: the Lean kernel then rejects the proof, fail closed)."""
    for n in LEAN_EXP_NS:
        side = LeanSide(kind, t, bound, n)
        if t < n and lean_side_condition(side):
            return side
    return LeanSide(kind, t, bound, LEAN_EXP_NS[0])


def _lean_tanh(c: Constant, b: Constant, n: int) -> str:
    """Proof of ``tanh (C/2) <= B`` (``TanhBound.tanh_half_le_of_expUpper``)."""
    return (f"(tanh_half_le_of_expUpper {n} (by norm_num) {c.lean} {b.lean}\n"
            "      (by norm_num) (by norm_num) (by norm_num))")


def _lean_plain(e: str, b: Constant, n: int) -> str:
    """Proof of ``2⁻¹ * (exp (2 * E) - 1) <= B`` (``TanhBound.plain_half_le_of_expUpper``)."""
    return (f"(plain_half_le_of_expUpper {n} (by norm_num) {e} {b.lean}\n"
            "      (by norm_num) (by norm_num) (by norm_num))")


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
        side = _exp_side("tanh", c.value, b.value)
        if shape == "banded":
            stmt = (_BANDED_BINDERS + "0 <= scale ->\n  "
                    + f"(forall t, (t < n)%nat -> {_BANDED_RADIUS} <= {c.coq}) ->\n  "
                    + f"{_BANDED_TV} <= {b.coq}")
            lstmt = (_L_BANDED_BINDERS + f"0 ≤ scale →{_NL}"
                     + f"(∀ t, t < n → {_BANDED_RADIUS} ≤ {c.lean}) →{_NL}"
                     + f"{_L_BANDED_TV} ≤ {b.lean}")
            lemma, proved = "centred_banded_claim", (
                "Witprobe.ClaimsBanded.centred_banded_claim", "Witprobe.ScoreBridge.score_bridge_banded",
                "Witprobe.SoftmaxTV.tv_le_tanh_radius")
        elif shape == "latent":
            stmt = (_LATENT_BINDERS + "0 <= scale ->\n  "
                    + f"(forall t, (t < n)%nat -> lradius {_LATENT_ARGS} c c' kr kr' t <= {c.coq}) ->\n  "
                    + f"{_LATENT_TV} <= {b.coq}")
            lstmt = (_L_LATENT_BINDERS + f"0 ≤ scale →{_NL}"
                     + f"(∀ t, t < n → lradius {_LATENT_ARGS} c c' kr kr' t ≤ {c.lean}) →{_NL}"
                     + f"{_L_LATENT_TV} ≤ {b.lean}")
            lemma, proved = "centred_latent_claim", (
                "Witprobe.ClaimsLatent.centred_latent_claim", "Witprobe.LatentBridge.latent_score_bridge_banded",
                "Witprobe.SoftmaxTV.tv_le_tanh_radius")
        elif shape == "sink":
            stmt = (_SINK_BINDERS + "0 <= scale ->\n  "
                    + f"(forall t, (t < n)%nat -> {_BANDED_RADIUS} <= {c.coq}) ->\n  "
                    + f"{_SINK_TV} <= {b.coq}")
            lstmt = (_L_SINK_BINDERS + f"0 ≤ scale →{_NL}"
                     + f"(∀ t, t < n → {_BANDED_RADIUS} ≤ {c.lean}) →{_NL}"
                     + f"{_L_SINK_TV} ≤ {b.lean}")
            lemma, proved = "centred_sink_banded_claim", (
                "Witprobe.ClaimsSink.centred_sink_banded_claim", "Witprobe.ScoreBridge.score_bridge_banded",
                "Witprobe.SoftmaxTV.tv_sink_le_tanh_radius")
        else:
            stmt = f"forall (n : nat) (s s' : nat -> R),\n  {_SCORE_HYP.format(c=c.coq)} ->\n  {_TV} <= {b.coq}"
            lstmt = (f"∀ (n : ℕ) (s s' : ℕ → ℝ),{_NL}{_L_SCORE_HYP.format(c=c.lean)} →{_NL}"
                     f"{_L_TV} ≤ {b.lean}")
            lemma, proved = "centred_claim", ("Witprobe.Claims.centred_claim", "Witprobe.SoftmaxTV.tv_le_tanh_radius")
        proof = f"apply {lemma}; [lra | unfold tanh; {interval}]."
        lproof = f"{lemma} {c.lean} {b.lean} (by norm_num)\n    {_lean_tanh(c, b, side.n)}"
        lproved = (f"WitprobeAnalytic.{lemma}", "WitprobeAnalytic.tanh_half_le_of_expUpper")
    elif form == "plain":
        if len(stages) != 3:
            raise ClaimTheoremError(f"{claim_id}: plain chain has {len(stages)} stages, expected 3")
        e = Constant("E", stages[1].e_out, "score radius of the plain chain (q_coef * w_max, rounded up)")
        measured = (MEASURED_TEXT["Q"], MEASURED_TEXT["W"], MEASURED_TEXT["E"])
        body = f"{_SCORE_HYP.format(c=e.coq)} ->\n  "
        lbody = f"{_L_SCORE_HYP.format(c=e.lean)} →{_NL}"
        lproved = ("WitprobeAnalytic.plain_half_le_of_expUpper",)
        if shape in ("banded", "sink", "latent"):  # stated on the meter's Q (query gain) and W (per-key band sums)
            qc = Constant("Q", q_units, "layer maximum of read.q_coef, rounded outward")
            wc = Constant("W", stages[0].e_out, "layer maximum of read.w_max, rounded outward")
            consts = (qc, wc, b)
            side = _exp_side("plain", 2 * qc.value * wc.value, b.value)
            if shape == "latent":
                stmt = (_LATENT_BINDERS + "0 <= scale ->\n  " + f"{_LATENT_Q} <= {qc.coq} ->\n  "
                        f"(forall t, (t < n)%nat -> {_LATENT_W} <= {wc.coq}) ->\n  "
                        f"{_LATENT_TV} <= {b.coq}")
                lstmt = (_L_LATENT_BINDERS + f"0 ≤ scale →{_NL}" + f"{_LATENT_Q} ≤ {qc.lean} →{_NL}"
                         f"(∀ t, t < n → {_LATENT_W} ≤ {wc.lean}) →{_NL}"
                         f"{_L_LATENT_TV} ≤ {b.lean}")
                lemma, proved = "plain_latent_claim", (
                    "Witprobe.ClaimsLatent.plain_latent_claim", "Witprobe.LatentBridge.latent_score_bridge_plain",
                    "Witprobe.SoftmaxTV.tv_le_plain")
            else:
                binders, tv, lbinders, ltv = ((_BANDED_BINDERS, _BANDED_TV, _L_BANDED_BINDERS, _L_BANDED_TV)
                                              if shape == "banded" else
                                              (_SINK_BINDERS, _SINK_TV, _L_SINK_BINDERS, _L_SINK_TV))
                stmt = (binders + "0 <= scale ->\n  " + f"scale * bnorm nb w q <= {qc.coq} ->\n  "
                        f"(forall t, (t < n)%nat -> {_BANDED_W} <= {wc.coq}) ->\n  "
                        f"{tv} <= {b.coq}")
                lstmt = (lbinders + f"0 ≤ scale →{_NL}" + f"scale * bnorm nb w q ≤ {qc.lean} →{_NL}"
                         f"(∀ t, t < n → {_BANDED_W} ≤ {wc.lean}) →{_NL}"
                         f"{ltv} ≤ {b.lean}")
                if shape == "banded":
                    lemma, proved = "plain_banded_claim", (
                        "Witprobe.ClaimsBanded.plain_banded_claim", "Witprobe.ScoreBridge.score_bridge_plain",
                        "Witprobe.SoftmaxTV.tv_le_plain")
                else:
                    lemma, proved = "plain_sink_banded_claim", (
                        "Witprobe.ClaimsSink.plain_sink_banded_claim", "Witprobe.ScoreBridge.score_bridge_plain",
                        "Witprobe.SoftmaxTV.tv_le_plain", "Witprobe.SoftmaxTV.sink_radius")
            proof = f"apply {lemma}; [lra | lra | {interval}]."
            lproof = (f"{lemma} {qc.lean} {wc.lean} {b.lean} (by norm_num) (by norm_num)\n"
                      f"    {_lean_plain(f'({qc.lean} * {wc.lean})', b, side.n)}")
            lproved = (f"WitprobeAnalytic.{lemma}",) + lproved
        else:
            consts = (e, b)
            side = _exp_side("plain", 2 * e.value, b.value)
            stmt = f"forall (n : nat) (s s' : nat -> R),\n  {body}{_TV} <= {b.coq}"
            lstmt = f"∀ (n : ℕ) (s s' : ℕ → ℝ),{_NL}{lbody}{_L_TV} ≤ {b.lean}"
            lemma, proved = "plain_claim", ("Witprobe.Claims.plain_claim", "Witprobe.SoftmaxTV.tv_le_plain")
            proof = f"apply {lemma}; [lra | {interval}]."
            lproof = f"{lemma} {e.lean} {b.lean} (by norm_num)\n    {_lean_plain(e.lean, b, side.n)}"
            lproved = (f"WitprobeAnalytic.{lemma}",) + lproved
    elif form == "eform":
        if len(stages) != 2:
            raise ClaimTheoremError(f"{claim_id}: e-form chain has {len(stages)} stages, expected 2")
        x = Constant("X", stages[0].e_out, "layer maximum of read.eform_excess, rounded outward")
        consts = (x, b)
        measured = (MEASURED_TEXT["X"],)
        side = LeanSide("eform", x.value, b.value)
        if shape == "banded":
            stmt = (_BANDED_BINDERS + "(0 < n)%nat -> 0 <= scale ->\n  "
                    "emoment n (fun t => scale * bdot nb w q (k' t))\n"
                    f"          (fun t => {_BANDED_RADIUS})"
                    f" <= 1 + {x.coq} ->\n  {_BANDED_TV} <= {b.coq}")
            lstmt = (_L_BANDED_BINDERS + f"0 < n → 0 ≤ scale →{_NL}"
                     "emoment n (fun t => scale * bdot nb w q (k' t))\n"
                     f"          (fun t => {_BANDED_RADIUS})"
                     f" ≤ 1 + {x.lean} →{_NL}{_L_BANDED_TV} ≤ {b.lean}")
            lemma, proved = "eform_banded_claim", (
                "Witprobe.ClaimsBanded.eform_banded_claim", "Witprobe.ScoreBridge.score_bridge_banded",
                "Witprobe.SoftmaxTV.tv_le_eform")
        elif shape == "latent":
            stmt = (_LATENT_BINDERS + "(0 < n)%nat -> 0 <= scale ->\n  "
                    + f"emoment n (lscores {_LATENT_ARGS} c' kr') (lradius {_LATENT_ARGS} c c' kr kr') <= 1 + {x.coq} ->\n  "
                    + f"{_LATENT_TV} <= {b.coq}")
            lstmt = (_L_LATENT_BINDERS + f"0 < n → 0 ≤ scale →{_NL}"
                     + f"emoment n (lscores {_LATENT_ARGS} c' kr')\n"
                     f"          (lradius {_LATENT_ARGS} c c' kr kr') ≤ 1 + {x.lean} →{_NL}"
                     + f"{_L_LATENT_TV} ≤ {b.lean}")
            lemma, proved = "eform_latent_claim", (
                "Witprobe.ClaimsLatent.eform_latent_claim", "Witprobe.LatentBridge.latent_score_bridge_banded",
                "Witprobe.SoftmaxTV.tv_le_eform")
        elif shape == "sink":
            moment = f"(extend {_SINK_S2} n sigma)\n          {_SINK_RADIUS}"
            stmt = (_SINK_BINDERS + "0 <= scale ->\n  "
                    f"emoment (S n) {moment} <= 1 + {x.coq} ->\n  {_SINK_TV} <= {b.coq}")
            lstmt = (_L_SINK_BINDERS + f"0 ≤ scale →{_NL}"
                     f"emoment (n + 1) {moment} ≤ 1 + {x.lean} →{_NL}{_L_SINK_TV} ≤ {b.lean}")
            lemma, proved = "eform_sink_banded_claim", (
                "Witprobe.ClaimsSink.eform_sink_banded_claim", "Witprobe.ScoreBridge.score_bridge_banded",
                "Witprobe.SoftmaxTV.sink_radius", "Witprobe.SoftmaxTV.tv_le_eform")
        else:
            stmt = ("forall (n : nat) (s s' c : nat -> R),\n  (0 < n)%nat ->\n  "
                    "(forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) ->\n  "
                    f"emoment n s' c <= 1 + {x.coq} ->\n  {_TV} <= {b.coq}")
            lstmt = (f"∀ (n : ℕ) (s s' c : ℕ → ℝ),{_NL}0 < n →{_NL}"
                     f"(∀ t, t < n → |s t - s' t| ≤ c t) →{_NL}"
                     f"emoment n s' c ≤ 1 + {x.lean} →{_NL}{_L_TV} ≤ {b.lean}")
            lemma, proved = "eform_claim", ("Witprobe.Claims.eform_claim", "Witprobe.SoftmaxTV.tv_le_eform")
        proof = f"apply {lemma}; lra."
        lproof = f"{lemma} {x.lean} {b.lean} (by norm_num) (by norm_num)"
        lproved = (f"WitprobeAnalytic.{lemma}",)
    else:
        raise ClaimTheoremError(f"{claim_id}: no theorem shape for form {form!r}")
    return ClaimTheorem(claim_id, name, form, shape, stmt, proof, consts, measured, proved,
                        lstmt, lproof, lproved, side)


_EVICT_S = "(fun t => scale * bdot nb w q (k t))"
EVICT_MEASURED = ("RHO: max over read rows of sum_{t evicted} e^{U_t} / sum_{t retained} e^{s_t}, "
                  "U_t = scale * sum_b ||q_b|| ||k_{t,b}|| from stored band norms (read.evict_rho)")


def evict_theorem(claim_id: str, rho_units: int, bound_units: int) -> ClaimTheorem:
    """The theorem of an eviction claim (``coq/Witprobe/Eviction.v``, ``evict_banded_claim``).

    For every query ``q`` and keys ``k`` split into ``nb`` bands (widths ``w``), every retained set
    ``inR`` and ``scale >= 0``: if ``sum_{not R} e^{scale sum_b ||q_b|| ||k_{t,b}||} <= RHO *
    sum_R e^{scale <q, k_t>}`` then ``TV(softmax(scale <q, k_t>), pruned) <= B``, where ``pruned``
    is the softmax over the retained keys only. Constants in units of ``2**-48``; the proof closes
    ``RHO <= B (1 + RHO)`` with ``lra``. Stated in Coq only (``lean_statement`` empty).
    """
    name = theorem_name(claim_id)
    rho = Constant("RHO", rho_units, "layer maximum of read.evict_rho, rounded outward")
    b = Constant("B", bound_units, f"claimed bound of {claim_id} (RHO / (1 + RHO), rounded up)")
    if not rho.value <= b.value * (1 + rho.value):
        raise ClaimTheoremError(f"{claim_id}: B = {b.value} is below RHO / (1 + RHO) for RHO = {rho.value}")
    stmt = ("forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) "
            "(k : nat -> nat -> nat -> R) (inR : nat -> bool),\n  0 <= scale ->\n  "
            "zevict n (fun t => scale * banded_witness nb w q (k t)) inR\n"
            f"    <= {rho.coq} * zret n {_EVICT_S} inR ->\n  "
            f"tv n (softmax n {_EVICT_S})\n       (pruned n {_EVICT_S} inR) <= {b.coq}")
    proof = "apply evict_banded_claim; [lra | apply evict_side; lra]."
    proved = ("Witprobe.Eviction.evict_banded_claim", "Witprobe.Eviction.tv_pruned_evicted_mass",
              "Witprobe.Eviction.banded_logit_le", "Witprobe.Selection.tv_restrict")
    return ClaimTheorem(claim_id, name, "evict", "evict", stmt, proof, (rho, b), (EVICT_MEASURED,), proved,
                        "", "", (), LeanSide("coq_only", rho.value, b.value))


BOXSUP_MEASURED = ("rows: per read row not covered by the cap C, its keys pooled into buckets (the heaviest key on "
                   "its own): each bucket's served mass within [lo, hi] (float64 sums of p', widened by the centre's "
                   "relative error and gamma_T) and U >= e^{r_t} for its keys, r_t = c_t (1 + 2^-30) with "
                   "c_t = scale * sum_b ||q_b|| ||k_{t,b} - k'_{t,b}|| (read box_rows); C: the largest c_max of the "
                   "other rows, times 1 + 2^-30 (box_rows.dropped_c_max). The kernel decides B from these: "
                   "check_layer (coq/Witprobe/BoxCheck.v) by vm_compute, tanh(C/2) <= B by interval")
QA_BOXSUP_MEASURED = ("rows and C as for the banded box claim, over the radii r_t = min(c_band_t, c_qa_t) with "
                      "c_qa_t = scale (|<U^T q, a_t>| + ||q - U U^T q|| ||rr_t|| + ||U^T q|| ||U^T rr_t||) from the "
                      "stored query-aligned witness (read box_rows.qa_boxsup); the kernel decides B from them")
BOX_CHECKED_PROOFS = ("Witprobe.BoxCheck.layer_box_certificate", "Witprobe.BoxCheck.row_box_certificate",
                      "Witprobe.BoxSup.tv_le_box", "Witprobe.BoxSup.box_psi_convex_max")

_QA_BINDERS = ("forall (n nb rk : nat) (w : nat -> nat) (U : nat -> nat -> R) (scale : R) (q b : nat -> R)\n"
               "         (k k' a rr : nat -> nat -> R) (r : nat -> R),\n  ")
_QA_DOT = "dot (offset w nb) q"


def _box_rows_name(claim_id: str) -> str:
    return check_ident(theorem_name(claim_id) + "_rows")


def _box_theorem(claim_id: str, form: str, shape: str, stmt_head: str, served: str, tv: str, intro: str,
                 apply_claim: str, b: Constant, cap: Constant, rows_coq: str, measured: str,
                 proved: tuple[str, ...], realized_units: int | None) -> ClaimTheorem:
    """A box claim whose certificate the kernel decides from the layer's shipped rows.

    Statement: ``stmt_head`` (binders and the radius hypotheses), then ``layer_admits rows C n
    (softmax n served) r``, then ``tv <= B``. Proof (one tactic): the library's box claim
    ``apply_claim``, its ``box_certificate`` from ``BoxCheck.layer_box_certificate`` with
    ``check_layer rows B = true`` by ``vm_compute`` and ``tanh(C/2) <= B`` by ``interval``.
    """
    rows = _box_rows_name(claim_id)
    stmt = f"{stmt_head}layer_admits {rows} {cap.coq} n (softmax n {served}) r ->\n  {tv} <= {b.coq}"
    proof = (f"intros {intro}; apply ({apply_claim});\n  "
             f"apply (layer_box_certificate {rows} {cap.coq} {int(b.units)}%Z {UNIT_DEN}%Z);\n  "
             "[vm_compute; reflexivity | unfold tanh; interval with (i_prec 60) | "
             "intros t; left; apply softmax_pos; assumption | assumption].")
    return ClaimTheorem(claim_id, theorem_name(claim_id), form, shape, stmt, proof, (b, cap), (measured,),
                        proved + BOX_CHECKED_PROOFS, "", "", (), LeanSide("coq_only", Fraction(0), b.value),
                        f"Definition {rows} : list row :=\n  {rows_coq}.", realized_units)


def _box_constants(claim_id: str, bound_units: int, cap_units: int) -> tuple[Constant, Constant]:
    return (Constant("B", bound_units, f"claimed bound of {claim_id} (the layer's box bound, rounded up)"),
            Constant("C", cap_units, f"cap of the rows {claim_id} does not ship (largest dropped c_max, rounded up)"))


def boxsup_qa_theorem(claim_id: str, bound_units: int, rows_coq: str, cap_units: int,
                      realized_units: int | None = None) -> ClaimTheorem:
    """The box claim over query-aligned radii (dense KV, ``BoxQueryAligned.box_qa_or_banded_claim``).

    For every query ``q``, exact and served keys ``k``, ``k'`` of width ``offset w nb``, basis
    ``U``, coefficients ``a`` and remainders ``rr`` with ``k_t - k'_t = U a_t + rr_t``, any ``b``,
    ``scale >= 0`` and radii ``r`` that cover, per key, the query-aligned radius or the banded one:
    if the row is admitted by the layer's data (``layer_admits``) then ``TV <= B``, the kernel
    deciding ``B`` as in :func:`boxsup_theorem`. Stated in Coq only.
    """
    b, cap = _box_constants(claim_id, bound_units, cap_units)
    head = (_QA_BINDERS
            + "(0 < n)%nat ->\n  0 <= scale ->\n  "
            "(forall t, (t < n)%nat -> forall i, (i < offset w nb)%nat ->\n"
            "     k t i - k' t i = matvec rk U (a t) i + rr t i) ->\n  "
            "(forall t, (t < n)%nat ->\n"
            "     scale * qa_radius (offset w nb) rk U q (a t) (rr t) b <= r t\n"
            "     \\/ scale * banded_witness nb w (band_split w q) (bdiff (band_split w (k t)) (band_split w (k' t)))"
            " <= r t) ->\n  ")
    served = f"(fun t => scale * {_QA_DOT} (k' t))"
    tv = f"tv n (softmax n (fun t => scale * {_QA_DOT} (k t)))\n       (softmax n {served})"
    args = "n nb rk w U scale q b k k' a rr r"
    proved = ("Witprobe.BoxQueryAligned.box_qa_or_banded_claim", "Witprobe.QueryAligned.qa_score_bridge",
              "Witprobe.BoxQueryAligned.flat_score_bridge_banded")
    return _box_theorem(claim_id, "qa_boxsup", "boxsup_qa", head, served, tv, f"{args} Hn Hs Hdec Hr Hc",
                        f"box_qa_or_banded_claim _ {args} Hn Hs Hdec Hr", b, cap, rows_coq, QA_BOXSUP_MEASURED,
                        proved, realized_units)


def boxsup_theorem(claim_id: str, bound_units: int, shape: str, rows_coq: str, cap_units: int,
                   realized_units: int | None = None) -> ClaimTheorem:
    """A box-form claim: dense KV (``shape`` ``banded``: ``BoxSup.box_banded_claim``) or a latent
    (MLA) layer (``latent``: ``ClaimsLatent.box_latent_claim``).

    For every query, exact and served keys (banded, or latent plus RoPE), ``scale >= 0`` and radii
    ``r`` above the meter's per-key radius (the banded witness product, or ``lradius``): if the row
    is admitted by the layer's data (``layer_admits rows C``: all its radii at most the cap ``C``,
    or it fits one of the shipped rows, whose buckets bound its served masses and radii) then
    ``TV <= B``. The kernel decides ``B``: the proof computes ``check_layer rows B = true`` by
    ``vm_compute`` (the checker, proved sound once, recomputes each shipped row's box bound with
    directed rounding) and ``tanh(C/2) <= B`` by ``interval``, so lowering ``B`` is rejected. The
    rows are a ``Definition`` before the theorem (:attr:`ClaimTheorem.definitions`). Coq only.
    """
    b, cap = _box_constants(claim_id, bound_units, cap_units)
    if shape == "banded":
        binders, radius = _BANDED_BINDERS, _BANDED_RADIUS
        served, tv = "(fun t => scale * bdot nb w q (k' t))", _BANDED_TV
        args, lemma, module = "n nb w scale q k k' r", "box_banded_claim", "BoxSup"
        bridge, out_shape = "Witprobe.ScoreBridge.score_bridge_banded", "boxsup"
    elif shape == "latent":
        binders, radius = _LATENT_BINDERS, f"lradius {_LATENT_ARGS} c c' kr kr' t"
        served, tv = f"(lscores {_LATENT_ARGS} c' kr')", _LATENT_TV
        args, lemma, module = "n dn nbc nbr wc wr scale W qn qr c c' kr kr' r", "box_latent_claim", "ClaimsLatent"
        bridge, out_shape = "Witprobe.LatentBridge.latent_score_bridge_banded", "boxsup_latent"
    else:
        raise ClaimTheoremError(f"{claim_id}: no box theorem for shape {shape!r}")
    head = (binders.replace(",\n  ", "\n         (r : nat -> R),\n  ")
            + "(0 < n)%nat ->\n  0 <= scale ->\n  "
            f"(forall t, (t < n)%nat -> {radius} <= r t) ->\n  ")
    return _box_theorem(claim_id, "boxsup", out_shape, head, served, tv, f"{args} Hn Hs Hr Hc",
                        f"{lemma} _ {args} Hn Hs Hr", b, cap, rows_coq, BOXSUP_MEASURED,
                        (f"Witprobe.{module}.{lemma}", bridge), realized_units)


def guard_units(th: ClaimTheorem) -> int:
    """The bound the mutation guard tries: ``max(realized, B/2)`` in units of ``2**-48`` (``B/2``
    when the realized value is unknown); refuses when that is not below ``B``."""
    b = next(c for c in th.constants if c.name == "B")
    half = int(b.units) // 2
    units = half if th.realized_units is None else max(int(th.realized_units), half)
    if units >= int(b.units):
        raise ClaimTheoremError(f"{th.claim_id}: the realized value is within one unit of B, "
                                "so B cannot be lowered below it")
    return units


def lowered_theorem(th: ClaimTheorem, units: int) -> ClaimTheorem:
    """``th`` with its bound ``B`` lowered to ``units`` (statement, proof script and constants),
    for the mutation guard; the proof script is kept as it is, so that it must fail."""
    b = next(c for c in th.constants if c.name == "B")
    old, new = b.coq, f"({units} / {UNIT_DEN})"
    if any(c.coq == old for c in th.constants if c is not b):
        raise ClaimTheoremError(f"{th.claim_id}: B's literal {old} is shared with another constant")
    stmt = th.statement.replace(old, new)
    if stmt == th.statement:
        raise ClaimTheoremError(f"{th.claim_id}: the statement does not contain B's literal {old}")
    proof = th.proof.replace(old, new).replace(f"{int(b.units)}%Z {UNIT_DEN}%Z", f"{units}%Z {UNIT_DEN}%Z")
    consts = tuple(dataclasses.replace(c, units=units) if c is b else c for c in th.constants)
    return dataclasses.replace(th, statement=stmt, proof=proof, constants=consts)
