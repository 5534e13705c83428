"""The codec interface: registration, roles, sequence codecs in the witness cache, the CLI list."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from dataclasses import dataclass

import pytest
import torch

from witprobe.memory.codecs import (CODECS, SEQUENCE, BandIntCodec, Codec, CodecError, KIVICodec, KIVIKVCodec,
                                    PackedCodec, make_codec, register_codec)
from witprobe.probe.meters import WitnessBatch
from witprobe.probe.witness_cache import WitnessKVLayer


class _Recorder:
    def __init__(self) -> None:
        self.writes: list[tuple[str, WitnessBatch]] = []

    def record_write(self, layer_idx, tensor, w, bands) -> None:  # noqa: ANN001
        self.writes.append((tensor, w))


def test_register_codec_refuses_duplicates_bad_names_and_missing_summaries():
    with pytest.raises(CodecError, match="already registered"):
        register_codec("int8", lambda bands: BandIntCodec(8, bands), "again")
    with pytest.raises(CodecError, match="lowercase"):
        register_codec("Int 3", lambda bands: BandIntCodec(3, bands), "x")
    with pytest.raises(CodecError, match="summary"):
        register_codec("int3-test", lambda bands: BandIntCodec(3, bands), " ")
    assert "int3-test" not in CODECS


def test_a_user_codec_registers_and_runs_through_make_codec():
    @dataclass(frozen=True)
    class Halve(Codec):
        @property
        def name(self) -> str:
            return "halve-test"

        def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
            return x / 2

    register_codec("halve-test", lambda bands: Halve(), "halves every entry (a test)")
    try:
        x = torch.randn(2, 8)
        assert torch.equal(make_codec("halve-test", 4).encode_decode(x), x / 2)
        assert make_codec("halve-test", 4).for_role("value").scope == "entry"
    finally:
        del CODECS["halve-test"]


def test_kivi_roles_and_packed_dims_are_checked():
    kv = make_codec("kivi2", 4)
    assert kv.scope == SEQUENCE
    assert kv.for_role("key") == KIVICodec(role="key", bits=2, group_size=32, residual=128)
    assert kv.for_role("value").role == "value"
    with pytest.raises(CodecError):
        kv.encode_decode(torch.randn(4, 64))
    with pytest.raises(CodecError):
        KIVIKVCodec(bits=2, group_size=32, residual=48)  # key residual not a multiple of the group
    with pytest.raises(CodecError, match="does not divide"):
        PackedCodec(bits=4, block=64, group=32).check_dim(96)
    with pytest.raises(CodecError):
        PackedCodec(bits=5)


@pytest.mark.parametrize("name", ["kivi2-r32", "kivi4"])
def test_a_sequence_codec_serves_the_same_state_written_token_by_token_or_at_once(name):
    """The served state after T writes depends only on T (KIVI Algorithm 1), and every entry whose
    served form changes (a flushed window) is witnessed again."""
    torch.manual_seed(0)
    k = torch.randn(1, 3, 150, 64)
    v = torch.randn(1, 3, 150, 64)
    codec = make_codec(name, 4)
    rec_a, rec_b = _Recorder(), _Recorder()
    a = WitnessKVLayer(0, codec.for_role("key"), codec.for_role("value"), 4, rec_a)
    b = WitnessKVLayer(0, codec.for_role("key"), codec.for_role("value"), 4, rec_b)
    a.update(k[..., :100, :], v[..., :100, :])  # a: a 100-token prefill, then 50 tokens at once
    for t in range(150):  # b: token by token
        b_keys, b_vals = b.update(k[..., t:t + 1, :], v[..., t:t + 1, :])
    a_keys, a_vals = a.update(k[..., 100:, :], v[..., 100:, :])
    kc, vc = codec.for_role("key"), codec.for_role("value")
    assert torch.equal(a_keys, kc.encode_decode(k)) and torch.equal(b_keys, kc.encode_decode(k))
    assert torch.equal(a_vals, vc.encode_decode(v)) and torch.equal(b_vals, vc.encode_decode(v))
    assert torch.equal(a.key_band_norms, b.key_band_norms)
    d = (k - b_keys).reshape(1, 3, 150, 4, 16).norm(dim=-1)
    assert torch.allclose(b.key_band_norms, d.double())
    # every quantized key was witnessed after it was quantized (with its final residual)
    n_q = kc.quantized_tokens(150)
    key_writes = [w for t, w in rec_b.writes if t == "key"]
    witnessed = sum(w.witness.shape[-1] for w in key_writes)
    # each token once when written, again when its window was flushed into quantized blocks, except
    # the token whose write triggered the flush (new and quantized at once)
    assert witnessed == 150 + n_q - n_q // kc.residual
    assert any(float(w.residual.max()) > 0 for w in key_writes)


def test_an_entry_codec_is_called_on_new_entries_only():
    torch.manual_seed(1)
    k = torch.randn(1, 2, 10, 64)
    rec = _Recorder()
    layer = WitnessKVLayer(0, make_codec("int4", 4), make_codec("int4", 4), 4, rec)
    layer.update(k[..., :6, :], k[..., :6, :])
    layer.update(k[..., 6:, :], k[..., 6:, :])
    assert [w.witness.shape[-1] for _, w in rec.writes] == [6, 6, 4, 4]


def test_certify_run_help_lists_every_built_in_codec(capsys):
    from witprobe.certify.cli import main

    with pytest.raises(SystemExit) as e:
        main(["run", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for name, entry in CODECS.items():
        assert f"  {name} " in text and entry.summary[:40] in text, name


def test_a_sequence_codec_on_a_latent_model_is_a_usage_error(tmp_path, capsys):
    from witprobe.certify.cli import main

    assert main(["run", "--model", "mla", "--codec", "kivi2", "--out", str(tmp_path / "x"), "--quiet"]) == 2
    assert "sequence-level" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("codec", ["kivi2-r32", "packed-int4", "packed-int6", "fp8-e4m3"])
def test_each_new_codec_certifies_smollm2_with_no_bound_beaten(codec, tmp_path, smollm2):
    from witprobe.certify.cli import main

    out = tmp_path / codec
    with redirect_stdout(io.StringIO()) as buf:
        code = main(["run", "--codec", codec, "--max-new-tokens", "2", "--coq", "off", "--lean", "off", "--quiet",
                     "--out", str(out), "--prompt",
                     "Read the following notes and summarize them in two sentences. The team met on Monday to review "
                     "the quarterly results. Sales grew in the northern region but fell slightly in the south."])
    assert code in (0, 5), buf.getvalue()
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["failures"] == [] and cert["summary"]["verdict"] == "pass"
    assert all(v["count"] == 0 for v in cert["self_checks"].values())
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["codec"] == codec
    residual = [r["key_rel_residual_mean"] for r in cert["readings"]]
    assert min(residual) > 0, "the codec must actually perturb the keys"
