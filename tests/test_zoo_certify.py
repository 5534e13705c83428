"""Every zoo configuration, live: each certified bound against the realized error, self-checks 0."""

from __future__ import annotations

import pytest

from witprobe.certify.derive import derive
from witprobe.certify.measure import DEFAULT_PROMPTS, MeasureConfig, measure
from witprobe.models.zoo import load_model

MODELS = ("qwen3", "mla", "mla-dsa", "v4", "kda")


@pytest.mark.parametrize("name", MODELS)
def test_live_run_bounds_hold_and_self_checks_are_zero(name):
    loaded = load_model(name)
    run = measure(loaded, MeasureConfig(model=name, codec="int4", bands=4, max_new_tokens=4,
                                        prompts=(DEFAULT_PROMPTS[-1],), reference=False)).to_json()
    d = derive(run)
    assert d.failures == [], d.failures
    assert all(v == 0 for v in d.self_checks.values()), {k: v for k, v in d.self_checks.items() if v}
    attn = [c for c in d.claims if c.kind == "attn_tv"]
    assert attn, "every configuration has at least one attention layer"
    for c in attn:
        assert c.realized_max > 0  # int4 really perturbs the served attention
        for form in c.forms.values():
            assert not form.beaten
            if form.bound is not None:
                assert float(form.bound) >= c.realized_max
    # the share of vacuous forms is reported per layer, not hidden
    for r in d.readings:
        if "rows_plain_vacuous_share" in r:
            assert 0 <= r["rows_plain_vacuous_share"] <= 1
