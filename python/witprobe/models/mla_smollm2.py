"""A DeepSeek-V3-style latent (MLA) model converted from SmolLM2-135M-Instruct's trained weights.

The idea is TransMLA / MHA2MLA (arXiv 2502.07864, 2502.14837): a GQA model becomes an MLA model by
(1) keeping RoPE on a few frequency pairs per KV head, which go to the uncompressed shared rope
key, and dropping RoPE on the rest, which become the "nope" part of the key; and (2) factorizing
the projections of the nope keys and the values jointly through a low-rank latent (PCA). No
fine-tuning is done, so the converted model is a perturbation of SmolLM2 whose size is measured
(:func:`perplexity`), not assumed.

Construction, per decoder layer, with SmolLM2's 9 query heads and 3 KV heads of 64 channels
(RoPE pairs ``(j, j + 32)`` at frequency ``theta**(-j/32)``):

- **Rope key** (``qk_rope_head_dim = 3 * 2 * rope_pairs``): for every KV head ``g`` the
  ``rope_pairs`` pairs whose dropped rotation would change scores most (weight-norm product of
  the pair times ``1 - cos(min(distance * freq, pi))``) are copied into slot ``g`` of the shared
  rope key. The rotary buffer ``inv_freq`` is set to those pairs' frequencies, so RoPE on them is
  exact. A query head writes its pairs into its group's slot and zeros elsewhere, so
  ``q_rot . k_rot`` is exactly SmolLM2's rotary part of the score.
- **Latent** (``kv_lora_rank``): the remaining key channels of all three KV heads and the three
  value heads are stacked, ``W = [K_nope; V]`` (``3 * qk_nope_head_dim + 192`` rows). ``U_r``
  holds the top ``kv_lora_rank`` principal directions of the outputs ``W h`` over a fixed
  calibration text (:data:`CALIBRATION_TEXT`, 350 tokens through SmolLM2; activation-aware, as in
  TransMLA); the latent is ``c = U_r^T W h`` and ``kv_b_proj = U_r``. ``U_r`` has orthonormal
  columns, so a latent error ``dc`` moves ``[k_nope; v]`` by exactly ``|dc|``.
- ``kv_a_layernorm`` is made linear (``eps = 1e12``, ``weight = 1e6``; ``1e12 + var`` rounds to
  ``1e12`` in fp32 for any ``var`` below about ``3e4``), so the stored latent is ``c`` times a
  constant within ``2e-7`` of 1 (fp32 rounding of ``1e6 * rsqrt(1e12)``).
- Queries are scaled by ``sqrt(qk_head_dim / 64)`` to undo MLA's ``qk_head_dim**-0.5``.

The MLP, norms, embeddings and head are copied unchanged. At full rank
(``kv_lora_rank = 3 * qk_nope_head_dim + 192``) the only change from SmolLM2 is the dropped
rotation on the nope pairs.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from witprobe.models.loaded import LoadedModel, ModelError

KV_LORA_RANK = 192
ROPE_PAIRS = 16
DISTANCE = 256.0
_LINEAR_NORM_EPS = 1e12

# Calibration text for the PCA of the latent (written for this purpose; mixed prose, dialogue, code).
CALIBRATION_TEXT = """\
A recipe for bread needs only four things: flour, water, salt and yeast. Mix the flour and water first and let the dough rest for half an hour, so that the gluten can form on its own. Then add the salt and the yeast, knead for ten minutes, and leave the dough in a warm place until it has doubled in size.
In mathematics, a prime number is a natural number greater than one that has no divisors other than one and itself. The first primes are 2, 3, 5, 7, 11 and 13. Euclid proved more than two thousand years ago that there are infinitely many of them: if there were only finitely many, multiplying them all together and adding one would give a number that none of them divides.
"Where are you going?" asked the girl. "To the market," said her brother, "and then to the harbour, to see whether the fishing boats have come back." She put on her coat and followed him down the hill.
def fibonacci(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
The function above returns the n-th Fibonacci number. It keeps only the last two values, so it needs constant memory and linear time.
User: What is the capital of France?
Assistant: The capital of France is Paris. It is also the largest city in the country.
The weather on Tuesday will be cloudy in the morning with light rain in the afternoon. Temperatures will reach fourteen degrees, and a strong wind from the west is expected in the evening.
"""

# A different fixed English text (written for this purpose) for the perplexity reading.
PPL_TEXT = (
    "The old lighthouse stood at the end of a narrow spit of rock, and for more than a century its "
    "lamp had turned every night, warning ships away from the reef that lay just below the surface. "
    "The keeper lived alone in a small stone cottage at the base of the tower. Each evening he climbed "
    "the spiral stairs, trimmed the wick, polished the great lens, and wound the clockwork that made the "
    "light rotate. In the morning he wrote in his logbook: the weather, the ships he had seen, the birds "
    "that had struck the glass during the night. When the supply boat came once a month, it brought "
    "flour, oil, letters and newspapers that were already weeks old. The keeper read every page, even "
    "the advertisements, because the world beyond the water felt far away and strange. Years later, when "
    "the lamp was replaced by an automatic beacon, the logbooks were taken to a museum in the town, where "
    "visitors still read his careful handwriting and wonder what kind of person chose such a life."
)


def _pair_importance(wq: torch.Tensor, wk: torch.Tensor, inv_freq: torch.Tensor, distance: float) -> torch.Tensor:
    """Score of keeping RoPE on each pair of one KV head.

    Parameters
    ----------
    wq:
        Query weights of the heads of the group, ``(heads_per_group, 64, hidden)``.
    wk:
        Key weights of the KV head, ``(64, hidden)``.
    inv_freq:
        ``(32,)`` rotary frequencies in radians per token.

    Returns
    -------
    torch.Tensor
        ``(32,)``: ``sum_h |Wq_h[pair]|_F |Wk[pair]|_F * (1 - cos(min(distance * freq, pi)))``, the
        size of the score change when the rotation of the pair is dropped at that distance.
    """
    half = wk.shape[0] // 2
    kn = torch.sqrt(wk[:half].pow(2).sum(-1) + wk[half:].pow(2).sum(-1))
    qn = torch.sqrt(wq[:, :half].pow(2).sum(-1) + wq[:, half:].pow(2).sum(-1)).sum(0)
    angle = torch.clamp(distance * inv_freq, max=math.pi)
    return qn * kn * (1.0 - torch.cos(angle))


def attention_input_covariances(model: Any, input_ids: torch.Tensor) -> list[torch.Tensor]:
    """Per layer, ``sum_t h_t h_t^T`` ``(hidden, hidden)`` float64 of the attention inputs ``h_t``."""
    covs: list[torch.Tensor] = []
    handles = []
    for layer in model.model.layers:
        def hook(_mod: Any, args: tuple, kwargs: dict, _out: Any = None) -> None:
            h = args[0] if args else kwargs["hidden_states"]
            h = h.reshape(-1, h.shape[-1]).double()
            covs.append(h.T @ h)
        handles.append(layer.self_attn.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        with torch.no_grad():
            model(input_ids=input_ids)
    finally:
        for hd in handles:
            hd.remove()
    return covs


def convert(
    src: Any, *, kv_lora_rank: int = KV_LORA_RANK, rope_pairs: int = ROPE_PAIRS, distance: float = DISTANCE,
    covariances: list[torch.Tensor] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Convert a loaded SmolLM2 (``LlamaForCausalLM``) into a ``DeepseekV3ForCausalLM``.

    Parameters
    ----------
    covariances:
        Per layer ``(hidden, hidden)`` second moments of the attention inputs
        (:func:`attention_input_covariances`); the latent is then the PCA of the outputs. ``None``
        gives the plain SVD of the weights (much worse without fine-tuning: perplexity x4.6 at rank
        192 on :data:`PPL_TEXT`, against x1.2 with calibration).

    Returns the model (fp32, eval, eager attention) and a report: the rope pairs kept per KV head,
    and per layer the relative energy lost by the rank-``kv_lora_rank`` factorization.
    """
    import transformers

    sc = src.config
    n_heads, n_kv, d = sc.num_attention_heads, sc.num_key_value_heads, sc.head_dim
    half = d // 2
    group = n_heads // n_kv
    if not 1 <= rope_pairs <= half:
        raise ModelError(f"mla-smollm2: rope_pairs must be in [1, {half}], got {rope_pairs}")
    nope = d - 2 * rope_pairs
    full_rank = n_kv * nope + n_kv * d
    if not 1 <= kv_lora_rank <= min(full_rank, sc.hidden_size):
        top = min(full_rank, sc.hidden_size)
        raise ModelError(f"mla-smollm2: kv_lora_rank must be in [1, {top}], got {kv_lora_rank}")
    rope_dim = n_kv * 2 * rope_pairs
    theta = sc.rope_parameters["rope_theta"]
    inv_freq_src = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))

    cfg = transformers.DeepseekV3Config(
        vocab_size=sc.vocab_size, hidden_size=sc.hidden_size, intermediate_size=sc.intermediate_size,
        num_hidden_layers=sc.num_hidden_layers, num_attention_heads=n_heads, num_key_value_heads=n_heads,
        q_lora_rank=None, kv_lora_rank=kv_lora_rank, qk_rope_head_dim=rope_dim, qk_nope_head_dim=nope,
        v_head_dim=d, first_k_dense_replace=sc.num_hidden_layers, n_routed_experts=1, num_experts_per_tok=1,
        n_group=1, topk_group=1, rope_interleave=False, max_position_embeddings=sc.max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": theta}, rms_norm_eps=sc.rms_norm_eps,
        tie_word_embeddings=True, attention_bias=False, bos_token_id=sc.bos_token_id,
        eos_token_id=sc.eos_token_id, pad_token_id=sc.pad_token_id,
    )
    cfg._attn_implementation = "eager"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # every parameter is overwritten below; the seed only makes that checkable
        dst = transformers.DeepseekV3ForCausalLM(cfg)
    dst.to(torch.float32).eval()

    q_scale = math.sqrt((nope + rope_dim) / d)
    svd_rel_err: list[float] = []
    with torch.no_grad():
        dst.model.embed_tokens.weight.copy_(src.model.embed_tokens.weight)
        dst.model.norm.weight.copy_(src.model.norm.weight)
        for ls, ld in zip(src.model.layers, dst.model.layers):
            ld.input_layernorm.weight.copy_(ls.input_layernorm.weight)
            ld.post_attention_layernorm.weight.copy_(ls.post_attention_layernorm.weight)
            for name in ("gate_proj", "up_proj", "down_proj"):
                getattr(ld.mlp, name).weight.copy_(getattr(ls.mlp, name).weight)

        # One frequency layout for the whole model (the rotary buffer is shared by all layers): per
        # KV head, the pairs with the largest importance summed over layers (each layer normalized).
        layout: list[list[int]] = []
        for g in range(n_kv):
            votes = torch.zeros(half, dtype=torch.float64)
            for ls in src.model.layers:
                wq = ls.self_attn.q_proj.weight.double().view(n_heads, d, -1)
                wk = ls.self_attn.k_proj.weight.double().view(n_kv, d, -1)
                score = _pair_importance(wq[g * group:(g + 1) * group], wk[g], inv_freq_src, distance)
                votes += score / score.sum()
            layout.append(sorted(torch.topk(votes, rope_pairs).indices.tolist()))
        inv_freq_dst = torch.cat([inv_freq_src[torch.tensor(p)] for p in layout]).to(torch.float32)

        for li, (ls, ld) in enumerate(zip(src.model.layers, dst.model.layers)):
            a_s, a_d = ls.self_attn, ld.self_attn
            wq = a_s.q_proj.weight.double().view(n_heads, d, -1)
            wk = a_s.k_proj.weight.double().view(n_kv, d, -1)
            wv = a_s.v_proj.weight.double().view(n_kv, d, -1)
            hidden = wq.shape[-1]
            rot_idx, nope_idx = [], []
            for g in range(n_kv):
                pairs = layout[g]
                rest = [j for j in range(half) if j not in pairs]
                rot_idx.append(pairs + [j + half for j in pairs])
                nope_idx.append(rest + [j + half for j in rest])
            # rope key rows: slot g holds pairs of group g, first halves then second halves overall
            k_rot = torch.zeros(rope_dim, hidden, dtype=torch.float64)
            rp = rope_pairs
            for g in range(n_kv):
                pairs = layout[g]
                k_rot[g * rp:(g + 1) * rp] = wk[g, pairs]
                k_rot[n_kv * rp + g * rp:n_kv * rp + (g + 1) * rp] = wk[g, [j + half for j in pairs]]
            k_nope = torch.cat([wk[g, nope_idx[g]] for g in range(n_kv)])  # (n_kv*nope, hidden)
            w_joint = torch.cat([k_nope, wv.reshape(n_kv * d, hidden)])  # (full_rank, hidden)
            if covariances is None:
                u, s, _ = torch.linalg.svd(w_joint, full_matrices=False)
                energy = s**2
            else:  # PCA of the outputs [k_nope; v] under the calibration inputs
                evals, evecs = torch.linalg.eigh(w_joint @ covariances[li] @ w_joint.T)
                energy, u = evals.flip(0).clamp_min(0), evecs.flip(1)
            u_r = u[:, :kv_lora_rank]
            down = u_r.T @ w_joint  # latent c = down @ h, and [k_nope; v] ~ u_r @ c
            svd_rel_err.append(float(torch.sqrt(energy[kv_lora_rank:].sum() / energy.sum())))
            a_d.kv_a_proj_with_mqa.weight.copy_(torch.cat([down, k_rot]).float())
            a_d.kv_a_layernorm.variance_epsilon = _LINEAR_NORM_EPS
            a_d.kv_a_layernorm.weight.fill_(math.sqrt(_LINEAR_NORM_EPS))
            up_k = u_r[: n_kv * nope].view(n_kv, nope, kv_lora_rank)
            up_v = u_r[n_kv * nope:].view(n_kv, d, kv_lora_rank)
            kv_b = torch.cat([torch.cat([up_k[h // group], up_v[h // group]]) for h in range(n_heads)])
            a_d.kv_b_proj.weight.copy_(kv_b.float())
            q = torch.zeros(n_heads, nope + rope_dim, hidden, dtype=torch.float64)
            for h in range(n_heads):
                g = h // group
                pairs = layout[g]
                q[h, :nope] = wq[h, nope_idx[g]]
                q[h, nope + g * rp:nope + (g + 1) * rp] = wq[h, pairs]
                q[h, nope + n_kv * rp + g * rp:nope + n_kv * rp + (g + 1) * rp] = wq[h, [j + half for j in pairs]]
            a_d.q_proj.weight.copy_((q * q_scale).reshape(-1, hidden).float())
            a_d.o_proj.weight.copy_(a_s.o_proj.weight)
        dst.model.rotary_emb.inv_freq.copy_(inv_freq_dst)
        dst.model.rotary_emb.original_inv_freq.copy_(inv_freq_dst)
    dst.tie_weights()
    report = {
        "kv_lora_rank": kv_lora_rank,
        "full_rank": full_rank,
        "rope_pairs_per_kv_head": rope_pairs,
        "rope_pairs": layout,
        "distance": distance,
        "latent_relative_error_per_layer": svd_rel_err,
        "cache_floats_per_token_per_layer": {"mla": kv_lora_rank + rope_dim, "smollm2_gqa": 2 * n_kv * d},
    }
    return dst, report


@torch.no_grad()
def perplexity(model: Any, input_ids: torch.Tensor) -> float:
    """Perplexity of ``input_ids`` ``(1, T)`` under ``model`` (next-token, teacher forcing)."""
    logits = model(input_ids=input_ids).logits[:, :-1].double()
    nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), input_ids[:, 1:].reshape(-1))
    return float(torch.exp(nll))


def load_mla_smollm2(
    *, kv_lora_rank: int = KV_LORA_RANK, rope_pairs: int = ROPE_PAIRS, attn_implementation: str = "eager", **_: Any
) -> LoadedModel:
    """SmolLM2-135M-Instruct converted to MLA (see the module docstring), with SmolLM2's tokenizer."""
    import transformers

    from witprobe.models.smollm2 import load_smollm2

    base = load_smollm2()
    cal = base.tokenizer(CALIBRATION_TEXT, return_tensors="pt").input_ids
    covs = attention_input_covariances(base.model, cal)
    model, report = convert(base.model, kv_lora_rank=kv_lora_rank, rope_pairs=rope_pairs, covariances=covs)
    report["calibration_tokens"] = int(cal.shape[1])
    if attn_implementation != "eager":
        model.set_attn_implementation(attn_implementation)
    return LoadedModel(
        name="mla-smollm2",
        model=model,
        tokenizer=base.tokenizer,
        provenance={
            "model": "DeepseekV3ForCausalLM converted from SmolLM2-135M-Instruct "
            "(TransMLA/MHA2MLA-style, no fine-tuning)",
            "source": base.provenance,
            "conversion": report,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        },
    )
