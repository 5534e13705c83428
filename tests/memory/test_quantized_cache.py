"""transformers' QuantizedCache (quanto backend) as a codec: witprobe serves exactly what the real
transformers cache serves, and every bound holds on it."""

from __future__ import annotations

import pytest
import torch

import witprobe
from witprobe.memory.codecs import CodecError, make_codec
from witprobe.memory.quantized_cache import QuantizedCacheCodec, quanto_available
from witprobe.models.zoo import load_model

pytestmark = pytest.mark.skipif(not quanto_available(), reason="optimum-quanto is not installed")

PROMPT = "The sea and the wind are old friends, said the sailor to the child, and they argue every night."


@pytest.fixture(scope="module")
def tiny():
    return load_model("qwen3")


def _generate(model, tok, cache, new_tokens):
    inputs = tok(PROMPT, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, cache=cache, max_new_tokens=new_tokens, do_sample=False,
                             output_scores=True, return_dict_in_generate=True)
    return out.sequences, torch.stack(out.scores)


def test_witprobe_serves_what_the_transformers_quantized_cache_serves(tiny):
    from transformers import QuantizedCache

    model, tok = tiny.model, tiny.tokenizer
    new = 40  # past the 32-token residual: one flush re-quantizes everything served so far
    model.set_attn_implementation("eager")
    ref_cache = QuantizedCache(backend="quanto", config=model.config, nbits=2, residual_length=32)
    ref_seq, ref_scores = _generate(model, tok, ref_cache, new)
    plain_seq, plain_scores = _generate(model, tok, None, new)
    with witprobe.observe(model, codec="quanto2-r32", bands=4) as run:
        seq, scores = _generate(model, tok, run.cache, new)
    assert torch.equal(seq, ref_seq)
    assert torch.allclose(scores, ref_scores, atol=1e-4, rtol=0)
    assert not torch.allclose(scores, plain_scores, atol=1e-3, rtol=0), "the quantized cache must perturb"
    layers = run.layers()
    assert all(r.rows_beaten == 0 and r.tv_realized_max <= r.bound_max for r in layers)
    assert max(r.tv_realized_max for r in layers) > 0


def test_codec_parameters_are_checked():
    with pytest.raises(CodecError, match="nbits must be 2 or 4"):
        QuantizedCacheCodec(nbits=3)
    with pytest.raises(CodecError, match="axis_key and axis_value"):
        QuantizedCacheCodec(axis_key=1)
    with pytest.raises(CodecError, match="serves from its write history"):
        make_codec("quanto4", 4).encode_decode(torch.zeros(1, 1, 2, 8))
