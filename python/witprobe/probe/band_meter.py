"""The probe's band-witness meter: shadow-quantize sampled rows and fold the witness statistics.

This module is the specification of the fused kernel :mod:`witprobe.kernels.band_meter` (paper
section 7.3) and holds two torch implementations of it:

- :func:`band_meter_reference`, the *unfused* path: one :meth:`Accumulator.fold` or
  :meth:`Accumulator.count` per statistic, written for clarity (it is the specification);
- :func:`band_meter_torch_fused`, the same numbers computed as one ``(rows, statistics)`` tile and
  folded into the packed :class:`~witprobe.probe.accumulators.StatBlock` with a handful of
  vectorized updates. It is graph-safe (no boolean-mask indexing, no host synchronisation).

All three paths fill the *same keys of the same accumulator* (the block's views).

Shadow quantization (anchor notes section 1.1)
----------------------------------------------
The probe re-quantizes what was written with its own symmetric per-band integer quantizer, so the
witness measures the probe's shadow quantizer, not the production codec (a reading of how
compressible the entries are, with a self-check that must be 0). For an entry ``x`` of dimension
``D`` split into ``bands`` contiguous bands ``x_b`` and a code width ``bits``
(``qmax = 2**(bits-1) - 1``):

- ``s_b = max(max|x_b|, 1e-30) / qmax``, in float32 (IEEE division);
- ``q = clamp(round_half_even(x_b / s_b), -qmax - 1, qmax)``, the division in float32;
- ``x_hat_b = q * s_b`` and ``Delta = x - x_hat``, both exact in float64.

The precision is part of the specification so that a kernel reproduces every code bit for bit.
Per row the meter folds ``x_norm = ||x||`` and, per quantizer ``int<bits>``: ``wit = sum_b
||Delta_b||``, ``true = ||Delta||``, ``rel = ||Delta||/||x||`` (0 when ``x = 0``) and ``tight =
W/||Delta||`` (rows with ``Delta = 0`` only counted in ``zero_residual``); counters
``viol_low`` (``W < ||Delta||(1 - 1e-5)``) and ``viol_high`` (``W > sqrt(bands)||Delta||(1 +
1e-5)``) are the self-checks of :func:`witprobe.probe.meters.witness_violations` and must be 0.
Norms are float64. Units: the entries' own units (post-RoPE key or value activations).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from witprobe.probe.accumulators import Accumulator, StatBlock
from witprobe.probe.band_spec import SCALE_FLOOR, BandMeterSpec, MeterError
from witprobe.probe.meters import VIOLATION_TOL, band_witness, witness_violations

IMPLEMENTATIONS = ("reference", "torch", "triton")


def select_rows(x: torch.Tensor, row_cap: int) -> torch.Tensor:
    """Deterministic row sample: every ``ceil(rows/row_cap)``-th row of ``x.reshape(-1, D)``.

    The choice depends only on the shape (constant across graph replays), uses no RNG, and returns
    a strided view when ``x`` is contiguous (the kernel reads the sampled rows in place).
    Shape: ``(..., D) -> (min(rows, row_cap), D)``.
    """
    if row_cap < 1:
        raise MeterError(f"row_cap must be >= 1, got {row_cap}")
    x2 = x.reshape(-1, x.shape[-1])
    n = x2.shape[0]
    if n <= row_cap:
        return x2
    stride = -(-n // row_cap)
    return x2[::stride]


def shadow_dequantize(x: torch.Tensor, bands: int, bits: int) -> torch.Tensor:
    """Shadow reconstruction ``x_hat`` (float64) of rows ``x`` of shape ``(n, D)``.

    Codes and scales are computed in float32 as the module docstring specifies; the product
    ``q * s_b`` is exact in float64.
    """
    n, d = x.shape
    qmax = BandMeterSpec.qmax(bits)
    xb = x.to(torch.float32).reshape(n, bands, d // bands)
    amax = xb.abs().amax(dim=-1)
    # tensor / tensor: IEEE division on every backend (division by a Python scalar may be a
    # reciprocal multiply on some backends).
    s = amax.clamp_min(SCALE_FLOOR) / torch.full_like(amax, float(qmax))
    q = torch.clamp(torch.round(xb / s.unsqueeze(-1)), -qmax - 1, qmax)
    return (q.to(torch.float64) * s.to(torch.float64).unsqueeze(-1)).reshape(n, d)


def _rows_fp32(rows: torch.Tensor, spec: BandMeterSpec) -> torch.Tensor:
    if rows.dim() != 2:
        raise MeterError(f"band meter: rows must be 2-D (n, D), got shape {tuple(rows.shape)}")
    spec.check_dim(rows.shape[1])
    return rows.to(torch.float32)


def band_meter_reference(
    rows: torch.Tensor, spec: BandMeterSpec, acc: Accumulator, exec_counter: torch.Tensor | None = None
) -> None:
    """Unfused band meter (the specification): fold every statistic with its own calls.

    Parameters
    ----------
    rows:
        ``(n, D)`` sampled entries (any float dtype; converted to float32).
    spec:
        Bands and shadow quantizers.
    acc:
        Destination; keys ``spec.stat_keys`` and ``spec.counter_keys``.
    exec_counter:
        0-d int64 device tensor incremented by 1 (the device-side execution counter).
    """
    x = _rows_fp32(rows, spec)
    acc.fold("x_norm", x.to(torch.float64).norm(dim=-1))
    for b in spec.bits:
        w = band_witness(x, shadow_dequantize(x, spec.bands, b), spec.bands)
        acc.fold(f"wit_int{b}", w.witness)
        acc.fold(f"true_int{b}", w.residual)
        acc.fold(
            f"rel_int{b}",
            torch.where(w.x_norm > 0, w.residual / w.x_norm.clamp_min(1e-300), torch.zeros_like(w.residual)),
        )
        nz = w.residual > 0
        acc.fold(f"tight_int{b}", (w.witness / w.residual.clamp_min(1e-300))[nz])
        low, high = witness_violations(w, spec.bands)
        acc.count(f"viol_low_int{b}", low)
        acc.count(f"viol_high_int{b}", high)
        acc.count(f"zero_residual_int{b}", ~nz)
    if exec_counter is not None:
        exec_counter.add_(1)


def row_statistics(rows: torch.Tensor, spec: BandMeterSpec) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-row statistics as one tile, computed with few operations (the torch fused path).

    The same quantities as :func:`band_meter_reference` (codes bit-identical; norms float64, equal
    up to summation order).

    Returns
    -------
    values:
        ``(n, len(spec.stat_keys))`` float64.
    include:
        ``(n, len(spec.stat_keys))`` bool: whether the value is folded (``tight`` needs
        ``||Delta|| > 0``).
    flags:
        ``(n, len(spec.counter_keys))`` bool: the counter events of each row.
    """
    x = _rows_fp32(rows, spec)
    n, d = x.shape
    xb = x.reshape(n, spec.bands, d // spec.bands)
    x64 = xb.to(torch.float64)
    xn = (x64 * x64).sum(dim=(1, 2)).sqrt()
    amax = xb.abs().amax(dim=-1).clamp_min_(SCALE_FLOOR)
    ones = torch.ones_like(xn, dtype=torch.bool)
    values, include, flags = [xn], [ones], []
    sqrt_b = math.sqrt(spec.bands)
    for b in spec.bits:
        qmax = spec.qmax(b)
        s = amax / torch.full_like(amax, float(qmax))
        q = torch.round(xb / s.unsqueeze(-1)).clamp_(-qmax - 1, qmax)
        delta = x64 - q.to(torch.float64) * s.to(torch.float64).unsqueeze(-1)
        ss = (delta * delta).sum(dim=-1)
        w = ss.sqrt().sum(dim=-1)
        true = ss.sum(dim=-1).sqrt()
        nz = true > 0
        rel = torch.where(xn > 0, true / xn.clamp_min(1e-300), 0.0)
        values += [w, true, rel, w / true.clamp_min(1e-300)]
        include += [ones, ones, ones, nz]
        flags += [w < true * (1 - VIOLATION_TOL), w > sqrt_b * true * (1 + VIOLATION_TOL) + 1e-300, ~nz]
    return torch.stack(values, dim=1), torch.stack(include, dim=1), torch.stack(flags, dim=1)


def band_meter_torch_fused(
    rows: torch.Tensor, spec: BandMeterSpec, block: StatBlock, exec_counter: torch.Tensor | None = None
) -> None:
    """The band meter as a few vectorized updates of the packed block (graph-safe torch path).

    Same statistics and keys as :func:`band_meter_reference`; ``block`` must have been declared
    with ``spec.stat_keys`` and ``spec.counter_keys``.
    """
    if block.stat_keys != spec.stat_keys or block.counter_keys != spec.counter_keys:
        raise MeterError("band meter: the stat block was not declared for this spec")
    block.istats[:, 1].add_(1)
    if rows.shape[0] > 0:  # a shape, constant across replays
        vals, inc, flags = row_statistics(rows, spec)
        block.fstats[:, 0].add_(torch.where(inc, vals, 0.0).sum(dim=0))
        block.fstats[:, 1].copy_(torch.minimum(block.fstats[:, 1], torch.where(inc, vals, math.inf).amin(dim=0)))
        block.fstats[:, 2].copy_(torch.maximum(block.fstats[:, 2], torch.where(inc, vals, -math.inf).amax(dim=0)))
        block.istats[:, 0].add_(inc.sum(dim=0))
        block.counters.add_(flags.sum(dim=0))
    if exec_counter is not None:
        exec_counter.add_(1)


@dataclass
class BandMeter:
    """One band meter bound to an implementation and a device.

    Parameters
    ----------
    spec:
        What is measured.
    impl:
        ``"reference"`` (unfused torch, the specification), ``"torch"`` (vectorized torch fold)
        or ``"triton"`` (the fused kernel; needs the optional ``triton`` dependency, and
        ``TRITON_INTERPRET=1`` on a machine without a GPU).
    device:
        Where the meter's constants live (allocated here, never lazily during capture).
    """

    spec: BandMeterSpec
    impl: str = "torch"
    device: torch.device | str = "cpu"
    params: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.impl not in IMPLEMENTATIONS:
            raise MeterError(f"band meter: impl must be one of {IMPLEMENTATIONS}, got {self.impl!r}")
        self.device = torch.device(self.device)
        # Thresholds of witness_violations, evaluated once in float64 on the host.
        self.params = torch.tensor(
            [1 - VIOLATION_TOL, math.sqrt(self.spec.bands), 1 + VIOLATION_TOL, 1e-300],
            dtype=torch.float64, device=self.device,
        )
        self._kernel = None
        if self.impl == "triton":
            from witprobe.kernels.band_meter import band_meter_fold, check_spec

            check_spec(self.spec)
            self._kernel = band_meter_fold

    def declare(self, acc: Accumulator) -> StatBlock:
        """Allocate this meter's packed block in ``acc`` (before capture)."""
        return acc.declare_block(self.spec.stat_keys, self.spec.counter_keys)

    def __call__(self, rows: torch.Tensor, acc: Accumulator, block: StatBlock, exec_counter: torch.Tensor) -> None:
        """Meter ``rows`` of shape ``(n, D)`` into ``block`` (which lives in ``acc``)."""
        if self.impl == "reference":
            band_meter_reference(rows, self.spec, acc, exec_counter)
        elif self.impl == "torch":
            band_meter_torch_fused(rows, self.spec, block, exec_counter)
        else:
            self._kernel(rows, self.spec, block, exec_counter, self.params)
