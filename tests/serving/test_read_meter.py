"""The live read meter on transformers' continuous batching: a bound per request and layer that
reality never beats, an audit that catches faulty kernels and stays quiet on the clean one, and
enforcement that serves exact attention where the bound exceeds tau."""

from __future__ import annotations

import contextlib
import math

import pytest
import torch

from tests.serving.conftest import chat_ids, make_manager, run_requests
from witprobe.ledger.journal import read_records
from witprobe.ledger.trace import PROMPTS
from witprobe.serving.attach import AttachError, attach, detach
from witprobe.serving.config import LiveConfig, LiveConfigError
from witprobe.serving.kernel_faults import KERNEL_FAULTS, faulty_kernel, inject
from witprobe.serving.read_meter import kernel_allowance


def _run(model, tok, cfg, journal, n, max_new_tokens=2, fault=None):
    mgr = make_manager(model, max_new_tokens=max_new_tokens)
    mgr.warmup()
    prompts = {f"req-{i}": chat_ids(tok, PROMPTS[i % len(PROMPTS)]) for i in range(n)}
    led = None
    try:
        with inject(fault) if fault else contextlib.nullcontext():
            led = attach(mgr, cfg, journal=journal)
            try:
                out = run_requests(mgr, prompts, max_new_tokens=max_new_tokens)
                verdicts = {rid: led.verdict(rid) for rid in prompts}
                totals = dict(led.meter.totals, audit_worst_ratio=led.meter.audit_worst_ratio) if led.meter is not None else {}
            finally:
                detach(led)  # also after a failure: the next test gets the engine's own attention function
    finally:
        model._cached_continuous_batching_manager = None
    return out, verdicts, totals


def test_live_bound_every_layer_never_beaten_and_clean_audit_quiet(paged_smollm2, tmp_path):
    """16 concurrent requests: a bound for each of the 30 layers of each request; no row's realized TV
    (exact side pool) exceeds its bound; every (row, head) audited, over 10,000 rows, no alert."""
    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    j = tmp_path / "journal.sqlite"
    _, verdicts, totals = _run(m, tok, LiveConfig(keep_exact=True, audit_rate=1.0), j, 16)
    for rid, v in verdicts.items():
        a = v["attention"]
        assert len(a["bound_max_per_layer"]) == 30 and all(b is not None for b in a["bound_max_per_layer"]), rid
        assert all(0 <= b <= 1 and math.isfinite(b) for b in a["bound_max_per_layer"])
        assert a["bound_beaten"] == 0, rid
        assert all(r <= b for r, b in zip(a["realized_tv_max_per_layer"], a["bound_max_per_layer"]))
        assert a["tier"] == "empirical" and a["audit"]["mismatches"] == 0 and a["ok"] is True
    # the compression is real: the realized TV is not zero, so the bound is not beaten by accident
    assert max(max(v["attention"]["realized_tv_max_per_layer"]) for v in verdicts.values()) > 1e-3
    assert totals["audit_rows"] >= 10_000 and totals["audit_mismatches"] == 0 and totals["bound_beaten"] == 0
    assert 0 < totals["audit_worst_ratio"] < 1  # the kernel's real error is seen, and stays inside the allowance
    att = {b["rid"]: b for _, k, b in read_records(j) if k == "attention"}
    assert set(att) == set(verdicts) and all(att[r]["rows"] == verdicts[r]["attention"]["rows"] for r in att)


@pytest.mark.parametrize("fault", KERNEL_FAULTS)
def test_audit_catches_each_injected_kernel_fault_in_one_request(paged_smollm2, tmp_path, fault):
    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    j = tmp_path / "journal.sqlite"
    _, verdicts, totals = _run(m, tok, LiveConfig(audit_rate=0.01), j, 1, max_new_tokens=1, fault=fault)
    assert verdicts["req-0"]["attention"]["audit"]["mismatches"] > 0 and verdicts["req-0"]["attention"]["ok"] is False
    alerts = [b for _, k, b in read_records(j) if k == "audit_mismatch"]
    assert alerts and all({"layer", "head", "position", "rid"} <= set(b) for b in alerts)
    assert all(0 <= b["layer"] < 30 and 0 <= b["head"] < 9 and b["rid"] == "req-0" for b in alerts)


def test_enforce_with_tiny_tau_serves_the_uncompressed_model(paged_smollm2, tmp_path):
    """With tau near 0 every row with a nonzero bound is recomputed from the exact side pool, so greedy
    decoding matches the engine without witprobe (no compression); with witprobe and no
    enforcement it is the compressed model, whose tokens are not asked to match."""
    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    n, new = 4, 6
    mgr = make_manager(m, max_new_tokens=new)
    mgr.warmup()
    prompts = {f"req-{i}": chat_ids(tok, PROMPTS[i]) for i in range(n)}
    try:
        exact = run_requests(mgr, prompts, max_new_tokens=new)
    finally:
        m._cached_continuous_batching_manager = None
    out, verdicts, totals = _run(m, tok, LiveConfig(tau=1e-12), tmp_path / "j.sqlite", n, max_new_tokens=new)
    assert out == exact
    assert totals["rows_enforced"] == totals["rows_over_tau"] > 0.9 * totals["rows"]
    assert all(v["attention"]["fallback_rate"] > 0.9 for v in verdicts.values())


def test_enforce_at_half_the_median_bound_leaves_no_row_above_tau_unserved_exact(paged_smollm2, tmp_path, monkeypatch):
    """Every row whose bound (as the box meter returned it) exceeds tau is served recomputed, and no
    other row is: checked on the served output itself, row by row, not on the meter's counters."""
    from witprobe.serving import read_meter

    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    _, v0, _ = _run(m, tok, LiveConfig(keep_exact=True), tmp_path / "a.sqlite", 4)
    bounds = sorted(b for v in v0.values() for b in v["attention"]["bound_max_per_layer"])
    tau = bounds[len(bounds) // 2] / 2
    boxes: list[torch.Tensor] = []
    agree: list[bool] = []
    orig_box, orig_read = read_meter.box_sup_bound, read_meter.LiveReadMeter.on_read

    def box(ps, c, *args, **kw):
        boxes.append(orig_box(ps, c, *args, **kw))
        return boxes[-1]

    def on_read(self, layer, spans, query, key, value, mask, scaling, output):
        n0 = len(boxes)
        res = orig_read(self, layer, spans, query, key, value, mask, scaling, output)
        live = [sp for sp in spans if sp.q1 > sp.q0]
        if len(boxes) > n0:  # one box call per group: the decoding requests together, then each prefill alone
            groups = [[sp for sp in live if sp.q1 - sp.q0 == 1]] + [[sp] for sp in live if sp.q1 - sp.q0 > 1]
            groups = [g for g in groups if g]
            assert len(groups) == len(boxes) - n0
            for g, b in zip(groups, boxes[n0:]):
                for i, sp in enumerate(g):
                    nq = sp.q1 - sp.q0
                    changed = (res.output[0, sp.q0:sp.q1] != output[0, sp.q0:sp.q1]).any(-1).T  # (H, Q): rows served recomputed
                    agree.append(bool(torch.equal(changed, b[i, :, :nq] > tau)))
        return res

    monkeypatch.setattr(read_meter, "box_sup_bound", box)
    monkeypatch.setattr(read_meter.LiveReadMeter, "on_read", on_read)
    _, v1, totals = _run(m, tok, LiveConfig(tau=tau), tmp_path / "b.sqlite", 4)
    assert agree and all(agree), f"{agree.count(False)} of {len(agree)} calls served a row against its bound"
    assert totals["rows_over_tau"] == totals["rows_enforced"] > 0
    assert 0 < totals["rows_enforced"] < totals["rows"]  # enforcement is selective
    assert totals["bound_beaten"] == 0
    for v in v1.values():
        a = v["attention"]
        assert a["tau"] == tau and a["rows_over_tau"] == a["enforced_rows"]
        assert a["fallback_rate"] == a["enforced_rows"] / a["rows"]


def test_declared_layer_subset_meters_only_those_layers(paged_smollm2, tmp_path):
    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    _, v, _ = _run(m, tok, LiveConfig(bound_layers=(3,)), tmp_path / "j.sqlite", 1, max_new_tokens=1)
    a = v["req-0"]["attention"]
    assert a["layers"] == [3] and len(a["bound_max_per_layer"]) == 1 and a["bound_max_per_layer"][0] is not None


def test_detach_restores_the_attention_function(paged_smollm2, tmp_path):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    before = ALL_ATTENTION_FUNCTIONS["paged|eager"]
    assert "paged|eager" not in ALL_ATTENTION_FUNCTIONS._local_mapping
    _run(paged_smollm2.model, paged_smollm2.tokenizer, LiveConfig(), tmp_path / "j.sqlite", 1, max_new_tokens=1)
    assert ALL_ATTENTION_FUNCTIONS["paged|eager"] is before and "paged|eager" not in ALL_ATTENTION_FUNCTIONS._local_mapping


@pytest.mark.parametrize("bad", [dict(tau=0.0), dict(tau=1.0), dict(tau=float("nan")), dict(audit_rate=1.5),
                                 dict(audit_rate=-0.1), dict(bound_layers=()), dict(bound_layers=(-1,)),
                                 dict(live_bound=False, tau=0.1), dict(tau=True), dict(request_budget=0.0),
                                 dict(request_budget=-1.0), dict(request_budget=float("inf")), dict(request_budget=True),
                                 dict(live_bound=False, request_budget=1.0)])
def test_live_config_refuses_bad_read_meter_options(bad):
    with pytest.raises(LiveConfigError):
        LiveConfig(**bad)


def _attention(q, k, v, mask, scaling, kernel=None):
    class M(torch.nn.Module):
        num_key_value_groups = 1

    from transformers.integrations.eager_paged import eager_paged_attention_forward

    fn = kernel or eager_paged_attention_forward
    return fn(M(), q, k, v, mask, scaling=scaling)[0]


def test_kernel_allowance_holds_for_the_float32_kernel_and_not_for_a_float16_one():
    """The allowance is met by transformers' paged eager kernel in float32 on 200 random causal
    attentions, and exceeded by the fp16-accumulation kernel in nearly all of them (a window of
    one key has weight 1 whatever the scores, where the allowance's score term is loose)."""
    g = torch.Generator().manual_seed(7)
    worst_clean, caught = 0.0, 0
    for _ in range(200):
        t = int(torch.randint(1, 96, (1,), generator=g))
        q = torch.randn(1, 2, t, 64, generator=g) * 3
        k = torch.randn(1, 2, t, 64, generator=g) * 3
        v = torch.randn(1, 2, t, 64, generator=g)
        mask = torch.triu(torch.full((t, t), torch.finfo(torch.float32).min), 1)[None, None]
        vis = (mask > torch.finfo(torch.float32).min / 2).expand(1, 2, t, t)
        s = torch.matmul(q.double(), k.double().transpose(-1, -2)) * 0.125
        p = torch.softmax(torch.where(vis, s, torch.tensor(-math.inf, dtype=torch.float64)), -1)
        ref = torch.matmul(p, v.double())
        allow = kernel_allowance(q.double(), k.double(), v.double(), p, vis, 0.125, 2.0 ** -24)
        got = _attention(q, k, v, mask, 0.125).transpose(1, 2).double()
        worst_clean = max(worst_clean, float(((got - ref).abs() / allow).max()))
        bad = _attention(q, k, v, mask, 0.125, faulty_kernel("fp16-accumulation")).transpose(1, 2).double()
        caught += int(float(((bad - ref).abs() / allow).amax()) > 1.0)
    assert worst_clean <= 1.0, worst_clean
    assert caught >= 190, caught


def test_attention_overrides_restored_out_of_order_are_refused():
    from witprobe.serving.attention_entry import OverrideOrderError, current, override, restore

    base = current()
    a = override(lambda *x, **k: None)
    b = override(lambda *x, **k: None)
    with pytest.raises(OverrideOrderError):
        restore(a)
    restore(b)
    restore(a)
    assert current() is base


def test_a_second_metered_engine_of_the_same_model_is_refused_until_the_first_detaches(paged_smollm2, tmp_path):
    m = paged_smollm2.model
    a, b = make_manager(m), make_manager(m)
    a.warmup()
    b.warmup()
    try:
        first = attach(a, LiveConfig(), journal=tmp_path / "a.sqlite")
        with pytest.raises(AttachError, match="detach it first"):
            attach(b, LiveConfig(), journal=tmp_path / "b.sqlite")
        assert not hasattr(b, "_witprobe_ledger") and "update" not in vars(b.batch_processor.cache)  # nothing half-installed
        assert not (tmp_path / "b.sqlite").exists()  # and no journal opened
        detach(first)
        detach(attach(b, LiveConfig(), journal=tmp_path / "c.sqlite"))
    finally:
        m._cached_continuous_batching_manager = None


def test_witness_and_side_pool_tables_grow_and_keep_what_was_written():
    """Sparse ledger slots map to table rows in order of first write; growing past the initial rows
    keeps every earlier witness and exact entry."""
    import numpy as np

    from witprobe.serving.read_meter import INITIAL_ROWS, LiveReadMeter

    m = LiveReadMeter([0, 1], None, 2, 4, 200_000, 2, None, 0.0, True, 0, torch.float32)
    g = torch.Generator().manual_seed(3)
    waves = []
    for k in range(5):
        sl = (np.arange(k * 300, (k + 1) * 300) * 37) % 200_000
        x = torch.randn(1, 2, 300, 4, generator=g)
        served = x + 0.1 * torch.randn(1, 2, 300, 4, generator=g)
        m.on_write(1, sl, x, served, 2 * x)
        waves.append((sl, x, served))
    assert m.n_rows == 1500 > INITIAL_ROWS and m.witness.shape[2] >= 1500
    assert m.side_pool_bytes == 2 * 2 * 2 * m.witness.shape[2] * 4 * 4
    for sl, x, served in waves:
        r = m._rows(sl)
        want = (x[0].double() - served[0].double()).reshape(2, 300, 2, 2).norm(dim=-1)
        assert torch.allclose(m.witness[1][:, r], want, rtol=1e-12) and bool((m.witness[1][:, r] >= want).all())
        assert torch.equal(m.exact["value"][1][:, r], 2 * x[0])
    assert m.n_rows == 1500  # reading known slots assigns nothing


def test_request_budget_admits_reads_on_the_cumulative_bound_then_serves_exact(paged_smollm2, tmp_path):
    """Admission on cumulative bound: a budget no request reaches changes nothing; at half the smallest
    request's summed bound every request exhausts it, its compressed-served bound stays within it,
    and from then on it is served exact; a budget below the first read serves the uncompressed model."""
    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    n, new = 4, 4
    _, v_big, t_big = _run(m, tok, LiveConfig(request_budget=1e9), tmp_path / "a.sqlite", n, max_new_tokens=new)
    spent = {rid: v["attention"]["budget"]["spent"] for rid, v in v_big.items()}
    assert all(s > 0 and not v_big[r]["attention"]["budget"]["exhausted"] for r, s in spent.items())
    assert t_big["rows_enforced"] == 0 and t_big["requests_budget_exhausted"] == 0
    # the spent budget is the sum of every metered row's bound: at least the largest one
    assert all(spent[r] >= v_big[r]["attention"]["bound_max"] for r in spent)
    # bound_sum sums every row read: with nothing enforced it is the budget's spend (summed in another order)
    assert all(abs(v_big[r]["attention"]["bound_sum"] - spent[r]) <= 1e-9 * spent[r] for r in spent)
    budget = min(spent.values()) / 2
    _, v, t = _run(m, tok, LiveConfig(request_budget=budget), tmp_path / "b.sqlite", n, max_new_tokens=new)
    for rid, verdict in v.items():
        a = verdict["attention"]
        assert a["budget"]["exhausted"] and a["budget"]["spent"] <= budget and a["budget"]["limit"] == budget, rid
        assert 0 < a["enforced_rows"] < a["rows"] and a["ok"] is True, rid
        assert a["bound_sum"] > a["budget"]["spent"], rid  # the rows served exact add to the sum, not to the spend
    assert t["requests_budget_exhausted"] == n
    mgr = make_manager(m, max_new_tokens=new)
    mgr.warmup()
    prompts = {f"req-{i}": chat_ids(tok, PROMPTS[i % len(PROMPTS)]) for i in range(n)}
    try:
        exact = run_requests(mgr, prompts, max_new_tokens=new)
    finally:
        m._cached_continuous_batching_manager = None
    out, v0, _ = _run(m, tok, LiveConfig(request_budget=1e-12), tmp_path / "c.sqlite", n, max_new_tokens=new)
    assert out == exact and all(x["attention"]["budget"]["spent"] == 0.0 for x in v0.values())


def test_the_meter_runs_on_one_intra_op_thread_and_restores_the_engines_count():
    """The meter's box evaluations ran 2.4x slower split over 2 threads inside a serving run: it
    meters on one thread, and the engine's own thread count is back afterwards, also after an error."""
    from witprobe.serving.read_meter import LiveReadMeter, ReadSpan, one_intra_op_thread

    n0 = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen = []
        meter = LiveReadMeter([0], None, 1, 4, 8, 1, None, 0.0, False, 0, torch.float32)
        meter._meter = lambda *a, **k: seen.append(torch.get_num_threads())
        meter.on_read(0, [ReadSpan("r", 0, 1, 0, 1, torch.zeros(1, dtype=torch.int64).numpy(), 0)],
                      torch.zeros(1, 1, 1, 4), torch.zeros(1, 1, 1, 4), torch.zeros(1, 1, 1, 4), None, 0.5, torch.zeros(1, 1, 1, 4))
        assert seen == [1] and torch.get_num_threads() == 2
        with pytest.raises(RuntimeError), one_intra_op_thread():
            assert torch.get_num_threads() == 1
            raise RuntimeError("inside")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(n0)
