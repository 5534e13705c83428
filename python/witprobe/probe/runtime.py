"""The always-on probe runtime: declared layer subsets, graph-safe accumulators, snapshots.

The runtime meters writes to attention memory on a *declared* subset of layers, chosen once when
the runtime is built (before any CUDA graph is captured), and keys every accumulator by
``(owner, layer, path)`` (paper section 6). It follows the graph-safety rules of paper section 7.2:

1. accumulators *and counters* are device tensors (:class:`~witprobe.probe.accumulators.Accumulator`);
2. no RNG anywhere on the sampling path (rows are a deterministic stride, calls a deterministic
   call-rate);
3. readback (:meth:`ProbeRuntime.snapshot`) refuses to run inside a capture;
4. every persistent tensor is allocated in ``__init__``, never during a call;
5. the sampling decision depends only on replay-constant quantities: the layer index, the tensor
   shape, and (call-rate sampling) the host call number, which under graphs is evaluated once per
   capture, so that a graph either always or never contains the meter;
6. a device-side execution counter per ``(layer, path)`` is incremented in place by every metered
   call. Under graph replay it keeps growing while the host call count froze at capture; without
   graphs the two are equal. The gate (:mod:`witprobe.probe.gate`) compares them.

On the CPU the same code runs eagerly. The snapshot is a JSON record with schema
``witprobe-probe/1`` and an always-present coverage record.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from witprobe.calculus.registry import DEFAULT_REGISTRY
from witprobe.probe.accumulators import Accumulator, StatBlock
from witprobe.probe.band_meter import BandMeter, BandMeterSpec, select_rows

PROBE_SCHEMA = "witprobe-probe/1"
SLOT_SCHEMA = "witprobe-probe-slot/1"
KEY_DIMS = ("owner", "layer", "path")
METERS = ("auto", "reference", "torch", "triton")


class ProbeError(RuntimeError):
    """The probe was misconfigured or saw a write it cannot attribute (fail closed)."""


def stat_metric(key: str) -> str:
    """The registered metric (``object:metric@site``) of a band-meter statistic key."""
    if key == "x_norm":
        return "entry:norm@write"
    for prefix, metric in (
        ("wit_", "shadow_entry:band_witness@write"),
        ("true_", "shadow_entry:l2@write"),
        ("rel_", "shadow_entry:rel_residual@write"),
        ("tight_", "shadow_entry:conservativeness@write"),
    ):
        if key.startswith(prefix):
            return metric
    raise ProbeError(f"no registered metric for probe statistic {key!r}")


def slot_key(owner: str, layer: int, path: str) -> str:
    """``"<owner>|L<layer>|<path>"``, e.g. ``"DenseKV#0|L3|key"`` (anchor notes section 1.9)."""
    return f"{owner}|L{layer}|{path}"


@dataclass(frozen=True)
class ProbeConfig:
    """What the probe observes.

    Parameters
    ----------
    layers:
        The declared layer subset, fixed for the life of the runtime; ``None`` means every layer
        (the diagnostic full-coverage mode).
    paths:
        Write paths observed at each declared layer (``"key"``, ``"value"``).
    bands, bits:
        The band meter (:class:`~witprobe.probe.band_meter.BandMeterSpec`).
    row_cap:
        At most this many rows metered per call (deterministic stride; paper default 256).
    sample_every:
        Meter one call in ``sample_every`` per slot (deterministic; 1 meters every call).
    meter:
        ``"auto"`` (Triton kernel on CUDA when available, else the torch fused path),
        ``"reference"`` (unfused), ``"torch"`` or ``"triton"``.
    owner:
        The memory owner, ``"<OwnerClass>#<instance>"``.
    """

    layers: tuple[int, ...] | None = None
    paths: tuple[str, ...] = ("key", "value")
    bands: int = 4
    bits: tuple[int, ...] = (8,)
    row_cap: int = 256
    sample_every: int = 1
    meter: str = "auto"
    owner: str = "DenseKV#0"

    def __post_init__(self) -> None:
        if self.layers is not None:
            if not all(isinstance(i, int) and not isinstance(i, bool) for i in self.layers):
                raise ProbeError(f"declared layers must be integers, got {self.layers!r}")
            if len(set(self.layers)) != len(self.layers):
                raise ProbeError(f"declared layers repeat: {self.layers!r}")
        if not self.paths or len(set(self.paths)) != len(self.paths):
            raise ProbeError(f"paths must be nonempty and distinct, got {self.paths!r}")
        for p in self.paths:
            if not p or "|" in p:
                raise ProbeError(f"path {p!r} must be nonempty and must not contain '|'")
        if not self.owner or "|" in self.owner:
            raise ProbeError(f"owner {self.owner!r} must be nonempty and must not contain '|'")
        if not isinstance(self.row_cap, int) or self.row_cap < 1:
            raise ProbeError(f"row_cap must be a positive integer, got {self.row_cap!r}")
        if not isinstance(self.sample_every, int) or self.sample_every < 1:
            raise ProbeError(f"sample_every must be a positive integer, got {self.sample_every!r}")
        if self.meter not in METERS:
            raise ProbeError(f"meter must be one of {METERS}, got {self.meter!r}")
        BandMeterSpec(self.bands, self.bits)  # validates

    @property
    def spec(self) -> BandMeterSpec:
        return BandMeterSpec(self.bands, self.bits)


@dataclass
class ProbeSlot:
    """The state of one ``(owner, layer, path)``: its accumulator and both call counts.

    ``device_calls`` is a 0-d view into the runtime's execution table, incremented by the meter
    on the device; ``host_calls`` is the Python-side count of metered calls (it freezes at
    capture under graphs); ``host_seen`` also counts the calls skipped by call-rate sampling.
    """

    owner: str
    layer: int
    path: str
    acc: Accumulator
    block: StatBlock
    device_calls: torch.Tensor
    host_calls: int = 0
    host_seen: int = 0

    @property
    def key(self) -> str:
        return slot_key(self.owner, self.layer, self.path)


def _resolve_meter(meter: str, device: torch.device) -> str:
    if meter != "auto":
        return meter
    if device.type == "cuda":
        try:
            import witprobe.kernels.band_meter  # noqa: F401
        except ImportError:
            return "torch"
        return "triton"
    return "torch"


class ProbeRuntime:
    """Meters writes on a declared layer subset into device-resident, per-slot accumulators.

    Parameters
    ----------
    num_layers:
        Decoder layers of the model (layer indices are ``0 .. num_layers-1``).
    config:
        :class:`ProbeConfig`.
    device:
        Where accumulators and counters live (the model's device).
    """

    def __init__(self, num_layers: int, config: ProbeConfig | None = None, device: torch.device | str = "cpu") -> None:
        config = config or ProbeConfig()
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ProbeError(f"num_layers must be a positive integer, got {num_layers!r}")
        declared = tuple(range(num_layers)) if config.layers is None else tuple(sorted(config.layers))
        bad = [i for i in declared if not 0 <= i < num_layers]
        if bad:
            raise ProbeError(f"declared layers {bad} are outside 0..{num_layers - 1}")
        for key in config.spec.stat_keys:
            DEFAULT_REGISTRY.require(stat_metric(key))  # fail closed on an unregistered metric
        self.num_layers = num_layers
        self.config = config
        self.device = torch.device(device)
        self.declared_layers = declared
        self.meter_impl = _resolve_meter(config.meter, self.device)
        self.meter = BandMeter(config.spec, self.meter_impl, self.device)
        # Device execution counters for every (layer, path), declared or not: an undeclared
        # layer's entry must stay 0, which is itself checked.
        self.exec_table = torch.zeros((num_layers, len(config.paths)), dtype=torch.int64, device=self.device)
        self._probe_layer = [False] * num_layers
        for i in declared:
            self._probe_layer[i] = True
        self._path_index = {p: j for j, p in enumerate(config.paths)}
        self.slots: dict[tuple[int, str], ProbeSlot] = {}
        for i in declared:
            for j, p in enumerate(config.paths):
                acc = Accumulator(self.device)
                block = self.meter.declare(acc)
                self.slots[(i, p)] = ProbeSlot(config.owner, i, p, acc, block, self.exec_table[i, j])
        self.n_seen = 0
        self.n_metered = 0  # counted apart from the slots, so a slot that lost state shows
        self.n_skipped_by_layer = 0
        self.n_skipped_by_sampling = 0
        self.graph_safe = False

    # --- the write hook -------------------------------------------------------------------------
    def on_write(self, layer_idx: int, path: str, x: torch.Tensor) -> None:
        """Observe one write of entries ``x`` of shape ``(..., D)`` at ``(layer_idx, path)``.

        The layer guard runs first and touches nothing but the index (a call-site argument must
        not be evaluated before its guard); an unknown layer or path raises (fail closed).
        """
        if not 0 <= layer_idx < self.num_layers:
            raise ProbeError(f"write at layer {layer_idx} outside 0..{self.num_layers - 1}")
        self.n_seen += 1
        if not self._probe_layer[layer_idx]:
            if path not in self._path_index:
                raise ProbeError(f"write on undeclared path {path!r} (declared: {self.config.paths})")
            self.n_skipped_by_layer += 1
            return
        slot = self.slots.get((layer_idx, path))
        if slot is None:
            raise ProbeError(f"write on undeclared path {path!r} at layer {layer_idx} (declared: {self.config.paths})")
        slot.host_seen += 1
        if (slot.host_seen - 1) % self.config.sample_every:
            self.n_skipped_by_sampling += 1
            return
        slot.host_calls += 1
        self.n_metered += 1
        self.meter(select_rows(x, self.config.row_cap), slot.acc, slot.block, slot.device_calls)

    # --- readback (outside capture) -------------------------------------------------------------
    def _refuse_in_capture(self) -> None:
        if self.device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            raise ProbeError("probe readback inside CUDA graph capture (a device sync); flush after capture")

    def snapshot(self, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """Host readback of every slot and the coverage record (schema ``witprobe-probe/1``)."""
        self._refuse_in_capture()
        table = self.exec_table.to("cpu").tolist()
        slots: dict[str, dict[str, Any]] = {}
        for (layer, path), s in sorted(self.slots.items()):
            final = s.acc.finalize()
            stats = {}
            counters = {}
            for k, v in final.items():
                if isinstance(v, dict):
                    stats[k] = {**v, "metric": stat_metric(k)}
                else:
                    counters[k] = v
            slots[s.key] = {
                "owner": s.owner,
                "layer": layer,
                "path": path,
                "host_calls": s.host_calls,
                "host_seen": s.host_seen,
                "device_calls": int(table[layer][self._path_index[path]]),
                "stats": stats,
                "counters": counters,
            }
        host_total = sum(s.host_calls for s in self.slots.values())
        dev_total = int(sum(sum(r) for r in table))
        observed = sorted({s.layer for s in self.slots.values() if s.host_calls > 0})
        coverage = {
            "n_calls": self.n_metered,
            "n_seen": self.n_seen,
            "n_skipped_by_layer": self.n_skipped_by_layer,
            "n_skipped_by_sampling": self.n_skipped_by_sampling,
            "sample_every": self.config.sample_every,
            "row_cap": self.config.row_cap,
            "layer_policy": "all" if self.config.layers is None else "declared",
            "num_layers": self.num_layers,
            "declared_layers": list(self.declared_layers),
            "layers": observed,
            "n_layers": len(observed),
            "paths_declared": list(self.config.paths),
            "paths": sorted({s.path for s in self.slots.values() if s.host_calls > 0}),
            "owners": [self.config.owner],
            "n_slots": len(slots),
            "key_dims": list(KEY_DIMS),
            "graph_safe": bool(self.graph_safe),
            "host_calls_total": host_total,
            "device_calls_total": dev_total,
            "device_calls_by_layer": {p: [int(r[j]) for r in table] for p, j in self._path_index.items()},
        }
        return {
            "schema": PROBE_SCHEMA,
            "slot_schema": SLOT_SCHEMA,
            "err": None,
            "meta": {
                "meter": self.meter_impl,
                "bands": self.config.bands,
                "bits": list(self.config.bits),
                "device": str(self.device),
                "torch": torch.__version__,
                **(meta or {}),
            },
            "coverage": coverage,
            "slots": slots,
        }

    def write_snapshot(self, path: str | Path, meta: dict[str, Any] | None = None) -> Path:
        """Write :meth:`snapshot` as JSON atomically (temporary file + rename)."""
        path = Path(path)
        snap = self.snapshot(meta)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(snap, f, indent=1, sort_keys=True)  # NaN/inf stay visible to the gate
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path
