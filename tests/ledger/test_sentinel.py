"""The sampling sentinel as an operator on the simulator's pool: latency against n(delta)."""

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from witprobe.ledger.sentinel import (
    SamplingSentinel,
    binomial_interval,
    binomial_upper,
    corruption_trials,
    detection_rounds,
    latency_agreement,
)
from witprobe.ledger.simulate import SimConfig, serve
from witprobe.ledger.trace import DEFAULT_FIXTURE

DELTA = Fraction(1, 100)


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    eng, _ = serve(SimConfig(trace=DEFAULT_FIXTURE, decode_steps=4, workers=2), tmp_path_factory.mktemp("sentinel"))
    return eng


def test_record_matches_the_pool_after_serving_and_a_flip_raises_an_alarm(engine):
    rec = engine.record
    assert len(rec.blocks) > 50 and all(rec.matches(b) for b in rec.blocks)
    s = SamplingSentinel(rec, 16, np.random.default_rng(0))
    assert all(s.round() is None for _ in range(50))  # a clean pool never alarms
    block = rec.blocks[7]
    data = rec.read(block).copy()
    bad = data.copy()
    bad.reshape(-1)[123] ^= 0x10
    engine.overwrite_block(block, bad)
    try:
        s = SamplingSentinel(rec, len(rec.blocks) * 4, np.random.default_rng(1))
        alarm = s.round()
        assert alarm is not None and alarm.blocks == (block,) and alarm.round == 1
    finally:
        engine.overwrite_block(block, data)
    assert rec.matches(block)


@pytest.mark.parametrize("B,r", [(4, 8), (1, 16)])
def test_detection_latency_agrees_with_n_delta(engine, B, r):
    rec = engine.record
    M = len(rec.blocks)
    n = detection_rounds(M, B, r, DELTA)
    lat = corruption_trials(rec, engine.overwrite_block, B, r, trials=1500, seed=B * 100 + r, max_rounds=50 * n)
    a = latency_agreement(lat, M, B, r, DELTA, alpha=1e-3)
    assert a.agrees, a.as_dict()
    assert a.detected_within_n >= a.min_detected_within_n  # >= 1 - delta - binomial slack
    assert a.undetected == 0 and all(rec.matches(b) for b in rec.blocks)


def test_the_agreement_check_has_power(engine):
    """A sentinel that draws one block fewer per round than it claims is caught."""
    rec = engine.record
    M, B, r = len(rec.blocks), 4, 8
    lat = corruption_trials(rec, engine.overwrite_block, B, r - 1, trials=1500, seed=5, max_rounds=1000)
    assert not latency_agreement(lat, M, B, r, DELTA, alpha=1e-3).agrees


def test_binomial_helpers_are_exact_enough():
    lo, hi = binomial_interval(1000, 0.3, 0.01)
    assert 250 < lo < 300 < hi < 350
    assert binomial_upper(1000, 0.01, 1e-3) in range(15, 30)
    # Monte Carlo: the one-sided bound holds at its level
    x = np.random.default_rng(0).binomial(1000, 0.01, 200_000)
    assert (x > binomial_upper(1000, 0.01, 1e-3)).mean() <= 1.5e-3


def test_sentinel_cli(tmp_path):
    out = tmp_path / "s.json"
    py = [sys.executable, "-m", "witprobe.ledger", "sentinel"]
    p = subprocess.run([*py, "--trials", "200", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads(out.read_text())
    assert d["agrees"] and d["n_delta"] == detection_rounds(d["M"], d["B"], d["r"], DELTA) and d["tier"] == "empirical"
    p = subprocess.run([*py, "--corrupt", "100000", "--trials", "5"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and "exceeds" in p.stderr
    p = subprocess.run([*py, "--draws", "0"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and "positive" in p.stderr
