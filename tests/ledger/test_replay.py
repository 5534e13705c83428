"""Replay at scale over a Parquet entry-read trace expanded from the recorded SmolLM2 witnesses."""

import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from witprobe.ledger.replay import THRESHOLDS, expand_reads, replay
from witprobe.ledger.trace import DEFAULT_FIXTURE, WITNESS_FILE, TraceError, load_manifest


@pytest.fixture(scope="module")
def reads(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "reads.parquet"
    info = expand_reads(DEFAULT_FIXTURE, out)
    return out, info


def _independent_counts(thresholds):
    """Retained reads per threshold from witness.parquet directly (prefix counts per decode step)."""
    man = load_manifest(DEFAULT_FIXTURE)
    t = pq.read_table(DEFAULT_FIXTURE / WITNESS_FILE)
    col = {c: t.column(c).to_numpy() for c in ("request", "layer", "head", "position", "witness")}
    order = np.lexsort((col["position"], col["head"], col["layer"], col["request"]))
    key = (col["request"][order].astype(np.int64) * 256 + col["layer"][order]) * 256 + col["head"][order]
    cuts = np.nonzero(np.diff(key))[0] + 1
    total, kept = 0, np.zeros(len(thresholds), np.int64)
    for part in np.split(order, cuts):
        r = int(col["request"][part[0]])
        w = col["witness"][part].astype(np.float64)
        L = man["prompt_lengths"][r]
        steps = min(man["n_decode"] - 1, len(w) - L)
        ends = L + np.arange(steps)  # step j reads positions 0..L+j
        total += int((ends + 1).sum())
        for k, th in enumerate(thresholds):
            c = np.cumsum(w <= th)
            kept[k] += int(c[ends].sum())
    return total, kept


def test_replay_of_more_than_12_4m_entry_reads(reads):
    path, info = reads
    assert info["reads"] >= 12_400_000
    res = replay(path, THRESHOLDS)
    assert res.n_reads == info["reads"]
    total, kept = _independent_counts(THRESHOLDS)
    assert res.n_reads == total
    assert res.retained == kept.tolist()
    assert all(a <= b for a, b in zip(res.retained, res.retained[1:]))  # monotone in W_thr
    rows = res.rows()
    assert all(r["tv_step_bound"] >= 0.5 * np.expm1(2 * res.qn_max * r["w_thr"]) for r in rows)
    p = res.pareto()
    assert p["bound_first"] is None or p["bound_first"]["tv_step_bound"] < 1


def test_replay_cli_prints_the_sweep(reads, tmp_path):
    path, _ = reads
    out = tmp_path / "sweep.json"
    proc = subprocess.run([sys.executable, "-m", "witprobe.ledger", "replay", str(path), "--quiet",
                           "--thresholds", "0.1,0.2,0.3", "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(out.read_text())
    assert [r["w_thr"] for r in d["sweep"]] == [0.1, 0.2, 0.3] and d["sum_delta"] == "0/1"


def test_replay_refuses_bad_input(tmp_path, reads):
    with pytest.raises(TraceError, match="no such trace"):
        replay(tmp_path / "nope.parquet")
    with pytest.raises(ValueError, match="thresholds"):
        replay(reads[0], (float("nan"),))
    proc = subprocess.run([sys.executable, "-m", "witprobe.ledger", "replay", str(tmp_path / "nope.parquet")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no such trace" in proc.stderr


def _same(a, b):
    assert (a.thresholds, a.n_reads, a.retained, a.qn_max, a.per_request_retention_median) == \
        (b.thresholds, b.n_reads, b.retained, b.qn_max, b.per_request_retention_median)


def test_histogram_sweep_equals_the_reference_replay(reads, tmp_path):
    from witprobe.ledger.replay import replay_reference

    path, _ = reads
    _same(replay(path, THRESHOLDS), replay_reference(path, THRESHOLDS))
    # the same reads, dictionary-encoded in small row groups that span requests (the old writer's layout)
    t = pq.read_table(path)
    p2 = tmp_path / "dict.parquet"
    pq.write_table(t, p2, row_group_size=300_007, compression="zstd", use_dictionary=True)
    assert pq.ParquetFile(p2).metadata.num_row_groups > 24
    ths = (0.0, 0.013, 0.05, 0.25, 1.0, 70000.0)
    _same(replay(p2, ths), replay_reference(p2, ths))


def test_histogram_sweep_at_float16_edges(tmp_path):
    """Thresholds equal to, just above and just below float16 witnesses; -0.0 and inf witnesses;
    requests interleaved inside a row group; a float32 trace takes the reference path."""
    import pyarrow as pa

    from witprobe.ledger.replay import replay_reference

    rng = np.random.default_rng(3)
    w = rng.choice(np.array([0.0, -0.0, 0.1, 0.2, 0.2998, 0.3, 0.30005, 1.0, np.inf], np.float16), 50_000)
    req = rng.integers(0, 5, w.size).astype(np.uint16)
    qn = rng.uniform(0, 3, w.size).astype(np.float16)
    ths = (0.0, 0.1, float(np.float16(0.3)), 0.3, 0.30001, float(np.nextafter(np.float16(0.3), np.float16(1))), 1.0, 2.0)
    for dt in (pa.float16(), pa.float32()):
        p = tmp_path / f"edge_{dt}.parquet"
        pq.write_table(pa.table({"request": req, "witness": pa.array(w.astype(dt.to_pandas_dtype()), dt),
                                 "qn": pa.array(qn.astype(dt.to_pandas_dtype()), dt)}), p, row_group_size=7_001)
        a, b = replay(p, ths), replay_reference(p, ths)
        _same(a, b)
        want = [int((w.astype(np.float64) <= th).sum()) for th in sorted(ths)]
        assert a.retained == want
    bad = tmp_path / "neg.parquet"
    pq.write_table(pa.table({"request": req[:10], "witness": pa.array(np.full(10, -0.5, np.float16)),
                             "qn": pa.array(qn[:10])}), bad)
    with pytest.raises(TraceError, match="negative or NaN witness"):
        replay(bad)
