"""``--batch N``: requests served together in one forward with left padding are metered exactly as
each alone (padded keys hidden, padded query rows and entries left out of every meter)."""

from __future__ import annotations

import math

import pytest
import torch

from witprobe.certify.measure import MeasureConfig, measure
from witprobe.models.zoo import load_model

VOCAB = 49152
SMALL = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
             pad_token_id=2, initializer_range=0.08)
PROMPTS = (
    "Read the following notes and summarize them in two sentences. The team met on Monday to review the "
    "quarterly results, and sales grew in the north.",
    "What is the capital of France?",
    "Write a short poem about the sea.",
)
NEW = 5
SKIP = {"fp_width"}  # one fold per metered chunk: a batch has fewer chunks than its requests alone
# bound / realized ratios divide by TVs near 1e-9, and the box-sup bound pools keys into radius
# buckets by log c_t (a step function): both amplify the float32 differences of a batched forward
LOOSE = ("_tightness", "boxsup_")
# a quantization residual (and its band norms, the witness) is the distance of a key to the codec's
# grid: continuous in the key, but it moves by the key's own float32 change, which is absolute (a few
# ulps of a unit-scale key), not relative to the small residual: a batched GEMM on another CPU moved a
# residual of 3.8e-3 by 5e-7 (rel 1.4e-4) and a band norm of 7.3e-3 by 1.3e-6
ABSOLUTE = ("_residual", "_witness")


def _tol(key: str) -> dict[str, float]:
    if any(t in key for t in LOOSE):
        return {"rel": 1e-2, "abs": 1e-9}
    if any(t in key for t in ABSOLUTE):
        return {"rel": 1e-4, "abs": 1e-5}
    return {"rel": 1e-4, "abs": 1e-9}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import transformers as tf

    from witprobe.models.smollm2 import load_tokenizer

    d = tmp_path_factory.mktemp("batch") / "llama"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        model = tf.AutoModelForCausalLM.from_config(tf.LlamaConfig(**SMALL))
    model.save_pretrained(d)
    load_tokenizer(chat_template=False).save_pretrained(d)
    return load_model(str(d))


def _run(loaded, batch: int, reference: bool = False) -> dict:
    cfg = MeasureConfig(model="tiny", prompts=PROMPTS, max_new_tokens=NEW, batch=batch, reference=reference)
    return measure(loaded, cfg).to_json()


def _stats(run: dict) -> dict[tuple[int, str, str], dict]:
    out = {}
    for layer in run["layers"]:
        for side in ("read", "write"):
            for key, v in layer[side].items():
                if isinstance(v, dict) and key not in SKIP:
                    out[(layer["layer"], side, key)] = v
    return out


def _counters(run: dict) -> dict[tuple[int, str, str], int]:
    return {(layer["layer"], side, key): v for layer in run["layers"] for side in ("read", "write")
            for key, v in layer[side].items() if isinstance(v, int) and key != "calls"}


def test_batched_left_padded_run_meters_each_request_as_alone(tiny):
    alone, batched = _run(tiny, 1, reference=True), _run(tiny, 3, reference=True)
    assert batched["config"]["batch"] == 3 and "batch" not in alone["config"]
    lengths = [r["prompt_tokens"] for r in alone["requests"]]
    assert len(set(lengths)) == 3  # different lengths: the shorter two are padded
    for a, b in zip(alone["requests"], batched["requests"]):
        assert a["prompt_tokens"] == b["prompt_tokens"] and a["served_tokens"] == b["served_tokens"]
        assert a["reference_tokens"] == b["reference_tokens"]
        assert b["next_token_tv"] == pytest.approx(a["next_token_tv"], abs=1e-6)
    sa, sb = _stats(alone), _stats(batched)
    assert sa.keys() == sb.keys()
    for key in sa:
        x, y = sa[key], sb[key]
        assert x["n"] == y["n"], key  # the same rows and entries, none of the padding
        for f in ("min", "max", "sum"):
            if x[f] is not None:
                assert math.isfinite(y[f]), key
                assert y[f] == pytest.approx(x[f], **_tol(key[2])), (key, f)
    assert _counters(alone) == _counters(batched)  # rows, beaten and vacuous counts, self-checks
    rows = sum(v for (_, side, k), v in _counters(alone).items() if side == "read" and k == "rows")
    assert rows == SMALL["num_hidden_layers"] * SMALL["num_attention_heads"] * sum(n + NEW - 1 for n in lengths)


def test_a_request_that_ends_early_is_not_metered_after_its_end(tiny):
    """Forcing one request to emit end-of-sequence first: the batch keeps generating for the
    others, and what generate feeds that request afterwards is left out as in its own run."""
    import witprobe.certify.measure as m

    alone = _run(tiny, 1)
    first = alone["requests"][1]["served_tokens"][1]  # the second request's second token
    tiny.model.generation_config.eos_token_id = first
    try:
        alone, batched = _run(tiny, 1), _run(tiny, 3)
    finally:
        tiny.model.generation_config.eos_token_id = SMALL["eos_token_id"]
    ended = [r for r in alone["requests"] if len(r["served_tokens"]) < NEW]
    assert ended, "no request ended early"
    assert [r["served_tokens"] for r in alone["requests"]] == [r["served_tokens"] for r in batched["requests"]]
    assert {k: v["n"] for k, v in _stats(alone).items()} == {k: v["n"] for k, v in _stats(batched).items()}
    assert m  # imported for the module under test


@pytest.mark.parametrize("bad", [0, 65, True])
def test_bad_batch_is_refused(bad):
    with pytest.raises(ValueError, match="batch"):
        MeasureConfig(batch=bad).validate()


def test_batch_refused_for_a_sequence_codec(tiny):
    from witprobe.certify.measure import check_compatible
    from witprobe.memory.codecs import CODECS, SEQUENCE, make_codec

    seq = sorted(n for n in CODECS if make_codec(n, 4).scope == SEQUENCE)
    assert seq
    with pytest.raises(ValueError, match="per-entry codec"):
        cfg = MeasureConfig(codec=seq[0], prompts=PROMPTS, batch=2)
        check_compatible(cfg, tiny, cfg.validate())
