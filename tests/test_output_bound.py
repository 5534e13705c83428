"""The values' effect: the attention-output bound and the output-projection bound, against reality."""

from __future__ import annotations

import copy
import io
import json
from contextlib import redirect_stdout
from fractions import Fraction

import pytest
import torch

from witprobe.calculus.opnorm import spectral_norm_upper, sqrt_up
from witprobe.certify.derive import DeriveError, derive
from witprobe.probe.meters import output_rows


@pytest.mark.parametrize("shape", [(1, 7), (7, 1), (5, 3), (64, 64), (96, 40)])
def test_spectral_norm_upper_is_above_sigma_max_and_close(shape):
    g = torch.Generator().manual_seed(sum(shape))
    for a in (torch.randn(*shape, generator=g, dtype=torch.float64),
              torch.outer(torch.randn(shape[0], generator=g, dtype=torch.float64),
                          torch.randn(shape[1], generator=g, dtype=torch.float64)),  # rank 1: exact
              torch.randn(*shape, generator=g, dtype=torch.float64) * torch.logspace(-6, 3, shape[1], dtype=torch.float64)):
        b = spectral_norm_upper(a)
        sigma = Fraction(float(torch.linalg.svdvals(a)[0]))
        assert b.upper >= sigma * (1 - Fraction(1, 10**12))
        assert b.upper <= sigma * Fraction(13, 10), (shape, float(b.upper), float(sigma))
        assert b.frobenius_upper >= b.upper * (1 - Fraction(1, 10**9))


def test_sqrt_up_is_verified_exactly():
    for x in (Fraction(2), Fraction(1, 3), Fraction(10**30 + 1, 7)):
        r = sqrt_up(x)
        assert r * r >= x and r <= (1 + Fraction(1, 2**39)) * Fraction(float(x) ** 0.5)


def _case(seed: int, b=1, h=3, q=5, t=11, d=8, noise=0.3, logit=3.0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    s = r(b, h, q, t) * logit
    s_served = s + noise * r(b, h, q, t)
    vis = torch.ones(b, h, q, t, dtype=torch.bool)
    vis[..., -2:] = torch.rand(b, h, q, 2, generator=g) > 0.5
    neg = torch.full_like(s, float("-inf"))
    p = torch.softmax(torch.where(vis, s, neg), -1)
    ps = torch.softmax(torch.where(vis, s_served, neg), -1)
    ve = r(b, h, t, d) * 2 + 5  # off-centre values: the centring matters
    vs = ve + noise * r(b, h, t, d)
    w = (ve - vs).norm(dim=-1) * (1 + torch.rand(b, h, t, generator=g, dtype=torch.float64))  # W >= ||dv||
    tv = 0.5 * (p - ps).abs().sum(-1)
    return p, ps, vis, ve, vs, w, tv


@pytest.mark.parametrize("seed", range(12))
def test_output_bound_holds_per_row_with_the_exact_tv_and_after_a_projection(seed):
    p, ps, vis, ve, vs, w, tv = _case(seed, noise=0.05 + 0.1 * seed, logit=1 + seed)
    wo = torch.randn(6, 3 * 8, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    sigma = float(spectral_norm_upper(wo).upper)
    out = output_rows(p, ps, vis, ve, vs, w, tv, wo, sigma)
    assert bool((out.err <= out.bound * (1 + 1e-12)).all())
    assert bool((out.proj_err <= out.proj_bound * (1 + 1e-12)).all())
    # the bound is met with equality in its parts: with exact values it is 2 TV spread
    assert bool((out.bound >= out.value_term).all()) and bool((out.spread > 0).all())


def test_exact_values_leave_only_the_distribution_term():
    p, ps, vis, ve, _, _, tv = _case(3)
    out = output_rows(p, ps, vis, ve, ve, torch.zeros(ve.shape[:-1], dtype=torch.float64), tv)
    assert float(out.value_term.abs().max()) == 0.0
    assert bool((out.err <= out.bound * (1 + 1e-12)).all())


@pytest.fixture(scope="module")
def int4_run(tmp_path_factory, smollm2):
    from witprobe.certify.cli import main

    out = tmp_path_factory.mktemp("out") / "int4"
    with redirect_stdout(io.StringIO()) as buf:
        code = main(["run", "--codec", "int4", "--max-new-tokens", "3", "--e2e-tv-tol", "1", "--coq", "off",
                     "--lean", "off", "--quiet", "--out", str(out), "--prompt",
                     "Explain how a transformer model uses attention to process text, step by step."])
    return out, code, buf.getvalue()


@pytest.mark.slow
def test_int4_values_compressed_no_output_bound_is_beaten_on_any_layer(int4_run):
    out, code, text = int4_run
    assert code == 0, text
    cert = json.loads((out / "certificate.json").read_text())
    outs = [c for c in cert["claims"] if c["kind"] == "attn_out"]
    projs = [c for c in cert["claims"] if c["kind"] == "attn_out_proj"]
    assert len(outs) == len(projs) == 30
    for c in outs + projs:
        assert c["tier"] == "empirical"
        assert Fraction(c["bound"]["exact"]) >= Fraction(c["extra"]["realized_err_max"]) > 0
    assert all(float(c["extra"]["value_term"]) > 0 for c in outs)  # values were compressed
    assert cert["self_checks"]["rows_out_beaten"]["count"] == 0
    assert cert["self_checks"]["rows_out_proj_beaten"]["count"] == 0
    assert "attention output ||y - y_hat||" in text
    s = cert["summary"]
    assert {b["kind"] for b in s["bounded"]} >= {"attn_tv", "attn_out", "attn_out_proj"}


@pytest.mark.slow
def test_derive_fails_when_the_realized_output_error_beats_the_bound(int4_run):
    out, _, _ = int4_run
    run = json.loads((out / "run.json").read_text())
    assert derive(run).failures == []
    bad = copy.deepcopy(run)
    bad["layers"][5]["read"]["out_err"]["max"] = 1e6
    assert any("layer 5" in f and "attn_out bound" in f for f in derive(bad).failures)
    bad = copy.deepcopy(run)
    bad["layers"][6]["read"]["out_proj_err"]["max"] = 1e9
    assert any("layer 6" in f and "attn_out_proj bound" in f for f in derive(bad).failures)
    bad = copy.deepcopy(run)
    del bad["layers"][7]["read"]["rows_out_beaten"]
    assert any("layer 7" in f and "rows_out_beaten" in f for f in derive(bad).failures)
    bad = copy.deepcopy(run)
    for k in [k for k in bad["layers"][8]["read"] if k.startswith("out_") or k.startswith("rows_out")]:
        del bad["layers"][8]["read"][k]
    assert any("layer 8" in f and "output meter" in f for f in derive(bad).failures)


def test_the_value_witness_enters_the_spread_on_an_adversarial_read():
    """Served values all equal, the exact value differs only on the key p' ignores: without W in the
    spread the bound would be 0 while the error is ||v_1||."""
    a = 3.0
    p = torch.tensor([0.0, 1.0], dtype=torch.float64).reshape(1, 1, 1, 2)
    ps = torch.tensor([1.0, 0.0], dtype=torch.float64).reshape(1, 1, 1, 2)
    ve = torch.tensor([[0.0, 0.0], [a, 0.0]], dtype=torch.float64).reshape(1, 1, 2, 2)
    vs = torch.zeros_like(ve)
    w = torch.tensor([0.0, a], dtype=torch.float64).reshape(1, 1, 2)
    vis = torch.ones(1, 1, 1, 2, dtype=torch.bool)
    out = output_rows(p, ps, vis, ve, vs, w, torch.ones(1, 1, 1, dtype=torch.float64))
    assert float(out.err) == pytest.approx(a)
    assert float(out.err) <= float(out.bound)


def _committed_dense_run() -> tuple[dict, int]:
    """The committed qwen3 int8 run (schema /3: output meter, ``o_proj`` recorded) and a dense layer."""
    from pathlib import Path

    run = json.loads((Path(__file__).resolve().parents[1] / "artifacts" / "coverage" / "qwen3-int8" / "run.json")
                     .read_text())
    i = next(j for j, layer in enumerate(run["layers"]) if layer["memory_class"] == "dense_kv")
    assert run["layers"][i]["read"]["out_rows"] and isinstance(run["layers"][i].get("o_proj"), dict)
    return run, i


def test_the_output_claims_of_a_committed_run_split_into_their_printed_terms():
    """Both output claims of a dense layer hold over the realized maximum, and the printed split of
    each bound (``2 B' S`` and ``E``, times ``sigma_up`` after ``W_o``; 6 decimals, rounded up)
    adds up to it. Derivation only: no model (the SmolLM2 run above checks a live one)."""
    run, i = _committed_dense_run()
    d = derive(run)
    assert d.failures == []
    out, proj = (next(c for c in d.claims if c.id == f"L{i:02d}.{k}") for k in ("attn_out", "attn_out_proj"))
    for c in (out, proj):
        assert c.value >= Fraction(c.realized_max) > 0 and not c.vacuous
        terms = Fraction(c.extra["tv_term"]) + Fraction(c.extra["value_term"])
        assert c.value <= terms <= c.value + Fraction(2, 10**6), c.id
        assert all(len(c.extra[k].split(".")[1]) == 6 for k in ("tv_term", "value_term", "tv_bound_used"))
    read = run["layers"][i]["read"]
    assert (out.extra["realized_err_mean"], proj.extra["realized_err_mean"]) == (read["out_err"]["mean"],
                                                                                read["out_proj_err"]["mean"])


def test_a_run_before_the_output_meter_claims_no_output_bound_and_needs_none():
    """Runs of a schema without the attention-output meter (``witprobe-run/2``) are derived without
    output claims; only a schema that carries the meter fails closed when it recorded no rows."""
    run, i = _committed_dense_run()
    run["schema"] = "witprobe-run/2"
    for layer in run["layers"]:
        layer.pop("o_proj", None)
        for k in [k for k in layer["read"] if k.startswith(("out_", "rows_out"))]:
            del layer["read"][k]
    d = derive(run)
    assert d.failures == [] and not [c for c in d.claims if c.kind in ("attn_out", "attn_out_proj")]


@pytest.mark.parametrize("change, message", [
    (lambda L: [L["read"].pop(k) for k in list(L["read"]) if k.startswith(("out_", "rows_out"))],
     "the attention-output meter recorded no rows (fail closed)"),
    (lambda L: L["o_proj"].update(opnorm_upper="1.92e"),
     "o_proj.opnorm_upper is missing or not an exact rational (fail closed)"),
    (lambda L: L["o_proj"].update(opnorm_upper="0/1"), "o_proj.opnorm_upper must be positive (fail closed)"),
    (lambda L: L["read"]["out_err"].update(max=1e6), "attn_out bound"),
    (lambda L: L["read"]["out_proj_err"].update(max=1e9), "attn_out_proj bound"),
    (lambda L: L["read"].pop("rows_out_proj_beaten"),
     "self-check counter rows_out_proj_beaten is missing (fail closed)"),
])
def test_a_broken_output_record_fails_the_layer(change, message):
    run, i = _committed_dense_run()
    change(run["layers"][i])
    assert any(f.startswith(f"layer {i}: ") and message in f for f in derive(run).failures), derive(run).failures


@pytest.mark.parametrize("change, message", [
    (lambda L: L["o_proj"].pop("opnorm_upper"), r"o_proj\.opnorm_upper: missing"),
    (lambda L: L["o_proj"].update(opnorm_upper=1.92), r"o_proj\.opnorm_upper: expected a string"),
])
def test_an_output_projection_record_of_the_wrong_type_is_refused(change, message):
    run, i = _committed_dense_run()
    change(run["layers"][i])
    with pytest.raises(DeriveError, match=message):
        derive(run)


@pytest.mark.parametrize("key", ["out_spread", "out_value_term", "out_err", "out_spread_l2", "out_value_l2",
                                 "out_proj_err"])
def test_an_output_statistic_without_a_maximum_fails_closed(key):
    run, i = _committed_dense_run()
    run["layers"][i]["read"][key]["max"] = None
    with pytest.raises(ValueError, match=rf"statistic '{key}' has no maximum although output rows were read"):
        derive(run)
