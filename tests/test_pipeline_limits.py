"""``certify run`` never writes a record its own readers would refuse: a ``run.json`` over the
readers' size limit, or holding a number over their magnitude limit, is refused before anything
is written (found on a 1,611-token ``--query-aligned 48`` run, whose run.json was 81 MB against a
64 MiB reader limit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from witprobe.certify import pipeline
from witprobe.cliutil import InputError

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "artifacts" / "coverage" / "smollm2-int8" / "run.json"


def test_a_run_over_the_readers_size_limit_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    run = json.loads(RUN.read_text())
    monkeypatch.setattr(pipeline, "MAX_INPUT_BYTES", len(RUN.read_bytes()) // 2)
    with pytest.raises(InputError, match="over the readers' limit"):
        pipeline.write_run_dir(run, tmp_path / "out", "off", coq_mode="off")
    assert list(tmp_path.iterdir()) == []


def test_a_reading_over_the_readers_magnitude_limit_is_refused(tmp_path):
    run = json.loads(RUN.read_text())
    run["layers"][0]["read"]["tv_realized"]["max"] = 1e305
    with pytest.raises(InputError, match="out of range"):
        pipeline.write_run_dir(run, tmp_path / "out", "off", coq_mode="off")
    assert list(tmp_path.iterdir()) == []
