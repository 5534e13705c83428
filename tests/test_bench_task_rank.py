"""bench/task_rank.py: Spearman's rank correlation, and the committed result re-derived from its rows."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "bench" / "results" / "task_rank_cpu.json"


def _bench():
    return load_script("bench/task_rank.py")


def test_ranks_average_ties_and_spearman_matches_hand_computed_values():
    b = _bench()
    assert b.ranks([10.0, 20.0, 20.0, 5.0]) == [2.0, 3.5, 3.5, 1.0]
    assert b.spearman([1, 2, 3, 4], [10, 20, 30, 40])[0] == pytest.approx(1.0)
    assert b.spearman([1, 2, 3, 4], [4, 3, 2, 1])[0] == pytest.approx(-1.0)
    # d = (0, -1, 1, 0): rho = 1 - 6 * 2 / (4 * 15) = 0.8 (no ties)
    assert b.spearman([1, 2, 3, 4], [1, 3, 2, 4])[0] == pytest.approx(0.8)
    assert b.spearman([1, 1, 1], [1, 2, 3]) == (None, "one column is constant")
    assert b.spearman([1, 2], [1, 2])[0] is None
    with pytest.raises(ValueError, match="NaN"):
        b.spearman([1, 2, math.nan], [1, 2, 3])


@pytest.mark.skipif(not RESULT.is_file(), reason="the bench result is not committed")
def test_the_committed_correlations_re_derive_from_the_committed_rows():
    b = _bench()
    doc = json.loads(RESULT.read_text())
    rows = doc["configs"]
    assert len(rows) >= 8 and len({r["codec"] for r in rows}) == len(rows)
    assert not any(r["bound_beaten"] for r in rows)  # a bound beaten by reality would be a bug
    for r in rows:
        assert r["niah_drop"] == pytest.approx(r["niah_uncompressed"] - r["niah_compressed"])
        assert r["ppl_rise"] == pytest.approx(r["ppl_compressed"] / r["ppl_uncompressed"] - 1)
    assert doc["correlations"] == b.correlations(rows)
