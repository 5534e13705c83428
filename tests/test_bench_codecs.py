"""bench/codecs.py: every registered codec has a byte count and a committed row, and the table
never prints a bare ``pass`` beside an end-to-end divergence (issue 13's acceptance: every
built-in codec and eviction policy certifies SmolLM2 with no bound beaten, and bench/ records its
tightness and witness bytes per entry)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from witprobe.certify.end_to_end import DIVERGED
from witprobe.memory.codecs import CODECS, make_codec
from witprobe.probe.meters import witness_bytes_per_entry

from repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "bench" / "results" / "codecs_cpu.json"


def _bench():
    return load_script("bench/codecs.py")


@pytest.mark.parametrize("name", sorted(CODECS))
def test_every_registered_codec_has_a_stored_byte_count(name):
    b = _bench().stored_bytes_per_entry(make_codec(name, 4), 64)
    assert 0 < b <= 4 * 64  # never more than float32


def test_a_codec_without_a_byte_count_is_refused():
    with pytest.raises(ValueError, match="no byte count"):
        _bench().stored_bytes_per_entry(object(), 64)


def test_verdict_cell_never_prints_a_bare_pass_beside_a_divergence():
    cell = _bench().verdict_cell
    assert cell("pass", {"status": DIVERGED}) == "pass, diverged end to end"
    assert cell("pass", {"status": "close"}) == "pass"
    assert cell("fail", {"status": DIVERGED}) == "fail"


def test_the_committed_bench_covers_every_codec_with_no_bound_beaten():
    record = json.loads(RESULT.read_text())
    rows = {r["codec"]: r for r in record["codecs"]}
    assert sorted(rows) == sorted(CODECS), "rerun: python bench/codecs.py --out bench/results/codecs_cpu.json"
    for name, r in rows.items():
        assert r["verdict"] == "pass" and r["failures"] == [] and r["self_checks_nonzero"] == {}, name
        assert r["witness_bytes_per_entry"] == witness_bytes_per_entry(record["bands"]), name
        if name.startswith("evict"):
            assert r["stored_bytes_scope"] == "per retained entry", name
            assert r["tightness"]["evict_tv"]["layers"] >= 0
    table = _bench().table(record["codecs"]).splitlines()
    assert len(table) == 2 + len(rows)
    for line, r in zip(table[2:], record["codecs"]):
        verdict = line.split("|")[2].strip()
        assert verdict != "pass" or r["end_to_end"]["status"] != DIVERGED, line
