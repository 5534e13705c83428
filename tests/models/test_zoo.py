"""The model zoo: every configuration loads offline, runs a forward pass and greedy generation."""

from __future__ import annotations

import time

import pytest
import torch

from witprobe.models.tiny import CONFIGS, build_tiny
from witprobe.models.loaded import ModelError
from witprobe.models.zoo import MEMORY_CLASSES, MODELS, ModelSpec, load_model

TINY = ("qwen3", "mla", "mla-dsa", "v4", "kda")

EXPECTED = {  # name -> (transformers class, layers, attention heads)
    "qwen3": ("Qwen3ForCausalLM", 4, 8),
    "mla": ("DeepseekV3ForCausalLM", 3, 4),
    "mla-dsa": ("DeepseekV32ForCausalLM", 3, 4),
    "v4": ("DeepseekV4ForCausalLM", 4, 4),
    "kda": ("KimiLinearForCausalLM", 4, 4),
}


def test_registry_covers_six_configurations_and_five_paper_families() -> None:
    assert set(TINY) | {"smollm2", "mla-smollm2"} == set(MODELS)
    core = ["smollm2", "qwen3", "mla", "mla-dsa", "v4", "kda"]
    assert {MODELS[n].paper_family for n in core} == {"GQA", "MLA", "MLA+DSA", "MLA+entry", "KDA+MLA"}
    covered = {c for n in core for c in MODELS[n].memory_classes}
    assert covered == set(MEMORY_CLASSES)
    for spec in MODELS.values():
        assert spec.memory_classes[0] == spec.memory_class


def test_model_spec_rejects_unknown_memory_class() -> None:
    with pytest.raises(ValueError, match="memory classes"):
        ModelSpec("x", "f", "paged_kv", "d", loader=lambda **_: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ModelError, match="unknown model"):
        load_model("no-such-model")
    with pytest.raises(ModelError, match="unknown tiny model"):
        build_tiny("no-such-model")


@pytest.mark.parametrize("name", TINY)
def test_tiny_model_forward_and_greedy_generation(name: str, tiny_models, prompt_ids: torch.Tensor) -> None:
    loaded = tiny_models[name]
    model = loaded.model
    cls, layers, heads = EXPECTED[name]
    assert type(model).__name__ == cls
    assert model.config.num_hidden_layers == layers >= 2
    assert model.config.num_attention_heads == heads >= 4
    assert model.dtype == torch.float32 and not model.training
    assert model.config._attn_implementation == "eager"
    assert model.config.vocab_size == len(loaded.tokenizer) == 49152
    assert loaded.tokenizer.chat_template is None  # random weights: plain-text prompts
    assert loaded.provenance["parameters"] == sum(p.numel() for p in model.parameters())
    with torch.no_grad():
        t0 = time.perf_counter()
        logits = model(input_ids=prompt_ids).logits
        t1 = time.perf_counter()
        out = model.generate(input_ids=prompt_ids, attention_mask=torch.ones_like(prompt_ids), max_new_tokens=6,
                             do_sample=False, pad_token_id=loaded.tokenizer.eos_token_id)
        t2 = time.perf_counter()
    assert logits.shape == (1, 64, 49152) and bool(torch.isfinite(logits).all())
    assert out.shape == (1, 70)
    # greedy decoding with the cache agrees with the argmax of the uncached forward at the first step
    assert out[0, 64].item() == int(logits[0, -1].argmax())
    assert isinstance(loaded.tokenizer.decode(out[0, 64:]), str)
    # generous ceilings (two shared cores): these are smoke limits, timings live in bench/
    assert t1 - t0 < 10 and t2 - t1 < 20


@pytest.mark.parametrize("name", TINY)
def test_tiny_models_are_deterministic(name: str, prompt_ids: torch.Tensor) -> None:
    a, b = build_tiny(name), build_tiny(name)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    c = build_tiny(name, seed=1)
    assert not all(torch.equal(sa[k], c.state_dict()[k]) for k in sa if sa[k].is_floating_point() and sa[k].numel() > 1)


def test_building_does_not_disturb_the_global_rng() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_tiny("qwen3")
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("name", ["qwen3", "mla", "kda"])
def test_incremental_decoding_matches_full_forward(name: str, tiny_models, prompt_ids: torch.Tensor) -> None:
    """The cached path (prefill then one token at a time) serves the same logits as one forward.

    This is the property a witness cache must preserve when it serves exact (uncompressed) entries.
    ``mla-dsa`` and ``v4`` are left out on purpose: their indexer scores tie exactly at 0 (ReLU)
    and torch's top-k breaks ties differently for different tensor shapes, so the two paths may
    select different tokens (``tests/models/test_interfaces.py`` shows the first divergence is an
    exact tie).
    """
    from transformers import DynamicCache

    model = tiny_models[name].model
    ids = prompt_ids[:, :40]
    with torch.no_grad():
        full = model(input_ids=ids).logits
        cache = DynamicCache(config=model.config)
        model(input_ids=ids[:, :36], cache=cache)
        steps = [model(input_ids=ids[:, t:t + 1], cache=cache).logits for t in range(36, 40)]
    inc = torch.cat(steps, dim=1)
    assert torch.allclose(inc, full[:, 36:40], atol=2e-4, rtol=1e-4)


def test_config_builders_are_registered() -> None:
    assert set(CONFIGS) == set(TINY)
