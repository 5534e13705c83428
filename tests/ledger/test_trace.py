"""Recorded traces: the recording command works end to end, and bad traces are refused clearly."""

import json

import pytest

from witprobe.ledger.accounts import EMITTED_METRICS, emitted_metrics
from witprobe.ledger.simulate import load_trace
from witprobe.ledger.trace import DEFAULT_FIXTURE, RecordConfig, TraceError, load_manifest, record


def test_fixture_manifest_is_consistent():
    man = load_manifest(DEFAULT_FIXTURE)
    meta, recs = load_trace(DEFAULT_FIXTURE)
    assert len(recs) == man["code_requests"] == 8
    for r in recs:
        assert r.n_positions == r.prompt_len + man["code_decode"]
        assert r.tokens[: r.prompt_len] == man["tokens"][r.index][: r.prompt_len]
    assert meta["sim_layers"] == man["code_layers"]
    assert "SmolLM2" in json.dumps(man["model"])


@pytest.mark.slow
def test_record_command_writes_a_loadable_trace(tmp_path):
    cfg = RecordConfig(n_requests=2, n_decode=3, code_requests=2, code_decode=2, code_layers=(0, 29))
    man = record(tmp_path, cfg)
    assert man["rows"]["witness"] == 2 * 30 * 3 * (sum(man["prompt_lengths"]) + 2 * 2) // 2
    meta, recs = load_trace(tmp_path)
    assert len(recs) == 2 and meta["sim_layers"] == [0, 29]
    assert all(r.n_positions == r.prompt_len + 2 for r in recs)


def test_bad_traces_are_refused(tmp_path):
    with pytest.raises(TraceError, match="manifest.json not found"):
        load_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"head_dim": 64}))
    with pytest.raises(TraceError, match="writes.parquet not found"):
        load_trace(tmp_path)
    with pytest.raises(TraceError, match="at most"):
        record(tmp_path, RecordConfig(n_requests=99))


def test_every_emitted_metric_is_registered():
    tiers = emitted_metrics()
    assert set(tiers) == set(EMITTED_METRICS)
    assert tiers["request:eprocess_log_m@ledger"] == "empirical"
