"""Budgets: exact telescoping spend per account (paper 5.1)."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from witprobe.ledger.budget import Budget, telescoping_delta, telescoping_spend, two_layer_spend
from witprobe.ledger.certificates import EmpiricalRefused, Kind, admit

deltas = st.fractions(min_value=Fraction(1, 10**6), max_value=1).filter(lambda d: d > 0)


@settings(max_examples=200, deadline=None)
@given(delta=deltas, events=st.lists(st.booleans(), max_size=300))
def test_spend_is_exactly_telescoping_and_deterministic_events_are_free(delta, events):
    b = Budget(delta)
    k = 0
    for prob in events:
        before = b.spent
        if prob:
            i, d = b.spend()
            assert i == k and d == delta / ((k + 1) * (k + 2))
            k += 1
        else:
            b.deterministic()
            assert b.spent == before  # deterministic events never move the spend
        assert b.spent == delta * k / (k + 1)
        assert 0 <= b.spent < delta or (k == 0 and b.spent == 0)
    assert b.n_prob_events == k and b.n_det_events == len(events) - k
    assert b.spent == two_layer_spend(delta, events) == telescoping_spend(delta, k)


@settings(max_examples=100, deadline=None)
@given(k=st.integers(min_value=0, max_value=10**6), delta=deltas)
def test_closed_form_never_reaches_delta_req(k, delta):
    s = telescoping_spend(delta, k)
    assert s == delta * k / (k + 1) and s < delta
    assert telescoping_spend(delta, k + 1) - s == telescoping_delta(delta, k)


def test_paper_values():
    d = Fraction(1, 100)
    assert float(telescoping_spend(d, 63)) == 0.00984375
    assert abs(float(telescoping_spend(d, 606)) - 0.009983525535420099) < 1e-18
    assert telescoping_delta(d, 0) == Fraction(1, 200)
    b = Budget(d)
    assert b.next_delta() == Fraction(1, 200)  # counters restart at delta_req / 2 per account


def test_empirical_objects_never_enter():
    with pytest.raises(EmpiricalRefused, match="empirical"):
        admit(Kind.EMPIRICAL, "a median witness")
    assert admit(Kind.PROBABILISTIC, "x") is True and admit(Kind.DETERMINISTIC, "y") is False


@pytest.mark.parametrize("bad", [0, -1, Fraction(3, 2)])
def test_bad_delta_req_is_refused(bad):
    with pytest.raises(ValueError, match="delta_req"):
        Budget(bad)
