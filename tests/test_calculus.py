"""The contract calculus: composition algebra, metric typing, tiers, registry, bounds vs readings."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from witprobe.calculus import (
    Chain,
    Contract,
    Metric,
    MetricError,
    MetricMismatch,
    Tier,
    TierRegistry,
    UnregisteredMetric,
    compose,
    meet,
    meet_all,
)
from witprobe.calculus.contracts import bridge, empirical_bridge, identity
from witprobe.calculus.registry import DEFAULT_REGISTRY

M = [Metric("m", f"u{i}", "site") for i in range(4)]
fracs = st.fractions(min_value=0, max_value=50, max_denominator=64)
tiers = st.sampled_from(list(Tier))
deltas = st.fractions(min_value=0, max_value=Fraction(1, 10), max_denominator=1000)


def contract(i: int, a: Fraction, b: Fraction, d: Fraction = Fraction(0), t: Tier = Tier.CERTIFIED) -> Contract:
    return Contract(name=f"c{i}", m_in=M[i], m_out=M[i + 1], a=a, b=b, delta=d, tier=t)


@given(fracs, fracs, fracs, fracs, fracs, fracs)
def test_composition_coefficients_are_associative(a1, b1, a2, b2, a3, b3):
    c1, c2, c3 = contract(0, a1, b1), contract(1, a2, b2), contract(2, a3, b3)
    left = compose(c3, compose(c2, c1))
    right = compose(compose(c3, c2), c1)
    assert (left.a, left.b) == (right.a, right.b)
    assert left.a == a3 * a2 * a1
    assert left.b == a3 * (a2 * b1 + b2) + b3


@given(fracs, fracs)
def test_identity_contract_is_neutral(a, b):
    c = contract(0, a, b)
    for composed in (compose(identity(M[1]), c), compose(c, identity(M[0]))):
        assert (composed.a, composed.b, composed.m_in, composed.m_out) == (c.a, c.b, c.m_in, c.m_out)


@given(deltas, deltas, deltas)
def test_deltas_add(d1, d2, d3):
    chain = Chain.start(contract(0, Fraction(1), Fraction(0), d1)).then(contract(1, Fraction(1), Fraction(0), d2))
    chain = chain.then(contract(2, Fraction(1), Fraction(0), d3))
    assert chain.compose().delta == d1 + d2 + d3
    assert chain.delta == d1 + d2 + d3


@given(tiers, tiers, tiers)
def test_tier_is_the_meet(t1, t2, t3):
    c = compose(contract(1, Fraction(1), Fraction(0), t=t2), contract(0, Fraction(1), Fraction(0), t=t1))
    assert c.tier == meet(t2, t1)
    assert c.tier.rank <= min(t1.rank, t2.rank)
    assert meet(meet(t1, t2), t3) == meet(t1, meet(t2, t3)) == meet_all([t1, t2, t3])
    assert meet(t1, t2) == meet(t2, t1)
    assert meet(t1, t1) == t1


@given(fracs, fracs, fracs, fracs, st.fractions(min_value=0, max_value=10, max_denominator=32))
def test_composite_bound_equals_stagewise_bound(a1, b1, a2, b2, e):
    c1, c2 = contract(0, a1, b1), contract(1, a2, b2)
    assert compose(c2, c1).bound(e) == c2.bound(c1.bound(e))


def test_metric_mismatch_raises():
    store = Contract("store", "entry:l2@write", "entry:l2@read", 1, Fraction(3, 100))
    select = Contract("select", "selector_dist:tv@select", "selector_dist:tv@select", 1, Fraction(1, 100))
    with pytest.raises(MetricMismatch, match="entry:l2@read"):
        compose(select, store)
    with pytest.raises(MetricMismatch):
        Chain.start(store).then(select)


def test_same_value_different_site_is_a_different_type():
    a = Contract("a", "score:linf@read", "score:linf@write", 1, 0)
    b = Contract("b", "score:linf@read", "attn_dist:tv@read", 1, 0)
    with pytest.raises(MetricMismatch):
        compose(b, a)


def test_floats_must_be_rounded_outward_first():
    with pytest.raises(TypeError, match="rounding.up"):
        Contract("c", M[0], M[1], 0.5, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nonnegative"):
        Contract("c", M[0], M[1], Fraction(-1), 0)


def test_bridges_need_a_proof_unless_empirical():
    with pytest.raises(ValueError, match="Lean theorem"):
        bridge("b", M[0], M[1], 1, 0, "")
    with pytest.raises(ValueError, match="change the metric"):
        Contract("b", M[0], M[0], 1, 0, proofs=("X.y",), is_bridge=True)
    with pytest.raises(ValueError, match="Lean declaration name"):
        bridge("b", M[0], M[1], 1, 0, "not a name; sorry")
    e = empirical_bridge("rho", M[0], M[1], Fraction(218, 100), 0, measured_on="truncation sets", applied_to="swap sets")
    assert e.tier is Tier.EMPIRICAL and "truncation sets" in e.note
    with pytest.raises(ValueError, match="measured_on"):
        empirical_bridge("rho", M[0], M[1], 1, 0, measured_on=" ", applied_to="x")


def test_empirical_bridge_drops_the_chain_tier():
    cert = bridge("b", M[0], M[1], 1, 0, "Witprobe.osc_le_two_linf")
    emp = empirical_bridge("rho", M[1], M[2], 2, 0, measured_on="a", applied_to="b")
    assert Chain.start(cert).then(emp).tier is Tier.EMPIRICAL


def test_source_only_stage_cannot_follow_another():
    src = bridge("src", M[1], M[2], 0, 1, "X.y", source_only=True)
    with pytest.raises(ValueError, match="exact input"):
        Chain.start(contract(0, Fraction(1), Fraction(0))).then(src)
    with pytest.raises(ValueError, match="e_in must be 0"):
        Chain.start(src).evaluate(Fraction(1, 2))
    assert Chain.start(src).evaluate(0).bound == 1


def test_metric_parsing():
    m = Metric.parse("attn_dist:tv@read")
    assert (m.object, m.metric, m.site) == ("attn_dist", "tv", "read")
    assert str(m) == "attn_dist:tv@read" and m.lean_name == "attnDistTvRead"
    for bad in ("attn_dist:tv", "Attn:tv@read", "a:b@c d", "a:b@c\n--", ""):
        with pytest.raises(MetricError):
            Metric.parse(bad)


def test_unregistered_metric_is_a_hard_error():
    reg = TierRegistry()
    with pytest.raises(UnregisteredMetric, match="not registered"):
        reg.require("entry:l2@write")
    with pytest.raises(UnregisteredMetric):
        DEFAULT_REGISTRY.tier_of(Metric.parse("nowhere:x@y"))


def test_registry_entries_state_a_reason_and_readings_stay_empirical():
    assert len(DEFAULT_REGISTRY) > 0
    for e in DEFAULT_REGISTRY:
        assert e.reason.strip()
        if e.kind == "reading":
            assert e.tier is Tier.EMPIRICAL
    with pytest.raises(ValueError, match="reading can only be empirical"):
        TierRegistry().register("a:b@c", Tier.CERTIFIED, "why", "reading")
    with pytest.raises(ValueError, match="twice"):
        reg = TierRegistry()
        reg.register("a:b@c", Tier.CERTIFIED, "why", "bound")
        reg.register("a:b@c", Tier.CERTIFIED, "why", "bound")


def test_a_source_only_contract_holds_only_at_the_exact_input():
    from fractions import Fraction

    from witprobe.calculus import bridges

    c = bridges.eform_moment(Fraction(1, 10))
    assert c.source_only and c.bound(Fraction(0)) == Fraction(1, 10)
    with pytest.raises(ValueError, match="holds only at the exact input"):
        c.bound(Fraction(1, 1000))


def test_gamma_refuses_a_rounding_count_at_or_beyond_one_over_u():
    from witprobe.calculus import float_error as fe

    with pytest.raises(fe.FloatBoundError, match="outside the range"):
        fe.gamma(2 ** 53)
    with pytest.raises(fe.FloatBoundError, match="nonnegative"):
        fe.gamma(-1)
    assert 0 < fe.gamma(10) < 11 * 2 ** -53


def test_an_unknown_tier_name_is_refused():
    from witprobe.calculus.tiers import Tier

    assert Tier.parse("certified") is Tier.CERTIFIED
    with pytest.raises(ValueError, match="unknown tier 'proved'"):
        Tier.parse("proved")


def test_metrics_given_as_text_are_parsed_into_metrics():
    """Contracts and bounds accept a metric's string form and hold the parsed :class:`Metric` (the
    chain compares metrics, so a kept string would never match the next stage's input)."""
    c = Contract("store", "entry:l2@write", "entry:l2@read", 1, 0)
    assert c.m_in == Metric.parse("entry:l2@write") and c.m_out == Metric.parse("entry:l2@read")
    assert isinstance(c.m_in, Metric) and isinstance(c.m_out, Metric)


@pytest.mark.parametrize("reason", ["", "   "])
def test_a_registry_entry_without_a_reason_for_its_tier_is_refused(reason):
    from witprobe.calculus.registry import RegisteredMetric

    with pytest.raises(ValueError, match="the reason for its tier is required"):
        RegisteredMetric(Metric.parse("attn_dist:tv@read"), Tier.CERTIFIED, reason, "bound")
    assert RegisteredMetric(Metric.parse("attn_dist:tv@read"), Tier.CERTIFIED, "TV bound", "bound").reason


def test_the_cited_proofs_include_every_entry_specs_bridges():
    """``cited_proofs`` is what the Lean cross-check (tests/test_lean_names.py) looks up: every proof
    an entry specification's chain cites (storage, score, banded) must be in it."""
    from witprobe.calculus.bridges import ENTRY_SPECS, cited_proofs

    cited = set(cited_proofs())
    for spec in ENTRY_SPECS.values():
        assert {spec.storage_proof, spec.score_proof, spec.banded_proof} <= cited, spec.name
