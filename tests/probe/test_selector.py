"""Learned sparse selector (DeepSeek-V3.2 DSA) on a real transformers model: the Select operator."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from witprobe.calculus import bridges
from witprobe.calculus.chains import ReadMaxima, read_chain
from witprobe.calculus.contracts import Chain, MetricMismatch, parallel
from witprobe.calculus.tiers import Tier
from witprobe.certify.derive import derive
from witprobe.certify.measure import MeasureConfig, measure
from witprobe.models.loaded import LoadedModel
from witprobe.kinds.layouts import layer_kinds
from witprobe.probe.selector import selection_rows


@pytest.fixture(scope="module")
def tiny_dsa(smollm2):
    from transformers import DeepseekV32Config, DeepseekV32ForCausalLM

    torch.manual_seed(0)
    cfg = DeepseekV32Config(
        vocab_size=49152, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=32, q_lora_rank=32, qk_rope_head_dim=8,
        qk_nope_head_dim=16, v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
        n_group=1, topk_group=1, first_k_dense_replace=1, index_n_heads=2, index_head_dim=16, index_topk=8,
        max_position_embeddings=512,
    )
    model = DeepseekV32ForCausalLM(cfg).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_b_proj.weight.mul_(6)
            layer.self_attn.indexer.wq_b.weight.mul_(4)
    return LoadedModel("tiny-dsa", model, smollm2.tokenizer, {"model": "tiny DeepSeek-V3.2 (random, seed 0)"})


@pytest.fixture(scope="module", params=["int8", "int2"])
def dsa_run(request, tiny_dsa):
    cfg = MeasureConfig(model="tiny-dsa", codec=request.param, bands=4, max_new_tokens=6,
                        prompts=("The capital of France is a city that many people visit every year.",), reference=False)
    return request.param, measure(tiny_dsa, cfg).to_json()


def test_layout_is_latent_indexed(tiny_dsa):
    assert layer_kinds(tiny_dsa.model.config) == ["latent_indexed", "latent_indexed"]


def test_selection_meters_run_and_every_self_check_is_zero(dsa_run):
    codec, run = dsa_run
    d = derive(run)
    assert d.failures == [], d.failures
    assert all(v == 0 for v in d.self_checks.values()), {k: v for k, v in d.self_checks.items() if v}
    assert d.self_checks["indexer_recon_mismatch"] == 0
    sel = [c for c in d.claims if c.kind == "selection"]
    tot = [c for c in d.claims if c.kind == "attn_tv_total"]
    assert len(sel) == 2 and len(tot) == 2
    for c in sel:
        assert c.extra["rows"] > 0, "selection must really happen (more candidates than top-k)"
        assert c.registered_tier is Tier.CERTIFIED
        assert float(c.value) >= c.realized_max  # witness bound on swapped selector mass holds
    for c in tot:
        assert c.registered_tier is Tier.EMPIRICAL  # the rho bridge is a measurement
        assert c.extra["rho_tail"] > 0


def test_coarse_codec_changes_selections_the_witness_does_not_certify(dsa_run):
    codec, run = dsa_run
    d = derive(run)
    sel = [c for c in d.claims if c.kind == "selection"]
    shares = [c.extra["certified_rows_share"] for c in sel]
    if codec == "int8":
        assert min(shares) > 0.5
    else:  # 2-bit indexer keys: many rows lose their certificate, and some selections really change
        assert min(shares) < 1.0
        assert max(c.extra["changed_rows_share"] for c in sel) > 0


def test_selection_stage_cannot_be_added_to_attention_tv_without_the_empirical_bridge():
    """Regression: selector-score mass must never be typed as attention TV."""
    inp = ReadMaxima(Fraction(2), Fraction(1, 10), Fraction(1, 20), Fraction(1, 30))
    attn = read_chain("centred", inp).evaluate(0)
    selection = Chain.start(bridges.selection_contract(Fraction(1, 100))).evaluate(0)
    with pytest.raises(MetricMismatch, match="selector_dist:tv@select"):
        parallel(attn, selection)
    with pytest.raises(MetricMismatch):
        Chain.start(bridges.selection_contract(Fraction(1, 100))).then(bridges.osc_bridge())
    bridged = Chain.start(bridges.selection_contract(Fraction(1, 100))).then(
        bridges.selector_to_attention(Fraction(218, 100), measured_on="a", applied_to="b")).evaluate(0)
    total = parallel(attn, bridged)
    assert total.tier is Tier.EMPIRICAL
    assert total.bound == attn.bound + bridged.bound


def test_witness_certificate_and_mass_bounds_on_hand_built_scores():
    # one row, five candidates, top-2; radii small except around the boundary
    served = torch.tensor([[[5.0, 3.0, 2.9, 1.0, 0.0]]], dtype=torch.float64)
    valid = torch.ones_like(served, dtype=torch.bool)
    eps = torch.full_like(served, 0.01)
    rows = selection_rows(served, served.clone(), eps, valid, 2)
    assert bool(rows.cert_witness) and float(rows.m_in_bound) == 0.0  # gap 0.1 > 2*0.01
    eps = torch.full_like(served, 0.2)
    exact = served + torch.tensor([[[0.0, -0.2, 0.2, 0.0, 0.0]]], dtype=torch.float64)  # swaps 3.0 and 2.9
    rows = selection_rows(served, exact, eps, valid, 2)
    assert not bool(rows.cert_witness) and bool(rows.changed)
    assert float(rows.m_in) <= float(rows.m_in_bound) and float(rows.m_out) <= float(rows.m_out_bound)
    assert float(rows.m_in) > 0 and float(rows.m_out) > 0


def test_unobserved_reference_generation_does_not_touch_the_meters(tiny_dsa):
    """Regression: hooks stay installed during the uncompressed reference run and must ignore it."""
    base = dict(model="tiny-dsa", codec="int8", bands=4, max_new_tokens=4, prompts=("The capital of France is",))
    a = measure(tiny_dsa, MeasureConfig(**base, reference=False)).to_json()
    b = measure(tiny_dsa, MeasureConfig(**base, reference=True)).to_json()
    for la, lb in zip(a["layers"], b["layers"]):
        assert la["read"] == lb["read"] and la["write"] == lb["write"]
