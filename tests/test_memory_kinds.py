"""The memory-kind registry: invariants of the built-in kinds, and a toy kind added end to end.

The toy kind (``tests/toy_kind.py``) is added as a new kind is: its module plus one
:func:`~witprobe.kinds.registry.register` line. Nothing else changes, and the layout, the witness
cache, the observer, ``derive``, the coverage table and the claim theorem all serve it.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch
import toy_kind

from witprobe.calculus.tiers import Tier
from witprobe.certify.coverage import coverage
from witprobe.certify.derive import DeriveError, derive
from witprobe.kinds.base import MEMORY_CLASSES, MemoryKind
from witprobe.kinds.registry import KINDS, RegistryError, register, unregister
from witprobe.memory.codecs import make_codec
from witprobe.models.zoo import MODELS
from witprobe.kinds.layouts import LayoutError, layer_kinds, witness_cache_for
from witprobe.probe.attention import witprobe_attention
from witprobe.probe.observer import Observer
from witprobe.self_checks import lookup

BANDS, HEADS, KV_HEADS, DIM, TOKENS = 4, 4, 2, 16, 10


@pytest.fixture
def toy():
    register(toy_kind.KIND)  # the one registry line
    yield toy_kind.KIND
    unregister(toy_kind.KIND.name)


def test_builtin_kinds_name_their_counters_and_classes():
    assert set(KINDS) == {"dense_kv", "latent", "latent_indexed", "recurrent", "v4_sliding", "v4_hca", "v4_csa"}
    for k in KINDS.values():
        assert set(k.classes) <= set(MEMORY_CLASSES)
        for name in k.required_counters:
            assert lookup(name) is not None and lookup(name).record in ("write", "read"), (k.name, name)
    assert {c for k in KINDS.values() for c in k.classes} == set(MEMORY_CLASSES)
    assert {c for s in MODELS.values() for c in s.memory_classes} == set(MEMORY_CLASSES)


def test_the_registry_refuses_a_duplicate_a_conflict_and_an_unknown_counter(toy):
    with pytest.raises(RegistryError, match="already registered"):
        register(toy_kind.KIND)
    with pytest.raises(RegistryError, match="both serve 'toy_attention'"):
        register(dataclasses.replace(toy_kind.KIND, name="toy2"))
    with pytest.raises(RegistryError, match="not run.json self-checks"):
        register(dataclasses.replace(toy_kind.KIND, name="toy3", layer_type="t3", read_checks=("rows_toy_fine",)))
    with pytest.raises(ValueError, match="classes"):
        dataclasses.replace(toy_kind.KIND, classes=("toy_class",))
    with pytest.raises(ValueError, match="score spec and a theorem shape"):
        dataclasses.replace(toy_kind.KIND, theorem_shape=None)


def _config(types: list[str], **kw) -> SimpleNamespace:
    return SimpleNamespace(num_hidden_layers=len(types), layer_types=types, model_type="toy", head_dim=DIM,
                           num_attention_heads=HEADS, **kw)


def test_layouts_refuse_unknown_layer_types_without_the_toy_kind():
    with pytest.raises(LayoutError, match="toy_attention"):
        layer_kinds(_config(["toy_attention"]))
    with pytest.raises(LayoutError, match="indexed attention without a latent cache"):
        layer_kinds(_config(["indexed_attention"]))


def _toy_run(toy: MemoryKind) -> dict:
    """Serve one request through a two-layer witness cache (toy layer, dense layer) and build run.json."""
    cfg = _config(["toy_attention", "full_attention"])
    assert layer_kinds(cfg) == ["toy_kv", "dense_kv"]
    obs = Observer(2)
    codec = make_codec("int4", BANDS)
    cache = obs.attach(witness_cache_for(cfg, codec, BANDS, True, obs))
    assert type(cache.layers[0]) is toy_kind.WitnessKeyOnlyLayer and type(cache.layers[1]).__name__ == "WitnessKVLayer"
    g = torch.Generator().manual_seed(0)
    mask = torch.full((1, 1, TOKENS, TOKENS), torch.finfo(torch.float32).min).triu(1)
    for i, layer in enumerate(cache.layers):
        k = torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g)
        keys, values = layer.update(k, torch.randn(1, KV_HEADS, TOKENS, DIM, generator=g))
        module = torch.nn.Module()
        module.layer_idx, module.num_key_value_groups = i, HEADS // KV_HEADS
        with torch.no_grad(), obs.active():
            witprobe_attention(module, 3 * torch.randn(1, HEADS, TOKENS, DIM, generator=g), keys, values, mask, scaling=DIM ** -0.5)
    snap = obs.snapshot()
    return {
        "schema": "witprobe-run/2",
        "model": {"name": "toy", "family": "toy", "memory_class": "toy_kv+dense_kv", "num_layers": len(cache.layers),
                  "num_heads": HEADS, "num_kv_heads": KV_HEADS, "head_dim": DIM, "provenance": {}},
        "config": {"codec": "int4", "bands": BANDS, "compress_values": True, "max_new_tokens": 1, "prompts": ["toy"]},
        "environment": {"platform": "test", "python": "3", "torch": torch.__version__, "transformers": "-",
                        "witprobe": "-"},
        "requests": [{"prompt_index": 0, "prompt_tokens": TOKENS, "served_tokens": []}],
        "layers": [{"layer": i, "memory_class": kind, "write": snap["write"][i], "read": snap["read"][i],
                    "host_write_calls": snap["host_write_calls"][i], "host_read_calls": snap["host_read_calls"][i]}
                   for i, kind in enumerate(layer_kinds(cfg))],
    }


def test_a_toy_kind_added_by_one_module_and_one_line_is_served_end_to_end(toy):
    run = _toy_run(toy)
    assert run["layers"][0]["write"]["value_residual"]["max"] == 0  # the toy stores values exactly
    assert run["layers"][1]["write"]["value_residual"]["max"] > 0
    d = derive(run)
    assert d.failures == [] and not any(d.self_checks.values())
    claims = [c for c in d.claims if c.kind == "attn_tv"]
    assert [c.memory_class for c in claims] == ["toy_kv", "dense_kv"]
    for c in claims:
        assert not c.vacuous and c.registered_tier is Tier.CERTIFIED and c.value >= c.realized_max > 0
    # the toy reuses the dense-KV theorem shape: each claim is a banded chain form or the dense box form
    assert len(d.theorems) == 2 and {t.shape for t in d.theorems} <= {"banded", "boxsup"}
    assert [(r["memory_class"], r["layers_covered"], r["layers_total"]) for r in coverage(run)] == [("plain_kv", 2, 2)]
    run["layers"][0]["write"]["key_viol_witness_below_residual"] = 1  # the toy's self-checks are the table's
    assert coverage(run)[0]["layers_covered"] == 1 and derive(run).self_checks["key_viol_witness_below_residual"] == 1


def test_a_run_of_an_unregistered_kind_is_refused_by_name(toy):
    run = _toy_run(toy)
    unregister(toy.name)
    with pytest.raises(DeriveError, match="memory_class 'toy_kv' is not one of"):
        derive(run)
    register(toy)
