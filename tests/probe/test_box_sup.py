"""The box supremum bound: never beaten (all sign vertices, random and adversarial scores in the box,
a real SmolLM2 run), tight against the exact supremum, and carried through derivation as empirical."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from witprobe.probe.box_sup import BoxSupSpec, box_sup_bound, sup_tv_vertices

REGIMES = [(conc, scale) for conc in (0.05, 0.5, 3.0) for scale in (1e-3, 0.05, 0.5, 3.0)]


def _instance(rng: np.random.Generator, n: int, conc: float, scale: float) -> tuple[np.ndarray, np.ndarray]:
    p = rng.dirichlet(np.full(n, conc))
    c = rng.exponential(scale, n) * rng.choice([0.0, 1.0], n, p=[0.1, 0.9])  # some keys exact (c = 0)
    return p, c


def _bound(p: np.ndarray, c: np.ndarray, spec: BoxSupSpec = BoxSupSpec()) -> float:
    return float(box_sup_bound(torch.tensor(p)[None], torch.tensor(c)[None], spec)[0])


def _tv(s: np.ndarray, s_served: np.ndarray) -> float:
    p = np.exp(s - s.max())
    q = np.exp(s_served - s_served.max())
    return 0.5 * float(np.abs(p / p.sum() - q / q.sum()).sum())


def test_vertex_supremum_is_the_supremum_over_every_sign_pattern():
    """``sup_tv_vertices`` is the TV at the best of the 2^n sign vertices ``s' +- c`` (the theorem's
    worst case), and no point of the box exceeds it."""
    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(1, 8))
        p, c = _instance(rng, n, 0.5, 0.5)
        s_served = np.log(p)
        best = max(_tv(s_served + np.array(sg) * c, s_served) for sg in itertools.product((-1.0, 1.0), repeat=n))
        assert sup_tv_vertices(list(p), list(c)) == pytest.approx(best, rel=1e-9, abs=1e-15)
        for _ in range(50):
            s = s_served + rng.uniform(-1, 1, n) * c
            assert _tv(s, s_served) <= best * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("conc,scale", REGIMES)
def test_bound_dominates_the_exact_supremum_over_all_sign_patterns(conc, scale):
    rng = np.random.default_rng(int(conc * 100 + scale * 1000))
    ratios = []
    for _ in range(60):
        n = int(rng.integers(1, 11))
        p, c = _instance(rng, n, conc, scale)
        exact = sup_tv_vertices(list(p), list(c))
        b = _bound(p, c)
        assert b >= exact - 4e-16, (p, c, b, exact)  # the oracle is float64 (fsum): within 2 ulp of 1
        assert b <= math.tanh(c.max() / 2) * (1 + 1e-9)  # never above the centred bound (radii inflated by 2**-30)
        if exact > 1e-6:
            ratios.append(b / exact)
    if ratios:
        assert np.median(ratios) < 1.25, ratios  # tight: pooling and the w grid cost little


def test_bound_dominates_random_and_adversarial_scores_on_long_rows():
    """Rows of 300 keys (beyond brute force): uniform points, sign vertices and sign vertices that
    follow the sorted radii or probabilities, all below the bound."""
    rng = np.random.default_rng(7)
    for conc, scale in REGIMES:
        p, c = _instance(rng, 300, conc, scale)
        s_served = np.log(np.maximum(p, 1e-300))
        b = _bound(p, c)
        worst = 0.0
        for _ in range(30):
            worst = max(worst, _tv(s_served + rng.uniform(-1, 1, 300) * c, s_served))
            worst = max(worst, _tv(s_served + rng.choice([-1.0, 1.0], 300) * c, s_served))
        for key in (c, -c, p, -p):
            order = np.argsort(key)
            for k in range(0, 301, 10):
                sg = -np.ones(300)
                sg[order[:k]] = 1.0
                worst = max(worst, _tv(s_served + sg * c, s_served))
        assert worst <= b, (conc, scale, worst, b)


def test_equal_radii_on_a_diffuse_row_give_tanh_half():
    """With one radius and a finely divisible ``p'`` the supremum is ``tanh(c/2)``: the bound is at
    or above it, and within a few percent."""
    p = np.full(1000, 1e-3)
    for cval in (1e-3, 0.1, 1.0):
        c = np.full(1000, cval)
        b = _bound(p, c)
        assert math.tanh(cval / 2) <= b <= math.tanh(cval / 2) * 1.05


def test_a_dominant_key_is_not_split_between_the_sides():
    """An attention sink (``p' = 1 - 1e-4``): the exact supremum is about the other keys' mass times
    their radius; the pooled relaxation alone would give ``tanh(c/2)``."""
    p = np.array([1 - 1e-4] + [1e-4 / 9] * 9)
    c = np.full(10, 0.5)
    exact = sup_tv_vertices(list(p), list(c))
    b = _bound(p, c)
    assert exact <= b <= 3 * exact < math.tanh(0.25) / 100


def test_float_allowance_and_padding():
    """Keys a row does not see (``p' = c = 0``) change nothing; a row with no radius bounds exactly 0
    (the tanh cap); shapes are kept."""
    rng = np.random.default_rng(3)
    p, c = _instance(rng, 20, 0.5, 0.1)
    padded_p = np.concatenate([p, np.zeros(30)])
    padded_c = np.concatenate([c, np.zeros(30)])
    assert _bound(padded_p, padded_c) == pytest.approx(_bound(p, c), rel=1e-6)
    assert _bound(p, np.zeros(20)) == 0.0  # capped by tanh(0): nothing can move
    out = box_sup_bound(torch.rand(2, 3, 4, 5, dtype=torch.float64).softmax(-1), torch.rand(2, 3, 4, 5, dtype=torch.float64))
    assert out.shape == (2, 3, 4)
    with pytest.raises(ValueError, match="differ in shape"):
        box_sup_bound(torch.zeros(2, 3), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="buckets"):
        BoxSupSpec(buckets=0)


def test_real_smollm2_run_never_beats_the_box_sup(smollm2):
    """A real int4 run: every row's realized TV is below its box bound, the layer bound is below
    the centred one, and derivation claims it (dense KV: box_banded_claim states it) with a Coq
    theorem of the box shape."""
    from witprobe.certify.derive import derive
    from witprobe.certify.measure import MeasureConfig, measure

    run = measure(smollm2, MeasureConfig(codec="int4", max_new_tokens=3, reference=False,
                                         prompts=("Explain how attention works in two sentences.",))).to_json()
    for layer in run["layers"]:
        read = layer["read"]
        assert read["rows_boxsup_beaten"] == 0
        assert read["boxsup_bound"]["max"] >= read["tv_realized"]["max"] > 0
        assert read["boxsup_bound"]["min"] >= 0
    d = derive(run)
    assert not d.failures, d.failures
    attn = [c for c in d.claims if c.kind == "attn_tv"]
    assert len(attn) == 30
    shapes = {t.claim_id: t.shape for t in d.theorems}
    for claim in attn:
        box = claim.forms["boxsup"]
        assert not box.beaten and not box.reason and box.bound >= claim.realized_max > 0
        assert claim.forms["centred"].bound >= box.bound
        assert claim.value == min(f.bound for f in claim.forms.values() if f.bound is not None and not f.vacuous)
        if claim.form == "boxsup":
            assert shapes[claim.id] == "boxsup"
    assert sum(c.form == "boxsup" for c in attn) >= 25  # the box bound is the tightest nearly everywhere


def test_radii_whose_exponential_overflows_give_the_centred_cap_not_nan():
    """A key of radius 800 (``e^800`` overflows float64) with a tiny served mass: ``Z_hi`` is
    infinite, so the grid cannot be built; the bound is the centred cap ``tanh(c_max/2)``, finite
    (a NaN here once stopped the meter on adversarial keys, ``test_trust_boundary``)."""
    p = torch.tensor([[2.9e-49, 0.5, 0.5 - 2.9e-49]], dtype=torch.float64)
    c = torch.tensor([[800.0, 1e-4, 2e-4]], dtype=torch.float64)
    b = box_sup_bound(p, c)
    assert torch.isfinite(b).all()
    assert float(b[0]) == pytest.approx(math.tanh(800 * (1 + 2**-30) / 2), abs=1e-12)
