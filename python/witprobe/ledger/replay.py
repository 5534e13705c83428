"""Offline replay of entry reads at scale: retention and the per-step TV bound per threshold.

An **entry read** is one query reading one stored key entry of one KV head in one layer at one
decode step (dense attention reads every entry of its context). Each read carries the entry's
int8 re-quantization band witness ``W`` and the step's ``qn = scale * max ||q||``, both rounded
up. The entry-level deterministic certificate retains the read iff ``W <= W_thr``; otherwise that
entry alone falls back to an exact read (``delta = 0``; paper 5.2). For each threshold:

- ``retention = (#reads with W <= W_thr) / #reads`` (say retention, not "certified coverage");
- per-step bound ``TV_step <= (exp(2 qn W_thr) - 1) / 2``, worst over steps (``qn_max``);
- page-in of the fallbacks (entry bytes times fallback reads) and the median per-request retention.

Traces are columnar Parquet (``request, layer, head, step, witness, qn``), read one row group at
a time. Every read row is decoded and counted; nothing is taken from Parquet statistics.

**The sweep** (:func:`replay`). For float16 witnesses (what :func:`expand_reads` writes) the
retention of every threshold comes from one histogram of the witnesses' 16-bit patterns: for
``W >= 0`` the order of the bit patterns is the order of the values, so ``W <= W_thr`` iff
``bits(W) <= bits(h)`` with ``h`` the largest float16 ``<= W_thr``, and the retained count is a
prefix sum of the histogram at ``bits(h)``. Cost per read: one ``bincount`` increment; the
thresholds cost nothing per read. ``qn_max`` is the maximum bit pattern of ``qn`` (nonnegative,
same order). A negative or NaN witness or ``qn`` is refused (:class:`TraceError`). Other witness
dtypes take the reference path (float32 ``searchsorted``, thresholds rounded down to float32).

:func:`replay_reference` is the former per-batch ``searchsorted`` replay, kept as the oracle
that tests hold :func:`replay` equal to (every count, ``qn_max`` and median). Speed is measured
in ``bench/ledger_replay.py`` only.

:func:`expand_reads` writes PLAIN-encoded columns (no dictionary) with zstd level 1: dictionary
decoding of float16 was the replay's bottleneck, and the file is also half the size.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from witprobe.calculus.rounding import narrow
from witprobe.ledger.certificates import tv_step_bound
from witprobe.ledger.trace import WITNESS_FILE, TraceError, load_manifest

THRESHOLDS = (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5)
READ_COLUMNS = ("request", "layer", "head", "step", "witness", "qn")


def expand_reads(trace_dir: Path, out: Path, n_decode: int | None = None, force: bool = False) -> dict[str, Any]:
    """Expand ``witness.parquet`` to one row per entry read (every decode step reads its context).

    ``out`` is a standalone output file (:func:`witprobe.safe_output.new_file`): an existing one is
    replaced only with ``force``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from witprobe.safe_output import check_new_file, new_file

    check_new_file(out, force)

    man = load_manifest(trace_dir)
    src = Path(trace_dir) / WITNESS_FILE
    if not src.is_file():
        raise TraceError(f"{src} not found")
    t = pq.read_table(src)
    col = {c: t.column(c).to_numpy() for c in ("request", "layer", "head", "position", "witness", "qn")}
    n_layers, n_heads = int(col["layer"].max()) + 1, int(col["head"].max()) + 1
    steps_total = int(man["n_decode"]) - 1 if n_decode is None else n_decode
    schema = pa.schema([("request", pa.uint16()), ("layer", pa.uint8()), ("head", pa.uint8()), ("step", pa.uint16()),
                        ("witness", pa.float16()), ("qn", pa.float16())])
    n_rows = 0
    order = np.lexsort((col["position"], col["head"], col["layer"], col["request"]))
    col = {k: v[order] for k, v in col.items()}
    bounds = np.searchsorted(col["request"], np.arange(col["request"].max() + 2))
    with new_file(out, force) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd", compression_level=1, use_dictionary=False) as w:
        for r in range(len(bounds) - 1):
            sl = slice(bounds[r], bounds[r + 1])
            L = int(man["prompt_lengths"][r])
            n_pos = (bounds[r + 1] - bounds[r]) // (n_layers * n_heads)
            W = col["witness"][sl].reshape(n_layers * n_heads, n_pos)
            Q = col["qn"][sl].reshape(n_layers * n_heads, n_pos)
            steps = min(steps_total, n_pos - L)
            lens = L + np.arange(steps) + 1  # decode step j reads positions 0 .. L + j
            starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
            idx = np.arange(int(lens.sum())) - np.repeat(starts, lens)
            step = np.repeat(np.arange(steps), lens)
            qpos = L + step
            m = idx.size
            lh = n_layers * n_heads
            w.write_table(pa.table({
                "request": np.full(m * lh, r, np.uint16),
                "layer": np.repeat(np.arange(lh) // n_heads, m).astype(np.uint8),
                "head": np.repeat(np.arange(lh) % n_heads, m).astype(np.uint8),
                "step": np.tile(step, lh).astype(np.uint16),
                "witness": W[:, idx].ravel(),
                "qn": Q[:, qpos].ravel(),
            }, schema=schema), row_group_size=1 << 20)
            n_rows += m * lh
    return {"reads": n_rows, "requests": len(bounds) - 1, "layers": n_layers, "heads": n_heads, "path": str(out)}


@dataclass
class SweepResult:
    thresholds: list[float]
    n_reads: int
    retained: list[int]
    qn_max: float
    per_request_retention_median: list[float]
    entry_bytes: int
    wall_s: float

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for t, k, med in zip(self.thresholds, self.retained, self.per_request_retention_median):
            tv = float(tv_step_bound(self.qn_max, t))
            out.append({"w_thr": t, "retention": k / self.n_reads, "retained": k, "fallback": self.n_reads - k,
                        "tv_step_bound": tv, "vacuous": tv >= 1.0, "median_request_retention": med,
                        "pagein_mib": (self.n_reads - k) * self.entry_bytes / 2**20})
        return out

    def pareto(self) -> dict[str, Any]:
        rows = self.rows()
        nonvac = [r for r in rows if not r["vacuous"]]
        high = [r for r in rows if r["retention"] >= 0.8]
        return {
            "bound_first": max(nonvac, key=lambda r: r["retention"]) if nonvac else None,
            "retention_first": min(high, key=lambda r: r["tv_step_bound"]) if high else None,
            "rule": "bound_first: most retention with a non-vacuous bound (< 1); "
                    "retention_first: smallest bound with retention >= 0.8",
        }

    def as_dict(self) -> dict[str, Any]:
        return {"n_reads": self.n_reads, "qn_max": self.qn_max, "wall_s": self.wall_s,
                "reads_per_s": self.n_reads / self.wall_s if self.wall_s > 0 else None, "sweep": self.rows(),
                "pareto": self.pareto(), "sum_delta": "0/1",
                "note": "every certificate is deterministic (W_entry <= W_thr), so the replay spends no budget"}


def _open(path: Path, thresholds: tuple[float, ...]):
    """Validate the trace and thresholds; returns the ParquetFile and the sorted thresholds."""
    import pyarrow.parquet as pq

    if not Path(path).is_file():
        raise TraceError(f"{path}: no such trace")
    th = np.asarray(sorted(thresholds), dtype=np.float64)
    if th.size == 0 or not np.isfinite(th).all() or (th < 0).any():
        raise ValueError(f"thresholds must be finite and nonnegative, got {thresholds!r}")
    pf = pq.ParquetFile(path)
    missing = {"request", "witness", "qn"} - set(pf.schema_arrow.names)
    if missing:
        raise TraceError(f"{path}: missing columns {sorted(missing)} (expected {', '.join(READ_COLUMNS)})")
    return pf, th


def _float32_floor(th: np.ndarray) -> np.ndarray:
    """Each threshold rounded down to float32, so that ``W <= th32`` implies ``W <= W_thr``."""
    return narrow(th, np.float32, up=False)


def _float16_floor_bits(th: np.ndarray) -> np.ndarray:
    """Bit pattern of the largest float16 ``<= W_thr`` for each (nonnegative) threshold."""
    h = narrow(np.minimum(th, float(np.finfo(np.float16).max)), np.float16, up=False)
    return h.view(np.uint16).astype(np.int64)


def _result(th: np.ndarray, counts: np.ndarray, per_req: dict[int, np.ndarray], qn_max: float, entry_bytes: int,
            wall: float) -> SweepResult:
    """Bucket counts (bucket k: ``th[k-1] < W <= th[k]``, last: above all) to a :class:`SweepResult`."""
    retained = np.cumsum(counts)[: th.size]
    med = []
    for k in range(th.size):
        vals = [np.cumsum(c)[k] / c.sum() for c in per_req.values()]
        med.append(float(np.median(vals)) if vals else float("nan"))
    return SweepResult(th.tolist(), int(counts.sum()), [int(x) for x in retained], qn_max, med, entry_bytes, wall)


_F16_INF = 0x7C00  # bit patterns above are NaN or carry the sign bit (negative, or -0.0 = 0x8000)
_F16_NEG_ZERO = 0x8000


def replay(path: Path, thresholds: tuple[float, ...] = THRESHOLDS, *, entry_bytes: int = 64,
           progress: bool = False) -> SweepResult:
    """Replay an entry-read Parquet trace with the histogram sweep (see the module docstring)."""
    import pyarrow as pa

    pf, th = _open(path, thresholds)
    if pf.schema_arrow.field("witness").type != pa.float16() or pf.schema_arrow.field("qn").type != pa.float16():
        return replay_reference(path, thresholds, entry_bytes=entry_bytes, progress=progress)
    tbits = _float16_floor_bits(th)
    counts = np.zeros(th.size + 1, np.int64)
    per_req: dict[int, np.ndarray] = {}
    qn_bits = 0
    done = 0
    bar = _Bar(pf.metadata.num_rows, progress)
    t0 = time.perf_counter()
    for g in range(pf.metadata.num_row_groups):
        t = pf.read_row_group(g, columns=["request", "witness", "qn"], use_threads=False)
        req = t.column(0).to_numpy()
        w = t.column(1).to_numpy().view(np.uint16)
        q = t.column(2).to_numpy().view(np.uint16)
        n = len(w)
        if n == 0:
            continue
        qb = int(q.max())
        if qb > _F16_INF:
            raise TraceError(f"{path}: negative or NaN qn in rows {done}..{done + n}")
        qn_bits = max(qn_bits, qb)
        r0, r1 = int(req.min()), int(req.max())
        if r0 == r1:
            groups = [(r0, w)]
        else:  # several requests in this row group: one slice per request
            order = np.argsort(req, kind="stable")
            rs, ws = req[order], w[order]
            cuts = np.flatnonzero(np.diff(rs)) + 1
            groups = [(int(rs[a]), ws[a:b]) for a, b in zip(np.r_[0, cuts], np.r_[cuts, n])]
        for r, wr in groups:
            hist = np.bincount(wr, minlength=1 << 16)
            hist[0] += hist[_F16_NEG_ZERO]
            hist[_F16_NEG_ZERO] = 0
            if hist[_F16_INF + 1:].any():
                raise TraceError(f"{path}: negative or NaN witness in rows {done}..{done + n}")
            cum = np.cumsum(hist[: _F16_INF + 1])[tbits]
            c = np.diff(cum, prepend=0)
            c = np.append(c, wr.size - cum[-1])
            counts += c
            per_req[r] = per_req[r] + c if r in per_req else c
        done += n
        bar.update(done)
    wall = time.perf_counter() - t0
    bar.close()
    qn_max = float(np.uint16(qn_bits).view(np.float16))
    return _result(th, counts, per_req, qn_max, entry_bytes, wall)


def replay_reference(path: Path, thresholds: tuple[float, ...] = THRESHOLDS, *, entry_bytes: int = 64,
                     progress: bool = False, batch_rows: int = 1 << 21) -> SweepResult:
    """The reference replay: float32 ``searchsorted`` per record batch (the oracle for :func:`replay`)."""
    pf, th = _open(path, thresholds)
    th32 = _float32_floor(th)
    counts = np.zeros(th.size + 1, np.int64)
    per_req: dict[int, np.ndarray] = {}
    qn_max = 0.0
    done = 0
    bar = _Bar(pf.metadata.num_rows, progress)
    t0 = time.perf_counter()
    for rb in pf.iter_batches(batch_size=batch_rows, columns=["request", "witness", "qn"]):
        w = rb.column(1).to_numpy(zero_copy_only=False).astype(np.float32)
        req = rb.column(0).to_numpy(zero_copy_only=False)
        q = rb.column(2).to_numpy(zero_copy_only=False)
        if np.isnan(w).any():
            raise TraceError(f"{path}: NaN witness in rows {done}..{done + len(w)}")
        b = np.searchsorted(th32, w, side="left")  # W <= th[k]  <=>  b <= k
        counts += np.bincount(b, minlength=th.size + 1)
        qn_max = max(qn_max, float(q.max()))
        r0, r1 = int(req.min()), int(req.max())
        cell = np.bincount((req.astype(np.int64) - r0) * (th.size + 1) + b, minlength=(r1 - r0 + 1) * (th.size + 1))
        for i, r in enumerate(range(r0, r1 + 1)):
            c = cell[i * (th.size + 1):(i + 1) * (th.size + 1)]
            if c.any():
                per_req[r] = per_req.get(r, np.zeros(th.size + 1, np.int64)) + c
        done += len(w)
        bar.update(done)
    wall = time.perf_counter() - t0
    bar.close()
    return _result(th, counts, per_req, qn_max, entry_bytes, wall)


class _Bar:
    """A progress bar on stderr (tqdm when available)."""

    def __init__(self, total: int, on: bool) -> None:
        self.on, self.bar, self.last = on, None, 0
        if on:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="reads", unit_scale=True, desc="replay", file=sys.stderr)
            except ImportError:  # pragma: no cover
                self.total = total

    def update(self, done: int) -> None:
        if not self.on:
            return
        if self.bar is not None:
            self.bar.update(done - self.last)
        else:  # pragma: no cover
            print(f"\rreplay {done:,}/{self.total:,}", end="", file=sys.stderr)
        self.last = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def write_report(res: SweepResult, out: Path, force: bool = False) -> None:
    """Write the sweep as JSON to ``out`` (an existing file is replaced only with ``force``)."""
    from witprobe.safe_output import write_file

    write_file(out, json.dumps(res.as_dict(), indent=1) + "\n", force=force)
