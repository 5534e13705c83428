"""Mirrors of the adjudication calculus and the key rule agree with the Lean theorems."""

from __future__ import annotations

import pytest

from witprobe.campaign.adjudication import (
    PAPER_RUNS,
    REGISTERED,
    CausalFinding,
    Comparison,
    Field,
    InferenceRejected,
    adjudicate,
    concurrency_via_eviction,
    cross_code_variance,
    naive_concurrency,
    run,
)
from lean_mirrors import REQUIRED, Dim, KeyedCount, KeyRuleViolation, collision, covers, key_of


def test_registered_fields_are_complete_and_match_lean():
    assert set(REGISTERED) == set(Field)
    text = open("Witprobe/Adjudication.lean", encoding="utf-8").read()
    for f in Field:
        assert f"| {f.value}" in text


def test_naive_concurrency_inference_is_rejected():
    cmp = naive_concurrency()
    assert not cmp.premises_hold()
    assert cmp.confounded() == [Field.EVICT128, Field.EVICT4]
    with pytest.raises(InferenceRejected, match="evict128 differs"):
        CausalFinding(cmp)


def test_concurrency_via_eviction_is_accepted():
    f = CausalFinding(concurrency_via_eviction(), "concurrency degrades via eviction")
    assert f.effect_pm == 250  # Lean `concurrencyViaEviction_effect`


def test_cross_code_variance_is_rejected():
    cmp = cross_code_variance()
    assert cmp.confounded() == [Field.CODE_TAG]
    with pytest.raises(InferenceRejected, match="nothing is manipulated"):
        CausalFinding(cmp)
    # declared as a code manipulation, it is a finding about the code change
    f = CausalFinding(Comparison(PAPER_RUNS["q6n"], PAPER_RUNS["q6p2"], (Field.CODE_TAG,), ()))
    assert f.effect_pm == 167


def test_manipulated_field_must_differ():
    with pytest.raises(InferenceRejected, match="manipulated but equal"):
        CausalFinding(Comparison(PAPER_RUNS["q6n"], PAPER_RUNS["q6p2"], (Field.SEED, Field.CODE_TAG), ()))


def test_runs_must_be_total():
    with pytest.raises(ValueError, match="total"):
        run("partial", 1000, workers=1)


def test_adjudicate_reports_each_verdict():
    verdicts = adjudicate([naive_concurrency(), concurrency_via_eviction(), cross_code_variance()])
    assert [f is not None for _, f, _ in verdicts] == [False, True, False]
    assert "premises fail" in verdicts[0][2]


def test_key_rule_matches_lean_decisions():
    full = [Dim.OWNER, Dim.LAYER, Dim.PAGE, Dim.SLOT, Dim.GENERATION, Dim.STEP]
    assert covers(full)  # fullKey_covers
    assert covers(list(reversed(full)))  # permutedKey_covers
    assert not covers([d for d in full if d is not Dim.GENERATION])  # no_generation_rejected
    assert not covers([d for d in full if d is not Dim.OWNER])  # no_owner_rejected
    assert set(REQUIRED) == set(Dim)


@pytest.mark.parametrize("gap", list(Dim))
def test_missing_dimension_collides(gap):
    key = [d for d in Dim if d is not gap]
    pair = collision(key)
    assert pair is not None
    e1, e2 = pair
    assert e1[gap] != e2[gap]
    assert key_of(key, e1) == key_of(key, e2)
    with pytest.raises(KeyRuleViolation, match=gap.value):
        KeyedCount(tuple(key))
    assert collision(list(Dim)) is None
    assert KeyedCount(tuple(Dim), 3).count == 3
