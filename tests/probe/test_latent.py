"""Latent (MLA) memory on a real transformers DeepSeek-V3 model: witness, bounds, self-checks."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from witprobe.calculus import bridges
from witprobe.calculus.chains import ReadMaxima, read_chain
from witprobe.calculus.contracts import Chain, MetricMismatch
from witprobe.certify.derive import derive
from witprobe.certify.measure import MeasureConfig, measure
from witprobe.models.loaded import LoadedModel
from witprobe.probe.latent import LatentShapeError, WitnessLatentLayer
from witprobe.kinds.layouts import layer_kinds
from witprobe.probe.observer import Observer


@pytest.fixture(scope="module")
def tiny_mla(smollm2):
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    torch.manual_seed(0)
    cfg = DeepseekV3Config(
        vocab_size=49152, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=32, q_lora_rank=None, qk_rope_head_dim=8,
        qk_nope_head_dim=16, v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
        n_group=1, topk_group=1, first_k_dense_replace=1, max_position_embeddings=512,
    )
    model = DeepseekV3ForCausalLM(cfg).eval()
    with torch.no_grad():  # larger query/key weights so attention is not near-uniform
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(8)
            layer.self_attn.kv_a_proj_with_mqa.weight.mul_(2)
    return LoadedModel("tiny-mla", model, smollm2.tokenizer, {"model": "tiny DeepSeek-V3 (random, seed 0)"})


@pytest.mark.parametrize("codec", ["int8", "int4"])
def test_mla_latent_witness_bounds_hold_and_self_checks_are_zero(tiny_mla, codec):
    assert layer_kinds(tiny_mla.model.config) == ["latent", "latent"]
    cfg = MeasureConfig(model="tiny-mla", codec=codec, bands=4, max_new_tokens=6,
                        prompts=("The capital of France is", "Write a poem about the sea."), reference=False)
    run = measure(tiny_mla, cfg).to_json()
    assert [layer["memory_class"] for layer in run["layers"]] == ["latent", "latent"]
    d = derive(run)
    assert d.failures == []
    assert d.self_checks["latent_recon_mismatch"] == 0
    assert all(v == 0 for v in d.self_checks.values()), d.self_checks
    for claim in d.claims:
        assert claim.value is not None and not claim.vacuous
        assert claim.realized_max > 0
        assert float(claim.value) >= claim.realized_max
        for form in claim.forms.values():
            assert not form.beaten
    # the witness of the latent is really used: int4 residuals give larger bounds than int8
    write = run["layers"][0]["write"]
    assert write["latent_witness"]["n"] > 0 and write["rope_witness"]["n"] == write["latent_witness"]["n"]


def test_latent_layer_asserts_cached_shapes():
    obs = Observer(1)
    from witprobe.memory.codecs import BandIntCodec

    layer = WitnessLatentLayer(0, BandIntCodec(8, 4), None, 4, obs, kv_lora_rank=32, rope_dim=8)
    with pytest.raises(LatentShapeError, match="expected latent"):
        layer.update(torch.zeros(1, 4, 3, 32), torch.zeros(1, 4, 3, 8))  # expanded keys, not a latent
    with pytest.raises(LatentShapeError, match="differ from the config"):
        layer.update(torch.zeros(1, 1, 3, 16), torch.zeros(1, 1, 3, 8))


def test_latent_storage_cannot_feed_the_dense_score_bridge():
    latent_store = bridges.storage_contract(Fraction(1, 10), bridges.LATENT)
    dense_score = bridges.score_bridge(Fraction(2), bridges.DENSE_KV)
    with pytest.raises(MetricMismatch, match="latent:l2@read"):
        Chain.start(latent_store).then(dense_score)
    inp = ReadMaxima(Fraction(2), Fraction(1, 10), Fraction(1, 20), Fraction(1, 30))
    for form in ("plain", "centred", "eform"):
        assert str(read_chain(form, inp, bridges.LATENT).m_in) == "latent:l2@write"


def test_latent_layer_reads_through_the_kernel_reference(tiny_mla, monkeypatch):
    """The latent layer's radii are built by :func:`meters_latent.latent_components`, the function
    :func:`latent_witness` (the fused kernel's reference) is made of: with the layer's ``u`` band
    allowance removed, its radii equal ``latent_witness`` on the same inputs."""
    import witprobe.probe.latent as latent_mod
    from witprobe.probe.meters import component_radii
    from witprobe.probe.meters_latent import latent_components, latent_witness

    calls = []

    def spy(u_bands, q_pe_bands, lat, rope):
        calls.append((u_bands, q_pe_bands, lat, rope))
        return latent_components(u_bands, q_pe_bands, lat, rope)

    monkeypatch.setattr(latent_mod, "latent_components", spy)
    cfg = MeasureConfig(model="tiny-mla", codec="int4", bands=4, max_new_tokens=2,
                        prompts=("The capital of France is",), reference=False)
    measure(tiny_mla, cfg).to_json()
    assert len(calls) >= 2 * 2, "every latent read of both layers builds its radii through latent_components"
    u_bands, q_pe_bands, lat, rope = calls[-1]
    # a u whose band norms are u_bands: put each band's norm on its first coordinate
    b, h, q, nb = u_bands.shape
    width = 32 // nb
    u = torch.zeros(b, h, q, 32, dtype=torch.float64)
    u[..., ::width] = u_bands
    q_pe = torch.zeros(b, h, q, 8, dtype=torch.float64)
    q_pe[..., :: 8 // q_pe_bands.shape[-1]] = q_pe_bands
    ref = latent_witness(u, q_pe, lat, rope, 0.25).c
    mine = component_radii(latent_components(u_bands, q_pe_bands, lat, rope), 0.25, ref.shape)
    assert torch.allclose(mine, ref, rtol=1e-12, atol=0)
