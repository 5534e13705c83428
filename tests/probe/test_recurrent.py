"""Recurrent (KDA) state on a real transformers Kimi-Linear model: observation with channel identity."""

from __future__ import annotations

import math

import pytest
import torch

from witprobe.certify.derive import derive
from witprobe.certify.measure import MeasureConfig, measure
from witprobe.models.loaded import LoadedModel
from witprobe.kinds.layouts import layer_kinds
from witprobe.probe.recurrent import WitnessRecurrentLayer


@pytest.fixture(scope="module")
def tiny_kda(smollm2):
    from transformers import KimiLinearConfig, KimiLinearForCausalLM

    torch.manual_seed(0)
    cfg = KimiLinearConfig(
        vocab_size=49152, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=32, q_lora_rank=None, qk_rope_head_dim=8,
        qk_nope_head_dim=16, v_head_dim=16, layer_types=["linear_attention", "linear_attention", "full_attention"],
        mlp_layer_types=["dense", "dense", "dense"], num_experts=4, num_experts_per_token=2, num_shared_experts=1,
        linear_num_heads=2, linear_head_dim=16, linear_conv_kernel_dim=4, max_position_embeddings=512,
        initializer_range=0.08, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )
    return LoadedModel("tiny-kda", KimiLinearForCausalLM(cfg).eval(), smollm2.tokenizer, {})


@pytest.fixture(scope="module")
def kda_run(tiny_kda):
    cfg = MeasureConfig(model="tiny-kda", codec="int8", bands=4, max_new_tokens=5,
                        prompts=("Write a short poem about the sea and the wind.",), reference=False)
    return measure(tiny_kda, cfg).to_json()


def test_layout_has_recurrent_and_latent_layers(tiny_kda):
    assert layer_kinds(tiny_kda.model.config) == ["recurrent", "recurrent", "latent"]


def test_state_writes_are_witnessed_and_self_checks_zero(kda_run):
    d = derive(kda_run)
    assert d.failures == []
    assert all(v == 0 for v in d.self_checks.values())
    assert "state_viol_witness_below_residual" in d.self_checks
    for layer in kda_run["layers"][:2]:
        assert layer["read"]["state_writes"] > 0
        assert layer["write"]["state_witness"]["n"] > 0


def test_contraction_readings_keep_channel_identity_and_jensen_holds(kda_run):
    d = derive(kda_run)
    rec = [c for c in d.claims if c.kind == "recurrent"]
    assert len(rec) == 2
    for c in rec:
        e = c.extra
        assert c.registered_tier.value == "empirical"
        assert e["channels"] == 2 * 16  # heads x key channels, one entry per channel
        assert e["mean_log_a"] <= e["log_mean_a"] + 1e-12  # Jensen: E[log a] <= log E[a]
        assert abs(sum(e["a_histogram"]) - 1) < 1e-9
        if e["mean_log_a"] < 0:
            assert e["half_life_from_mean_log_a"] == pytest.approx(math.log(2) / -e["mean_log_a"])
            assert e["half_life_from_mean_log_a"] <= e["half_life_from_mean_a"]
        assert e["groenwall_state_error_max"] is not None and e["groenwall_state_error_max"] >= 0
    # the MLA layer of the hybrid still gets its certified-form bound
    attn = [c for c in d.claims if c.kind == "attn_tv"]
    assert len(attn) == 1 and not attn[0].vacuous and float(attn[0].value) >= attn[0].realized_max


def test_groenwall_recursion_decays_and_accumulates():
    layer = WitnessRecurrentLayer(0, None, 4, recorder=_NullRecorder())
    layer.groenwall = torch.tensor([1.0], dtype=torch.float64)
    g = torch.log(torch.tensor([0.5, 0.25], dtype=torch.float64)).view(1, 1, 1, 2).expand(1, 3, 1, 2)
    layer.observe_decay(g)  # three tokens, max_j a = 0.5 each
    assert float(layer.groenwall) == pytest.approx(0.125)
    assert layer.channel_gain.tolist()[0] == pytest.approx([1 + 0.5 + 0.25, 1 + 0.25 + 0.0625])


class _NullRecorder:
    def record_write(self, *a, **k):
        pass

    def note_state_write(self, *a, **k):
        pass


def test_unobserved_reference_generation_does_not_touch_the_decay_readings(tiny_kda):
    base = dict(model="tiny-kda", codec="int8", bands=4, max_new_tokens=3, prompts=("The capital of France is",))
    a = measure(tiny_kda, MeasureConfig(**base, reference=False)).to_json()
    b = measure(tiny_kda, MeasureConfig(**base, reference=True)).to_json()
    for la, lb in zip(a["layers"], b["layers"]):
        assert la["read"] == lb["read"] and la.get("channels") == lb.get("channels")
