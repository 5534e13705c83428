"""Executable checks of docs/MEMORY_INTERFACES.md on the tiny zoo models.

Each test runs a real transformers model through :class:`RecordingCache` (and, for the read side,
a registered attention function that only records and delegates) and asserts the document's
statements: which cache methods are called, with which shapes and dtypes, what attention reads,
and how selections and pooling can be observed without patching model code.
"""

from __future__ import annotations

import sys

import pytest
import torch
from transformers import AttentionInterface, AttentionMaskInterface, DynamicCache
from transformers.masking_utils import eager_mask

from witprobe.models.interfaces import RecordingCache, dsa_index_scores, v4_pooling_weights

F32 = torch.float32
ATTN_NAME = "witprobe_record_eager"
_ATTN_LOG: list[dict] = []


def _record_then_eager(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Record what the attention function receives, then run the model's own eager function."""
    _ATTN_LOG.append({
        "layer": module.layer_idx, "query": query.detach().clone(), "key": key.detach().clone(),
        "value": value.detach().clone(), "key_is_value": key is value,
        "mask": None if attention_mask is None else attention_mask.detach().clone(), "scaling": scaling,
        "kwargs": {k: v for k, v in kwargs.items() if v is not None},
    })
    eager = sys.modules[type(module).__module__].eager_attention_forward
    return eager(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)


AttentionInterface.register(ATTN_NAME, _record_then_eager)
AttentionMaskInterface.register(ATTN_NAME, eager_mask)


def _generate(model, ids: torch.Tensor, new: int = 4, keep: bool = False) -> RecordingCache:
    cache = RecordingCache(model.config, keep_tensors=keep)
    with torch.no_grad():
        model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), cache=cache, max_new_tokens=new,
                       do_sample=False, pad_token_id=2)
    return cache


# --------------------------------------------------------------------------- dense KV (Qwen3)


def test_qwen3_writes_dense_keys_and_values(tiny_models, prompt_ids) -> None:
    model = tiny_models["qwen3"].model
    cache = _generate(model, prompt_ids, new=3)
    assert [type(layer).__name__ for layer in cache.layers] == ["DynamicLayer"] * 4
    assert {w.method for w in cache.writes} == {"update"}
    for layer in range(4):
        ws = [w for w in cache.writes if w.layer == layer]
        assert [w.shapes for w in ws] == [((1, 2, 64, 16), (1, 2, 64, 16))] + [((1, 2, 1, 16), (1, 2, 1, 16))] * 2
        assert all(w.dtypes == (F32, F32) for w in ws)
    assert cache.get_seq_length() == 66


def test_qwen3_attention_receives_gqa_tensors(prompt_ids) -> None:
    from witprobe.models.tiny import build_tiny

    model = build_tiny("qwen3", attn_implementation=ATTN_NAME)
    _ATTN_LOG.clear()
    with torch.no_grad():
        cache = RecordingCache(model.config, keep_tensors=True)
        model(input_ids=prompt_ids[:, :10], cache=cache)
        model(input_ids=prompt_ids[:, 10:11], cache=cache)
    r = _ATTN_LOG[-1]
    assert r["query"].shape == (1, 8, 1, 16) and r["key"].shape == (1, 2, 11, 16) == r["value"].shape
    assert r["scaling"] == 0.25 and "sliding_window" not in r["kwargs"]  # passed as None
    keys = torch.cat([w.tensors[0] for w in cache.writes if w.layer == 3], dim=2)
    assert torch.equal(r["key"], keys)  # attention reads exactly what was written
    assert r["mask"].shape == (1, 1, 1, 11)


# --------------------------------------------------------------------------- latent KV (MLA)


def test_deepseek_v3_needs_as_many_kv_heads_as_query_heads() -> None:
    import transformers

    from witprobe.models.tiny import _MLA_FIELDS

    fields = dict(_MLA_FIELDS, num_key_value_heads=2)
    cfg = transformers.DeepseekV3Config(vocab_size=64, num_hidden_layers=2, **fields)
    cfg._attn_implementation = "eager"
    model = transformers.DeepseekV3ForCausalLM(cfg).eval()
    with pytest.raises(RuntimeError, match="must match"), torch.no_grad():
        model(input_ids=torch.tensor([[1, 2, 3]]))


@pytest.mark.parametrize("name", ["mla", "mla-dsa", "kda"])
def test_mla_caches_the_compressed_latent_and_rope_key(name: str, tiny_models, prompt_ids) -> None:
    """transformers >= 5 caches ``kv_nope`` (B,1,S,kv_lora_rank) and ``k_rot`` (B,1,S,qk_rope_head_dim)."""
    model = tiny_models[name].model
    cfg = model.config
    cache = _generate(model, prompt_ids, new=2)
    updates = [w for w in cache.writes if w.method == "update"]
    mla_layers = [i for i, t in enumerate(getattr(cfg, "layer_types", None) or []) if t == "full_attention"] \
        if name == "kda" else list(range(cfg.num_hidden_layers))
    assert sorted({w.layer for w in updates}) == mla_layers
    for w in updates:
        s = w.shapes[0][2]
        assert w.shapes == ((1, 1, s, cfg.kv_lora_rank), (1, 1, s, cfg.qk_rope_head_dim))
        assert w.dtypes == (F32, F32) and s in (64, 1)


@pytest.mark.parametrize("name", ["mla", "kda"])
def test_mla_attention_reads_the_up_projected_latent(name: str, prompt_ids) -> None:
    """The attention function receives ``[W_UK c ; k_rot]`` as keys and ``W_UV c`` as values.

    This is the latent self-check: the keys attention reads are reproduced from the cached latent.
    """
    from witprobe.models.tiny import build_tiny

    model = build_tiny(name, attn_implementation=ATTN_NAME)
    cfg = model.config
    cache = RecordingCache(cfg, keep_tensors=True)
    _ATTN_LOG.clear()
    with torch.no_grad():
        model(input_ids=prompt_ids[:, :20], cache=cache)
        model(input_ids=prompt_ids[:, 20:21], cache=cache)
    layer = 0 if name == "mla" else 3
    attn = model.model.layers[layer].self_attn
    c = torch.cat([w.tensors[0] for w in cache.writes if w.layer == layer and w.method == "update"], dim=2)
    k_rot = torch.cat([w.tensors[1] for w in cache.writes if w.layer == layer and w.method == "update"], dim=2)
    rec = [r for r in _ATTN_LOG if r["layer"] == layer][-1]  # the decode step
    n, h = cfg.qk_nope_head_dim, cfg.num_attention_heads
    with torch.no_grad():
        kv = attn.kv_b_proj(c).view(1, 21, h, n + cfg.v_head_dim).transpose(1, 2)
    assert rec["query"].shape == (1, h, 1, n + cfg.qk_rope_head_dim)
    assert torch.equal(rec["key"][..., :n], kv[..., :n])
    assert torch.equal(rec["key"][..., n:], k_rot.expand(1, h, 21, cfg.qk_rope_head_dim))
    assert torch.equal(rec["value"], kv[..., n:])
    assert rec["scaling"] == pytest.approx((n + cfg.qk_rope_head_dim) ** -0.5)


# --------------------------------------------------------------------------- DSA selector (DeepSeek-V3.2)


def test_dsa_writes_latent_then_indexer_keys(tiny_models, prompt_ids) -> None:
    model = tiny_models["mla-dsa"].model
    cfg = model.config
    cache = _generate(model, prompt_ids, new=3)
    assert [type(layer).__name__ for layer in cache.layers] == ["DynamicIndexedLayer"] * 3
    for layer in range(3):
        assert [m for _, m, _ in cache.calls(layer)] == ["update", "update_indexer"] * 3
        idx = [w for w in cache.writes if w.layer == layer and w.method == "update_indexer"]
        assert [w.shapes for w in idx] == [((1, 64, cfg.index_head_dim),), ((1, 1, cfg.index_head_dim),),
                                           ((1, 1, cfg.index_head_dim),)]
        assert cache.layers[layer].indexer_keys.shape == (1, 66, cfg.index_head_dim)


def _dsa_selections(model, ids: torch.Tensor, split: int | None):
    """Run full (split None) or prefill+decode; return per layer the indexer's picks and scores."""
    picks: dict[int, list[torch.Tensor]] = {}
    scores: dict[int, list[torch.Tensor]] = {}
    handles = []
    for layer in model.model.layers:
        ind = layer.self_attn.indexer

        def pre(mod, args, kwargs):
            hs, q_resid, pe, mask, _pos = args
            cache = kwargs["cache"]
            keys_before = cache.layers[mod.layer_idx].indexer_keys if cache is not None else None
            mod._witprobe_args = (hs, q_resid, pe, mask, keys_before)

        def post(mod, args, kwargs, out):
            hs, q_resid, pe, mask, keys_before = mod._witprobe_args
            cache = kwargs["cache"]
            keys = cache.layers[mod.layer_idx].indexer_keys  # after update_indexer: all keys
            scores.setdefault(mod.layer_idx, []).append(dsa_index_scores(mod, hs, q_resid, pe, mask, keys))
            picks.setdefault(mod.layer_idx, []).append(out.clone())

        handles.append(ind.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(ind.register_forward_hook(post, with_kwargs=True))
    try:
        with torch.no_grad():
            cache = DynamicCache(config=model.config)
            if split is None:
                model(input_ids=ids, cache=cache)
            else:
                model(input_ids=ids[:, :split], cache=cache)
                for t in range(split, ids.shape[1]):
                    model(input_ids=ids[:, t:t + 1], cache=cache)
    finally:
        for hd in handles:
            hd.remove()
    return ({i: torch.cat(v, dim=1) for i, v in picks.items()}, scores)


def _is_top_k(row_scores: torch.Tensor, chosen: list[int], k: int) -> bool:
    """``chosen`` is a valid top-k of ``row_scores`` (ties may be broken either way)."""
    rest = [j for j in range(row_scores.shape[0]) if j not in chosen]
    if not rest:
        return True
    return bool(row_scores[chosen].min() >= row_scores[rest].max())


def _rows(scores: list[torch.Tensor], t: int, split: int | None) -> torch.Tensor:
    """The score row of query ``t`` over its causal keys, from one path's list of forwards."""
    if split is None or t < split:
        return scores[0][0, t, : t + 1]
    return scores[1 + t - split][0, 0, : t + 1]


def test_dsa_scores_recomputed_from_hooks_explain_every_selection(tiny_models, prompt_ids) -> None:
    """Scores rebuilt from a pre-hook and the cached indexer keys reproduce each top-k choice of
    both paths (one forward; prefill then decode), and the paths first diverge at an exact tie."""
    model = tiny_models["mla-dsa"].model
    k = model.config.index_topk
    ids = prompt_ids[:, :40]
    split = 36
    paths = {None: _dsa_selections(model, ids, None), split: _dsa_selections(model, ids, split)}
    first_divergence = None
    for t in range(40):
        for layer in range(3):
            chosen = {}
            for sp, (picks, scores) in paths.items():
                row = _rows(scores[layer], t, sp)
                pick = [j for j in picks[layer][0, t].tolist() if j <= t]
                assert len(pick) == min(k, t + 1)
                assert _is_top_k(row, pick, k), (sp, layer, t)
                chosen[sp] = sorted(pick)
            if first_divergence is None and chosen[None] != chosen[split]:
                first_divergence = (t, layer)
    assert first_divergence is not None  # on this prompt the two paths do break a tie differently
    t, layer = first_divergence
    for sp, (_, scores) in paths.items():
        ranked = torch.sort(_rows(scores[layer], t, sp), descending=True).values
        assert ranked[k - 1] == ranked[k] == 0  # an exact tie at 0 at the k-th place (relu)


def test_dsa_selection_really_selects(tiny_models, prompt_ids) -> None:
    """With index_topk = 8 < 64, each late query attends to exactly 8 of its causal keys."""
    from witprobe.models.tiny import build_tiny

    model = build_tiny("mla-dsa", attn_implementation="eager")
    with torch.no_grad():
        out = model(input_ids=prompt_ids, output_attentions=True)
    for probs in out.attentions:
        nonzero = (probs[0] > 0).sum(-1)  # (heads, q_len)
        assert bool((nonzero[:, 8:] == 8).all())
        assert bool((nonzero[:, :8] == torch.arange(1, 9)).all())


def test_dsa_custom_attention_gets_indices_not_the_index_mask(prompt_ids) -> None:
    """Under any attention implementation other than eager/sdpa, DeepSeek-V3.2 passes the top-k as
    ``indices=`` and does NOT fold them into the mask: a custom attention function must apply them."""
    from witprobe.models.tiny import build_tiny

    model = build_tiny("mla-dsa", attn_implementation=ATTN_NAME)
    eager = build_tiny("mla-dsa")
    _ATTN_LOG.clear()
    with torch.no_grad():
        custom_logits = model(input_ids=prompt_ids).logits
        eager_logits = eager(input_ids=prompt_ids).logits
    rec = _ATTN_LOG[0]
    assert rec["kwargs"]["indices"].shape == (1, 64, 8) and rec["kwargs"]["indices"].dtype == torch.int32
    finite = torch.isfinite(rec["mask"]) & (rec["mask"] > torch.finfo(F32).min)
    assert int(finite[0, 0, -1].sum()) == 64  # plain causal mask: all 64 keys visible to the last query
    assert not torch.allclose(custom_logits, eager_logits)  # ignoring indices changes the model


# --------------------------------------------------------------------------- DeepSeek-V4 entries


def test_v4_writes(tiny_models, prompt_ids) -> None:
    model = tiny_models["v4"].model
    cfg = model.config
    d, di = cfg.head_dim, cfg.index_head_dim
    cache = _generate(model, prompt_ids, new=5, keep=True)
    assert [type(layer).__name__ for layer in cache.layers] == [
        "DeepseekV4CSACache", "DeepseekV4HCACache", "DeepseekV4CSACache", "DynamicSlidingWindowLayer"]
    prefill_csa = [(m, e) for _, m, e in cache.calls(0)][:7]
    assert prefill_csa == [
        ("update", "key=value"),
        ("store_compression_weights", "compressor"), ("update_overlap_state", "compressor"),
        ("update_compressor_states", "compressor"),
        ("store_compression_weights", "indexer"), ("update_overlap_state", "indexer"),
        ("update_compressor_states", "indexer"),
    ]
    assert [(m, e) for _, m, e in cache.calls(1)][:3] == [
        ("update", "key=value"), ("store_compression_weights", "compressor"),
        ("update_compressor_states", "compressor")]
    assert {(m, e) for _, m, e in cache.calls(3)} == {("update", "key=value")}
    w = {(x.layer, x.method, x.entry): x for x in cache.writes[::-1]}  # first occurrence wins
    assert w[(0, "update", "key=value")].shapes == ((1, 1, 64, d), (1, 1, 64, d))
    assert w[(0, "store_compression_weights", "compressor")].shapes == ((1, 64, 2 * d), (1, 64, 2 * d))
    assert w[(0, "update_overlap_state", "compressor")].shapes == ((1, 16, 4, 2 * d), (1, 16, 4, 2 * d))
    assert w[(0, "update_compressor_states", "compressor")].shapes == ((1, 16, d),)
    assert w[(0, "store_compression_weights", "indexer")].shapes == ((1, 64, 2 * di), (1, 64, 2 * di))
    assert w[(0, "update_compressor_states", "indexer")].shapes == ((1, 16, di),)
    assert w[(1, "store_compression_weights", "compressor")].shapes == ((1, 64, d), (1, 64, d))
    assert w[(1, "update_compressor_states", "compressor")].shapes == ((1, 4, d),)
    # after 64 + 4 fed tokens (the 5th generated token is never fed): 17 CSA entries, 4 HCA entries
    assert cache.layers[0].entry_count == {"compressor": 17, "indexer": 17}
    assert cache.layers[1].entry_count == {"compressor": 4}
    assert tuple(cache.layers[1].buffer_kv["compressor"].shape) == (1, 4, d)  # 68 = 4 * 16 + 4 waiting
    # sliding window: the layer keeps window - 1 = 15 past entries; K and V are one tensor
    for layer in cache.layers[:3]:
        assert layer.keys.shape == (1, 1, cfg.sliding_window - 1, d) and layer.keys is layer.values
    # decode steps write no compressed entry except when a window closes (token 67 closes CSA window 16)
    n_new = [x.shapes[0][1] for x in cache.writes if x.layer == 0 and x.method == "update_compressor_states"
             and x.entry == "compressor"]
    assert n_new == [16, 0, 0, 0, 1]


def _rope_compress(compressor, pooled: torch.Tensor, first: int, rate: int) -> torch.Tensor:
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import apply_rotary_pos_emb

    n = pooled.shape[1]
    pos = (torch.arange(n) * rate + first).unsqueeze(0)
    cos, sin = compressor.rotary_emb(pooled, position_ids=pos, layer_type="compress")
    return apply_rotary_pos_emb(pooled.unsqueeze(1), cos, sin).squeeze(1)


def test_v4_pooling_weights_reproduce_every_stored_entry(tiny_models, prompt_ids) -> None:
    """``v4_pooling_weights`` + kv_norm + RoPE reproduces the entries the cache receives, and the
    weights are per-channel convex combinations (the pooling lemma's w)."""
    model = tiny_models["v4"].model
    cfg = model.config
    cache = RecordingCache(cfg, keep_tensors=True)
    with torch.no_grad():
        model(input_ids=prompt_ids, cache=cache)
    for layer, name, overlap in [(0, "compressor", True), (0, "indexer", True), (1, "compressor", False)]:
        comp = model.model.layers[layer].self_attn.compressor
        mod = comp if name == "compressor" else comp.indexer
        rate, d = mod.compress_rate, mod.head_dim
        store = next(x for x in cache.writes if (x.layer, x.method, x.entry) == (layer, "store_compression_weights", name))
        stored = next(x for x in cache.writes if (x.layer, x.method, x.entry) == (layer, "update_compressor_states", name))
        kv, gate = store.tensors  # prefill: the buffer was empty and 64 is window-aligned, so chunk = input
        with torch.no_grad():
            slots, weights = v4_pooling_weights(kv, gate, mod.position_bias, rate, d, overlap)
            pooled = mod.kv_norm((slots * weights.to(slots.dtype)).sum(dim=2))
            entries = _rope_compress(mod, pooled, 0, rate)
        assert torch.allclose(entries, stored.tensors[0], atol=1e-6, rtol=1e-5), (layer, name)
        assert bool((weights >= 0).all())
        assert torch.allclose(weights.sum(dim=2), torch.ones_like(weights[:, :, 0]))
        if overlap:  # window 0 of the first call has only its own compress_rate slots
            assert bool((weights[:, 0, :rate] == 0).all())
        # per-channel: the weights of one window differ across channels
        assert not torch.allclose(weights[0, 1, :, 0], weights[0, 1, :, 1])


def test_v4_scorer_hook_sees_the_page_scores(tiny_models, prompt_ids) -> None:
    """A forward hook on ``compressor.indexer.scorer`` receives (q, compressed index keys, hidden)
    and returns the page scores; masking future pages and taking top-k gives the indexer's pick."""
    model = tiny_models["v4"].model
    k = model.config.index_topk
    seen: dict[str, torch.Tensor] = {}
    comp = model.model.layers[0].self_attn.compressor
    h1 = comp.indexer.scorer.register_forward_hook(lambda m, a, o: seen.update(q=a[0], keys=a[1], scores=o))
    h2 = comp.indexer.register_forward_hook(lambda m, a, o: seen.update(picks=o))
    try:
        with torch.no_grad():
            model(input_ids=prompt_ids, cache=DynamicCache(config=model.config))
    finally:
        h1.remove()
        h2.remove()
    assert seen["q"].shape == (1, 64, model.config.index_n_heads, model.config.index_head_dim)
    assert seen["keys"].shape == (1, 16, model.config.index_head_dim)
    assert seen["scores"].shape == (1, 64, 16) and seen["picks"].shape == (1, 64, k)
    for t in range(64):
        n_valid = (t + 1) // 4  # query t sees page w only when its window is complete: w < (t+1)//4
        picks = [p for p in seen["picks"][0, t].tolist() if p >= 0]
        assert len(picks) == min(k, n_valid)  # invalid picks are the sentinel -1
        assert _is_top_k(seen["scores"][0, t, :n_valid], picks, k)


def test_v4_attention_reads_window_plus_selected_pages(prompt_ids) -> None:
    from witprobe.models.tiny import build_tiny

    model = build_tiny("v4", attn_implementation=ATTN_NAME)
    cfg = model.config
    _ATTN_LOG.clear()
    with torch.no_grad():
        cache = DynamicCache(config=cfg)
        model(input_ids=prompt_ids, cache=cache)
        model(input_ids=prompt_ids[:, :1], cache=cache)
    last = {r["layer"]: r for r in _ATTN_LOG}  # decode step
    for layer, n_entries in [(0, 16), (1, 4), (2, 16), (3, 0)]:
        r = last[layer]
        assert r["key_is_value"]
        assert r["query"].shape == (1, cfg.num_attention_heads, 1, cfg.head_dim)
        assert r["key"].shape == (1, 1, cfg.sliding_window + n_entries, cfg.head_dim)
        assert torch.equal(r["kwargs"]["s_aux"], model.model.layers[layer].self_attn.sinks)
        assert r["kwargs"]["sliding_window"] == cfg.sliding_window and r["scaling"] == cfg.head_dim**-0.5
        mask = r["mask"][0, 0, 0]
        assert mask.shape[0] == cfg.sliding_window + n_entries
        if layer in (0, 2):  # CSA: exactly index_topk of the 16 pages are open
            assert int((mask[cfg.sliding_window:] == 0).sum()) == cfg.index_topk
        if layer == 1:  # HCA at decode: every emitted page is open (block bias None, zero padding)
            assert bool((mask[cfg.sliding_window:] == 0).all())


def test_v4_cache_layer_subclass_registers_itself_globally() -> None:
    """Subclassing a V4 cache layer re-registers its ``_layer_type`` for every later DynamicCache;
    a witness subclass must set ``_layer_type = None`` and build its layers itself."""
    from transformers import cache_utils
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4CSACache

    before = cache_utils.DYNAMIC_LAYER_TYPE_MAPPING["compressed_sparse_attention"]
    try:
        class Quiet(DeepseekV4CSACache):
            _layer_type = None

        assert cache_utils.DYNAMIC_LAYER_TYPE_MAPPING["compressed_sparse_attention"] is before

        class Loud(DeepseekV4CSACache):
            pass

        assert cache_utils.DYNAMIC_LAYER_TYPE_MAPPING["compressed_sparse_attention"] is Loud
    finally:
        cache_utils.DYNAMIC_LAYER_TYPE_MAPPING["compressed_sparse_attention"] = before


# --------------------------------------------------------------------------- recurrent state (Kimi-Linear KDA)


def test_kda_state_writes(tiny_models, prompt_ids) -> None:
    model = tiny_models["kda"].model
    cfg = model.config
    h, dk = cfg.linear_num_heads, cfg.linear_head_dim
    cache = _generate(model, prompt_ids, new=4, keep=True)
    assert [type(layer).__name__ for layer in cache.layers] == ["LinearAttentionLayer"] * 3 + ["DynamicLayer"]
    for layer in range(3):
        assert [m for _, m, _ in cache.calls(layer)] == (
            ["update_conv_state", "update_recurrent_state"] + ["conv_state_inplace", "update_recurrent_state"] * 3)
        ws = [w for w in cache.writes if w.layer == layer]
        assert ws[0].shapes == ((1, 3 * h * dk, 64),)  # the whole prompt's q|k|v before the conv
        assert ws[2].shapes == ((1, 3 * h * dk, cfg.linear_conv_kernel_dim),)  # the state written in place
        for rec in ws[1::2]:
            assert rec.shapes == ((1, h, dk, dk),) and rec.dtypes == (F32,)
        # the stored state is a copy of the last written tensor (update copies in place)
        assert torch.equal(cache.layers[layer].recurrent_states[0], ws[-1].tensors[0])
        assert cache.layers[layer].conv_states[0].shape == (1, 3 * h * dk, cfg.linear_conv_kernel_dim)
    assert cache.get_seq_length() == 67  # from the MLA layer (linear layers have no length)


def test_kda_decode_conv_write_bypasses_update_conv_state(tiny_models, prompt_ids) -> None:
    """At decode, Kimi-Linear mutates the tensor returned by ``get_conv_state`` in place: a cache
    that only overrides ``update_conv_state`` never sees those writes."""
    model = tiny_models["kda"].model

    class OnlyUpdate(DynamicCache):
        seen = 0

        def update_conv_state(self, *a, **k):
            OnlyUpdate.seen += 1
            return super().update_conv_state(*a, **k)

    cache = OnlyUpdate(config=model.config)
    with torch.no_grad():
        model(input_ids=prompt_ids[:, :10], cache=cache)
        before = cache.layers[0].conv_states[0].clone()
        model(input_ids=prompt_ids[:, 10:11], cache=cache)
    assert OnlyUpdate.seen == 3  # prefill only, one per KDA layer
    assert not torch.equal(before, cache.layers[0].conv_states[0])  # yet the state changed


def test_kda_runs_the_pure_torch_path() -> None:
    import importlib.util

    assert importlib.util.find_spec("fla") is None  # flash-linear-attention absent: torch fallback


def test_kda_forget_gate_hook_sees_per_channel_log_decay(tiny_models, prompt_ids) -> None:
    """``self_attn.forget_gate`` returns g = log a_t, (B, S, heads, d_k) float32, g <= 0: the
    per-channel contraction factors a_t = exp(g) that multiply the state's key-channel rows."""
    model = tiny_models["kda"].model
    cfg = model.config
    seen = []
    hd = model.model.layers[0].self_attn.forget_gate.register_forward_hook(lambda m, a, o: seen.append(o))
    try:
        with torch.no_grad():
            model(input_ids=prompt_ids)
    finally:
        hd.remove()
    g = seen[0]
    assert g.shape == (1, 64, cfg.linear_num_heads, cfg.linear_head_dim) and g.dtype == F32
    assert bool((g <= 0).all())


def test_selector_index_dtypes(tiny_models, prompt_ids) -> None:
    """DSA returns int32 token indices; V4 returns int64 page indices with -1 for invalid picks."""
    out = {}
    dsa, v4 = tiny_models["mla-dsa"].model, tiny_models["v4"].model
    h1 = dsa.model.layers[0].self_attn.indexer.register_forward_hook(lambda m, a, o: out.update(dsa=o))
    h2 = v4.model.layers[0].self_attn.compressor.indexer.register_forward_hook(lambda m, a, o: out.update(v4=o))
    try:
        with torch.no_grad():
            dsa(input_ids=prompt_ids)
            v4(input_ids=prompt_ids)
    finally:
        h1.remove()
        h2.remove()
    assert out["dsa"].dtype == torch.int32 and out["dsa"].shape == (1, 64, 8)
    assert out["v4"].dtype == torch.int64 and out["v4"].shape == (1, 64, 4)
    assert int(out["v4"][0, 0].min()) == -1 and int(out["v4"][0, 63].min()) >= 0
