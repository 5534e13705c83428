"""The probe's band meter (torch reference and torch fused path) and the packed stat blocks."""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from witprobe.probe.accumulators import Accumulator
from witprobe.probe.band_meter import (
    BandMeter,
    BandMeterSpec,
    MeterError,
    band_meter_reference,
    band_meter_torch_fused,
    select_rows,
    shadow_dequantize,
)

X = torch.tensor([[127.0, 10.2, -3.7, 0.4, 1.27, -0.4321, 0.0777, 0.0]])


@pytest.mark.parametrize(
    "bits, codes, W, true, rel",
    [
        (8, [127, 10, -4, 0, 127, -43, 8, 0], 0.54163096, 0.53852549, 0.00422471),
        (4, [7, 1, 0, 0, 7, -2, 0, 0], 8.87556298, 8.77210416, 0.06881681),
    ],
)
def test_reference_meter_on_the_hand_vector(bits, codes, W, true, rel):
    """Anchor notes section 8.1 (computed in float64 from decimal inputs; ours are float32)."""
    xh = shadow_dequantize(X, 2, bits)
    qmax = (1 << (bits - 1)) - 1
    scale = torch.tensor([127.0 / qmax, 1.27 / qmax]).repeat_interleave(4).double()
    assert torch.round(xh[0] / scale).tolist() == codes
    acc = Accumulator()
    ex = torch.zeros((), dtype=torch.int64)
    band_meter_reference(X, BandMeterSpec(2, (bits,)), acc, ex)
    out = acc.finalize()
    assert out[f"wit_int{bits}"]["sum"] == pytest.approx(W, rel=1e-6)
    assert out[f"true_int{bits}"]["sum"] == pytest.approx(true, rel=1e-6)
    assert out[f"rel_int{bits}"]["sum"] == pytest.approx(rel, rel=1e-6)
    assert out[f"tight_int{bits}"]["sum"] == pytest.approx(W / true, rel=1e-6)
    assert out[f"viol_low_int{bits}"] == 0 and out[f"viol_high_int{bits}"] == 0
    assert int(ex) == 1


def test_round_half_even_is_the_tie_rule():
    # band max 127 -> scale exactly 1: 2.5 -> 2, -3.5 -> -4, 0.5 -> 0, 1.5 -> 2
    x = torch.tensor([[127.0, 2.5, -3.5, 0.5, 1.5, 0.0, 0.0, 0.0]])
    assert shadow_dequantize(x, 1, 8)[0].tolist() == [127.0, 2.0, -4.0, 0.0, 2.0, 0.0, 0.0, 0.0]


def _finalize(impl: str, spec: BandMeterSpec, batches):
    acc = Accumulator()
    meter = BandMeter(spec, impl)
    block = meter.declare(acc)
    ex = torch.zeros((), dtype=torch.int64)
    for x in batches:
        meter(x, acc, block, ex)
    return acc.finalize(), int(ex)


@pytest.mark.parametrize("bands, d, bits", [(4, 64, (8,)), (3, 48, (8, 4)), (16, 64, (6,))])
def test_torch_fused_path_equals_reference(bands, d, bits):
    g = torch.Generator().manual_seed(bands)
    batches = [torch.randn(n, d, generator=g) * torch.rand(n, 1, generator=g) * 5 for n in (9, 1, 0, 40)]
    batches[0][0] = 0.0
    spec = BandMeterSpec(bands, bits)
    ref, e1 = _finalize("reference", spec, batches)
    got, e2 = _finalize("torch", spec, batches)
    assert e1 == e2 == 4
    assert ref.keys() == got.keys() == set(spec.stat_keys) | set(spec.counter_keys)
    for k, r in ref.items():
        if isinstance(r, dict):
            assert (got[k]["n"], got[k]["calls"]) == (r["n"], r["calls"])
            for f in ("sum", "min", "max"):
                assert got[k][f] == pytest.approx(r[f], rel=1e-12), (k, f)
        else:
            assert got[k] == r, k
    assert ref[f"zero_residual_int{bits[0]}"] == 1


def test_block_views_are_the_accumulator_keys():
    acc = Accumulator()
    spec = BandMeterSpec(4, (8,))
    block = BandMeter(spec, "torch").declare(acc)
    acc.fold("x_norm", torch.tensor([2.0, 5.0]))  # the unfused API writes into the packed storage
    i = block.stat_index("x_norm")
    assert block.fstats[i].tolist() == [7.0, 2.0, 5.0] and block.istats[i].tolist() == [2, 1]
    acc.count("viol_low_int8", torch.tensor([True, False, True]))
    assert int(block.counters[block.counter_index("viol_low_int8")]) == 2
    with pytest.raises(ValueError):
        acc.declare_block(("x_norm",), ())


class _OpRecorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.bad: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if name.startswith(("aten._local_scalar_dense", "aten.nonzero", "aten.masked_select", "aten.item")):
            self.bad.append(name)
        if name.startswith("aten.index.") and any(
            getattr(t, "dtype", None) == torch.bool for t in (args[1] if len(args) > 1 else []) if t is not None
        ):
            self.bad.append(name + " (boolean mask)")
        return func(*args, **(kwargs or {}))


def test_torch_fused_path_is_graph_safe_and_the_detector_works():
    """No host sync and no data-dependent boolean-mask index (paper 7.2 write-side traps); the
    reference path does index with a boolean mask, which shows the detector is not vacuous."""
    spec = BandMeterSpec(4, (8, 4))
    x = torch.randn(12, 64)
    acc = Accumulator()
    block = BandMeter(spec, "torch").declare(acc)
    ex = torch.zeros((), dtype=torch.int64)
    with _OpRecorder() as rec:
        band_meter_torch_fused(x, spec, block, ex)
    assert rec.bad == []
    acc2 = Accumulator()
    with _OpRecorder() as rec2:
        band_meter_reference(x, spec, acc2, None)
    assert any("boolean mask" in b for b in rec2.bad)


def test_select_rows_is_a_deterministic_shape_only_stride():
    x = torch.arange(1000 * 8, dtype=torch.float32).reshape(10, 100, 8)
    r = select_rows(x, 256)
    assert r.shape == (250, 8) and r.data_ptr() == x.data_ptr()
    assert torch.equal(r, x.reshape(-1, 8)[::4])
    assert select_rows(x[:1, :5], 256).shape == (5, 8)
    with pytest.raises(MeterError):
        select_rows(x, 0)


def test_spec_validation():
    for bad in (dict(bands=0), dict(bits=()), dict(bits=(8, 8)), dict(bits=(9,))):
        with pytest.raises(MeterError):
            BandMeterSpec(**bad)
    with pytest.raises(MeterError):
        band_meter_reference(torch.zeros(2, 10), BandMeterSpec(4), Accumulator())
    assert math.isclose(BandMeterSpec(4).qmax(8), 127)
