"""Claim guard for two sections of bench/RESULTS.md: the kernel on a long prompt (issue 24) and the
floor of metering (issue 27). Their numbers must be the committed result files' numbers, and the
results must say what the sections claim: every layer certified and every lowered bound rejected,
no certified bound below its realized TV, and grouped reads faster than the repeated layout."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS_MD = (ROOT / "bench" / "RESULTS.md").read_text()
LONG = json.loads((ROOT / "bench" / "results" / "long_prompt_kernel.json").read_text())
FLOOR = json.loads((ROOT / "bench" / "results" / "meter_floor_cpu.json").read_text())


def test_long_prompt_every_layer_is_certified_by_the_kernel_and_every_lowered_bound_rejected():
    run = LONG["run"]
    assert run["prompt_tokens"] >= 1500
    assert run["attn_tv_tiers"] == {"certified": run["layers"]} and run["non_vacuous_layers"] == run["layers"]
    assert run["kernel"]["kernel_checked"] == run["kernel"]["guard_rejected"] == run["layers"]
    assert run["tightness"]["median"] >= 1 and run["tightness"]["worst"] >= 1  # no bound below its realized TV
    assert LONG["coqc_run_v"]["status"] == "accepted" and LONG["coqc_run_v"]["exit"] == 0


def test_the_long_prompt_section_cites_the_committed_record():
    run = LONG["run"]
    assert f"{run['layers']} of {run['layers']} layers certified" in RESULTS_MD
    for form, r in run["rows"].items():
        assert f"`{form}` {r['rows_shipped']:,} of {r['rows_read']:,}" in RESULTS_MD, form
        assert f"{r['float_literals']:,}" in RESULTS_MD, form
    assert f"median {run['tightness']['median']:.2f}x, worst {run['tightness']['worst']:.2f}x" in RESULTS_MD
    c = LONG["coqc_run_v"]
    assert f"{c['wall_s']} s wall, {c['cpu_s']} s CPU" in RESULTS_MD


def test_the_floor_section_cites_the_committed_record_and_the_grouped_reads_are_faster():
    for t, r in FLOOR["contexts"].items():
        x = {k: v["x_attention"] for k, v in r.items()}
        before = x["all_meters"] - x["scores64"] - x["output"] + x["scores64_repeated"] + x["output_repeated"]
        row = f"| {int(t):,} | {r['attention']['us_per_row']:.1f} | {x['scores64']:.1f}x (before: {x['scores64_repeated']:.1f}x)"
        assert row in RESULTS_MD, row
        assert f"**{x['all_meters']:.1f}x** (before: {before:.1f}x)" in RESULTS_MD, t
        assert x["scores64"] < x["scores64_repeated"] and x["output"] < x["output_repeated"], t
