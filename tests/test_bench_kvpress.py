"""bench/results/kvpress_cpu.json, the primary record of docs/KVPRESS.md's table, re-read here.

The record comes from ``python bench/kvpress_presses.py`` in the kvpress environment; this test
needs no kvpress: it checks that the record is whole (four presses, 30 layers each, kvpress 0.5.5 on
transformers 5.2), that no bound is beaten and none is NaN, and that the table in the docs is the
record's, line for line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from repo_scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "bench" / "results" / "kvpress_cpu.json"


def _bench():
    return load_script("bench/kvpress_presses.py")


def test_the_record_is_whole_and_no_bound_is_beaten():
    bench = _bench()
    rec = json.loads(RECORD.read_text())
    assert rec["kvpress"].startswith("0.5.") and rec["transformers"].startswith("5.2.")
    assert [p["press"] for p in rec["presses"]] == list(bench.PRESSES)
    for p in rec["presses"]:
        assert p["verdict"] == "pass" and p["exit"] in (0, 5)
        assert sorted(x["layer"] for x in p["layers"]) == list(range(30))
        for x in p["layers"]:
            assert math.isfinite(x["realized"]) and float(x["bound"]) >= x["realized"], (p["press"], x)
            assert x["vacuous"] == (x["layer"] not in p["non_vacuous_layers"])
        assert p["rows_evicting"] > 0 and 0 <= p["row_realized_mean"] <= p["row_bound_mean"] <= 1


def test_docs_quote_the_records_table():
    doc = (ROOT / "docs" / "KVPRESS.md").read_text()
    for line in _bench().table(json.loads(RECORD.read_text())):
        assert line in doc, line
