"""Observer fault tests: a lying witness, a lying selector, a broken pooling gate, bad reads.

Each soundness counter of the observer is driven by the way its failure happens in practice (a
layer or meter that under- or over-reports) and must count; the healthy twin must count 0. These
tests fail if a counter is wired to count nothing (the mutation an outside review found no test
for), if the comparison behind it is inverted, or if the observer accepts an unattributable read.
No model: a real :class:`WitnessCache` with a real codec, driven through the registered
attention function exactly as transformers calls it.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import witprobe.probe.witness_cache as wc
from witprobe.memory.codecs import make_codec
from witprobe.probe.accumulators import Accumulator
from witprobe.probe.meters import WitnessBatch, read_rows_from_scores
from witprobe.probe.attention import witprobe_attention
from witprobe.probe.errors import ObserverError
from witprobe.probe.observer import BEATEN_ABS_TOL, BEATEN_REL_TOL, Observer
from witprobe.probe.selector import fold_selection, selection_rows
from witprobe.probe.witness_cache import ReadScores, WitnessCache

BANDS = 4
HEADS, KV_HEADS, DIM, TOKENS = 4, 2, 16, 12
FORMS = ("plain", "centred", "eform")


class Attn(nn.Module):
    """The two attributes transformers' attention modules carry that the observer reads."""

    def __init__(self, layer_idx: int | None = 0) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_key_value_groups = HEADS // KV_HEADS


def _serve(codec: str = "int4", scale_q: float = 4.0, seed: int = 0) -> dict:
    """One prefill write of TOKENS entries and one causal read of every row; the observer snapshot."""
    g = torch.Generator().manual_seed(seed)
    c = make_codec(codec, BANDS)
    obs = Observer(1)
    cache = obs.attach(WitnessCache.for_dense_kv(1, c, c, BANDS, obs))
    k = torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g)
    v = torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g)
    keys, values = cache.layers[0].update(k, v)
    q = scale_q * torch.randn(1, HEADS, TOKENS, DIM, generator=g)
    mask = torch.full((1, 1, TOKENS, TOKENS), torch.finfo(torch.float32).min).triu(1)
    with torch.no_grad(), obs.active():
        witprobe_attention(Attn(), q, keys, values, mask, scaling=DIM ** -0.5)
    snap = obs.snapshot()
    return {"write": snap["write"][0], "read": snap["read"][0]}


def _scaled_witness(factor: float):
    """``band_witness`` of a layer that records ``factor`` times the true band residual norms."""
    real = wc.band_witness

    def lying(x, x_hat, bands):
        w = real(x, x_hat, bands)
        return WitnessBatch(w.band_norms * factor, w.witness * factor, w.residual, w.x_norm)

    return lying


def test_a_healthy_layer_counts_no_violation_and_no_beaten_row():
    s = _serve()
    assert s["read"]["rows"] == HEADS * TOKENS
    assert s["read"]["tv_realized"]["max"] > 0  # int4 really perturbs the read
    for t in ("key", "value"):
        assert s["write"][f"{t}_viol_witness_below_residual"] == 0
        assert s["write"][f"{t}_viol_witness_above_sqrt_bands"] == 0
    for form in FORMS:
        assert s["read"][f"rows_{form}_beaten"] == 0
        assert s["read"][f"{form}_bound"]["min"] >= 0
    assert 0 <= s["read"]["rows_best_vacuous"] <= min(s["read"][f"rows_{f}_vacuous"] for f in FORMS)
    # the magnitudes the float64 error analysis of derive needs (missing ones fail derive closed)
    assert s["read"]["fp_width"]["max"] == DIM
    assert s["read"]["keys_visible"]["max"] == TOKENS and s["read"]["keys_visible"]["min"] == 1
    assert s["read"]["score_err"]["max"] > 0 and s["read"]["score_abs_max"]["max"] > 0


def test_a_witness_that_reports_no_error_is_caught_on_the_write_and_on_every_form(monkeypatch):
    """W = 0 while ||Delta|| > 0: the triangle check counts every entry, and every bound (0) is
    beaten by the realized TV on the rows the perturbation moved."""
    monkeypatch.setattr(wc, "band_witness", _scaled_witness(0.0))
    s = _serve()
    nonzero = s["write"]["key_residual"]["n"] - s["write"]["key_zero_residual"]
    assert nonzero > 0
    assert s["write"]["key_viol_witness_below_residual"] == nonzero
    assert s["write"]["key_viol_witness_above_sqrt_bands"] == 0
    moved = s["read"]["rows"]  # every causal row past the first sees a perturbed key
    for form in FORMS:
        assert 0 < s["read"][f"rows_{form}_beaten"] <= moved, form


def test_an_under_reported_witness_is_caught_before_it_is_zero(monkeypatch):
    """A witness at 40% of the truth: below ``||Delta||`` on every entry with a residual
    (``sum_b ||Delta_b|| <= sqrt(bands) ||Delta||`` so ``0.4 W <= 0.8 ||Delta||``)."""
    monkeypatch.setattr(wc, "band_witness", _scaled_witness(0.4))
    s = _serve()
    nonzero = s["write"]["key_residual"]["n"] - s["write"]["key_zero_residual"]
    assert s["write"]["key_viol_witness_below_residual"] == nonzero > 0


def test_an_over_reported_witness_breaks_cauchy_schwarz_but_beats_no_bound(monkeypatch):
    monkeypatch.setattr(wc, "band_witness", _scaled_witness(2.5))  # 2.5 W >= 2.5 ||Delta|| > sqrt(4) ||Delta||
    s = _serve()
    nonzero = s["write"]["key_residual"]["n"] - s["write"]["key_zero_residual"]
    assert s["write"]["key_viol_witness_above_sqrt_bands"] == nonzero > 0
    assert s["write"]["key_viol_witness_below_residual"] == 0
    assert all(s["read"][f"rows_{form}_beaten"] == 0 for form in FORMS)  # a larger witness stays sound


def test_a_lying_selection_radius_counts_flips_inside_the_certified_region():
    """Radii of 0 'certify' every selection; where the exact top-k differs, the flip and the
    swapped-mass self-checks must count (and with honest radii they must not)."""
    g = torch.Generator().manual_seed(3)
    exact = torch.randn(1, 6, 10, generator=g, dtype=torch.float64)
    served = exact + 0.5 * torch.randn(1, 6, 10, generator=g, dtype=torch.float64)
    valid = torch.ones_like(exact, dtype=torch.bool)
    k = 3
    lying = selection_rows(served, exact, torch.zeros_like(served), valid, k)
    assert bool(lying.cert_witness.all()) and bool(lying.changed.any())
    acc = Accumulator()
    fold_selection(acc, lying, torch.zeros(1, 6, dtype=torch.bool))
    out = acc.finalize()
    assert out["sel_flip_in_witness_cert"] == int(lying.changed.sum()) > 0
    assert out["sel_mass_bound_beaten"] > 0
    honest_eps = (served - exact).abs().amax(-1, keepdim=True).expand_as(served).contiguous()
    honest = selection_rows(served, exact, honest_eps, valid, k)
    acc = Accumulator()
    fold_selection(acc, honest, torch.ones(1, 6, dtype=torch.bool))
    out = acc.finalize()
    assert out["sel_flip_in_witness_cert"] == 0 and out["sel_mass_bound_beaten"] == 0
    assert out["indexer_recon_mismatch"] == 6  # the mismatch flags are counted as given


def test_the_end_to_end_total_beaten_on_a_certified_selection_counts():
    """A certified row whose served support misses an exact key: the storage bound (here 0, no
    residual) cannot cover the end-to-end TV, and the observer must say so."""
    b, h, q, t = 1, 2, 3, 6
    s = torch.randn(b, h, q, t, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    served_vis = torch.ones(b, h, q, t, dtype=torch.bool)
    served_vis[..., 0] = False  # the served selection dropped key 0 ...
    exact_vis = torch.ones_like(served_vis)  # ... which the exact selection keeps
    comp = wc.ScoreComponent(torch.zeros(b, h, q, 1, dtype=torch.float64), torch.zeros(b, h, t, 1, dtype=torch.float64))
    facts = {"cert": torch.ones(b, q, dtype=torch.bool), "m_sel": torch.full((b, q), 0.1, dtype=torch.float64),
             "b_S": torch.zeros(b, q, dtype=torch.float64)}
    inputs = ReadScores(s, s, served_vis, [comp], visible_exact=exact_vis, visible_full=exact_vis, row_facts=facts)
    rows = read_rows_from_scores(s, s, served_vis, [comp], 1.0)
    acc = Accumulator()
    Observer._fold_sparse(acc, inputs, rows)
    out = acc.finalize()
    assert out["rows_total_beaten_on_certified"] == b * h * q
    facts["cert"] = torch.zeros(b, q, dtype=torch.bool)  # uncertified rows are not self-check failures
    acc = Accumulator()
    Observer._fold_sparse(acc, inputs, rows)
    assert acc.finalize()["rows_total_beaten_on_certified"] == 0


def test_a_pooling_gate_whose_weights_do_not_sum_to_one_is_flagged():
    obs = Observer(1)
    slots = 4
    softmax = torch.softmax(torch.randn(1, 3, slots, 8, generator=torch.Generator().manual_seed(1)), dim=2)
    obs.record_pooling(0, "entry", softmax)
    assert obs.snapshot()["write"][0]["entry_pool_viol"] == 0  # max of a convex combination >= 1/B
    obs.record_pooling(0, "entry", torch.full((1, 3, slots, 8), 0.1))  # 0.1 < 1/4: not a distribution
    out = obs.snapshot()["write"][0]
    assert out["entry_pool_viol"] == 3 * 8
    assert out["entry_pool_windows"] == 2 * 3


def test_reads_the_observer_cannot_attribute_fail_closed():
    c = make_codec("int8", BANDS)
    obs = Observer(1)
    q = torch.randn(1, HEADS, 2, DIM)
    k = torch.randn(1, KV_HEADS, 2, DIM)
    with pytest.raises(ObserverError, match="no witness cache"):
        with obs.active():
            pass
    with pytest.raises(ObserverError, match="no witness cache"):
        obs.observe_read(Attn(), q, k, None, 1.0)
    cache = obs.attach(WitnessCache.for_dense_kv(1, c, c, BANDS, obs))
    keys, values = cache.layers[0].update(k, torch.randn_like(k))
    with obs.active():
        with pytest.raises(ObserverError, match="no valid layer_idx"):
            witprobe_attention(Attn(layer_idx=None), q, keys, values, None)
        with pytest.raises(ObserverError, match="no valid layer_idx"):
            witprobe_attention(Attn(layer_idx=1), q, keys, values, None)
        with pytest.raises(ObserverError, match="not the served keys"):
            witprobe_attention(Attn(), q, keys.clone(), values, None)  # keys the cache did not serve
        with pytest.raises(ObserverError, match="softcap"):
            witprobe_attention(Attn(), q, keys, values, None, softcap=30.0)
    assert obs.snapshot()["read"][0].get("rows", 0) == 0  # nothing half-counted


def test_an_observer_that_is_not_active_meters_nothing():
    c = make_codec("int8", BANDS)
    obs = Observer(1)
    cache = obs.attach(WitnessCache.for_dense_kv(1, c, c, BANDS, obs))
    k = torch.randn(1, KV_HEADS, 3, DIM)
    keys, values = cache.layers[0].update(k, torch.randn_like(k))
    out, w = witprobe_attention(Attn(), torch.randn(1, HEADS, 3, DIM), keys, values, None)
    assert out.shape == (1, 3, HEADS, DIM) and torch.allclose(w.sum(-1), torch.ones(1, HEADS, 3))
    assert obs.snapshot()["read"][0] == {}
    assert not obs.is_active


@pytest.mark.parametrize("codec", ["int8", "int2", "fp8-e4m3", "mant16"])
def test_row_chunking_does_not_change_what_is_counted(codec):
    """Rows metered in chunks of 5 fold to the same counts and maxima as rows metered at once."""
    whole = _serve(codec, seed=2)
    g = torch.Generator().manual_seed(2)
    c = make_codec(codec, BANDS)
    obs = Observer(1, row_chunk=5)
    cache = obs.attach(WitnessCache.for_dense_kv(1, c, c, BANDS, obs))
    k = torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g)
    v = torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g)
    keys, values = cache.layers[0].update(k, v)
    q = 4.0 * torch.randn(1, HEADS, TOKENS, DIM, generator=g)
    mask = torch.full((1, 1, TOKENS, TOKENS), torch.finfo(torch.float32).min).triu(1)
    with torch.no_grad(), obs.active():
        witprobe_attention(Attn(), q, keys, values, mask, scaling=DIM ** -0.5)
    chunked = obs.snapshot()["read"][0]
    for key in ("rows", *(f"rows_{f}_beaten" for f in FORMS), *(f"rows_{f}_vacuous" for f in FORMS)):
        assert chunked[key] == whole["read"][key], key
    for key in ("tv_realized", "c_max", "w_max", "eform_excess"):
        assert math.isclose(chunked[key]["max"], whole["read"][key]["max"], rel_tol=1e-12), key


def test_the_dense_layer_read_is_the_reference_meter_bit_for_bit():
    """What production meters (the witness layer's read inputs, then the row meter) equals
    :func:`witprobe.probe.meters.read_rows`, the tested torch reference, exactly."""
    from witprobe.probe.meters import read_rows

    g = torch.Generator().manual_seed(4)
    c = make_codec("int4", BANDS)
    obs = Observer(1)
    cache = obs.attach(WitnessCache.for_dense_kv(1, c, c, BANDS, obs))
    layer = cache.layers[0]
    keys, _ = layer.update(torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g), torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g))
    q = 4.0 * torch.randn(1, HEADS, TOKENS, DIM, generator=g)
    mask = torch.full((1, 1, TOKENS, TOKENS), torch.finfo(torch.float32).min).triu(1)
    inputs = layer.read_scores(Attn(), q, keys, mask, scaling=DIM ** -0.5)
    served = read_rows_from_scores(inputs.s_exact, inputs.s_served, inputs.visible, inputs.components, DIM ** -0.5,
                                   inputs.score_err)
    ref = read_rows(q, layer.exact_keys, keys, layer.key_band_norms, mask, DIM ** -0.5, HEADS // KV_HEADS)
    for name in ("tv_realized", "q_coef", "w_max", "c_max", "eform_excess", "plain_bound", "centred_bound",
                 "eform_bound", "score_err", "score_abs_max", "keys"):
        assert torch.equal(getattr(served, name), getattr(ref, name)), name


def test_a_sink_column_is_visible_exact_and_carries_no_score_error():
    """with_sinks appends the per-head sink logit to both score sets, visible, with error 0 and
    a zero residual band: every per-row tensor gains exactly one column."""
    from witprobe.probe.observer import with_sinks

    b, h, q, t, nb = 1, 2, 3, 5, 4
    g = torch.Generator().manual_seed(6)
    s = torch.randn(b, h, q, t, dtype=torch.float64, generator=g)
    comp = wc.ScoreComponent(torch.rand(b, h, q, nb, dtype=torch.float64, generator=g),
                             torch.rand(b, h, t, nb, dtype=torch.float64, generator=g))
    inputs = ReadScores(s, s + 0.01, torch.ones(b, h, q, t, dtype=torch.bool), [comp],
                        score_err=torch.full((b, h, q, t), 1e-12, dtype=torch.float64))
    sinks = torch.tensor([0.5, -1.0])
    out = with_sinks(inputs, sinks)
    assert out.s_exact.shape == out.s_served.shape == out.visible.shape == out.score_err.shape == (b, h, q, t + 1)
    assert torch.equal(out.s_exact[..., -1], out.s_served[..., -1])
    assert torch.equal(out.s_exact[0, :, 0, -1], sinks.to(torch.float64))
    assert bool(out.visible[..., -1].all()) and bool((out.score_err[..., -1] == 0).all())
    assert out.components[0].k_band_norms.shape == (b, h, t + 1, nb)
    assert bool((out.components[0].k_band_norms[:, :, -1] == 0).all())
    rows = read_rows_from_scores(out.s_exact, out.s_served, out.visible, out.components, 1.0, out.score_err)
    assert rows.keys.max() == t + 1


def test_a_probe_runtime_for_another_layer_count_is_refused():
    from witprobe.probe.runtime import ProbeConfig, ProbeRuntime

    with pytest.raises(ObserverError, match="probe runtime has 3 layers, the observer 2"):
        Observer(2, probe=ProbeRuntime(3, ProbeConfig()))


def _tight_rows(bound: torch.Tensor, tv: torch.Tensor):
    """A row record whose every form has the bound ``bound`` (float64, as the meters produce)."""
    from types import SimpleNamespace

    z = torch.zeros_like(tv)
    return SimpleNamespace(tv_realized=tv, q_coef=z, w_max=z, c_max=z, eform_excess=z, score_err=None,
                           score_abs_max=None, keys=None, plain_bound=bound, centred_bound=bound,
                           eform_bound=bound, boxsup_bound=bound, qa_centred_bound=None)


def test_a_row_exactly_at_its_bound_is_not_beaten_and_a_bound_of_one_is_vacuous():
    """The beaten comparison tolerates rounding above the bound, never below it: a row whose
    realized TV equals its bound (0 or 1/2) or the tolerance's edge counts nothing, one above it by
    2e-7 counts once, and a bound of exactly 1 (TV <= 1 says nothing) counts as vacuous. Fails if
    the tolerance is applied the wrong way (``/ (1 + tol)``, ``1 - tol``, ``- abs_tol``), the edge
    counts (``>=``) or vacuity starts above 1."""
    edge = 0.75 * (1 + BEATEN_REL_TOL) + BEATEN_ABS_TOL
    tv = torch.tensor([0.0, 0.5, 0.25, 0.5 + 2e-7, edge], dtype=torch.float64)
    bound = torch.tensor([0.0, 0.5, 1.0, 0.5, 0.75], dtype=torch.float64)
    acc = Accumulator()
    Observer._fold_rows(acc, _tight_rows(bound, tv))
    counts = acc.finalize()
    for form in (*FORMS, "boxsup"):
        assert counts[f"rows_{form}_beaten"] == 1, form
        assert counts[f"rows_{form}_vacuous"] == 1, form
    assert counts["rows_best_vacuous"] == 1 and counts["rows"] == 5


def test_an_output_error_exactly_at_its_bound_is_not_beaten(monkeypatch):
    """The same tolerance on the attention-output meter, before and after ``W_o``: the meter's rows
    (stubbed: errors equal to their bounds or the tolerance's edge, one above by 2e-7) count
    exactly the row above."""
    import witprobe.probe.observer as observer_mod
    from types import SimpleNamespace
    from witprobe.probe.meters import OutputRows

    edge = 0.75 * (1 + BEATEN_REL_TOL) + BEATEN_ABS_TOL
    err = torch.tensor([[[0.0, 0.5, 0.5 + 2e-7, edge]]], dtype=torch.float64)  # (B, H, Q)
    bound = torch.tensor([[[0.0, 0.5, 0.5, 0.75]]], dtype=torch.float64)
    rows = OutputRows(err, bound, bound, bound, bound, bound, proj_err=err[:, 0], proj_bound=bound[:, 0])
    monkeypatch.setattr(observer_mod, "output_rows", lambda *a, **k: rows)
    acc = Accumulator()
    best = torch.ones_like(bound)
    Observer._fold_output(acc, SimpleNamespace(plain_bound=best, centred_bound=best, eform_bound=best, p_exact=None,
                                               p_served=None), None, None, None, None, None)
    counts = acc.finalize()
    assert counts["rows_out_beaten"] == 1 and counts["rows_out_proj_beaten"] == 1 and counts["out_rows"] == 4


def test_the_served_attention_reads_no_evicted_key():
    """An eviction codec on layer 0 with grouped KV heads: the prefill read (a boolean causal mask,
    nothing evicted yet) reads no future key; after the policy has run, the decode read's attention
    weights are 0 on every evicted key and renormalized over the retained ones (the mask the
    attention function derives from the layer's retained set, per query head)."""
    g = torch.Generator().manual_seed(7)
    c = make_codec("evict-streaming", BANDS)
    obs = Observer(1)
    layer = obs.attach(WitnessCache.for_dense_kv(1, c, c, BANDS, obs)).layers[0]
    prefill = 24  # more than the policy keeps (4 sinks + a window of 16)
    causal = torch.ones(prefill, prefill, dtype=torch.bool).tril()
    with torch.no_grad(), obs.active():
        keys, values = layer.update(torch.randn(1, KV_HEADS, prefill, DIM, generator=g),
                                    torch.randn(1, KV_HEADS, prefill, DIM, generator=g))
        _, w0 = witprobe_attention(Attn(0), torch.randn(1, HEADS, prefill, DIM, generator=g), keys, values,
                                   causal.expand(1, 1, -1, -1), scaling=DIM ** -0.5)
        keys, values = layer.update(torch.randn(1, KV_HEADS, 1, DIM, generator=g),
                                    torch.randn(1, KV_HEADS, 1, DIM, generator=g))  # the policy runs first
        _, w = witprobe_attention(Attn(0), torch.randn(1, HEADS, 1, DIM, generator=g), keys, values,
                                  torch.zeros(1, 1, 1, prefill + 1), scaling=DIM ** -0.5)
    assert torch.all(w0[..., ~causal] == 0)
    torch.testing.assert_close(w0.sum(-1), torch.ones(1, HEADS, prefill))
    keep = layer.served_retained(HEADS // KV_HEADS)[:, :, 0, :]  # (B, H, T)
    assert keep.shape == (1, HEADS, prefill + 1) and int((~keep).sum()) == HEADS * (prefill - 20)
    w = w[:, :, 0, :]
    assert torch.all(w[~keep] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, HEADS))


def test_the_served_attention_is_the_metered_one():
    """What the model reads (the attention function's weights) is the served distribution the meter
    bounds: masked keys get no weight, and the rows equal the meter's ``p'`` from the same scores
    (an additive mask applied the wrong way, or a mask lost, would meter one read and serve another)."""
    g = torch.Generator().manual_seed(8)
    c = make_codec("int4", BANDS)
    obs = Observer(1)
    layer = obs.attach(WitnessCache.for_dense_kv(1, c, c, BANDS, obs)).layers[0]
    keys, values = layer.update(torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g),
                                torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g))
    q = 4.0 * torch.randn(1, HEADS, TOKENS, DIM, generator=g)
    mask = torch.full((1, 1, TOKENS, TOKENS), torch.finfo(torch.float32).min).triu(1)
    with torch.no_grad(), obs.active():
        _, w = witprobe_attention(Attn(), q, keys, values, mask, scaling=DIM ** -0.5)
    inputs = layer.read_scores(Attn(), q, keys, mask, scaling=DIM ** -0.5)
    rows = read_rows_from_scores(inputs.s_exact, inputs.s_served, inputs.visible, inputs.components, DIM ** -0.5,
                                 inputs.score_err)
    assert torch.all(w[..., torch.ones(TOKENS, TOKENS, dtype=torch.bool).triu(1)] == 0)
    torch.testing.assert_close(w.to(torch.float64), rows.p_served, rtol=1e-5, atol=1e-6)


def test_the_eviction_bound_carries_the_retained_logits_error_and_the_log_sum_exp_allowance():
    """``evict_rows`` (module docstring of the eviction meter): ``log rho`` is the exact
    ``log X - log Z_R`` plus the largest float64 error of a retained logit (``Z_R`` may be
    ``e^{-err}`` too small) plus ``4 (T + 2) u (1 + |log|)`` for each of the two log-sum-exps. With
    evicted bounds equal to the retained logits (``X = Z_R``, large logits so that ``|log Z_R|``
    weighs), ``log rho`` is exactly that outward allowance; an evicted logit above its bound is a
    violation."""
    from types import SimpleNamespace

    from witprobe.probe.meters_evict import evict_rows

    t, u = 4, 2.0 ** -53
    s = torch.full((1, 1, 1, t), 50.0, dtype=torch.float64)
    retained = torch.tensor([True, True, False, False]).reshape(1, 1, 1, t)
    full = torch.ones_like(retained)
    for err in (0.0, 0.5):
        inputs = SimpleNamespace(s_exact=s, visible=retained, score_err=torch.full_like(s, err),
                                 evict=SimpleNamespace(visible_full=full, upper=s.clone()))
        ev = evict_rows(inputs)
        log_z = 50.0 + math.log(2.0)
        allowance = err + 8 * (t + 2) * u * (1 + 2 * log_z)
        assert math.log(float(ev.rho)) >= 0.99 * allowance, err
        assert float(ev.bound) >= float(ev.rho) / (1 + float(ev.rho)) and not bool(ev.upper_viol.any())
        assert float(ev.tv) == pytest.approx(0.5) and float(ev.mass) == pytest.approx(0.5)
    lying = s.clone()
    lying[..., 3] = 49.0  # an evicted logit above its stored bound
    inputs = SimpleNamespace(s_exact=s, visible=retained, score_err=None,
                             evict=SimpleNamespace(visible_full=full, upper=lying))
    assert bool(evict_rows(inputs).upper_viol.all())


def test_the_write_calls_count_each_stored_key_or_latent_once():
    """``host_write_calls`` (what :meth:`witprobe.api.ObservedRun.check_observed` compares with the
    metered reads to catch a layer the model wrote but read around the meter) starts at 0 and counts
    one per write of the key (or latent) tensor, never the values."""
    obs = Observer(2)
    assert obs.snapshot()["host_write_calls"] == [0, 0]
    x = torch.randn(1, KV_HEADS, 3, DIM)
    w = wc.band_witness(x, x + 0.01, BANDS)
    for tensor in ("key", "value", "value", "latent", "value"):
        obs.record_write(1, tensor, w, BANDS)
    assert obs.snapshot()["host_write_calls"] == [0, 2]
