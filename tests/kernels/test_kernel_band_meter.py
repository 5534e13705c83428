"""Fused band-witness meter vs its torch reference: statistics within 1e-6 relative, counts equal.

Runs under ``TRITON_INTERPRET=1`` on the CPU (set by tests/conftest.py) and natively on a GPU when
``TRITON_INTERPRET=0`` and CUDA is present.
"""

from __future__ import annotations

import math

import pytest
import torch
from kernel_util import kernel_device, rel_err

from witprobe.kernels._common import round_half_even_f64, tl, triton
from witprobe.kernels.band_meter import band_meter_fold
from witprobe.probe.accumulators import Accumulator
from witprobe.probe.band_meter import BandMeter, BandMeterSpec, band_meter_reference, row_statistics, select_rows

DEV = kernel_device()


def _rows(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g) * torch.rand(n, 1, generator=g) * 8
    if n > 2:
        x[1] = 0.0  # a zero row: zero residual, rel 0, tight not folded
        x[2, : d // 2] = 0.0  # a row with empty bands (scale floor)
    return x


def _run(impl: str, spec: BandMeterSpec, batches: list[torch.Tensor], params: torch.Tensor | None = None):
    acc = Accumulator(DEV)
    meter = BandMeter(spec, "torch" if impl == "reference" else impl, DEV)
    block = meter.declare(acc)
    ex = torch.zeros((), dtype=torch.int64, device=DEV)
    for x in batches:
        x = x.to(DEV)
        if impl == "reference":
            band_meter_reference(x, spec, acc, ex)
        elif params is not None:
            band_meter_fold(x, spec, block, ex, params)
        else:
            meter(x, acc, block, ex)
    return acc.finalize(), int(ex)


def assert_equivalent(ref: dict, got: dict) -> float:
    """Every statistic within 1e-6 relative; every count and counter exactly equal."""
    assert ref.keys() == got.keys()
    worst = 0.0
    for key, r in ref.items():
        g = got[key]
        if not isinstance(r, dict):
            assert g == r, f"counter {key}: kernel {g} != reference {r}"
            continue
        assert g["n"] == r["n"] and g["calls"] == r["calls"], f"{key}: counts differ {g} vs {r}"
        for f in ("sum", "mean", "min", "max"):
            if r[f] is None:
                assert g[f] is None, f"{key}.{f}"
                continue
            e = rel_err(g[f], r[f])
            worst = max(worst, e)
            assert e <= 1e-6, f"{key}.{f}: kernel {g[f]!r} vs reference {r[f]!r} (rel {e:.3g})"
    return worst


CASES = [
    (4, 64, (8,), 3),  # SmolLM2 decode: 3 KV heads, head_dim 64
    (4, 64, (8, 4), 37),  # more rows than one block, two quantizers
    (3, 48, (8,), 20),  # bands and band width not powers of two
    (1, 16, (4,), 17),
    (8, 64, (6, 2), 33),
]


@pytest.mark.parametrize("bands, d, bits, n", CASES)
def test_fused_meter_matches_reference(bands, d, bits, n):
    spec = BandMeterSpec(bands, bits)
    batches = [_rows(n, d, 1), _rows(max(1, n // 3), d, 2), _rows(0, d, 3)]
    ref, ref_exec = _run("reference", spec, batches)
    got, got_exec = _run("triton", spec, batches)
    assert got_exec == ref_exec == len(batches)
    assert_equivalent(ref, got)
    assert ref[f"zero_residual_int{bits[0]}"] >= (1 if n > 2 else 0)


def test_fused_meter_reads_sampled_rows_in_place():
    spec = BandMeterSpec(4, (8,))
    x = _rows(300, 64, 7).reshape(3, 100, 64)
    rows = select_rows(x, row_cap=64)  # a strided view: every 5th row
    assert rows.shape == (60, 64) and rows.stride(0) == 5 * 64 and rows.data_ptr() == x.data_ptr()
    ref, _ = _run("reference", spec, [rows.contiguous()])
    got, _ = _run("triton", spec, [rows])
    assert_equivalent(ref, got)


def test_fused_meter_counts_violations_it_is_told_to_count():
    """The counters are computed, not constant 0: with thresholds moved, the kernel counts exactly
    the rows the reference arithmetic flags."""
    spec = BandMeterSpec(4, (8,))
    x = _rows(40, 64, 11)
    vals, _, _ = row_statistics(x, spec)
    w, true, tight = vals[:, 1], vals[:, 2], vals[:, 4]
    lo_f = float(tight[true > 0].median())  # flag W < median(W/||D||) * ||D||: about half the rows
    hi_f = lo_f / 2.0  # and W > sqrt(4) * hi_f * ||D||: the other half
    expect_low = int((w < true * lo_f).sum())
    expect_high = int((w > 2.0 * true * hi_f + 1e-300).sum())
    assert 0 < expect_low < 40 and 0 < expect_high < 40
    params = torch.tensor([lo_f, 2.0, hi_f, 1e-300], dtype=torch.float64, device=DEV)
    got, _ = _run("triton", spec, [x], params=params)
    assert got["viol_low_int8"] == expect_low
    assert got["viol_high_int8"] == expect_high


def test_fused_meter_propagates_non_finite_input():
    spec = BandMeterSpec(4, (8,))
    x = _rows(5, 64, 3)
    x[0, 0] = float("nan")
    got, _ = _run("triton", spec, [x])
    assert math.isnan(got["x_norm"]["sum"])


@triton.jit
def _rhe_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    tl.store(y_ptr + i, round_half_even_f64(tl.load(x_ptr + i, mask=m, other=0.0)), mask=m)


def test_round_half_even_helper_matches_torch_round():
    v = torch.tensor(
        [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49999999, -3.50000001, 126.5, -127.5, 0.49999997, -0.49999997,
         1e15 + 0.5, 7.0, -0.0, 2.0**52 + 1.0], dtype=torch.float64,
    )
    vd = v.to(DEV)
    out = torch.empty_like(vd)
    _rhe_kernel[(1,)](vd, out, v.numel(), BLOCK=32)
    assert torch.equal(out.cpu(), torch.round(v)), (out, torch.round(v))
