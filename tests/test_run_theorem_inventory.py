"""The per-run Coq and Lean claim theorems correspond one to one.

``obligations/run.v`` (Coq, kernel-checked here) and ``obligations/run_real.lean`` (Lean, never
compiled) are rendered from the same records. This test parses both *rendered files*, reduces
each statement to one syntax (Coq ``Rabs (x)`` / Lean ``|x|``, ``(t < n)%nat`` / ``t < n``,
``S n`` / ``n + 1``, ``->`` / ``→``, ``\\/`` / ``∨``, ``<=`` / ``≤``, ``nat``/``R`` / ``ℕ``/``ℝ``, ``(u / D)`` /
``((u : ℝ) / D)``, Lean ``∑ i ∈ Finset.range n, f`` / ``sum n (fun i => f)``), splits it into
binders, hypotheses and conclusion, and requires the two files to declare the same theorem names
with equal binders, hypotheses and conclusions (constants included, exactly). Inputs: the
committed SmolLM2 run (dense KV, banded), the MLA run (latent), the V4 run (sink) and the SmolLM2
run with the query-aligned witness (its box theorems over query-aligned radii), and for each
of them the theorem of every non-vacuous form (centred, plain, e-form) in its own memory class
and at score level, plus the box-form theorems ``derive`` states (dense KV layers whose box bound
is the tightest), so every shape the Coq side can emit is compared.

It also checks, in exact rational arithmetic, that every numeric goal the Lean proofs leave to
``norm_num`` is true (a Lean proof cannot be compiled here; its arithmetic can be decided).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import witprobe.certify.derive as derive_mod
from witprobe.calculus import rounding
from witprobe.certify.certificate import sha256_text
from witprobe.formal.claim_theorems import ClaimTheoremError, lean_side_condition
from witprobe.formal.render_coq import coq_module, render_coq
from witprobe.formal.render_lean_real import render_lean_real, theorem_spans
from witprobe.formal.obligations import ObligationError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claim_shapes import every_form  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNS = {name: ROOT / "artifacts" / "coverage" / name / "run.json" for name in ("smollm2-int8", "mla-int8", "v4-int8")}
# the query-aligned box shape (certify run --query-aligned 48): its theorems are boxsup_qa
RUNS["smollm2-int8-qa48"] = ROOT / "artifacts" / "query_aligned" / "smollm2-int8-qa48" / "run.json"

COQ_THEOREM = re.compile(r"^Theorem (\w+) :\n(.*?)\.\nProof\. ", re.M | re.S)
LEAN_THEOREM = re.compile(r"^theorem (\w+) :\n(.*?) :=\n", re.M | re.S)


@dataclass(frozen=True)
class Stmt:
    binders: tuple[tuple[str, str], ...]  # (variable, type), one per variable
    hyps: tuple[str, ...]
    concl: str


def _group_end(text: str, i: int) -> int:
    """Index of the bracket closing the one opened at ``text[i]``."""
    depth = 0
    for j in range(i, len(text)):
        depth += text[j] in "([{"
        depth -= text[j] in ")]}"
        if depth == 0:
            return j
    raise AssertionError(f"unbalanced brackets in {text!r}")


def _top_level(text: str, sep: str) -> list[int]:
    hits, depth, i = [], 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            hits.append(i)
        i += 1
    return hits


def _squash(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text.replace("( ", "(").replace(" )", ")")


def coq_canon(text: str) -> str:
    """A Coq statement in the common syntax."""
    while (i := text.find("Rabs (")) >= 0:
        j = _group_end(text, i + 5)
        text = text[:i] + "|" + text[i + 6:j] + "|" + text[j + 1:]
    text = re.sub(r"\(([^()]*)\)%nat", r"\1", text)
    text = re.sub(r"\bS (\w+)\b", r"\1 + 1", text)
    text = re.sub(r"\bforall\b", "∀", text).replace("->", "→").replace("<=", "≤").replace("\\/", "∨")
    text = re.sub(r"\bnat\b", "ℕ", text)
    text = re.sub(r"\bR\b", "ℝ", text)
    return _squash(text)


def lean_canon(text: str) -> str:
    """A Lean statement in the common syntax."""
    text = re.sub(r"\(\((\d+) : ℝ\) / (\d+)\)", r"(\1 / \2)", text)
    while (m := re.search(r"∑ (\w+) ∈ Finset\.range (\w+), ", text)):
        # the body runs to the end of the enclosing group
        depth, j = 0, m.end()
        while j < len(text) and not (depth == 0 and text[j] in ")]}"):
            depth += text[j] in "([{"
            depth -= text[j] in ")]}"
            j += 1
        text = text[:m.start()] + f"sum {m.group(2)} (fun {m.group(1)} => {text[m.end():j].strip()})" + text[j:]
    return _squash(text)


def split_statement(canon: str) -> Stmt:
    """``∀ (x y : T) ..., H1 → ... → C`` into binders, hypotheses and conclusion."""
    assert canon.startswith("∀ "), canon
    comma = _top_level(canon, ",")[0]
    head, body = canon[2:comma].strip(), canon[comma + 1:].strip()
    binders: list[tuple[str, str]] = []
    i = 0
    while i < len(head):
        if head[i] == "(":
            j = _group_end(head, i)
            names, ty = head[i + 1:j].split(" : ", 1)
            binders.extend((n, ty.strip()) for n in names.split())
            i = j + 1
        elif head[i] == " ":
            i += 1
        else:
            raise AssertionError(f"untyped binder in {head!r}")
    cuts = _top_level(body, "→")
    parts, start = [], 0
    for c in cuts:
        parts.append(body[start:c].strip())
        start = c + 1
    parts.append(body[start:].strip())
    return Stmt(tuple(binders), tuple(parts[:-1]), parts[-1])


def coq_theorems(text: str) -> dict[str, Stmt]:
    found = COQ_THEOREM.findall(text)
    out = {name: split_statement(coq_canon(body)) for name, body in found}
    assert len(out) == len(found) == text.count("\nTheorem "), "a Coq theorem was not parsed"
    return out


def lean_theorems(text: str) -> dict[str, Stmt]:
    found = LEAN_THEOREM.findall(text)
    out = {name: split_statement(lean_canon(body)) for name, body in found}
    assert len(out) == len(found) == text.count("\ntheorem "), "a Lean theorem was not parsed"
    return out


def inventory_differences(coq_text: str, lean_text: str) -> list[str]:
    """Every way the two files' theorem inventories differ (empty when one to one)."""
    coq, lean = coq_theorems(coq_text), lean_theorems(lean_text)
    errs = [f"only in run.v: {n}" for n in sorted(set(coq) - set(lean))]
    errs += [f"only in run_real.lean: {n}" for n in sorted(set(lean) - set(coq))]
    for n in sorted(set(coq) & set(lean)):
        c, l_ = coq[n], lean[n]
        if c.binders != l_.binders:
            errs.append(f"{n}: binders {c.binders} (Coq) vs {l_.binders} (Lean)")
        if len(c.hyps) != len(l_.hyps):
            errs.append(f"{n}: {len(c.hyps)} hypotheses (Coq) vs {len(l_.hyps)} (Lean)")
        for k, (hc, hl) in enumerate(zip(c.hyps, l_.hyps)):
            if hc != hl:
                errs.append(f"{n}: hypothesis {k}: {hc!r} (Coq) vs {hl!r} (Lean)")
        if c.concl != l_.concl:
            errs.append(f"{n}: conclusion {c.concl!r} (Coq) vs {l_.concl!r} (Lean)")
    return errs


@pytest.fixture(scope="module")
def runs():
    return {name: json.loads(p.read_text()) for name, p in RUNS.items()}


def box_theorems(runs: dict) -> list:
    """The box-form theorems ``derive`` states for the runs (``boxsup_theorem``: dense and latent KV
    layers whose box bound is the tightest; ``boxsup_qa_theorem``: the query-aligned run), renamed
    ``R<i>_<theorem>_boxsup`` to share one file."""
    out = [_renamed(th, f"R{i}_{th.theorem}_boxsup")
           for i, run in enumerate(runs.values()) for th in derive_mod.derive(run).theorems
           if th.form in ("boxsup", "qa_boxsup")]
    assert out, "no run states a box-form theorem"
    return out


def _renamed(th, name: str):
    """``th`` under another name, its shipped rows' definition renamed with it."""
    old, new = f"{th.theorem}_rows", f"{name}_rows"
    return dataclasses.replace(th, theorem=name, statement=th.statement.replace(old, new),
                               proof=th.proof.replace(old, new), definitions=th.definitions.replace(old, new))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_rendered_run_files_declare_the_same_theorems(runs, name):
    run = runs[name]
    sha = sha256_text(json.dumps(run))
    theorems = derive_mod.derive(run).theorems
    assert theorems
    assert len(coq_theorems(render_coq(theorems, sha))) == len(theorems)
    # the box and eviction theorems are Coq only (their checkers compute in Coq); the rest correspond
    assert all(t.form in ("boxsup", "qa_boxsup", "evict") for t in theorems if not t.has_lean)
    theorems = [t for t in theorems if t.has_lean]
    if not theorems:
        return
    coq_text, lean_text = render_coq(theorems, sha), render_lean_real(theorems, sha)
    assert inventory_differences(coq_text, lean_text) == []
    # same namespace, and one axiom report per theorem, at the end of the Lean file
    spans, qualified = theorem_spans(lean_text, sha)
    assert sorted(qualified.values()) == sorted(f"{coq_module(sha)}.{t.theorem}" for t in theorems)
    assert all(len(s) == 2 for s in spans.values()), "every theorem has its #print axioms line"
    tail = lean_text.rstrip().splitlines()[-len(theorems):]
    assert all(line.startswith(f"#print axioms {coq_module(sha)}.") for line in tail)


def test_every_shape_and_form_corresponds(runs):
    theorems = [th for i, run in enumerate(runs.values()) for th in every_form(run, f"R{i}_")] + box_theorems(runs)
    kinds = {(t.form, t.shape) for t in theorems}
    assert kinds >= {("centred", "banded"), ("centred", "latent"), ("centred", "sink"), ("centred", "score"),
                     ("eform", "banded"), ("eform", "latent"), ("eform", "sink"), ("eform", "score"),
                     ("plain", "latent"), ("plain", "sink"), ("plain", "score"), ("boxsup", "boxsup"),
                     ("boxsup", "boxsup_latent"),
                     ("qa_boxsup", "boxsup_qa")}, kinds
    sha = "a" * 64
    assert len(coq_theorems(render_coq(theorems, sha))) == len(theorems)
    box = [t for t in theorems if t.form in ("boxsup", "qa_boxsup")]
    assert box and not any(t.has_lean for t in box)  # decided by the Coq checker: Coq only
    theorems = [t for t in theorems if t.has_lean]
    coq_text, lean_text = render_coq(theorems, sha), render_lean_real(theorems, sha)
    assert inventory_differences(coq_text, lean_text) == []
    assert len(lean_theorems(lean_text)) == len(theorems)


SCORE_LEVEL = re.compile(r"Rabs \(s t - s' t\)|\|s t - s' t\||\(s s' ")


def test_every_memory_class_theorem_is_stated_on_the_witness(runs):
    """The score bridge is inside every per-run statement: each theorem in a memory class's shape
    (every form, every run, in Coq and in Lean) has hypotheses on what that class's meter measures,
    never on score differences ``|s_t - s'_t|``. Only the score-level shape, which no derivation
    states for a run, quantifies over scores. DeepSeek-V4 (sink): the banded witness of the key
    residuals (the plain form: ``scale * bnorm`` and the band sums), the sink logit one shared
    binder; MLA plain: the latent meter's query gain ``lqnorm`` and per-key band sums ``lwidth``."""
    theorems = [th for i, run in enumerate(runs.values()) for th in every_form(run, f"R{i}_")]
    theorems += [th for run in runs.values() for th in derive_mod.derive(run).theorems]
    assert {t.shape for t in theorems} >= {"banded", "latent", "sink", "score"}
    for th in theorems:
        if th.shape == "score":
            assert SCORE_LEVEL.search(th.statement), th.theorem
            continue
        assert not SCORE_LEVEL.search(th.statement), (th.theorem, th.shape)
        assert not SCORE_LEVEL.search(th.lean_statement), (th.theorem, th.shape)
    witness = {"centred": "scale * banded_witness nb w q (bdiff (k t) (k' t)) <=",
               "plain": "sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) <=",
               "eform": "(extend (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) n 0) <="}
    sink = [t for t in theorems if t.shape == "sink"]
    assert {t.form for t in sink} == {"centred", "plain", "eform"}
    for th in sink:
        stmt = split_statement(coq_canon(th.statement))
        assert stmt.binders[-1] == ("sigma", "ℝ") and "0 ≤ scale" in stmt.hyps, th.theorem
        assert witness[th.form].replace("<=", "≤") in " ".join(stmt.hyps), th.theorem
        assert stmt.concl.startswith("tv (n + 1) (softmax (n + 1) (extend (fun t => scale * bdot nb w q (k t)) n sigma))")
        assert th.proof.startswith(f"apply {th.form}_sink_banded_claim;")
    plain = [t for t in theorems if t.form == "plain" and t.shape == "latent"]
    assert plain
    for th in plain:
        hyps = split_statement(coq_canon(th.statement)).hyps
        assert hyps[1].startswith("scale * lqnorm dn nbc nbr wc wr W qn qr ≤ ")
        assert "lwidth nbc nbr wc wr c c' kr kr' t ≤ " in hyps[2]
        assert [c.name for c in th.constants] == ["Q", "W", "B"]


def test_committed_run_files_state_no_score_level_hypothesis():
    """Every committed ``obligations/run.v`` and ``run_real.lean`` (the V4 run's sink theorems
    included) states its claims on the witness: no hypothesis on score differences."""
    files = sorted((ROOT / "artifacts").rglob("obligations/run.v"))
    assert ROOT / "artifacts" / "coverage" / "v4-int8" / "obligations" / "run.v" in files
    for p in files:
        for f in (p, p.with_name("run_real.lean")):
            if f.exists():
                assert not SCORE_LEVEL.search(f.read_text(encoding="utf-8")), f
    v4 = (ROOT / "artifacts" / "coverage" / "v4-int8" / "obligations" / "run.v").read_text(encoding="utf-8")
    assert v4.count("apply centred_sink_banded_claim;") == 4


def test_plain_banded_form_corresponds():
    """Qwen3's plain form is non-vacuous: the banded plain shape (hypotheses on Q and W)."""
    run = json.loads((ROOT / "artifacts" / "coverage" / "qwen3-int8" / "run.json").read_text())
    theorems = [t for t in every_form(run) if t.form == "plain" and t.shape == "banded"]
    assert theorems
    assert inventory_differences(render_coq(theorems, "b" * 64), render_lean_real(theorems, "b" * 64)) == []
    assert all(len(t.constants) == 3 for t in theorems)


def test_every_lean_numeric_side_condition_is_true(runs):
    """What ``norm_num`` must close in each Lean proof holds in exact arithmetic; a bound lowered
    by one unit below what a tight check allows makes it false. The box theorems are Coq only
    (their checker computes on floats in Coq): they carry no Lean goal, and asking for one is an
    error rather than a vacuous "true"."""
    theorems = [th for i, run in enumerate(runs.values()) for th in every_form(run, f"R{i}_")]
    assert {th.lean_side.kind for th in theorems} == {"tanh", "plain", "eform"}
    for th in theorems:
        assert th.has_lean and lean_side_condition(th.lean_side), th.theorem
        assert th.lean_side.bound == th.constants[-1].value
        if th.lean_side.kind in ("tanh", "plain"):
            assert f"_of_expUpper {th.lean_side.n} " in th.lean_proof
    box = box_theorems(runs)
    assert box and all(not th.has_lean and th.lean_side.kind == "coq_only" for th in box)
    with pytest.raises(ClaimTheoremError, match="no Lean side condition"):
        lean_side_condition(box[0].lean_side)
    centred = next(t for t in theorems if t.form == "centred")
    c = centred.lean_side
    low = type(c)(c.kind, c.t, rounding.from_units(int(math.tanh(float(c.t) / 2) * rounding.UNIT * (1 - 1e-6))), c.n)
    assert not lean_side_condition(low)


def test_a_broken_side_is_caught(runs):
    """Break the Lean file once each way (constant, hypothesis, conclusion, name): each is reported,
    for the SmolLM2 run's centred banded theorems (constant ``C`` in hypothesis 1). The box
    theorems ``derive`` states are Coq only, so the Lean file must leave them out entirely."""
    run = runs["smollm2-int8"]
    sha = "c" * 64
    box = derive_mod.derive(run).theorems
    assert box and all(t.shape == "boxsup" and not t.has_lean for t in box)
    with pytest.raises(ObligationError, match="no Lean statement"):
        render_lean_real(box, sha)
    theorems = [t for t in every_form(run) if t.form == "centred" and t.shape == "banded"]
    assert len(theorems) > 3 and all(t.shape == "banded" for t in theorems)
    coq_text, lean_text = render_coq(theorems, sha), render_lean_real(theorems, sha)
    th = theorems[3]
    c_lean = th.constants[0].lean
    site, hyp = f"≤ {c_lean}", 1
    i = lean_text.index(site, lean_text.index(f"theorem {th.theorem} :"))
    bumped = site.replace(c_lean, f"(({th.constants[0].units + 1} : ℝ) / 281474976710656)")
    edited = lean_text[:i] + bumped + lean_text[i + len(site):]
    errs = inventory_differences(coq_text, edited)
    assert len(errs) == 1 and errs[0].startswith(f"{th.theorem}: hypothesis {hyp}"), errs
    dropped = lean_text.replace("      0 ≤ scale →\n", "", 1)
    errs = inventory_differences(coq_text, dropped)
    assert any("hypotheses" in e for e in errs), errs
    concl = lean_text.replace("(fun t => scale * bdot nb w q (k' t))) ≤", "(fun t => scale * bdot nb w q (k t))) ≤", 1)
    errs = inventory_differences(coq_text, concl)
    assert len(errs) == 1 and "conclusion" in errs[0], errs
    renamed = lean_text.replace(f"theorem {th.theorem} :", f"theorem {th.theorem}x :", 1)
    errs = inventory_differences(coq_text, renamed)
    assert f"only in run.v: {th.theorem}" in errs and f"only in run_real.lean: {th.theorem}x" in errs
    # and the Coq side: a Coq hypothesis weakened to <
    weakened = coq_text.replace("0 <= scale ->", "0 < scale ->", 1)
    assert any("hypothesis 0" in e for e in inventory_differences(weakened, lean_text))


def test_canonical_forms_of_the_notations():
    assert coq_canon("forall (n : nat) (s : nat -> R),\n  (forall t, (t < n)%nat -> Rabs (s t - f (t)) <= (3 / 4)) -> "
                     "tv (S n) x <= 1") == "∀ (n : ℕ) (s : ℕ → ℝ), (∀ t, t < n → |s t - f (t)| ≤ (3 / 4)) → tv (n + 1) x ≤ 1"
    assert lean_canon("∀ (n : ℕ), (∑ i ∈ Finset.range n, f i * 2) ≤ ((3 : ℝ) / 4)") == \
        "∀ (n : ℕ), (sum n (fun i => f i * 2)) ≤ (3 / 4)"
    assert coq_canon("sum n (fun i => f i * 2)") == lean_canon("∑ i ∈ Finset.range n, f i * 2")


ANALYTIC = ROOT / "analytic" / "WitprobeAnalytic"


def _lemma_conclusion(name: str) -> tuple[list[str], str]:
    """The parameters of a claim lemma's first binder group (its constants) and its conclusion."""
    for path in sorted(ANALYTIC.glob("*.lean")):
        text = path.read_text(encoding="utf-8")
        m = re.search(rf"^theorem {name} ", text, re.M)
        if not m:
            continue
        i = m.end()
        groups = []
        while True:
            while text[i].isspace():
                i += 1
            if text[i] != "(":
                break
            j = _group_end(text, i)
            groups.append(text[i + 1:j])
            i = j + 1
        assert text[i] == ":", name
        end = text.index(" :=", i)
        return groups[0].split(" : ")[0].split(), text[i + 1:end]
    raise AssertionError(f"no Lean lemma {name} in {ANALYTIC}")


def test_each_lean_statement_is_its_lemma_instantiated(runs):
    """The declared type of every per-run Lean theorem is, token for token, the conclusion of the
    lemma its proof applies with the run's constants substituted: the proof term's type is the
    statement, so only the ``norm_num`` goals are left to the (absent) compiler."""
    theorems = [th for i, run in enumerate(runs.values()) for th in every_form(run, f"R{i}_")]
    qwen = json.loads((ROOT / "artifacts" / "coverage" / "qwen3-int8" / "run.json").read_text())
    theorems += every_form(qwen, "Q_")
    assert not any(th.has_lean for th in box_theorems(runs))  # Coq only: no Lean lemma to instantiate
    lemmas = set()
    for th in theorems:
        lemma = th.lean_proof.split(" ", 1)[0]
        params, concl = _lemma_conclusion(lemma)
        assert len(params) == len(th.constants), (lemma, params)
        for p, c in zip(params, th.constants):
            concl = re.sub(rf"(?<![\w']){p}(?![\w'])", c.lean.replace("\\", r"\\"), concl)
        assert _squash(concl) == _squash(th.lean_statement), th.theorem
        applied = f"{lemma} {' '.join(c.lean for c in th.constants)}"
        assert th.lean_proof.startswith(applied + " ")
        lemmas.add(lemma)
    assert lemmas == {"centred_banded_claim", "centred_latent_claim", "centred_sink_banded_claim", "centred_claim",
                      "eform_banded_claim", "eform_latent_claim", "eform_sink_banded_claim", "eform_claim",
                      "plain_banded_claim", "plain_latent_claim", "plain_sink_banded_claim", "plain_claim"}
