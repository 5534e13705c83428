"""Claim guard for bench/RESULTS.md's table of bound forms per codec (issue 14, item 5): it is
rendered from the committed result file, measured on a prompt of at least 1,500 tokens, for every
bench codec; every non-vacuous claim in it was Coq-certified and no derivation failed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("tightness", ROOT / "bench" / "tightness.py")
tightness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tightness)

RESULT = json.loads((ROOT / "bench" / "results" / "tightness_cpu.json").read_text())


def test_results_md_prints_the_committed_table_of_forms():
    assert tightness.base_markdown(RESULT) in (ROOT / "bench" / "RESULTS.md").read_text()


def test_the_table_covers_every_codec_on_a_long_prompt():
    assert RESULT["long_prompt_tokens"] >= 1500
    assert set(RESULT["codecs"]) == set(tightness.CODECS)


def test_every_non_vacuous_claim_was_certified_and_nothing_failed():
    for codec, r in RESULT["codecs"].items():
        assert r["failures"] == [], codec
        assert r["coq"] == "checked", codec
        assert r["certified_layers"] == r["forms"]["certified"]["non_vacuous"], codec
        # the claim is never looser than the box-sup or the centred form it may pick
        for form in ("boxsup", "centred"):
            claim = r["forms"]["certified"]["tightness_per_layer"]
            other = r["forms"][form]["tightness_per_layer"]
            if len(claim) == len(other):
                assert all(c <= o * (1 + 1e-9) for c, o in zip(claim, other)), (codec, form)
