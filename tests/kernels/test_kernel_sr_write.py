"""Stochastic-rounding write kernel vs its reference; counter-based uniforms bit for bit."""

from __future__ import annotations

import pytest
import torch
from kernel_util import kernel_device

from witprobe.kernels.sr_write import sr_write, uniform_bits
from witprobe.memory.counter_rng import MASK32, mix32, stream_key, uniforms
from witprobe.memory.sr_grid import SRGridError, sr_round_grid

DEV = kernel_device()
KEYS = [stream_key(1, 2, 3, 4), 0, MASK32, (1 << 31) + 5, 123]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("offset", [0, 1000, MASK32 - 300, 12_345_678_901])
def test_kernel_uniform_bits_equal_counter_rng(key, offset):
    n = 700
    got = uniform_bits(key, n, offset, device=DEV).cpu()
    idx = torch.arange(n, dtype=torch.int64) + offset
    assert torch.equal(got, mix32(mix32(idx & MASK32) ^ key))
    assert torch.equal(got.to(torch.float64) / 2**32, uniforms(key, idx))


@pytest.mark.parametrize("key", KEYS[:3])
@pytest.mark.parametrize("step", [0.125, 0.0375, 3.0])
def test_sr_write_matches_reference_exactly(key, step):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(5, 3, 77, generator=g) * 4
    x[0, 0, :4] = torch.tensor([0.0, step, -step, 2.5 * step])  # on-grid and mid-grid values
    ref = sr_round_grid(x, step, key, offset=19)
    got = sr_write(x.to(DEV), step, key, offset=19)
    assert torch.equal(got.codes.cpu(), ref.codes)
    assert torch.equal(got.values.cpu(), ref.values)


def test_sr_reference_rounds_to_a_neighbouring_grid_point():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4096, generator=g)
    s = 0.1
    y = sr_round_grid(x, s, stream_key(9, 9, 9, 9))
    v = x / torch.full_like(x, s)
    assert torch.all((y.codes == torch.floor(v).to(torch.int32)) | (y.codes == torch.ceil(v).to(torch.int32)))
    assert torch.equal(y.values, y.codes.to(torch.float32) * torch.full_like(x, s))


def test_sr_reference_is_unbiased():
    """Mean over 400 independent streams of the rounding error is ~0 (|mean| < 5 standard errors)."""
    x = torch.tensor([0.03, 0.5, 0.77, -0.21, 0.999], dtype=torch.float32)
    s = 1.0
    ys = torch.stack([sr_round_grid(x, s, stream_key(7, uid, 0, 0)).values for uid in range(400)])
    err = (ys - x).to(torch.float64)
    theta = (x - torch.floor(x)).to(torch.float64)
    se = torch.sqrt(theta * (1 - theta)) * s / 20  # standard error of the mean of 400 draws
    assert torch.all(err.mean(dim=0).abs() < 5 * se), (err.mean(dim=0), se)
    # and it is random: a value at theta = 0.5 goes both ways
    assert 0 < int((ys[:, 1] == 1.0).sum()) < 400


def test_sr_write_rejects_bad_input():
    with pytest.raises(SRGridError):
        sr_round_grid(torch.zeros(3, dtype=torch.float64), 0.1, 1)
    with pytest.raises(SRGridError):
        sr_round_grid(torch.zeros(3), -1.0, 1)
    with pytest.raises(SRGridError):
        sr_round_grid(torch.zeros(3), 0.1, 1 << 32)
