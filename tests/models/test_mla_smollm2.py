"""mla-smollm2: a latent (MLA) model converted from SmolLM2's trained weights."""

from __future__ import annotations

import copy

import pytest
import torch

from witprobe.models.interfaces import RecordingCache
from witprobe.models.mla_smollm2 import PPL_TEXT, convert, perplexity

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mla_smollm2():
    from witprobe.models.zoo import load_model

    return load_model("mla-smollm2")


def _first_layers(loaded, n: int):
    """A new SmolLM2 model holding copies of the original's first ``n`` decoder layers."""
    import transformers

    cfg = copy.deepcopy(loaded.model.config)
    cfg.num_hidden_layers = n
    model = transformers.LlamaForCausalLM(cfg).eval()
    keep = {k: v for k, v in loaded.model.state_dict().items()
            if not k.startswith("model.layers.") or int(k.split(".")[2]) < n}
    result = model.load_state_dict(keep, strict=False)
    assert set(result.missing_keys) <= {"lm_head.weight"} and not result.unexpected_keys  # tied head
    model.tie_weights()
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    return model


@pytest.mark.parametrize(("rope_pairs", "rank", "tol"), [(32, 192, 1e-3), (16, 288, None)])
def test_layout_is_exact_with_all_rope_pairs_at_full_rank(smollm2, rope_pairs: int, rank: int, tol) -> None:
    """With RoPE kept on every pair and a full-rank latent, the MLA model is SmolLM2 (fp32 noise);
    with half the pairs un-rotated (still full rank) it is not (the test can fail)."""
    src = _first_layers(smollm2, 3)
    model, report = convert(src, kv_lora_rank=rank, rope_pairs=rope_pairs)
    assert report["full_rank"] == rank and max(report["latent_relative_error_per_layer"]) < 1e-6
    ids = smollm2.tokenizer(PPL_TEXT, return_tensors="pt").input_ids[:, :48]
    with torch.no_grad():
        ref = src(input_ids=ids).logits
        out = model(input_ids=ids).logits
    diff = (ref - out).abs().max().item()
    if tol is None:
        assert diff > 1e-2
    else:
        assert diff < tol


def test_converted_model_caches_a_latent_and_stays_close_to_smollm2(mla_smollm2, smollm2) -> None:
    model, tok = mla_smollm2.model, mla_smollm2.tokenizer
    cfg = model.config
    conv = mla_smollm2.provenance["conversion"]
    assert (cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.qk_nope_head_dim) == (192, 96, 32)
    assert conv["cache_floats_per_token_per_layer"] == {"mla": 288, "smollm2_gqa": 384}
    ids = tok(PPL_TEXT, return_tensors="pt").input_ids
    ppl, ppl_ref = perplexity(model, ids), perplexity(smollm2.model, ids)
    assert 1.0 < ppl / ppl_ref < 1.5  # measured 37.10 vs 30.73 (x1.21) with transformers 5.24
    cache = RecordingCache(cfg)
    msgs = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                   add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = model.generate(**msgs, cache=cache, max_new_tokens=8, do_sample=False)
    assert "Paris" in tok.decode(out[0, msgs["input_ids"].shape[1]:])
    first = cache.writes[0]
    assert first.method == "update" and first.shapes[0][-1] == 192 and first.shapes[1][-1] == 96
    assert first.shapes[0][:2] == (1, 1)


def test_latent_up_projection_is_an_isometry(mla_smollm2) -> None:
    """``kv_b_proj`` has orthonormal columns (one head per KV group), so |d[k_nope; v]| = |dc|."""
    cfg = mla_smollm2.model.config
    per_head = cfg.qk_nope_head_dim + cfg.v_head_dim
    w = mla_smollm2.model.model.layers[5].self_attn.kv_b_proj.weight.double()  # (heads * per_head, rank)
    heads = [0, 3, 6]  # one query head per KV group: their rows are the distinct rows of U_r
    nope = torch.cat([w[h * per_head: h * per_head + cfg.qk_nope_head_dim] for h in heads])
    val = torch.cat([w[h * per_head + cfg.qk_nope_head_dim:(h + 1) * per_head] for h in heads])
    u = torch.cat([nope, val])
    assert torch.allclose(u.T @ u, torch.eye(cfg.kv_lora_rank, dtype=torch.float64), atol=1e-5)
