"""The probe runtime: declared subsets, graph-safety rules, snapshots; and liveness on SmolLM2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from witprobe.calculus.registry import UnregisteredMetric
from witprobe.probe.gate import Expectations, check
from witprobe.probe.runtime import PROBE_SCHEMA, ProbeConfig, ProbeError, ProbeRuntime


def _write_all(rt: ProbeRuntime, tokens: int = 1) -> None:
    for layer in range(rt.num_layers):
        for p in rt.config.paths:
            rt.on_write(layer, p, torch.randn(1, 3, tokens, 64))


def test_persistent_state_is_allocated_once_before_any_call():
    """Graph-safety rule 4: nothing persistent is (re)allocated by a call."""
    rt = ProbeRuntime(6, ProbeConfig(layers=(0, 5), bits=(8, 4)))
    ptrs = [rt.exec_table.data_ptr()] + [
        t.data_ptr() for s in rt.slots.values() for t in (s.block.fstats, s.block.istats, s.block.counters)
    ]
    views = [s.device_calls.data_ptr() for s in rt.slots.values()]
    for _ in range(3):
        _write_all(rt, tokens=2)
    assert ptrs == [rt.exec_table.data_ptr()] + [
        t.data_ptr() for s in rt.slots.values() for t in (s.block.fstats, s.block.istats, s.block.counters)
    ]
    assert views == [s.device_calls.data_ptr() for s in rt.slots.values()]
    assert all(s.device_calls._base is rt.exec_table or s.device_calls.data_ptr() >= rt.exec_table.data_ptr()
               for s in rt.slots.values())


def test_layer_guard_runs_before_the_argument_is_touched():
    """A call-site argument must not be evaluated before its guard (paper 7.2, write-side trap)."""
    rt = ProbeRuntime(4, ProbeConfig(layers=(2,)))
    poison = object()  # any tensor operation on it raises
    rt.on_write(0, "key", poison)  # undeclared layer: only the index is looked at
    assert rt.n_skipped_by_layer == 1 and int(rt.exec_table.sum()) == 0
    with pytest.raises(AttributeError):
        rt.on_write(2, "key", poison)  # declared layer: it is metered (so the poison is touched)


def test_unattributable_writes_fail_closed():
    rt = ProbeRuntime(4, ProbeConfig(layers=(1,)))
    with pytest.raises(ProbeError):
        rt.on_write(4, "key", torch.zeros(1, 1, 1, 64))
    with pytest.raises(ProbeError):
        rt.on_write(1, "index", torch.zeros(1, 1, 1, 64))
    with pytest.raises(ProbeError):
        rt.on_write(0, "index", torch.zeros(1, 1, 1, 64))
    with pytest.raises(ProbeError):
        ProbeRuntime(4, ProbeConfig(layers=(1, 4)))
    for bad in (dict(layers=(1, 1)), dict(paths=("a|b",)), dict(row_cap=0), dict(sample_every=0), dict(meter="cuda")):
        with pytest.raises(ProbeError):
            ProbeConfig(**bad)


def test_call_rate_sampling_is_deterministic():
    rt = ProbeRuntime(3, ProbeConfig(layers=(1,), sample_every=3))
    for _ in range(7):
        _write_all(rt)
    snap = rt.snapshot()
    s = snap["slots"]["DenseKV#0|L1|key"]
    assert (s["host_seen"], s["host_calls"], s["device_calls"]) == (7, 3, 3)  # calls 1, 4, 7
    assert snap["coverage"]["n_skipped_by_sampling"] == 2 * 4
    assert check(snap, Expectations(layers=1)).passed


def test_snapshot_schema_and_json_round_trip(tmp_path):
    rt = ProbeRuntime(3, ProbeConfig(layers=None, paths=("key",)))
    _write_all(rt, tokens=4)
    p = rt.write_snapshot(tmp_path / "probe.json", meta={"run": "unit"})
    snap = json.loads(p.read_text())
    assert snap["schema"] == PROBE_SCHEMA and snap["slot_schema"] == "witprobe-probe-slot/1"
    assert snap["meta"]["run"] == "unit" and snap["meta"]["meter"] in ("torch", "triton")
    cov = snap["coverage"]
    assert cov["layer_policy"] == "all" and cov["declared_layers"] == [0, 1, 2] and cov["key_dims"] == [
        "owner", "layer", "path"]
    assert sorted(snap["slots"]) == [f"DenseKV#0|L{i}|key" for i in range(3)]
    slot = snap["slots"]["DenseKV#0|L1|key"]
    assert slot["stats"]["x_norm"]["n"] == 12 and slot["stats"]["wit_int8"]["metric"] == "shadow_entry:band_witness@write"
    assert check(snap, Expectations(layers=3)).passed


def test_unregistered_metric_fails_closed(monkeypatch):
    import witprobe.probe.runtime as runtime

    monkeypatch.setattr(runtime, "stat_metric", lambda key: "shadow_entry:made_up@write")
    with pytest.raises(UnregisteredMetric):
        ProbeRuntime(2, ProbeConfig())


def test_core_imports_and_runs_without_triton():
    code = (
        "import sys; sys.modules['triton'] = None\n"
        "import torch, witprobe.kernels, witprobe.gate\n"
        "from witprobe.probe.runtime import ProbeRuntime, ProbeConfig\n"
        "rt = ProbeRuntime(2, ProbeConfig(layers=(1,)))\n"
        "rt.on_write(1, 'key', torch.randn(1, 3, 2, 64)); rt.on_write(1, 'value', torch.randn(1, 3, 2, 64))\n"
        "assert rt.meter_impl == 'torch' and rt.snapshot()['coverage']['n_calls'] == 2\n"
        "try:\n"
        "    ProbeRuntime(2, ProbeConfig(meter='triton'))\n"
        "except ImportError as e:\n"
        "    assert 'triton' in str(e); print('refused')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "refused" in run.stdout


# --- liveness on the real model --------------------------------------------------------------------
DECODE_STEPS = 5


def _decode(model, tok, cache, steps: int) -> None:
    ids = tok("The always-on probe counts", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model(input_ids=ids, cache=cache)
        for _ in range(steps):
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            out = model(input_ids=nxt, cache=cache)


@pytest.mark.slow
@pytest.mark.parametrize("meter", ["torch", "triton"])
def test_liveness_device_counter_equals_expected_calls_exactly(smollm2, meter):
    """After a prefill and N decode steps each declared layer's device counter is exactly N + 1
    (one write per forward) for both paths, and every other layer's is 0."""
    if meter == "triton":
        pytest.importorskip("triton")
    from witprobe.probe.probed_cache import ProbedCache

    model, tok = smollm2.model, smollm2.tokenizer
    n_layers = model.config.num_hidden_layers
    declared = (2, 11)
    rt = ProbeRuntime(n_layers, ProbeConfig(layers=declared, meter=meter))
    _decode(model, tok, ProbedCache(rt), DECODE_STEPS)
    table = rt.exec_table.tolist()
    for layer in range(n_layers):
        for j, _ in enumerate(rt.config.paths):
            assert table[layer][j] == (DECODE_STEPS + 1 if layer in declared else 0), (layer, table[layer])
    snap = rt.snapshot()
    for s in snap["slots"].values():
        assert s["host_calls"] == s["device_calls"] == DECODE_STEPS + 1
        assert s["stats"]["x_norm"]["calls"] == DECODE_STEPS + 1
    assert snap["coverage"]["n_skipped_by_layer"] == (n_layers - 2) * 2 * (DECODE_STEPS + 1)
    r = check(snap, Expectations(layers=2, paths=("key", "value")))
    assert r.passed, r
    assert not check(snap, Expectations(layers=3)).passed


@pytest.mark.slow
def test_probe_through_the_witness_cache_and_observer(smollm2):
    """The certify path (compressed memory, read meters) carries the probe too, unchanged otherwise."""
    from witprobe.memory.codecs import make_codec
    from witprobe.probe.attention import ATTN_IMPLEMENTATION
    from witprobe.probe.observer import Observer
    from witprobe.probe.witness_cache import WitnessCache

    model, tok = smollm2.model, smollm2.tokenizer
    n_layers = model.config.num_hidden_layers
    prev = model.config._attn_implementation
    model.set_attn_implementation(ATTN_IMPLEMENTATION)
    try:
        rt = ProbeRuntime(n_layers, ProbeConfig(layers=(0,), owner="WitnessKV#0"))
        obs = Observer(n_layers, probe=rt)
        codec = make_codec("int8", 4)
        cache = obs.attach(WitnessCache.for_dense_kv(n_layers, codec, codec, 4, obs))
        with obs.active():
            _decode(model, tok, cache, 2)
    finally:
        model.set_attn_implementation(prev)
    snap = obs.probe_snapshot()
    assert set(snap["slots"]) == {"WitnessKV#0|L0|key", "WitnessKV#0|L0|value"}
    assert all(s["device_calls"] == 3 for s in snap["slots"].values())
    assert check(snap, Expectations(layers=1)).passed
    legacy = obs.snapshot()  # the certify pipeline's record is unchanged
    assert legacy["host_write_calls"] == [3] * n_layers
    assert {"write", "read", "host_write_calls", "host_read_calls"} <= set(legacy)
    assert "probe" not in legacy  # the probe's record is separate (probe_snapshot)
