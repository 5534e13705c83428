"""Fused band-witness meter (paper section 7.3): one launch per metered call.

Specification: :mod:`witprobe.probe.band_meter` (``band_meter_reference``). One program loads the
sampled rows once (in place, through their row stride), shadow-quantizes each band in float32
exactly as the reference does (IEEE division, round half to even, clamp), forms ``Delta`` exactly
in float64, keeps ``||Delta||``, ``sum_b ||Delta_b||`` and ``||x||`` in registers, and folds sums,
minima, maxima, element counts, call counts, violation counts and the device execution counter
into the packed :class:`~witprobe.probe.accumulators.StatBlock`. A single program owns the block,
so the fold is plain load-add-store (no atomics, deterministic); the row cap of the probe keeps
the work of that program small (256 rows by default).
"""

from __future__ import annotations

import torch

from witprobe.kernels._common import check_device, next_pow2, round_half_even_f64, tl, triton
from witprobe.probe.accumulators import StatBlock
from witprobe.probe.band_spec import SCALE_FLOOR, BandMeterSpec, MeterError

MAX_QUANTIZERS = 2
BLOCK_ROWS = 16

# Launches issued by this module (a host-side count for the benchmark's launch accounting).
LAUNCHES = {"band_meter": 0}


def check_spec(spec: BandMeterSpec) -> None:
    if len(spec.bits) > MAX_QUANTIZERS:
        raise MeterError(f"fused band meter: at most {MAX_QUANTIZERS} quantizers, got {len(spec.bits)}")


@triton.jit
def _quantizer_tile(x, x64, xn, rmask, vals, vmask, cvals, kk, cc, lo_f, sqrt_b, hi_f, tiny,
                    QMAX: tl.constexpr, QI: tl.constexpr, FLOOR: tl.constexpr):
    # x: [BR, BP, DP] float32 (zero padding), x64 its float64 copy, xn: [BR] float64.
    amax = tl.max(tl.abs(x), axis=2)
    qm = tl.full(amax.shape, QMAX, tl.float32)
    s = tl.div_rn(tl.maximum(amax, FLOOR), qm)
    v = tl.div_rn(x, s[:, :, None])
    code = round_half_even_f64(v.to(tl.float64))
    code = tl.minimum(tl.maximum(code, -QMAX - 1.0), QMAX * 1.0)
    delta = x64 - code * s.to(tl.float64)[:, :, None]
    ss = tl.sum(delta * delta, axis=2)
    w = tl.sum(tl.sqrt(ss), axis=1)
    true = tl.sqrt(tl.sum(ss, axis=1))
    rel = tl.where(xn > 0, true / tl.where(xn > 0, xn, 1.0), 0.0)
    nz = true > 0
    tight = w / tl.where(nz, true, 1.0)
    base = 1 + 4 * QI
    col = kk[None, :]
    vals = tl.where(col == base, w[:, None], vals)
    vals = tl.where(col == base + 1, true[:, None], vals)
    vals = tl.where(col == base + 2, rel[:, None], vals)
    vals = tl.where(col == base + 3, tight[:, None], vals)
    vmask = vmask & ((col != base + 3) | nz[:, None])
    low = (w < true * lo_f) & rmask
    high = (w > sqrt_b * true * hi_f + tiny) & rmask
    zero = (true == 0) & rmask
    cb = 3 * QI
    ccol = cc[None, :]
    cvals += tl.where((ccol == cb) & low[:, None], 1, 0).to(tl.int64)
    cvals += tl.where((ccol == cb + 1) & high[:, None], 1, 0).to(tl.int64)
    cvals += tl.where((ccol == cb + 2) & zero[:, None], 1, 0).to(tl.int64)
    return vals, vmask, cvals


@triton.jit
def _band_meter_kernel(
    x_ptr, n_rows, row_stride,
    fst_ptr, ist_ptr, cnt_ptr, exec_ptr, par_ptr,
    BANDS: tl.constexpr, BAND_DIM: tl.constexpr, BANDS_P: tl.constexpr, BAND_DIM_P: tl.constexpr,
    NQ: tl.constexpr, QMAX0: tl.constexpr, QMAX1: tl.constexpr,
    K: tl.constexpr, KP: tl.constexpr, C: tl.constexpr, CP: tl.constexpr,
    BLOCK_R: tl.constexpr, FLOOR: tl.constexpr,
):
    rr = tl.arange(0, BLOCK_R)
    bb = tl.arange(0, BANDS_P)
    jj = tl.arange(0, BAND_DIM_P)
    kk = tl.arange(0, KP)
    cc = tl.arange(0, CP)
    col_off = bb[:, None] * BAND_DIM + jj[None, :]
    col_mask = (bb[:, None] < BANDS) & (jj[None, :] < BAND_DIM)
    lo_f = tl.load(par_ptr + 0)
    sqrt_b = tl.load(par_ptr + 1)
    hi_f = tl.load(par_ptr + 2)
    tiny = tl.load(par_ptr + 3)
    acc_sum = tl.zeros([KP], dtype=tl.float64)
    acc_min = tl.full([KP], float("inf"), tl.float64)
    acc_max = tl.full([KP], float("-inf"), tl.float64)
    acc_n = tl.zeros([KP], dtype=tl.int64)
    acc_c = tl.zeros([CP], dtype=tl.int64)
    for r0 in range(0, n_rows, BLOCK_R):
        rows = r0 + rr
        rmask = rows < n_rows
        offs = rows[:, None, None].to(tl.int64) * row_stride + col_off[None, :, :]
        m3 = rmask[:, None, None] & col_mask[None, :, :]
        x = tl.load(x_ptr + offs, mask=m3, other=0.0).to(tl.float32)
        x64 = x.to(tl.float64)
        xn = tl.sqrt(tl.sum(tl.sum(x64 * x64, axis=2), axis=1))
        vals = tl.where(kk[None, :] == 0, xn[:, None], tl.zeros([BLOCK_R, KP], dtype=tl.float64))
        vmask = (kk[None, :] < K) & rmask[:, None]
        cvals = tl.zeros([BLOCK_R, CP], dtype=tl.int64)
        vals, vmask, cvals = _quantizer_tile(x, x64, xn, rmask, vals, vmask, cvals, kk, cc,
                                             lo_f, sqrt_b, hi_f, tiny, QMAX0, 0, FLOOR)
        if NQ > 1:
            vals, vmask, cvals = _quantizer_tile(x, x64, xn, rmask, vals, vmask, cvals, kk, cc,
                                                 lo_f, sqrt_b, hi_f, tiny, QMAX1, 1, FLOOR)
        acc_sum += tl.sum(tl.where(vmask, vals, 0.0), axis=0)
        acc_min = tl.minimum(acc_min, tl.min(tl.where(vmask, vals, float("inf")), axis=0))
        acc_max = tl.maximum(acc_max, tl.max(tl.where(vmask, vals, float("-inf")), axis=0))
        acc_n += tl.sum(vmask.to(tl.int64), axis=0)
        acc_c += tl.sum(cvals, axis=0)
    km = kk < K
    old = tl.load(fst_ptr + kk * 3, mask=km, other=0.0)
    tl.store(fst_ptr + kk * 3, old + acc_sum, mask=km)
    old = tl.load(fst_ptr + kk * 3 + 1, mask=km, other=0.0)
    tl.store(fst_ptr + kk * 3 + 1, tl.minimum(old, acc_min), mask=km)
    old = tl.load(fst_ptr + kk * 3 + 2, mask=km, other=0.0)
    tl.store(fst_ptr + kk * 3 + 2, tl.maximum(old, acc_max), mask=km)
    oldn = tl.load(ist_ptr + kk * 2, mask=km, other=0)
    tl.store(ist_ptr + kk * 2, oldn + acc_n, mask=km)
    oldc = tl.load(ist_ptr + kk * 2 + 1, mask=km, other=0)
    tl.store(ist_ptr + kk * 2 + 1, oldc + 1, mask=km)
    cm = cc < C
    oldk = tl.load(cnt_ptr + cc, mask=cm, other=0)
    tl.store(cnt_ptr + cc, oldk + acc_c, mask=cm)
    e = tl.load(exec_ptr)
    tl.store(exec_ptr, e + 1)


def band_meter_fold(
    rows: torch.Tensor, spec: BandMeterSpec, block: StatBlock, exec_counter: torch.Tensor, params: torch.Tensor
) -> None:
    """Launch the fused meter once: fold ``rows`` ``(n, D)`` into ``block``; ``exec_counter`` += 1.

    ``rows`` may be a strided view (row stride arbitrary, last-dimension stride 1); float32 or
    any float dtype (loaded and converted to float32 in registers). ``params`` is the meter's
    float64 threshold vector (:class:`witprobe.probe.band_meter.BandMeter`).
    """
    check_spec(spec)
    if rows.dim() != 2:
        raise MeterError(f"fused band meter: rows must be 2-D, got shape {tuple(rows.shape)}")
    n, d = rows.shape
    spec.check_dim(d)
    if block.stat_keys != spec.stat_keys or block.counter_keys != spec.counter_keys:
        raise MeterError("fused band meter: the stat block was not declared for this spec")
    if n > 0 and rows.stride(1) != 1:
        rows = rows.contiguous()
    if exec_counter.dtype != torch.int64 or exec_counter.numel() != 1:
        raise MeterError("fused band meter: the execution counter must be one int64 element")
    check_device(rows, block.fstats)
    band_dim = d // spec.bands
    qmaxes = [spec.qmax(b) for b in spec.bits] + [1]
    k, c = len(spec.stat_keys), len(spec.counter_keys)
    _band_meter_kernel[(1,)](
        rows, n, rows.stride(0) if n > 0 else d,
        block.fstats, block.istats, block.counters, exec_counter, params,
        BANDS=spec.bands, BAND_DIM=band_dim, BANDS_P=next_pow2(spec.bands), BAND_DIM_P=next_pow2(band_dim),
        NQ=len(spec.bits), QMAX0=qmaxes[0], QMAX1=qmaxes[1],
        K=k, KP=next_pow2(k), C=c, CP=next_pow2(c), BLOCK_R=BLOCK_ROWS, FLOOR=SCALE_FLOOR,
    )
    LAUNCHES["band_meter"] += 1
