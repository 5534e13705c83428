"""bench/RESULTS.md's serving sections cite their committed records, and the records say what the
sections claim: throughput ratios per mode, enforcement per tau, kernel faults caught, a quiet clean audit."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = RESULTS.index(title)
    end = RESULTS.find("\n# ", start + 1)
    return RESULTS[start:end if end > 0 else None]


def test_throughput_section_quotes_the_record():
    rec = json.loads((ROOT / "bench" / "results" / "serving_throughput.json").read_text())
    sec = _section("# Serving throughput with the ledger attached")
    assert rec["schema"] == "witprobe-bench-serving/2"
    assert set(rec["ratio_over_off"]) == {"off", "ledger", "bound1", "bound", "bound_audit"}
    for mode in ("ledger", "bound1", "bound", "bound_audit"):
        assert f"**{rec['ratio_over_off'][mode]:.3f}**" in sec, mode
        runs = [r for r in rec["runs"] if r["mode"] == mode]
        assert len(runs) == rec["workload"]["repeats"] >= 2 and all(r["tokens"] == 16 * 8 for r in runs)
    # the section says the targets are not met: keep it true
    assert "neither is met" in sec
    assert rec["ratio_over_off"]["bound1"] < 0.8 and rec["ratio_over_off"]["bound"] < 0.5


def test_enforcement_section_quotes_the_record_and_no_bound_was_beaten():
    rec = json.loads((ROOT / "bench" / "results" / "live_enforce.json").read_text())
    sec = _section("# Enforcement and the kernel audit on the live engine")
    runs = rec["runs"]
    assert rec["schema"] == "witprobe-bench-live-enforce/2"
    assert runs[0]["tau"] is None and runs[0]["request_budget"] is None and runs[0]["fallback_rate"] == 0
    assert abs(runs[1]["tau"] - rec["layer_bound_median"] / 2) < 1e-12  # the acceptance's tau
    for r in runs:
        assert r["bound_beaten"] == 0 and 0 <= r["fallback_rate"] <= 1 and r["rows"] > 0
        assert f"| {r['fallback_rate']:.3f} |" in sec
        assert r["next_token_tv_first"]["median"] <= r["next_token_tv_first"]["max"]
    assert runs[1]["next_token_tv_first"]["median"] < runs[0]["next_token_tv_first"]["median"]
    for f in rec["faults"]:
        assert f["requests_until_caught"] == 1 and f["mismatches"] > 0, f
        assert f"`{f['fault']}` after 1 request" in sec
    ca = rec["clean_audit"]
    assert ca["audit_rows"] >= 10_000 and ca["mismatches"] == 0 and 0 < ca["worst_error_over_allowance"] < 1
    assert f"{ca['audit_rows']:,} audited, 0 alerts" in sec


def test_budget_rows_quote_the_record_and_the_tau_comparison_stays_true():
    """The request-budget runs (admission on the cumulative bound): budgets are the stated fractions
    of the unenforced run's median bound sum, every request reached its budget, and the section's
    conclusion (per-row tau leaves less damage at about the same fallback rate) holds on the record."""
    rec = json.loads((ROOT / "bench" / "results" / "live_enforce.json").read_text())
    sec = _section("# Enforcement and the kernel audit on the live engine")
    budget = {r["run"]: r for r in rec["runs"] if r["request_budget"] is not None}
    assert sorted(budget) == ["budget@0.1", "budget@0.25", "budget@0.5"]
    assert f"({rec['bound_sum_median']:,.0f}," in sec
    for name, r in budget.items():
        frac = float(name.split("@")[1])
        assert abs(r["request_budget"] - frac * rec["bound_sum_median"]) <= 1e-9 * r["request_budget"]
        assert r["tau"] is None and r["requests_budget_exhausted"] == rec["workload"]["requests"]
        assert f"| {name} | {r['fallback_rate']:.3f} |" in sec
    tau = {r["run"]: r for r in rec["runs"] if r["tau"] is not None}
    half = tau[f"enforce@{rec['tau_half_median']:.4g}"]
    for b, t in ((budget["budget@0.5"], half), (budget["budget@0.1"], tau["enforce@0.2"])):
        assert abs(b["fallback_rate"] - t["fallback_rate"]) < 0.1
        assert b["next_token_tv_first"]["median"] > 2 * t["next_token_tv_first"]["median"]
    assert "Per-row tau beats the request budget on this workload" in sec


def test_box_resolution_section_quotes_the_record_and_the_record_is_of_the_meters_resolution():
    """The live meter's box resolution is chosen from bench/results/live_box_resolution.json: the record
    names the resolution the meter uses (changing LIVE_BOX without measuring it again fails here), and
    the chosen one is faster than 8 x 32 at a median bound within 1 % of it."""
    from witprobe.serving.read_meter import LIVE_BOX

    rec = json.loads((ROOT / "bench" / "results" / "live_box_resolution.json").read_text())
    sec = _section("## The live meter's box resolution")
    assert rec["schema"] == "witprobe-bench-live-box/1"
    live = f"{LIVE_BOX.intervals}x{LIVE_BOX.buckets}"
    assert rec["live_box"] == live and f"**{live}**" in sec
    for name, v in rec["specs"].items():
        assert f"| {name} | {v['seconds_median']:.2f} | {v['time_over_reference']:.3f} | {v['bound_over_reference_median']:.4f} |" in sec
        assert len(v["seconds"]) == rec["workload"]["rounds"]
        assert v["bound_over_reference_median"] >= 1.0 - 1e-9  # a coarser box is never tighter than 16 x 64 at the median
    chosen, finer = rec["specs"][live], rec["specs"]["8x32"]
    assert chosen["seconds_median"] < finer["seconds_median"]
    assert chosen["bound_over_reference_median"] <= finer["bound_over_reference_median"] * 1.01
