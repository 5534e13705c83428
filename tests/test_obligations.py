"""Obligations: golden rendering, the reference checker, identifier hygiene, and the token lint."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from witprobe.calculus.tiers import Tier
from witprobe.certify.certificate import canonical_json, sha256_text
from witprobe.certify.derive import derive
from witprobe.formal.lint import lint_text, lint_tree
from witprobe.formal.obligations import ChainObligation, ObligationError, check_ident, reference_check
from witprobe.formal.render import obligation_spans, render_run

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "data" / "golden"


@pytest.fixture(scope="module")
def golden():
    run = json.loads((GOLDEN / "run.json").read_text())
    text = canonical_json(run)
    return run, sha256_text(text), derive(run)


def test_rendering_is_byte_stable_for_a_fixed_run(golden):
    """Golden test. Regenerate with WITPROBE_REGEN_GOLDEN=1 after an intended renderer change."""
    run, sha, deriv = golden
    text = render_run(deriv.obligations, sha)
    if os.environ.get("WITPROBE_REGEN_GOLDEN") == "1":
        (GOLDEN / "run.lean").write_text(text)
    assert text == (GOLDEN / "run.lean").read_text()
    assert text == render_run(derive(copy.deepcopy(run)).obligations, sha)


def test_every_golden_obligation_passes_the_reference_checker(golden):
    _, _, deriv = golden
    assert deriv.obligations
    for ob in deriv.obligations:
        assert reference_check(ob) == []
        assert ChainObligation.from_json(json.loads(json.dumps(ob.to_json()))) == ob


def _tampered(ob: ChainObligation) -> dict[str, ChainObligation]:
    (v, a), *rest = ob.trace
    last_v, last_a = ob.trace[-1]
    return {
        "claim below the trace": replace(ob, claim_units=last_v - 1),
        "first step too low": replace(ob, trace=((v // 2, a), *rest)),
        "exp witness too small": replace(ob, trace=(*ob.trace[:-1], (last_v, max(0, last_a // 2)))),
        "tier upgraded": replace(ob, stages=(replace(ob.stages[0], tier=Tier.EMPIRICAL), *ob.stages[1:])),
        "vacuous certified claim": replace(ob, claim_units=2**48),
        "delta over budget": replace(ob, stages=(replace(ob.stages[0], delta=5), *ob.stages[1:])),
        "stages do not line up": replace(ob, stages=(replace(ob.stages[0], m_out="entry:l2@read"), *ob.stages[1:])),
        "unregistered metric": replace(ob, stages=(replace(ob.stages[0], m_in="made:up@here"), *ob.stages[1:])),
    }


def test_reference_checker_rejects_false_obligations(golden):
    _, sha, deriv = golden
    ob = next(o for o in deriv.obligations if o.ident.endswith("centred"))
    for why, bad in _tampered(ob).items():
        errs = reference_check(bad)
        assert errs, f"reference checker accepted an obligation with {why}"
        with pytest.raises(ObligationError, match="false"):
            render_run([bad], sha)


@pytest.mark.parametrize("name", ["sorry", "axiom", "L00\nsorry", "x -- y", "a b", "theorem", "", "1abc", "é"])
def test_identifiers_with_lean_syntax_never_reach_a_file(golden, name):
    _, sha, deriv = golden
    with pytest.raises(ObligationError):
        check_ident(name)
    ob = deriv.obligations[0]
    with pytest.raises(ObligationError):
        render_run([replace(ob, ident=name)], sha)


def test_run_hash_and_literals_are_validated(golden):
    _, sha, deriv = golden
    with pytest.raises(ObligationError, match="hex"):
        render_run(deriv.obligations, "sorry" + sha[5:])
    with pytest.raises(ObligationError):
        render_run([replace(deriv.obligations[0], claim_units=-1)], sha)
    with pytest.raises(ObligationError):
        ChainObligation.from_json({**deriv.obligations[0].to_json(), "claim_units": "1; sorry"})


def test_spans_cover_each_obligation_and_its_axiom_report(golden):
    _, sha, deriv = golden
    text = render_run(deriv.obligations, sha)
    spans, theorems = obligation_spans(text, sha)
    lines = text.splitlines()
    assert set(spans) == {o.ident for o in deriv.obligations}
    for ident, ranges in spans.items():
        a, b = ranges[0]
        body = "\n".join(lines[a - 1:b])
        assert f"theorem {ident}_ok" in body
        assert any(lines[a - 1] == f"#print axioms {theorems[ident]}" for a, _ in ranges[1:])


def test_lint_flags_every_forbidden_token():
    for tok in ("sorry", "admit", "axiom", "native_decide", "implemented_by", "extern"):
        assert lint_text(f"theorem t : True := by\n  {tok}\n"), tok
    assert lint_text("@[extern \"c_fn\"] opaque f : Nat") == ["1:3: extern"]
    assert lint_text("#print axioms foo\n-- axiomInfo, collectAxioms\n") == []


def test_trusted_library_and_rendered_obligations_are_lint_clean(golden):
    assert lint_tree(ROOT / "Witprobe") == []
    assert lint_text((ROOT / "Witprobe.lean").read_text()) == []
    _, sha, deriv = golden
    assert lint_text(render_run(deriv.obligations, sha)) == []
    for path in ROOT.glob("artifacts/**/*.lean"):
        assert lint_text(path.read_text()) == [], path


def test_wiring_refuses_a_transfer_stage_typed_against_its_kind():
    """A transfer stage's metrics must be those of its transfer kind (what Lean's types enforce)."""
    from witprobe.calculus.contracts import TransferKind
    from witprobe.formal.obligations import StageSpec, wiring_errors

    run = json.loads((Path(__file__).resolve().parents[1] / "artifacts" / "coverage" / "qwen3-int8" / "run.json").read_text())
    ob = derive(run).obligations[0]
    k = TransferKind.CENTRED_TV
    good = replace(ob, stages=(StageSpec("transfer", str(k.m_in), str(k.m_out), transfer=k),))
    assert not any("typed" in e for e in wiring_errors(good)), wiring_errors(good)
    bad = replace(ob, stages=(StageSpec("transfer", str(TransferKind.SOFTMAX_TV.m_in), str(k.m_out), transfer=k),))
    assert any(e.startswith("stage 0: transfer centred_tv is typed") for e in wiring_errors(bad)), wiring_errors(bad)


def test_an_unknown_read_chain_form_is_refused():
    from fractions import Fraction

    from witprobe.calculus.bridges import DENSE_KV
    from witprobe.calculus.chains import ReadMaxima, read_chain

    with pytest.raises(ValueError, match="unknown read-chain form 'tanh'"):
        read_chain("tanh", ReadMaxima(Fraction(1), Fraction(1, 10), Fraction(1, 20), Fraction(1, 30)), DENSE_KV)
