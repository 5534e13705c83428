"""The probe gate fails closed on malformed statistics (issue 29): empty, list or boolean stats, a
statistic folded 0 times that holds NaN, negative counts; ``--magnitude-limit nan`` is refused
(exit 2, one line) instead of switching the magnitude stage off; NaN in a snapshot file still
reaches the gate (``non_finite``), while deep nesting and huge integers are refused as input."""

from __future__ import annotations

import copy
import json
import math

import pytest

from witprobe.probe.gate import Expectations, check, main
from witprobe.probe.runtime import ProbeConfig, ProbeRuntime

from test_gate import DECLARED, NUM_LAYERS, _forward, failures

SLOT = "DenseKV#0|L10|value"


@pytest.fixture(scope="module")
def good() -> dict:
    rt = ProbeRuntime(NUM_LAYERS, ProbeConfig(layers=DECLARED))
    for s in range(4):
        _forward(rt, s)
    return rt.snapshot()


def _slot_edit(good: dict, change) -> dict:
    bad = copy.deepcopy(good)
    change(bad["slots"][SLOT])
    return bad


@pytest.mark.parametrize("stats", [{}, [], [1], True, False, None, "x"])
def test_stats_that_are_not_a_nonempty_object_fail(good, stats):
    r = check(_slot_edit(good, lambda s: s.__setitem__("stats", stats)), Expectations(layers=2))
    assert not r.passed and "counter_missing" in failures(r, "coverage")


def test_a_statistic_folded_zero_times_holding_nan_fails(good):
    def nan0(s):
        st = next(iter(s["stats"].values()))
        st.update(n=0, mean=math.nan, max=math.inf)

    r = check(_slot_edit(good, nan0), Expectations(layers=2))
    assert not r.passed and "non_finite" in failures(r)


@pytest.mark.parametrize("where", ["host_calls", "device_calls", "stat_n", "stat_calls", "n_calls"])
def test_negative_counts_fail(good, where):
    bad = copy.deepcopy(good)
    s = bad["slots"][SLOT]
    st = next(iter(s["stats"].values()))
    {"host_calls": lambda: s.__setitem__("host_calls", -s["host_calls"]),
     "device_calls": lambda: s.__setitem__("device_calls", -1),
     "stat_n": lambda: st.__setitem__("n", -5),
     "stat_calls": lambda: st.__setitem__("calls", -1),
     "n_calls": lambda: bad["coverage"].__setitem__("n_calls", -1)}[where]()
    r = check(bad, Expectations(layers=2))
    assert not r.passed and "counter_missing" in failures(r, "coverage")


@pytest.mark.parametrize("limit", ["nan", "inf", "-1", "0"])
def test_magnitude_limit_must_be_finite_and_positive(good, tmp_path, capsys, limit):
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(good))
    assert main([str(p), "--expect-layers", "2", "--magnitude-limit", limit]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--magnitude-limit must be a finite number > 0" in err


def test_nan_in_a_snapshot_file_reaches_the_gate(good, tmp_path, capsys):
    bad = copy.deepcopy(good)
    next(iter(bad["slots"][SLOT]["stats"].values()))["mean"] = math.nan
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(bad))  # NaN as the probe writes it
    assert main([str(p), "--expect-layers", "2"]) == 1
    assert "non_finite" in capsys.readouterr().out


@pytest.mark.parametrize("text, says", [("[" * 5000 + "]" * 5000, "nested deeper than"),
                                        ('{"coverage": ' + "7" * 5000 + "}", "an integer of 5000 digits")])
def test_hostile_snapshot_files_exit_2_with_one_line(tmp_path, capsys, text, says):
    p = tmp_path / "snap.json"
    p.write_text(text)
    assert main([str(p), "--expect-layers", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "Traceback" not in err
