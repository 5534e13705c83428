"""Reference codecs: hand-computed vectors and property tests of the stated error bounds."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from witprobe.memory.codecs import (
    CACHE,
    CODECS,
    BandIntCodec,
    CodecError,
    FP8E4M3Codec,
    HeavyHitterPolicy,
    KIVICodec,
    MantissaMaskCodec,
    SinkWindowPolicy,
    make_codec,
)

from state_int_codec import StateIntCodec  # noqa: E402 - tests/memory is on sys.path under pytest

finite_floats = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False, width=32)


def _tensor(values: list[float], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


# --------------------------------------------------------------------------- fp8 e4m3


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.1, 0.1015625),  # in [2^-4, 2^-3): spacing 2^-7; 0.1 / 2^-7 = 12.8 -> 13 * 2^-7
        (-0.1, -0.1015625),
        (1.0, 1.0),
        (1.0625, 1.0),  # tie between 1.0 (m=0) and 1.125 (m=1): even mantissa wins
        (1.1875, 1.25),  # tie between 1.125 (m=1) and 1.25 (m=2): even mantissa wins
        (3.3, 3.25),  # spacing 0.25: 13.2 -> 13
        (448.0, 448.0),  # largest finite e4m3fn value, 1.75 * 2^8
        (449.0, 448.0),  # saturation
        (1e6, 448.0),
        (-1e6, -448.0),
        (2.0**-6, 2.0**-6),  # smallest normal
        (2.0**-9, 2.0**-9),  # smallest subnormal
        (2.0**-10, 0.0),  # tie between 0 and 2^-9: even (0) wins
        (3 * 2.0**-11, 2.0**-9),  # 0.75 of the smallest subnormal rounds up
        (1e-3, 2.0**-9),  # subnormal spacing 2^-9: 0.512 -> 1
        (0.0, 0.0),
        (240.0, 240.0),  # representable (1.875 * 2^7); the fnuz maximum, not a saturation point here
        (250.0, 256.0),  # spacing 16 in [128, 256): 15.625 -> 16 * 16
    ],
)
def test_fp8_e4m3_hand_values(x: float, expected: float) -> None:
    out = FP8E4M3Codec().encode_decode(_tensor([x], torch.float64))
    assert out.item() == expected


def test_fp8_e4m3_matches_torch_float8_cast() -> None:
    """torch's float8_e4m3fn cast (round to nearest even, saturating on CPU) is an independent oracle."""
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(20000, generator=g) * s for s in (1e-3, 0.05, 1.0, 30.0, 300.0)])
    ours = FP8E4M3Codec().encode_decode(x)
    ref = x.to(torch.float8_e4m3fn).to(torch.float32)
    assert torch.equal(ours, ref)


def test_fp8_e4m3_scale() -> None:
    c = FP8E4M3Codec(scale=0.5)
    # 0.1 / 0.5 = 0.2 in [2^-3, 2^-2): spacing 2^-6; 12.8 -> 13 * 2^-6 = 0.203125; times 0.5
    assert c.encode_decode(_tensor([0.1], torch.float64)).item() == 0.1015625
    assert c.encode_decode(_tensor([1000.0], torch.float64)).item() == 224.0  # saturates at 448 * 0.5


def test_fp8_nan_stays_nan() -> None:
    out = FP8E4M3Codec().encode_decode(_tensor([float("nan"), 1.0]))
    assert math.isnan(out[0].item()) and out[1].item() == 1.0


@settings(max_examples=300, deadline=None)
@given(st.lists(finite_floats, min_size=1, max_size=64), st.sampled_from([1.0, 0.25, 3.0]))
def test_fp8_error_within_half_spacing(values: list[float], scale: float) -> None:
    c = FP8E4M3Codec(scale=scale)
    x = _tensor(values, torch.float64)
    err = (x - c.encode_decode(x)).abs()
    assert bool((err <= c.error_bound(x)).all())
    inside = x.abs() <= 448 * scale
    # inside the range the bound is half a grid spacing, at most 2^-4 relative (3 mantissa bits)
    rel = c.error_bound(x)[inside] / x.abs()[inside].clamp_min(2.0**-6 * scale)
    assert bool((rel <= 2.0**-4 * (1 + 1e-12)).all())


def test_fp8_bound_is_exact_half_spacing_for_power_of_two_scale() -> None:
    x = _tensor([0.1, 1.0, 300.0, 2.0**-12, 500.0], torch.float64)
    assert FP8E4M3Codec().error_bound(x).tolist() == [2.0**-8, 2.0**-4, 16.0, 2.0**-10, 52.0]  # 300: spacing 32 in [256, 512)
    assert FP8E4M3Codec(scale=0.25).error_bound(x[:1]).tolist() == [2.0**-8]  # 0.4 in [1/4, 1/2): 2^-6 * 0.25
    assert FP8E4M3Codec(scale=3.0).error_bound(x[:1]).item() > 3 * 2.0**-9  # 0.1/3 in [2^-5, 2^-4): half spacing 2^-9, plus an allowance


def test_fp8_bad_scale() -> None:
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(CodecError):
            FP8E4M3Codec(scale=bad)


# --------------------------------------------------------------------------- mantissa masking


def test_mantissa_mask_hand_values() -> None:
    # 1 + 2^-1 + 2^-23 (float32): dropping 1 bit clears 2^-23; dropping 22 bits keeps only 2^-1
    x = _tensor([1.0 + 2.0**-1 + 2.0**-23])
    assert MantissaMaskCodec(drop_bits=1).encode_decode(x).item() == 1.5
    assert MantissaMaskCodec(drop_bits=22).encode_decode(x).item() == 1.5
    assert MantissaMaskCodec(drop_bits=23).encode_decode(x).item() == 1.0
    # truncation toward zero, sign kept: -1.75 with 2 mantissa bits dropped from bf16 (7 bits) stays
    assert MantissaMaskCodec(drop_bits=5).encode_decode(_tensor([-1.75], torch.bfloat16)).item() == -1.75
    # 0.1f = 0x3DCCCCCD; drop 16 bits -> 0x3DCC0000 = 0.099609375
    assert MantissaMaskCodec(drop_bits=16).encode_decode(_tensor([0.1])).item() == 0.099609375


def test_mantissa_mask_equals_bit_and() -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5000, generator=g) * 100
    out = MantissaMaskCodec(drop_bits=16).encode_decode(x)
    assert torch.equal(out.view(torch.int32), x.view(torch.int32) & ~0xFFFF)
    assert bool((out.abs() <= x.abs()).all())  # toward zero


def test_mantissa_mask_non_finite_unchanged() -> None:
    x = _tensor([float("inf"), float("-inf"), float("nan"), 3.0])
    out = MantissaMaskCodec(drop_bits=23).encode_decode(x)
    assert out[0].item() == float("inf") and out[1].item() == float("-inf")
    assert math.isnan(out[2].item()) and out[3].item() == 2.0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=64),
    st.integers(min_value=0, max_value=23),
)
def test_mantissa_mask_error_bound(values: list[float], drop: int) -> None:
    c = MantissaMaskCodec(drop_bits=drop)
    x = _tensor(values)
    err = (x.double() - c.encode_decode(x).double()).abs()
    assert bool((err <= c.error_bound(x)).all())


def test_mantissa_mask_rejects_bad_input() -> None:
    with pytest.raises(CodecError):
        MantissaMaskCodec(drop_bits=24)
    with pytest.raises(CodecError):
        MantissaMaskCodec(drop_bits=8).encode_decode(torch.ones(2, dtype=torch.bfloat16))
    with pytest.raises(CodecError):
        MantissaMaskCodec(drop_bits=1).encode_decode(torch.ones(2, dtype=torch.float64))


# --------------------------------------------------------------------------- KIVI


def test_kivi_key_hand_example() -> None:
    # one channel, group of 2 tokens, 1 bit: levels {min, max}
    c = KIVICodec(role="key", bits=1, group_size=2, residual=2)
    x = _tensor([[0.0], [1.0], [0.25], [0.875], [5.0]], torch.float64)  # T = 5 -> 4 quantized, 1 exact
    out = c.encode_decode(x)
    assert out[:, 0].tolist() == [0.0, 1.0, 0.25, 0.875, 5.0]  # 2 levels reproduce min and max exactly
    c2 = KIVICodec(role="key", bits=2, group_size=4, residual=4)
    x2 = _tensor([[0.0], [1.0], [0.5], [3.0], [7.0]], torch.float64)
    # step = (3 - 0) / 3 = 1: 0.5 is a tie between 0 and 1 -> even code 0
    assert c2.encode_decode(x2)[:, 0].tolist() == [0.0, 1.0, 0.0, 3.0, 7.0]


def test_kivi_key_is_per_channel_value_is_per_token() -> None:
    x = torch.tensor([[0.0, 100.0], [1.0, 0.0], [2.0, 50.0], [3.0, 25.0]], dtype=torch.float64)
    k = KIVICodec(role="key", bits=2, group_size=4, residual=4).encode_decode(x)
    # channel 0 has range 3 (step 1): exact; channel 1 has range 100 (step 100/3)
    assert k[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.allclose(k[:, 1], torch.tensor([100.0, 0.0, 200 / 3, 100 / 3], dtype=torch.float64))
    v = KIVICodec(role="value", bits=1, group_size=None, residual=0).encode_decode(x)
    assert torch.equal(v, x)  # 1 bit per token over 2 channels: both channels sit on {min, max}
    v3 = KIVICodec(role="value", bits=1, group_size=None, residual=0).encode_decode(torch.tensor([[0.0, 0.4, 1.0]]))
    assert v3.tolist() == [[0.0, 0.0, 1.0]]


def test_kivi_residual_semantics() -> None:
    key = KIVICodec(role="key", bits=2, group_size=2, residual=4)
    val = KIVICodec(role="value", bits=2, group_size=2, residual=4)
    assert [key.quantized_tokens(t) for t in (0, 3, 4, 7, 8, 9)] == [0, 0, 4, 4, 8, 8]
    assert [val.quantized_tokens(t) for t in (0, 3, 4, 7, 8, 9)] == [0, 0, 0, 3, 4, 5]
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, 9, 4, generator=g)
    kb = key.error_bound(x)
    assert bool((kb[..., 8:, :] == 0).all()) and bool((kb[..., :8, :] > 0).all())
    out = val.encode_decode(x)
    assert torch.equal(out[..., 5:, :], x[..., 5:, :])  # last 4 tokens exact


def test_kivi_streaming_equals_whole_sequence() -> None:
    """The served state depends only on T: quantize blocks when they fall out of the residual."""
    key = KIVICodec(role="key", bits=2, group_size=2, residual=4)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1, 2, 11, 4, generator=g, dtype=torch.float64)
    served = torch.empty(1, 2, 0, 4, dtype=torch.float64)
    for t in range(1, 12):  # KIVI Algorithm 1 run token by token
        n_before = key.quantized_tokens(t - 1)
        n_now = key.quantized_tokens(t)
        if n_now > n_before:  # the residual filled up: quantize it as a block
            block = KIVICodec(role="key", bits=2, group_size=2, residual=0).encode_decode(x[..., n_before:n_now, :])
            served = torch.cat([served[..., :n_before, :], block], dim=-2)
        served = torch.cat([served[..., :n_now, :], x[..., n_now:t, :]], dim=-2)
    assert torch.equal(served, key.encode_decode(x))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=1, max_value=20),
    st.sampled_from([1, 2, 3, 4]),
    st.sampled_from(["key", "value"]),
    st.integers(min_value=0, max_value=2**31 - 1),
)
def test_kivi_error_within_half_step(t: int, bits: int, role: str, seed: int) -> None:
    c = KIVICodec(role=role, bits=bits, group_size=2, residual=4)
    x = torch.randn(2, t, 4, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 10
    err = (x - c.encode_decode(x)).abs()
    assert bool((err <= c.error_bound(x) * (1 + 1e-12)).all())


def test_kivi_validation() -> None:
    with pytest.raises(CodecError):
        KIVICodec(role="key", group_size=32, residual=48)
    with pytest.raises(CodecError):
        KIVICodec(role="both")
    with pytest.raises(CodecError):
        KIVICodec(role="value", group_size=3, residual=0).encode_decode(torch.zeros(1, 4, 8))


# --------------------------------------------------------------------------- recurrent state


def test_state_int_hand_example() -> None:
    # one key channel with values [1, -0.5, 0.26] at 2 bits: qmax = 1, scale = 1
    s = _tensor([[[[1.0, -0.5, 0.26]]]], torch.float64)
    out = StateIntCodec(bits=2).encode_decode(s)
    assert out.flatten().tolist() == [1.0, -0.0, 0.0]  # -0.5 ties to even (0), 0.26 -> 0
    out8 = StateIntCodec(bits=8).encode_decode(s)  # scale 1/127
    assert out8.flatten().tolist() == [1.0, -64 / 127, 33 / 127]


def test_state_int_keeps_channel_identity() -> None:
    s = torch.zeros(1, 2, 3, 4)
    s[0, 0, 0] = torch.tensor([1000.0, 0, 0, 0])
    s[0, 0, 1] = torch.tensor([1e-3, 2e-3, 0, 0])
    out = StateIntCodec(bits=8).encode_decode(s)
    # a huge channel does not wipe out a tiny one: scales are per key channel
    assert torch.allclose(out[0, 0, 1], s[0, 0, 1], rtol=0, atol=1e-3 / 127)
    assert torch.equal(out[0, 1], s[0, 1])  # all-zero channels are exact


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=2, max_value=16), st.integers(min_value=0, max_value=2**31 - 1), st.sampled_from([-1, -2]))
def test_state_int_error_within_half_scale(bits: int, seed: int, dim: int) -> None:
    c = StateIntCodec(bits=bits, reduce_dim=dim)
    x = torch.randn(2, 3, 5, 6, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    err = (x - c.encode_decode(x)).abs()
    assert bool((err <= c.error_bound(x) * (1 + 1e-12)).all())


# --------------------------------------------------------------------------- eviction


def test_sink_window_policy() -> None:
    p = SinkWindowPolicy(sinks=2, window=3)
    assert p.keep(torch.zeros(10)).tolist() == [0, 1, 7, 8, 9]
    assert p.keep(torch.zeros(5)).tolist() == [0, 1, 2, 3, 4]
    assert p.keep(torch.zeros(4, 2, 10)).shape == (4, 2, 5)


def test_heavy_hitter_policy_hand_example() -> None:
    p = HeavyHitterPolicy(heavy=2, recent=2)
    scores = torch.tensor([0.5, 0.1, 0.9, 0.3, 0.0, 0.0])
    assert p.keep(scores).tolist() == [0, 2, 4, 5]  # heavy {2, 0}, recent {4, 5}


def test_heavy_hitter_ties_go_to_older_tokens() -> None:
    p = HeavyHitterPolicy(heavy=2, recent=1)
    scores = torch.tensor([0.2, 0.5, 0.5, 0.5, 0.1])
    assert p.keep(scores).tolist() == [1, 2, 4]  # three-way tie at 0.5: indices 1 and 2 win
    per_head = torch.tensor([[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]])
    assert p.keep(per_head).tolist() == [[0, 1, 3], [1, 2, 3]]


def test_heavy_hitter_nan_fails_closed() -> None:
    with pytest.raises(CodecError):
        HeavyHitterPolicy(heavy=1, recent=1).keep(torch.tensor([0.1, float("nan"), 0.2]))


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=40), st.integers(min_value=0, max_value=8), st.integers(min_value=0, max_value=8),
       st.integers(min_value=0, max_value=2**31 - 1))
def test_heavy_hitter_properties(t: int, heavy: int, recent: int, seed: int) -> None:
    scores = torch.randint(0, 4, (3, t), generator=torch.Generator().manual_seed(seed)).double()
    kept = HeavyHitterPolicy(heavy=heavy, recent=recent).keep(scores)
    assert kept.shape == (3, min(t, heavy + recent))
    for row, s in zip(kept.tolist(), scores):
        assert row == sorted(set(row))
        assert set(range(max(t - recent, 0), t)) <= set(row)
        if t > heavy + recent:  # every evicted old token scores at most the weakest kept heavy hitter
            old_kept = [i for i in row if i < t - recent]
            evicted = [i for i in range(t - recent) if i not in row]
            if old_kept and evicted:
                assert max(s[evicted]) <= min(s[old_kept])


# --------------------------------------------------------------------------- registry


def test_registry_builds_every_codec_and_keeps_band_int() -> None:
    for name in CODECS:
        c = make_codec(name, bands=4)
        x = torch.randn(3, 64)  # entries, or a 3-token sequence for a sequence codec
        for role in ("key", "value"):
            if c.scope == CACHE:  # a stateful backend: fed writes (B, H, n, D), serves the whole sequence
                state = c.for_role(role).new_state(role)
                assert state.write(x[None, None]).shape == (1, 1, 3, 64), (name, role)
                assert state.write(x[None, None, :1]).shape == (1, 1, 4, 64), (name, role)
                continue
            assert c.for_role(role).encode_decode(x).shape == x.shape, (name, role)
        assert CODECS[name].summary
    assert make_codec("int8", bands=4) == BandIntCodec(bits=8, bands=4)
    assert make_codec("fp8-e4m3", bands=4).name == "fp8-e4m3"
    with pytest.raises(CodecError):
        make_codec("kivi", bands=4)
