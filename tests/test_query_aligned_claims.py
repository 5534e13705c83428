"""The query-aligned box claim end to end: measured, derived, stated and kernel-checked by Coq.

A run with ``query_aligned = r`` stores the witness of :mod:`witprobe.probe.query_aligned`, records
its calibration in ``config.query_aligned`` and its reads carry ``qa_boxsup_bound``; derivation
claims the box bound over the radii ``min(c_band, c_qa)`` where it is the tightest, through
``BoxQueryAligned.box_qa_or_banded_claim``. Every fail-closed path is broken once below.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

import witprobe.certify.derive as derive_mod
from witprobe.certify.derive import derive
from witprobe.certify.measure import MeasureConfig, check_compatible, measure
from witprobe.certify.pipeline import write_run_dir
from witprobe.certify.run_record import RUN_SCHEMA
from witprobe.formal import coq_runner
from witprobe.models.zoo import load_model
from witprobe.probe import witness_cache
from witprobe.probe.query_aligned import CALIBRATION_PROMPTS, qa_radius

MEASURED = ("The sea and the wind are old friends, said the sailor to the child.",)
RANK = 8


@pytest.fixture(scope="module")
def tiny():
    return load_model("qwen3")


@pytest.fixture(scope="module")
def qa_run(tiny):
    cfg = MeasureConfig(model="qwen3", codec="int8", max_new_tokens=3, reference=False, prompts=MEASURED,
                        query_aligned=RANK)
    return measure(tiny, cfg).to_json()


def _dense(run):
    return [layer for layer in run["layers"] if layer["memory_class"] == "dense_kv"]


def test_the_run_records_its_calibration_and_every_dense_read_its_box_form(qa_run):
    qa = qa_run["config"]["query_aligned"]
    assert qa["rank"] == RANK and qa["calibration_prompts"] == list(CALIBRATION_PROMPTS)
    assert qa["calibration_tokens"] > 0 and len(qa["basis_sha256"]) == 64
    assert qa["witness_bytes_per_entry"] == 2 * RANK + 8
    assert qa_run["schema"] == RUN_SCHEMA
    for layer in _dense(qa_run):
        rd = layer["read"]
        assert rd["keys_qa_radius_beaten"] == 0 and rd["rows_qa_boxsup_beaten"] == 0
        assert rd["qa_boxsup_bound"]["max"] <= rd["boxsup_bound"]["max"] * (1 + 1e-12)


def test_derivation_claims_the_query_aligned_box_form_where_it_is_tightest(qa_run):
    d = derive(qa_run)
    assert d.failures == []
    attn = [c for c in d.claims if c.kind == "attn_tv"]
    qa = [c for c in attn if c.form == "qa_boxsup"]
    assert qa, [c.form for c in attn]
    for c in attn:
        f = c.forms["qa_boxsup"]
        assert f.bound is not None and f.bound >= c.realized_max  # never beaten
        assert c.value <= c.forms["boxsup"].bound
    shapes = {t.claim_id: t.shape for t in d.theorems}
    assert all(shapes[c.id] == "boxsup_qa" for c in qa)


def test_coq_kernel_checks_the_query_aligned_theorems(qa_run, tmp_path):
    if coq_runner.find_coqc()[0] is None:
        pytest.skip("no Coq here (CI installs it; this test must run there)")
    cert = write_run_dir(qa_run, tmp_path / "run", "off", coq_mode="required").certificate
    qa = [c for c in cert["claims"] if c.get("form") == "qa_boxsup"]
    assert qa and all(c["tier"] == "certified" for c in qa), [(c["claim_id"], c["tier"]) for c in qa]
    assert cert["summary"]["coq"]["kernel_checked"] == cert["summary"]["coq"]["theorems"]
    assert all(c["kernels"]["coq"]["guard"]["status"] == "rejected" for c in qa)
    text = (tmp_path / "run" / "obligations" / "run.v").read_text()
    assert "box_qa_or_banded_claim" in text and "BoxQueryAligned" in text and "layer_box_certificate" in text
    lean_file = tmp_path / "run" / "obligations" / "run_real.lean"  # the box claims are Coq only
    assert not lean_file.exists() or "box_qa_or_banded_claim" not in lean_file.read_text()


def test_a_statement_without_the_decomposition_is_refused_by_coq(qa_run, tmp_path, monkeypatch):
    """Break the theorem once: drop the hypothesis ``k - k' = U a + rr``. The library lemma no
    longer proves it, Coq refuses it, and the claim is not certified."""
    if coq_runner.find_coqc()[0] is None:
        pytest.skip("no Coq here (CI installs it; this test must run there)")
    import dataclasses

    real = derive_mod.boxsup_qa_theorem

    def broken(claim_id, units, *rest):
        th = real(claim_id, units, *rest)
        hyp = ("(forall t, (t < n)%nat -> forall i, (i < offset w nb)%nat ->\n"
               "     k t i - k' t i = matvec rk U (a t) i + rr t i) ->\n  ")
        assert hyp in th.statement
        return dataclasses.replace(th, statement=th.statement.replace(hyp, ""),
                                   proof=th.proof.replace("Hdec ", "").replace(" Hdec", ""))

    monkeypatch.setattr(derive_mod, "boxsup_qa_theorem", broken)
    monkeypatch.setattr(coq_runner, "MAX_ROUNDS", 1)
    cert = write_run_dir(qa_run, tmp_path / "run", "off", coq_mode="auto").certificate
    qa = [c for c in cert["claims"] if c.get("form") == "qa_boxsup"]
    assert qa and all(c["tier"] != "certified" for c in qa)


def _failures(run) -> list[str]:
    return derive(run).failures


def test_fail_closed_paths(qa_run):
    first = next(i for i, layer in enumerate(qa_run["layers"]) if layer["memory_class"] == "dense_kv")
    no_config = copy.deepcopy(qa_run)
    del no_config["config"]["query_aligned"]
    assert any("records query-aligned bounds, yet its config" in f for f in _failures(no_config))
    no_bound = copy.deepcopy(qa_run)
    del no_bound["layers"][first]["read"]["qa_boxsup_bound"]
    assert any("records no query-aligned bound" in f for f in _failures(no_bound))
    beaten_key = copy.deepcopy(qa_run)
    beaten_key["layers"][first]["read"]["keys_qa_radius_beaten"] = 1
    assert derive(beaten_key).self_checks["keys_qa_radius_beaten"] == 1
    missing = copy.deepcopy(qa_run)
    del missing["layers"][first]["read"]["rows_qa_boxsup_beaten"]
    assert any("rows_qa_boxsup_beaten is missing" in f for f in _failures(missing))
    low = copy.deepcopy(qa_run)
    rd = low["layers"][first]["read"]
    rd["qa_boxsup_bound"]["max"] = rd["tv_realized"]["max"] / 2
    assert any("qa_boxsup bound" in f and "beaten" in f for f in _failures(low))


def test_a_radius_without_its_remainder_terms_is_caught_by_the_key_self_check(tiny, monkeypatch):
    """Break the meter once: drop the two remainder terms of ``c_qa`` (an unsound radius). Keys
    whose score error beats it are counted, and derivation fails on the nonzero self-check."""
    monkeypatch.setattr(witness_cache, "qa_radius",
                        lambda *a, **k: qa_radius(*a, **k, drop_remainder=True))
    cfg = MeasureConfig(model="qwen3", codec="int4", max_new_tokens=3, reference=False, prompts=MEASURED,
                        query_aligned=2)
    run = measure(tiny, cfg).to_json()
    beaten = sum(layer["read"]["keys_qa_radius_beaten"] for layer in _dense(run))
    assert beaten > 0
    assert derive(run).self_checks["keys_qa_radius_beaten"] == beaten


@pytest.mark.parametrize("change, message", [
    (dict(query_aligned=4, box_sup=False), "needs the box meter"),
    (dict(query_aligned=4, prompts=(CALIBRATION_PROMPTS[0],)), "repeats a query-aligned calibration prompt"),
    (dict(query_aligned=-1), "integer >= 0"),
    (dict(query_aligned=4, codec="evict-h2o"), "evicts"),
])
def test_bad_query_aligned_configs_are_refused(change, message):
    cfg = MeasureConfig(**{**dict(model="qwen3", prompts=MEASURED), **change})
    with pytest.raises(ValueError, match=message):
        cfg.validate()


def test_a_rank_above_the_head_dimension_is_refused_in_one_line(tiny, tmp_path):
    cfg = MeasureConfig(model="qwen3", prompts=MEASURED, query_aligned=10_000)
    with pytest.raises(ValueError, match="exceeds the head dimension"):
        check_compatible(cfg, tiny, cfg.validate())
    out = subprocess.run([sys.executable, "-m", "witprobe.certify", "run", "--model", "qwen3", "--query-aligned",
                          "10000", "--out", str(tmp_path / "r"), "--quiet"], capture_output=True, text=True)
    assert out.returncode == 2 and "exceeds the head dimension" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not (tmp_path / "r").exists()


def test_the_record_round_trips_through_the_typed_parser(qa_run):
    from witprobe.certify.run_record import parse_run

    assert parse_run(json.loads(json.dumps(qa_run))).to_json() == qa_run


def test_the_html_report_names_the_witness_and_its_calibration(tmp_path):
    from pathlib import Path

    from witprobe.certify.cli import main

    root = Path(__file__).resolve().parents[1]
    art = root / "artifacts" / "query_aligned" / "smollm2-int8-qa48"
    qa = json.loads((art / "run.json").read_text())["config"]["query_aligned"]
    assert main(["report", str(art), "--out", str(tmp_path / "qa.html")]) == 0
    page = (tmp_path / "qa.html").read_text()
    assert "<th>query-aligned witness</th>" in page and qa["basis_sha256"] in page and "rank 48, 104 B" in page
    assert main(["report", str(root / "artifacts" / "coverage" / "smollm2-int8"), "--out", str(tmp_path / "b.html")]) == 0
    assert "<th>query-aligned witness</th>" not in (tmp_path / "b.html").read_text()
