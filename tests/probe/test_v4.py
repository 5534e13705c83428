"""DeepSeek-V4 compressed memory on the zoo's tiny V4 (real transformers code): window, entries,
gate-weighted pooling, page selection and attention sinks."""

from __future__ import annotations

import math

import pytest

from witprobe.certify.derive import derive
from witprobe.certify.measure import DEFAULT_PROMPTS, MeasureConfig, measure
from witprobe.models.zoo import load_model
from witprobe.kinds.layouts import layer_kinds


@pytest.fixture(scope="module")
def v4_run():
    loaded = load_model("v4")
    cfg = MeasureConfig(model="v4", codec="int8", bands=4, max_new_tokens=6, prompts=(DEFAULT_PROMPTS[-1],),
                        reference=False)
    return loaded, measure(loaded, cfg).to_json()


def test_layout_follows_the_v4_layer_types(v4_run):
    loaded, run = v4_run
    assert layer_kinds(loaded.model.config) == ["v4_csa", "v4_hca", "v4_csa", "v4_sliding"]
    assert [x["memory_class"] for x in run["layers"]] == ["v4_csa", "v4_hca", "v4_csa", "v4_sliding"]


def test_every_self_check_is_zero_and_every_bound_holds(v4_run):
    _, run = v4_run
    d = derive(run)
    assert d.failures == [], d.failures
    assert all(v == 0 for v in d.self_checks.values()), {k: v for k, v in d.self_checks.items() if v}
    for name in ("v4_key_mismatch", "entry_pool_viol", "indexer_recon_mismatch"):
        assert name in d.self_checks
    for c in (c for c in d.claims if c.kind == "attn_tv"):
        assert not c.vacuous and float(c.value) >= c.realized_max > 0


def test_compressed_entries_and_window_are_witnessed(v4_run):
    _, run = v4_run
    csa, hca = run["layers"][0]["write"], run["layers"][1]["write"]
    assert csa["window_witness"]["n"] > 0
    assert csa["entry_witness"]["n"] > 0 and csa["index_entry_witness"]["n"] > 0
    assert hca["entry_witness"]["n"] > 0 and "index_entry_witness" not in hca
    # HCA pools 16 tokens per entry: far fewer entries than window tokens
    assert hca["entry_witness"]["n"] * 16 <= hca["window_witness"]["n"]


def test_pooling_readings_lie_in_their_ranges_and_both_contracts_are_reported(v4_run):
    _, run = v4_run
    d = derive(run)
    pools = [c for c in d.claims if c.kind == "pooling"]
    assert [c.layer for c in pools] == [0, 1, 2]
    for c in pools:
        for tensor, e in c.extra.items():
            slots = 8 if c.layer in (0, 2) else 16  # CSA: 2 x 4 overlapping slots; HCA: 16
            assert 1 / math.sqrt(slots) - 1e-9 <= e["contract_l2_gain_min"] <= e["contract_l2_gain_max"] <= 1 + 1e-9
            assert e["contract_linf_gain"] == 1
            assert 0 <= e["top1_norm_mean"] <= 1 and 0 <= e["entropy_n_mean"] <= 1 and 0 < e["eff_frac_mean"] <= 1


def test_page_selection_is_metered_and_composed_only_through_rho(v4_run):
    _, run = v4_run
    d = derive(run)
    sel = [c for c in d.claims if c.kind == "selection"]
    tot = [c for c in d.claims if c.kind == "attn_tv_total"]
    assert [c.layer for c in sel] == [0, 2] and [c.layer for c in tot] == [0, 2]
    assert all(c.extra["rows"] > 20 for c in sel)
    assert all(c.registered_tier.value == "empirical" for c in tot)
