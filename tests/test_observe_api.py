"""The Python API `witprobe.observe`: readings, restore on exit, fail closed on unobserved reads."""

from __future__ import annotations

import pytest
import torch

import witprobe
from witprobe.models.zoo import load_model
from witprobe.probe.errors import ObserverError


@pytest.fixture(scope="module")
def tiny():
    return load_model("qwen3")


def _inputs(tok):
    return tok("The sea and the wind are old friends, said the sailor to the child.", return_tensors="pt")


def test_observe_meters_every_layer_and_restores_attention(tiny):
    model, tok = tiny.model, tiny.tokenizer
    before = model.config._attn_implementation
    with witprobe.observe(model, codec="int8", bands=4) as run:
        assert model.config._attn_implementation == "witprobe"
        with torch.no_grad():
            model.generate(**_inputs(tok), cache=run.cache, max_new_tokens=3, do_sample=False)
        run.new_cache()
        with torch.no_grad():
            model.generate(**_inputs(tok), cache=run.cache, max_new_tokens=2, do_sample=False)
    assert model.config._attn_implementation == before
    layers = run.layers()
    assert len(layers) == model.config.num_hidden_layers
    for r in layers:
        assert r.rows > 0 and r.reads > 0 and r.writes > 0 and r.rows_beaten == 0
        assert 0 < r.tv_realized_max <= r.bound_max


def test_observe_restores_attention_when_the_block_raises(tiny):
    tiny.model.set_attn_implementation("eager")
    before = tiny.model.config._attn_implementation
    with pytest.raises(RuntimeError, match="boom"):
        with witprobe.observe(tiny.model):
            assert tiny.model.config._attn_implementation == "witprobe"
            raise RuntimeError("boom")
    assert tiny.model.config._attn_implementation == before == "eager"


def test_reads_outside_the_meter_raise(tiny):
    model, tok = tiny.model, tiny.tokenizer
    with pytest.raises(witprobe.UnobservedReads, match="no read was metered"):
        with witprobe.observe(model) as run:
            model.set_attn_implementation("sdpa")  # the witness cache is passed, reads bypass the meter
            with torch.no_grad():
                model.generate(**_inputs(tok), cache=run.cache, max_new_tokens=2, do_sample=False)
    assert model.config._attn_implementation == "eager"
    with pytest.raises(ObserverError, match="not the served keys"):
        with witprobe.observe(model):  # the cache is not passed: the model's own cache is read
            with torch.no_grad():
                model.generate(**_inputs(tok), max_new_tokens=2, do_sample=False)
