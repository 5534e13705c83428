"""Every soundness self-check of a run record, broken one at a time: derive, coverage, verdict.

The committed runs (one per memory class) are the primary records; each test edits one counter
or one reading of one layer and asks three consumers what they make of it: ``derive`` (the
self-check total and the fail-closed failures), the certificate's verdict, and the coverage
table (the layer must stop counting as covered). A consumer that ignores the edit fails the test.
No model and no kernel (both kernels ``off``): these are pure functions of ``run.json``.
"""

from __future__ import annotations

import copy
import math
import json
from fractions import Fraction
from pathlib import Path

import pytest

from witprobe.certify import derive as derive_mod
from witprobe.certify.certificate import assemble
from witprobe.certify.coverage import coverage
from witprobe.certify.derive import DeriveError, derive
from witprobe.kinds.registry import KINDS
from witprobe.self_checks import TABLE, meaning as self_check_meaning, write_counters
from witprobe.certify.kernels import KernelOutcomes, coq_check, lean_check, lean_real_check

ROOT = Path(__file__).resolve().parents[1]
RUNS = {name: ROOT / "artifacts" / "coverage" / name / "run.json"
        for name in ("qwen3-int8", "mla-int8", "mla-dsa-int8", "v4-int8", "kda-int8")}
FORMS = ("plain", "centred", "eform")
# spelled out here, not taken from the table: a counter dropped from the table must fail a test
READ_SELF_CHECKS = ("rows_plain_beaten", "rows_centred_beaten", "rows_eform_beaten", "latent_recon_mismatch",
                    "indexer_recon_mismatch", "sel_flip_in_witness_cert", "sel_mass_bound_beaten",
                    "rows_total_beaten_on_certified", "v4_key_mismatch",
                    # the meters a layer ran: box (run config), attention output (dense KV), W_o projection
                    "rows_boxsup_beaten", "rows_out_beaten", "rows_out_proj_beaten")


def _load(name: str) -> dict:
    return json.loads(RUNS[name].read_text())


_CACHE: dict[str, dict] = {}


def run_of(name: str) -> dict:
    if name not in _CACHE:
        _CACHE[name] = _load(name)
    return copy.deepcopy(_CACHE[name])


def certificate(run: dict) -> dict:
    d = derive(run)
    outcomes = KernelOutcomes(coq=coq_check("off", d.theorems, "0" * 64),
                              lean=lean_real_check("off", Path("unused"), "", "0" * 64, d.theorems),
                              lean_arithmetic=lean_check("off", Path("unused"), "", "0" * 64, d.obligations))
    return assemble("0" * 64, d, None, None, outcomes, None)


def verdict(run: dict) -> str:
    return certificate(run)["summary"]["verdict"]


def covered(run: dict) -> dict[str, tuple[int, int]]:
    return {r["memory_class"]: (r["layers_covered"], r["layers_total"]) for r in coverage(run)}


def _is_soundness_counter(block: str, key: str, mclass: str) -> bool:
    """The counters a layer of this kind records whose nonzero value is an implementation error."""
    if block == "write":
        return any(key in write_counters(t) for t in KINDS[mclass].write_tensors) or key.endswith("_pool_viol")
    return key in READ_SELF_CHECKS or (key.startswith("sel_eta") and "_flip_in_cert_r" in key)


def _cases() -> list[tuple[str, int, str, str]]:
    """(run, layer, block, counter) for the first layer of every memory kind of every committed run."""
    out = []
    for name in RUNS:
        seen = set()
        for layer in _load(name)["layers"]:
            mclass = layer["memory_class"]
            if mclass in seen:
                continue
            seen.add(mclass)
            for block in ("write", "read"):
                for key, v in sorted(layer[block].items()):
                    if isinstance(v, int) and _is_soundness_counter(block, key, mclass):
                        out.append((name, layer["layer"], block, key))
    return out


CASES = _cases()


def test_the_committed_runs_pass_and_are_fully_covered():
    for name in RUNS:
        run = run_of(name)
        d = derive(run)
        assert d.failures == [] and not any(d.self_checks.values()), name
        assert verdict(run) == "pass", name
        assert all(c == t for c, t in covered(run).values()), name


def test_the_cases_reach_every_kind_and_every_named_self_check():
    kinds = {_load(n)["layers"][i]["memory_class"] for n, i, _, _ in CASES}
    assert kinds == set(KINDS)
    names = {k for _, _, _, k in CASES}
    assert set(READ_SELF_CHECKS) <= names  # every read self-check is recorded by some committed run
    assert any(k.startswith("sel_eta") for k in names) and any(k.endswith("_pool_viol") for k in names)


@pytest.mark.parametrize("name,layer,block,key", CASES, ids=[f"{n}-L{i}-{k}" for n, i, _, k in CASES])
def test_a_nonzero_self_check_fails_the_verdict_and_uncovers_the_layer(name, layer, block, key):
    run = run_of(name)
    before = covered(run)
    run["layers"][layer][block][key] = 2
    d = derive(run)
    assert d.self_checks.get(key) == 2, f"derive did not total {key}"
    assert self_check_meaning(key) != key, f"{key} has no stated meaning"
    assert verdict(run) == "fail"
    after = covered(run)
    mclass = run["layers"][layer]["memory_class"]
    for cls in KINDS[mclass].classes:
        assert after[cls] == (before[cls][0] - 1, before[cls][1]), (cls, after[cls])


def _required(layer: dict) -> list[tuple[str, str]]:
    mclass = layer["memory_class"]
    write = [("write", n) for t in KINDS[mclass].write_tensors for n in write_counters(t)]
    read = [("write" if n.endswith("_pool_viol") else "read", n) for n in KINDS[mclass].read_checks]
    # spelled out: the counters of the meters this layer ran (box on in every committed run)
    meters = ([("read", "rows_boxsup_beaten")] if KINDS[mclass].reads else []) + (
        [("read", "rows_out_beaten")] if layer["read"].get("out_rows") else []) + (
        [("read", "rows_out_proj_beaten")] if layer["read"].get("out_rows") and "o_proj" in layer else [])
    return write + read + meters


MISSING = [(n, i, b, k) for n, i, _, _ in {(n, i, None, None) for n, i, _, _ in CASES}
           for b, k in _required(_load(n)["layers"][i])]
MISSING.sort()


@pytest.mark.parametrize("name,layer,block,key", MISSING, ids=[f"{n}-L{i}-{k}" for n, i, _, k in MISSING])
def test_a_missing_self_check_counter_fails_closed(name, layer, block, key):
    run = run_of(name)
    del run["layers"][layer][block][key]
    before = covered(run_of(name))
    d = derive(run)
    assert f"layer {layer}: self-check counter {key} is missing (fail closed)" in d.failures
    assert verdict(run) == "fail"
    for cls in KINDS[run["layers"][layer]["memory_class"]].classes:  # a missing counter is not clean
        assert covered(run)[cls][0] == before[cls][0] - 1, cls


def test_a_missing_counter_on_a_layer_that_read_nothing_is_reported_as_missing_coverage():
    run = run_of("qwen3-int8")
    del run["layers"][1]["read"]["rows_plain_beaten"]
    run["layers"][1]["read"]["rows"] = 0
    d = derive(run)
    assert "layer 1: no attention reads were observed (coverage)" in d.failures
    assert not any("rows_plain_beaten" in f for f in d.failures)
    assert covered(run)["plain_kv"][0] == covered(run_of("qwen3-int8"))["plain_kv"][0] - 1


@pytest.mark.parametrize("bad", [-1, 1.5, True, "0", None])
def test_a_malformed_counter_is_a_derive_error(bad):
    run = run_of("qwen3-int8")
    run["layers"][2]["read"]["rows_eform_beaten"] = bad
    with pytest.raises(DeriveError, match="rows_eform_beaten"):
        derive(run)


def test_a_recurrent_layer_without_state_writes_is_not_covered():
    run = run_of("kda-int8")
    idx = next(layer["layer"] for layer in run["layers"] if layer["memory_class"] == "recurrent")
    run["layers"][idx]["read"]["state_writes"] = 0
    d = derive(run)
    assert f"layer {idx}: no recurrent-state writes were observed (coverage)" in d.failures
    c, t = covered(run)["recurrent_state"]
    assert c == t - 1


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", ["qwen3-int8", "mla-int8"])
def test_a_bound_beaten_by_the_realized_tv_fails_exactly_at_the_bound(name, form):
    """A realized TV equal to a form's bound is not a failure; the next float above it is."""
    base = run_of(name)
    d = derive(base)
    claim = next(c for c in d.claims if c.kind == "attn_tv" and c.forms[form].bound is not None
                 and c.forms[form].bound < 1)
    bound = claim.forms[form].bound
    at = float(bound)
    assert Fraction(at) == bound, "bounds are multiples of 2^-48, exactly representable"
    run = copy.deepcopy(base)
    run["layers"][claim.layer]["read"]["tv_realized"]["max"] = at
    assert not derive(run).claims[claim.layer].forms[form].beaten
    above = float.fromhex((at).hex()) * (1 + 2 ** -52)
    run["layers"][claim.layer]["read"]["tv_realized"]["max"] = above
    d2 = derive(run)
    assert d2.claims[claim.layer].forms[form].beaten
    assert any(f.startswith(f"layer {claim.layer}: {form} bound") and "beaten by realized TV" in f for f in d2.failures)
    assert verdict(run) == "fail"


def test_eta_flip_counters_are_totalled_even_when_not_required():
    run = run_of("mla-dsa-int8")
    key = next(k for k in run["layers"][0]["read"] if k.startswith("sel_eta") and "_flip_in_cert_r" in k)
    run["layers"][0]["read"][key] = 1
    run["layers"][1]["read"][key] = 3
    assert derive(run).self_checks[key] == 4
    assert "eta-certified" in self_check_meaning(key)


def test_the_certificate_verdict_reads_the_self_check_total_not_only_the_failures(monkeypatch):
    """A counter that derive totals but does not list as a failure must still fail the verdict."""
    run = run_of("qwen3-int8")
    run["layers"][0]["write"]["key_viol_witness_below_residual"] = 1
    d = derive(run)
    assert d.failures == [] and d.self_checks["key_viol_witness_below_residual"] == 1
    assert verdict(run) == "fail"


def test_a_missing_statistic_or_magnitude_is_a_named_derive_error():
    run = run_of("qwen3-int8")
    del run["layers"][0]["read"]["c_max"]
    with pytest.raises(DeriveError, match="missing statistic 'c_max'"):
        derive(run)
    run = run_of("qwen3-int8")
    run["layers"][0]["memory_class"] = "dense"
    with pytest.raises(DeriveError, match="memory_class 'dense'"):
        derive(run)
    run = run_of("qwen3-int8")
    run["schema"] = derive_mod.MAGNITUDE_SCHEMAS[0]
    for layer in run["layers"]:
        layer["read"].pop("fp_width", None)
    with pytest.raises(DeriveError, match="fp_width"):
        derive(run)


def test_the_table_states_a_meaning_for_every_counter_and_records_it_in_one_place():
    from witprobe.self_checks import failure_class, is_self_check, lookup, record_of

    for c in TABLE:
        assert c.meaning and c.record in ("write", "read", "probe")
    assert record_of("entry_pool_viol") == "write" and record_of("rows_plain_beaten") == "read"
    assert lookup("index_entry_viol_witness_below_residual").describe("index_entry_viol_witness_below_residual") \
        == "index_entry: witness W below the true residual ||Delta|| (triangle inequality broken)"
    assert failure_class("sel_flip_in_witness_cert") == "flip_in_certified_region"
    assert failure_class("viol_low_int8") == "witness_violation"
    # a counter named like a self-check but missing from the table still counts (fail closed)
    assert lookup("key_viol_new_check") is None and is_self_check("key_viol_new_check")
    assert not is_self_check("rows") and not is_self_check("sel_cert_witness") and failure_class("rows") is None


def test_the_report_names_each_nonzero_self_check_with_its_meaning():
    import io

    from witprobe.certify.report import print_summary

    run = run_of("mla-dsa-int8")
    run["layers"][1]["read"]["sel_flip_in_witness_cert"] = 3
    out = io.StringIO()
    print_summary(certificate(run), out)
    text = out.getvalue()
    assert "verdict: fail" in text and "self-checks: 1 nonzero" in text
    assert ("SELF-CHECK sel_flip_in_witness_cert = 3: rows whose selection changed although the witness "
            "certified it unchanged") in text
    out = io.StringIO()
    print_summary(certificate(run_of("mla-dsa-int8")), out)
    assert "self-checks: all 0" in out.getvalue() and "SELF-CHECK" not in out.getvalue()


def _with_magnitudes(run: dict) -> dict:
    """A ``witprobe-run/2`` record: the float64 magnitudes added where a ``/1`` record lacks them."""
    run["schema"] = derive_mod.MAGNITUDE_SCHEMAS[0]
    keys = max(r["prompt_tokens"] + len(r["served_tokens"]) for r in run["requests"]) + 1
    for layer in run["layers"]:
        read = layer["read"]
        for key, v in (("fp_width", 64.0), ("keys_visible", float(keys)), ("score_err", 1e-13),
                       ("score_abs_max", 8.0)):
            read.setdefault(key, {"n": 1, "max": v})
        if "sel_rows" in read:
            for key, v in (("sel_candidates", float(keys)), ("sel_eps_max", 1e-3), ("sel_score_abs_max", 4.0)):
                read.setdefault(key, {"n": 1, "max": v})
    return run


def test_the_selection_bound_uses_the_recorded_magnitudes_and_fails_closed_on_them():
    run = _with_magnitudes(run_of("mla-dsa-int8"))
    assert derive(run).failures == []
    run["layers"][1]["read"]["sel_score_abs_max"]["max"] = 1e12  # far outside the float64 analysis
    failures = derive(run).failures
    assert any(f.startswith("layer 1:") and "b_S" in f and "fail closed" in f for f in failures), failures
    del run["layers"][1]["read"]["sel_eps_max"]
    with pytest.raises(DeriveError, match="sel_eps_max"):
        derive(run)


def test_a_score_magnitude_outside_the_float64_analysis_fails_the_layer_closed():
    run = _with_magnitudes(run_of("qwen3-int8"))
    assert derive(run).failures == []
    run["layers"][2]["read"]["score_abs_max"]["max"] = 1e12
    assert any(f.startswith("layer 2:") and "fail closed" in f for f in derive(run).failures)


def test_layers_out_of_order_or_not_objects_are_refused():
    run = run_of("qwen3-int8")
    run["layers"][1], run["layers"][2] = run["layers"][2], run["layers"][1]
    with pytest.raises(DeriveError, match=r"layers\[1\]\.layer: expected 1, got 2"):
        derive(run)
    run = run_of("qwen3-int8")
    run["layers"][0] = None
    with pytest.raises(DeriveError, match=r"layers\[0\]"):
        derive(run)


def test_an_obligation_the_reference_checker_refuses_is_an_internal_error(monkeypatch):
    monkeypatch.setattr(derive_mod, "reference_check", lambda ob, registry: ["claim is below the chain"])
    with pytest.raises(DeriveError, match="reference checker refused the obligation"):
        derive(run_of("qwen3-int8"))


@pytest.mark.parametrize("bad", ["0.1", [0.1], {"x": 1}])
def test_a_statistic_that_is_not_a_number_is_a_derive_error(bad):
    run = run_of("qwen3-int8")
    run["layers"][1]["read"]["w_max"]["max"] = bad
    with pytest.raises(DeriveError, match=r"layers\[1\]\.read\.w_max\.max: expected a number"):
        derive(run)


def test_the_missing_cases_reach_the_conditional_meters():
    """The box, output and projected-output counters are among the missing-counter cases (a run of
    each meter is committed), so dropping one from the required list fails a test above."""
    keys = {k for _, _, _, k in MISSING}
    assert {"rows_boxsup_beaten", "rows_out_beaten", "rows_out_proj_beaten"} <= keys


def test_the_box_or_output_bound_beaten_by_the_realized_error_fails():
    """Derivation compares each stored bound with the realized error itself (not only the meter's
    row counters): a box bound or an output bound below its realized maximum is a failure."""
    run = run_of("qwen3-int8")
    i = next(j for j, layer in enumerate(run["layers"]) if layer["memory_class"] == "dense_kv")
    read = run["layers"][i]["read"]
    read["boxsup_bound"]["max"] = read["tv_realized"]["max"] * 0.5
    d = derive(run)
    assert any(f.startswith(f"layer {i}: boxsup bound") and "beaten by realized TV" in f for f in d.failures)
    assert verdict(run) == "fail"
    run = run_of("qwen3-int8")
    read = run["layers"][i]["read"]
    read["out_err"]["max"] = 1e6
    d = derive(run)
    assert any(f.startswith(f"layer {i}: attn_out bound") and "beaten by the realized error" in f for f in d.failures)
    assert verdict(run) == "fail"


@pytest.mark.parametrize("key", ["fp_width", "keys_visible", "score_err", "score_abs_max", "boxsup_bound"])
def test_a_recorded_statistic_without_a_maximum_is_a_named_derive_error(key):
    """A layer that read rows but whose statistic has no maximum (``max: null``: the meter folded
    nothing) fails closed with the statistic's name, not with whatever the null does further on."""
    run = run_of("qwen3-int8")
    assert run["schema"] in derive_mod.MAGNITUDE_SCHEMAS and key in run["layers"][0]["read"]
    run["layers"][0]["read"][key]["max"] = None
    with pytest.raises(DeriveError, match=rf"layers\[0\]: statistic '{key}' has no maximum although rows were read"):
        derive(run)


@pytest.mark.parametrize("bad", ["off", 0, None, [False]])
def test_a_box_meter_switch_that_is_not_a_boolean_is_refused(bad):
    """``config.box_sup`` is true, false or absent; anything else (a string, 0, null) is refused by
    coverage and derivation alike (the typed run record), never read as on or off."""
    from witprobe.typed_json import RecordError

    run = run_of("qwen3-int8")
    run["config"]["box_sup"] = bad
    with pytest.raises(RecordError, match=r"config\.box_sup: expected a boolean"):
        coverage(run)
    with pytest.raises(DeriveError, match=r"config\.box_sup: expected a boolean"):
        derive(run)


def _with_eviction(run: dict, i: int, rho: float, realized: float) -> dict:
    """Layer ``i`` of a dense-KV run as an eviction codec records it: the eviction meter's
    statistics (layer maximum ``rho`` of RHO, ``realized`` TV of full vs pruned attention) and its
    three self-check counters, 0."""
    read = run["layers"][i]["read"]
    rows = read["rows"]

    def stat(mx: float) -> dict:
        return {"n": rows, "calls": 1, "sum": mx * rows / 2, "mean": mx / 2, "min": 0.0, "max": mx}

    read.update({"evict_rows": rows, "evict_rows_evicting": rows, "evict_keys": stat(8.0),
                 "evict_rho": stat(rho), "evict_bound": stat(rho / (1 + rho) if math.isfinite(rho) else 1.0),
                 "evict_tv_realized": stat(realized), "evict_tightness": stat(2.0), "rows_evict_vacuous": 0,
                 "rows_evict_beaten": 0, "rows_evict_mass_mismatch": 0, "rows_evict_viol_upper": 0})
    return run


def test_an_eviction_layer_claims_rho_over_one_plus_rho_and_fails_when_it_is_beaten():
    """A dense-KV layer that records the eviction meter gets the ``evict_tv`` claim ``B = RHO/(1+RHO)``
    (rounded up) and its per-run theorem; the output claims use the storage bound plus ``B``; a
    realized full-vs-pruned TV above ``B`` is a failure; a RHO that is not finite leaves the claim
    without a value and the output claims on the trivial ``TV <= 1``."""
    run = run_of("qwen3-int8")
    i = next(j for j, layer in enumerate(run["layers"]) if layer["memory_class"] == "dense_kv")
    d = derive(_with_eviction(copy.deepcopy(run), i, 0.25, 0.1))
    assert d.failures == []
    assert {"rows_evict_beaten", "rows_evict_mass_mismatch", "rows_evict_viol_upper"} <= set(d.self_checks)
    (ev,) = [c for c in d.claims if c.kind == "evict_tv"]
    assert ev.id == f"L{i:02d}.evict_tv" and not ev.vacuous
    assert Fraction(1, 5) <= ev.value < Fraction(1, 5) + Fraction(1, 10**8)
    assert ev.id in {t.claim_id for t in d.theorems} and ev.extra["rho"] == "0.250000001"  # RHO up, 9 decimals
    attn = next(c for c in d.claims if c.id == f"L{i:02d}.attn_tv")
    out = next(c for c in d.claims if c.id == f"L{i:02d}.attn_out")
    assert Fraction(out.extra["tv_bound_used"]) >= attn.value + ev.value and not out.extra["tv_bound_trivial"]

    d = derive(_with_eviction(copy.deepcopy(run), i, 0.25, 0.3))
    assert any(f.startswith(f"layer {i}: evict bound") and "beaten by realized TV" in f for f in d.failures), d.failures

    d = derive(_with_eviction(copy.deepcopy(run), i, math.inf, 0.1))
    (ev,) = [c for c in d.claims if c.kind == "evict_tv"]
    assert ev.value is None and ev.vacuous and ev.id not in {t.claim_id for t in d.theorems}
    out = next(c for c in d.claims if c.id == f"L{i:02d}.attn_out")
    assert out.extra["tv_bound_trivial"] and out.extra["tv_bound_used"] == "1.000000"


@pytest.mark.parametrize("key", ["rows_evict_beaten", "rows_evict_mass_mismatch", "rows_evict_viol_upper"])
def test_an_eviction_layer_missing_an_eviction_counter_fails_closed(key):
    """The eviction meter's counters are required where the layer records ``evict_rows``: one
    missing is a failure of derivation and uncovers the layer, like a kind's own counters."""
    run = run_of("qwen3-int8")
    i = next(j for j, layer in enumerate(run["layers"]) if layer["memory_class"] == "dense_kv")
    full = covered(run)["plain_kv"]
    run = _with_eviction(run, i, 0.25, 0.1)
    assert derive(run).failures == [] and covered(run)["plain_kv"] == full
    del run["layers"][i]["read"][key]
    assert f"layer {i}: self-check counter {key} is missing (fail closed)" in derive(run).failures
    assert covered(run)["plain_kv"] == (full[0] - 1, full[1])


def test_record_of_refuses_a_name_that_is_not_in_the_table():
    """``record_of`` says where a required counter lives; a name the table does not know (even one
    named like a self-check) is a ``KeyError`` naming it, not a block picked by default."""
    from witprobe.self_checks import record_of

    assert record_of("key_viol_witness_below_residual") == "write" and record_of("rows_out_beaten") == "read"
    for name in ("rows", "rows_new_meter_beaten"):
        with pytest.raises(KeyError, match=name):
            record_of(name)


def test_tightness_is_the_bound_over_the_realized_maximum():
    """A claim's tightness reading ``value / realized_max``; none without a value or a realized error."""
    from witprobe.calculus.tiers import Tier

    def claim(value, realized):
        return derive_mod.Claim("L00.attn_tv", 0, derive_mod.ATTN_TV, "plain", value, value is None, Tier.CERTIFIED,
                                realized)

    assert claim(Fraction(1, 2), 0.25).tightness == 2.0 and claim(Fraction(3), 1.5).tightness == 2.0
    assert claim(Fraction(1, 2), 0.0).tightness is None and claim(None, 0.25).tightness is None


def test_the_recurrent_state_row_reads_the_contraction_range():
    """The coverage headline of a recurrent state is the range of the per-layer mean decay ``a_t``."""
    run = run_of("kda-int8")
    (row,) = [r for r in coverage(run) if r["memory_class"] == "recurrent_state"]
    means = [x["read"]["a_t"]["mean"] for x in run["layers"] if x["memory_class"] == "recurrent"]
    assert row["layers_covered"] == len(means) > 0
    assert (row["headline"]["a_mean_min"], row["headline"]["a_mean_max"]) == (min(means), max(means))


@pytest.mark.parametrize("request_, message", [
    ([1, 2], r"requests\[0\]: expected a RequestRecord object"),
    ("abc", r"requests\[0\]: expected a RequestRecord object"),
    ({"prompt_index": 0, "prompt_tokens": 3}, r"requests\[0\]\.served_tokens: missing"),
    ({"prompt_index": 0, "prompt_tokens": 3, "served_tokens": "abc"}, r"requests\[0\]\.served_tokens: expected a list"),
    ({"prompt_index": 0, "prompt_tokens": 3, "served_tokens": 5}, r"requests\[0\]\.served_tokens: expected a list"),
    ({"prompt_index": 0, "prompt_tokens": 0, "served_tokens": [1]}, r"requests\[0\]\.prompt_tokens: expected an integer >= 1")])
def test_a_malformed_request_of_a_legacy_run_is_a_derive_error(request_, message):
    """A ``witprobe-run/1`` record bounds its keys by the longest request: each request must be an
    object with a ``served_tokens`` list (a string would count characters as tokens)."""
    run = run_of("qwen3-int8")
    run["schema"] = "witprobe-run/1"
    run["requests"][0] = request_
    with pytest.raises(DeriveError, match=message):
        derive(run)
