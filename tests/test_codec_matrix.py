"""Every registered codec on every memory kind, live: bounds hold, self-checks are 0, all covered.

One short request (19 prompt tokens, one generated token: enough for a V4 heavily compressed
entry of 16 tokens) through each tiny zoo model with each codec of
:data:`witprobe.memory.codecs.CODECS`. The models together carry every memory kind the witness
cache knows; the test fails if a kind or a codec is added without reaching this matrix.
"""

from __future__ import annotations

import functools

import pytest

from witprobe.certify.coverage import coverage
from witprobe.certify.derive import derive
from witprobe.kinds.registry import KINDS
from witprobe.certify.measure import MeasureConfig, measure
from witprobe.memory.codecs import CODECS
from witprobe.models.zoo import load_model

MODELS = ("qwen3", "mla", "mla-dsa", "v4", "kda")
# the only refusals a codec may give a model, each a clear error before any measurement: a
# block or group that does not divide the tiny model's entry dimension, or a sequence-level codec
# on a model with non-dense layers (those codecs certify SmolLM2: tests/memory/test_codec_interface.py)
REFUSALS = ("does not divide the entry dimension", "applies to dense KV layers only")
REFUSED: set[tuple[str, str]] = set()
PROMPT = "The team met on Monday to review the quarterly results and agreed to publish a short setup guide."


@functools.lru_cache(maxsize=None)
def _model(name: str):
    return load_model(name)


@functools.lru_cache(maxsize=None)
def _run(name: str, codec: str) -> dict:
    return measure(_model(name), MeasureConfig(model=name, codec=codec, bands=4, max_new_tokens=1, prompts=(PROMPT,),
                                               reference=False)).to_json()


def test_the_matrix_reaches_every_memory_kind():
    kinds = {layer["memory_class"] for name in MODELS for layer in _run(name, "int8")["layers"]}
    assert kinds == set(KINDS)


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("name", MODELS)
def test_codec_on_memory_kind(name, codec):
    try:
        run = _run(name, codec)
    except ValueError as e:
        assert any(r in str(e) for r in REFUSALS), f"{name} x {codec}: unexpected refusal: {e}"
        REFUSED.add((name, codec))
        return
    d = derive(run)
    assert d.failures == [], d.failures
    assert not any(d.self_checks.values()), {k: v for k, v in d.self_checks.items() if v}
    for layer in run["layers"]:
        observed = layer["read"].get("rows", 0) or layer["read"].get("state_writes", 0)
        assert observed > 0, (layer["layer"], layer["memory_class"])
    for c in d.claims:
        if c.kind != "attn_tv":
            continue
        for form in c.forms.values():
            assert not form.beaten
            if form.bound is not None:
                assert form.bound >= c.realized_max, (c.id, form.form)
    assert all(r["layers_covered"] == r["layers_total"] for r in coverage(run)), coverage(run)


def test_per_entry_codecs_run_on_every_kind():
    """The refusals stay confined to the block/group and sequence-level codecs: the per-entry
    integer and float codecs run on every model of the matrix."""
    for name in MODELS:
        for codec in ("int8", "int4", "fp8-e4m3"):
            if codec in CODECS:
                _run(name, codec)  # raises if refused
