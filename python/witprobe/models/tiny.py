"""Tiny, seeded configurations of five architecture families, built locally (nothing downloaded).

Each configuration is real transformers model code (``transformers >= 5``) with small dimensions
and random weights drawn from a fixed seed, in fp32, with eager attention so attention
probabilities are visible. The vocabulary is SmolLM2's (49,152 tokens) so SmolLM2's tokenizer
serves every model (see :func:`witprobe.models.smollm2.load_tokenizer`).

The sizes are small but not degenerate: every model has at least two layers and several heads,
and the selectors really select on a 64-token prompt (``index_topk`` is smaller than the number
of candidates; DeepSeek-V4's compression rates and sliding window are small enough that
compressed entries, gate-weighted pooling, page-level top-k and window eviction all occur).

The weights are random: the models exercise the memory interfaces (what is written, with which
shapes, and what attention reads); they say nothing about trained-model statistics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from witprobe.models.loaded import LoadedModel, ModelError

VOCAB_SIZE = 49152  # SmolLM2's tokenizer
SEED = 20260802
INIT_STD = 0.08  # initializer_range: larger than the 0.02 default so attention is not uniform


def qwen3_config() -> Any:
    """Qwen3 (GQA 8 query / 2 KV heads, per-head q/k RMSNorm), 4 layers, hidden 128."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=VOCAB_SIZE, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True,
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )


_MLA_FIELDS: dict[str, Any] = {
    "hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 48,
    "kv_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16, "v_head_dim": 16,
    "intermediate_size": 256, "moe_intermediate_size": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "n_shared_experts": 1, "n_group": 1, "topk_group": 1, "first_k_dense_replace": 1,
    "max_position_embeddings": 4096, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
}


def mla_config() -> Any:
    """DeepSeek-V3 MLA: latent ``kv_lora_rank=32`` plus a shared 8-dim rope key, 3 layers (1 dense, 2 MoE)."""
    from transformers import DeepseekV3Config

    return DeepseekV3Config(
        vocab_size=VOCAB_SIZE, num_hidden_layers=3, initializer_range=INIT_STD, tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=2, pad_token_id=2, **_MLA_FIELDS,
    )


def mla_dsa_config() -> Any:
    """DeepSeek-V3.2: the MLA above plus a DSA lightning indexer (4 heads of 16, top-8 tokens), 3 layers."""
    from transformers import DeepseekV32Config

    return DeepseekV32Config(
        vocab_size=VOCAB_SIZE, num_hidden_layers=3, initializer_range=INIT_STD, tie_word_embeddings=False,
        index_n_heads=4, index_head_dim=16, index_topk=8, bos_token_id=1, eos_token_id=2, pad_token_id=2,
        **_MLA_FIELDS,
    )


def v4_config() -> Any:
    """DeepSeek-V4: shared-KV MQA over a sliding window plus compressed entries, 4 layers.

    Layer types CSA, HCA, CSA, sliding. CSA pools overlapping windows of ``2*4`` tokens (stride 4)
    and its indexer keeps the top 4 compressed entries per query; HCA pools non-overlapping windows
    of 16 tokens. A 64-token prompt gives 16 CSA entries (so top-4 selection is real), 4 HCA
    entries and window eviction (window 16).
    """
    from transformers import DeepseekV4Config

    return DeepseekV4Config(
        vocab_size=VOCAB_SIZE, hidden_size=128, moe_intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=1, head_dim=32, partial_rotary_factor=0.25, q_lora_rank=48,
        layer_types=["compressed_sparse_attention", "heavily_compressed_attention",
                     "compressed_sparse_attention", "sliding_attention"],
        compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 16},
        mlp_layer_types=["moe"] * 4, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
        hc_mult=2, sliding_window=16, o_groups=2, o_lora_rank=32, index_n_heads=4, index_head_dim=16,
        index_topk=4, max_position_embeddings=4096, initializer_range=INIT_STD, tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )


def kda_config() -> Any:
    """Kimi-Linear: three KDA linear-attention layers then one MLA (NoPE) layer; layer 1 is MoE."""
    from transformers import KimiLinearConfig

    return KimiLinearConfig(
        vocab_size=VOCAB_SIZE, hidden_size=128, intermediate_size=256, moe_intermediate_size=32,
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=32, q_lora_rank=None,
        qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
        layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        mlp_layer_types=["dense", "sparse", "dense", "dense"], num_experts=4, num_experts_per_token=2,
        num_shared_experts=1, linear_num_heads=4, linear_head_dim=16, linear_conv_kernel_dim=4,
        max_position_embeddings=4096, initializer_range=INIT_STD, tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )


CONFIGS: dict[str, tuple[Callable[[], Any], str]] = {
    "qwen3": (qwen3_config, "Qwen3ForCausalLM"),
    "mla": (mla_config, "DeepseekV3ForCausalLM"),
    "mla-dsa": (mla_dsa_config, "DeepseekV32ForCausalLM"),
    "v4": (v4_config, "DeepseekV4ForCausalLM"),
    "kda": (kda_config, "KimiLinearForCausalLM"),
}


def build_tiny(name: str, *, seed: int = SEED, attn_implementation: str = "eager") -> Any:
    """Build the tiny model ``name`` in fp32, eval mode, weights drawn from ``seed``.

    The global torch RNG state is restored afterwards, so building a model does not perturb the
    caller's random stream.
    """
    import transformers

    try:
        make_config, class_name = CONFIGS[name]
    except KeyError:
        raise ModelError(f"unknown tiny model {name!r}; available: {', '.join(sorted(CONFIGS))}") from None
    config = make_config()
    config._attn_implementation = attn_implementation
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = getattr(transformers, class_name)(config)
    model.to(torch.float32).eval()
    model.generation_config.pad_token_id = config.pad_token_id
    return model


def load_tiny(name: str, *, seed: int = SEED, attn_implementation: str = "eager", **_: Any) -> LoadedModel:
    """A tiny model with SmolLM2's tokenizer (chat template off: the weights are random)."""
    import transformers

    from witprobe.models.smollm2 import load_tokenizer

    model = build_tiny(name, seed=seed, attn_implementation=attn_implementation)
    tok = load_tokenizer(chat_template=False)
    n_params = sum(p.numel() for p in model.parameters())
    return LoadedModel(
        name=name,
        model=model,
        tokenizer=tok,
        provenance={
            "model": f"tiny {type(model).__name__}",
            "weights": f"random, torch.manual_seed({seed}), initializer_range={INIT_STD}, fp32",
            "parameters": n_params,
            "tokenizer": "SmolLM2-135M-Instruct (vocab 49152), chat template disabled",
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        },
    )
