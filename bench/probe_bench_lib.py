"""Shared pieces of the probe overhead benchmarks (CPU eager and GPU graphs).

Timing lives here and in the two scripts, never in tests. Definitions used by both:

- **throughput**: generated tokens per second over the timed decode steps of one run
  (``batch * steps / sum of step times``);
- **p99 latency**: the 99th percentile of one run's per-step latencies (ms), linear interpolation;
- **noise floor** of a setting (one batch size): ``max_i |v_i - median(v)| / median(v)`` over the
  repeated probe-off runs ``v_i`` of that setting, for throughput and for p99 separately (paper
  section 7.1: the floor is per setting, never a global maximum);
- **delta** of a probe configuration: ``(median(v_probe) - median(v_off)) / median(v_off)``;
  it is *inside the noise floor* iff ``|delta| <= floor``;
- **cost ratio**: ``median(step time with probe) / median(step time off)``;
- **op count**: torch operator calls that launch work (view and metadata ops excluded), counted
  by a ``TorchDispatchMode``; on a GPU each is one kernel launch, the Triton meter is one launch.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

VIEW_OPS = (
    "aten.view", "aten._unsafe_view", "aten.reshape", "aten.select", "aten.slice", "aten.unsqueeze",
    "aten.squeeze", "aten.expand", "aten.permute", "aten.transpose", "aten.t.", "aten.alias", "aten.detach",
    "aten.as_strided", "aten.split", "aten.unbind", "aten.lift_fresh",
)


def percentile(values: Sequence[float], q: float) -> float:
    """``q``-th percentile (0..100), linear interpolation between order statistics."""
    if not values:
        raise ValueError("percentile of no values")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def noise_floor(values: Sequence[float]) -> float:
    """``max_i |v_i - median| / median`` (0 for a single value)."""
    med = statistics.median(values)
    return max(abs(v - med) for v in values) / med if med else float("inf")


def delta(probe: Sequence[float], off: Sequence[float]) -> float:
    m0 = statistics.median(off)
    return (statistics.median(probe) - m0) / m0


@dataclass
class RunResult:
    """One timed decode run: per-step latencies (seconds) and its summary."""

    setting: str
    batch: int
    round: int
    step_s: list[float]
    prefill_s: float
    tokens: list[int] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.batch * len(self.step_s) / sum(self.step_s)

    @property
    def p99_ms(self) -> float:
        return percentile(self.step_s, 99) * 1e3

    @property
    def median_step_ms(self) -> float:
        return statistics.median(self.step_s) * 1e3

    def summary(self) -> dict[str, Any]:
        return {
            "setting": self.setting, "batch": self.batch, "round": self.round,
            "throughput_tok_s": self.throughput, "p99_ms": self.p99_ms, "median_step_ms": self.median_step_ms,
            "prefill_ms": self.prefill_s * 1e3, "steps": len(self.step_s),
        }


def compare_settings(runs: list[RunResult], off: str = "off") -> dict[str, Any]:
    """Per batch size: medians, the probe-off noise floor, and each setting's deltas vs off."""
    out: dict[str, Any] = {}
    for batch in sorted({r.batch for r in runs}):
        rb = [r for r in runs if r.batch == batch]
        base = [r for r in rb if r.setting == off]
        if len(base) < 2:
            raise ValueError(f"batch {batch}: need at least two probe-off runs for a noise floor")
        thr0 = [r.throughput for r in base]
        p990 = [r.p99_ms for r in base]
        step0 = [r.median_step_ms for r in base]
        res: dict[str, Any] = {
            "noise_floor": {"throughput": noise_floor(thr0), "p99": noise_floor(p990), "n_off_runs": len(base)},
            "settings": {},
        }
        for setting in sorted({r.setting for r in rb}, key=lambda s: (s != off, s)):
            rs = [r for r in rb if r.setting == setting]
            thr = [r.throughput for r in rs]
            p99 = [r.p99_ms for r in rs]
            step = [r.median_step_ms for r in rs]
            d_thr, d_p99 = delta(thr, thr0), delta(p99, p990)
            res["settings"][setting] = {
                "n_runs": len(rs),
                "throughput_tok_s_median": statistics.median(thr),
                "p99_ms_median": statistics.median(p99),
                "median_step_ms": statistics.median(step),
                "delta_throughput": d_thr,
                "delta_p99": d_p99,
                "cost_ratio": statistics.median(step) / statistics.median(step0),
                "throughput_inside_noise_floor": abs(d_thr) <= res["noise_floor"]["throughput"],
                "p99_inside_noise_floor": abs(d_p99) <= res["noise_floor"]["p99"],
            }
        out[str(batch)] = res
    return out


class OpCounter(TorchDispatchMode):
    """Counts torch operator calls that do work (views and metadata excluded)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.names: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if not name.startswith(VIEW_OPS):
            self.count += 1
            self.names[name] = self.names.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


def time_call(fn: Callable[[], None], sync: Callable[[], None], min_time_s: float = 0.3, max_iters: int = 5000) -> float:
    """Median seconds per call over batches of calls (after one warm-up call)."""
    fn()
    sync()
    per: list[float] = []
    total = 0.0
    iters = 0
    while total < min_time_s and iters < max_iters:
        n = max(1, min(64, max_iters - iters))
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        dt = time.perf_counter() - t0
        per.append(dt / n)
        total += dt
        iters += n
    return statistics.median(per)


def environment(device: str) -> dict[str, Any]:
    import transformers

    env = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": device,
        "triton_interpret": os.environ.get("TRITON_INTERPRET", "0"),
    }
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if device.startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


def write_json(path: str | Path, record: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
    os.replace(tmp, path)
    return path


def runs_json(runs: list[RunResult]) -> list[dict[str, Any]]:
    return [r.summary() for r in runs]


def as_dict(obj: Any) -> dict[str, Any]:
    return asdict(obj)
