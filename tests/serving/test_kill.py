"""``kill -9`` of the server under load loses no committed journal event (3 trials; bench/serving_kill.py runs 10)."""

from __future__ import annotations

from witprobe.serving.crash import kill_trial


def test_kill_9_under_load_loses_no_committed_event(tmp_path):
    for i, delay in enumerate((2.0, 3.5, 5.0)):
        t = kill_trial(tmp_path / f"t{i}", delay, requests=12, concurrency=6, max_new_tokens=4)
        assert t.observed > 0, "no committed head was observed before the kill"
        assert t.verify_ok, t.reason
        assert not t.closed  # an unclosed journal is reported unclosed
        assert t.records_after >= t.max_observed_seq
        assert t.lost == 0, t.lost_seqs
