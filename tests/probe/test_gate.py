"""The acceptance gate: each failure class caught by name, the stage order enforced, exit codes.

Snapshots come from a real :class:`ProbeRuntime` fed synthetic writes (no model), then either
produced by a faulty runtime (the way the failure happens in practice) or edited.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from witprobe.probe.gate import FAILURE_CLASSES, STAGES, Expectations, check, main
from witprobe.probe.accumulators import Accumulator
from witprobe.probe.band_meter import select_rows
from witprobe.probe.runtime import ProbeConfig, ProbeRuntime

NUM_LAYERS = 12
DECLARED = (2, 10)  # 10 sorts before 2 as a string


def _forward(rt: ProbeRuntime, step: int, paths=("key", "value"), value: float | None = None) -> None:
    """One decoder forward: every layer writes its key and value entries once."""
    g = torch.Generator().manual_seed(step)
    for layer in range(rt.num_layers):
        for p in paths:
            x = torch.randn(1, 3, 1 if step else 5, 64, generator=g)
            if value is not None:
                x[0, 0, 0, :8] = value
            rt.on_write(layer, p, x)


def _runtime(steps: int = 4, **kw) -> ProbeRuntime:
    rt = ProbeRuntime(NUM_LAYERS, ProbeConfig(layers=DECLARED, **kw))
    for s in range(steps):
        _forward(rt, s)
    return rt


def failures(result, stage: str | None = None) -> set[str]:
    return {f.failure for st in result.stages if stage in (None, st.stage) for f in st.findings}


@pytest.fixture(scope="module")
def good() -> dict:
    return _runtime().snapshot()


def test_a_healthy_snapshot_passes(good):
    r = check(good, Expectations(layers=2, paths=("key", "value")))
    assert r.passed and r.first_failure is None, r
    assert [s.status for s in r.stages] == ["pass", "pass", "pass"]
    assert check(good, Expectations(layers=(2, 10))).passed


def test_snapshot_invalid(good):
    bad = copy.deepcopy(good)
    bad["schema"] = "witcert-probe/1"
    assert "snapshot_invalid" in failures(check(bad), "coverage")
    bad = copy.deepcopy(good)
    bad["err"] = "adapter crashed"
    assert "snapshot_invalid" in failures(check(bad), "coverage")
    assert "snapshot_invalid" in failures(check([]), "coverage")


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s["slots"]["DenseKV#0|L2|key"].__setitem__("device_calls", None),
        lambda s: s["slots"]["DenseKV#0|L2|key"].pop("host_calls"),
        lambda s: s["slots"]["DenseKV#0|L10|value"]["counters"].__setitem__("viol_low_int8", None),
        lambda s: s["slots"]["DenseKV#0|L10|value"].__setitem__("counters", {}),
        lambda s: s["slots"]["DenseKV#0|L10|value"]["counters"].pop("viol_high_int8"),
        lambda s: [slot["counters"].pop("viol_high_int8") for slot in s["slots"].values()],
        lambda s: [slot["counters"].pop(k) for slot in s["slots"].values()
                   for k in [c for c in slot["counters"] if c.startswith("viol_")]],
        lambda s: s["coverage"].__setitem__("n_calls", None),
        lambda s: s["coverage"].pop("device_calls_by_layer"),
    ],
    ids=["device_null", "host_missing", "viol_null", "no_self_checks", "viol_high_missing_one_slot",
         "viol_high_missing_every_slot", "only_zero_residual", "n_calls_null", "by_layer_missing"],
)
def test_null_or_missing_counters_fail_closed(good, edit):
    bad = copy.deepcopy(good)
    edit(bad)
    r = check(bad, Expectations(layers=2))
    assert not r.passed and r.first_failure == "coverage"
    assert "counter_missing" in failures(r, "coverage")


def test_soundness_alone_fails_closed_on_an_incomplete_witness_set(good):
    bad = copy.deepcopy(good)
    for slot in bad["slots"].values():
        slot["counters"].pop("viol_low_int8")
    found = check_soundness(bad, Expectations(layers=2))
    assert found and all(x.failure == "witness_violation" and "viol_low_int8" in x.message for x in found)


def test_zero_trigger():
    rt = ProbeRuntime(NUM_LAYERS, ProbeConfig(layers=DECLARED))
    snap = rt.snapshot()  # the coverage record exists even though nothing ran
    assert snap["coverage"]["n_calls"] == 0
    assert failures(check(snap, Expectations(layers=2))) >= {"zero_trigger"}


class StateResettingRuntime(ProbeRuntime):
    """A probe whose per-layer state overwrote itself: a fresh accumulator on every call."""

    def on_write(self, layer_idx, path, x):
        slot = self.slots.get((layer_idx, path))
        if slot is not None:
            slot.acc = Accumulator(self.device)
            slot.block = self.meter.declare(slot.acc)
        super().on_write(layer_idx, path, x)


class LayerCollapsingRuntime(ProbeRuntime):
    """A probe that keys its state by path only: every declared layer lands in the first one."""

    def on_write(self, layer_idx, path, x):
        if self._probe_layer[layer_idx]:
            layer_idx = self.declared_layers[0]
        super().on_write(layer_idx, path, x)


@pytest.mark.parametrize("cls", [StateResettingRuntime, LayerCollapsingRuntime])
def test_state_overwrite_from_a_faulty_runtime(cls):
    rt = cls(NUM_LAYERS, ProbeConfig(layers=DECLARED))
    for s in range(4):
        _forward(rt, s)
    r = check(rt.snapshot(), Expectations(layers=2))
    assert "state_overwrite" in failures(r, "coverage")


def test_state_overwrite_when_two_slots_serialized_to_one_key(good):
    bad = copy.deepcopy(good)
    bad["slots"]["DenseKV#0|L2|key"] = bad["slots"].pop("DenseKV#0|L10|key")  # JSON kept the last writer
    assert "state_overwrite" in failures(check(bad, Expectations(layers=2)), "coverage")


def test_path_never_taken():
    rt = ProbeRuntime(NUM_LAYERS, ProbeConfig(layers=DECLARED, paths=("key", "value", "index")))
    for s in range(3):
        _forward(rt, s)  # the model never writes an "index" path
    r = check(rt.snapshot(), Expectations(layers=2))
    assert "path_never_taken" in failures(r, "coverage")
    good = _runtime().snapshot()
    assert "path_never_taken" in failures(check(good, Expectations(layers=2, paths=("key", "index"))))


def test_layer_coverage_mismatch(good):
    assert "layer_coverage_mismatch" in failures(check(good, Expectations(layers=3)), "coverage")
    assert "layer_coverage_mismatch" in failures(check(good, Expectations(layers=(2, 3))), "coverage")
    bad = copy.deepcopy(good)
    bad["coverage"]["device_calls_by_layer"]["key"][0] = 4  # a meter ran on an undeclared layer
    assert "layer_coverage_mismatch" in failures(check(bad, Expectations(layers=2)), "coverage")


def _replay(rt: ProbeRuntime, times: int) -> None:
    """What a CUDA graph replay does: the captured meter runs on the device, Python does not."""
    g = torch.Generator().manual_seed(99)
    for _ in range(times):
        for slot in rt.slots.values():
            rt.meter(select_rows(torch.randn(1, 3, 1, 64, generator=g), 256), slot.acc, slot.block, slot.device_calls)


def test_liveness_under_replay():
    rt = _runtime(steps=2)
    rt.graph_safe = True
    # graphs on but nothing replayed: the probe is absent from the graph, device == host
    r = check(rt.snapshot(), Expectations(layers=2))
    assert "device_counter_not_exceeding_host" in failures(r, "coverage")
    _replay(rt, 5)
    r = check(rt.snapshot(), Expectations(layers=2))
    assert r.passed, r
    # the same replayed snapshot is wrong for an eager run: device must equal host there
    eager = rt.snapshot()
    eager["coverage"]["graph_safe"] = False
    assert "device_counter_not_exceeding_host" in failures(check(eager, Expectations(layers=2)))
    # --expect-replay on an eager snapshot demands replay-time accumulation
    assert "device_counter_not_exceeding_host" in failures(check(_runtime().snapshot(), Expectations(replay=True)))


def test_device_counter_lagging_host_fails(good):
    bad = copy.deepcopy(good)
    bad["slots"]["DenseKV#0|L10|value"]["device_calls"] -= 1
    for st in bad["slots"]["DenseKV#0|L10|value"]["stats"].values():
        st["calls"] -= 1
    assert failures(check(bad, Expectations(layers=2)), "coverage") == {"device_counter_not_exceeding_host"}


def test_non_finite_from_a_nan_write():
    rt = _runtime(steps=2)
    _forward(rt, 7, value=float("nan"))
    r = check(rt.snapshot(), Expectations(layers=2))
    assert r.first_failure == "magnitude" and "non_finite" in failures(r, "magnitude")


def test_uninitialized_memory_beyond_the_valid_range():
    rt = _runtime(steps=2)
    _forward(rt, 7, value=3e30)  # what an unwritten slot of a pool can hold
    r = check(rt.snapshot(), Expectations(layers=2))
    assert r.first_failure == "magnitude" and "magnitude_out_of_range" in failures(r, "magnitude")
    bad = copy.deepcopy(_runtime().snapshot())
    bad["slots"]["DenseKV#0|L2|key"]["stats"]["rel_int8"]["max"] = 1.5
    assert "magnitude_out_of_range" in failures(check(bad, Expectations(layers=2)), "magnitude")


def test_witness_violation_from_a_broken_meter(monkeypatch):
    import witprobe.probe.band_meter as bm

    monkeypatch.setattr(bm, "VIOLATION_TOL", -9.0)  # a meter whose self-check is wrong flags every row
    rt = ProbeRuntime(NUM_LAYERS, ProbeConfig(layers=DECLARED, meter="torch"))
    for s in range(2):
        _forward(rt, s)
    r = check(rt.snapshot(), Expectations(layers=2))
    assert r.first_failure == "soundness" and failures(r) == {"witness_violation"}


def test_flip_inside_the_certified_region(good):
    bad = copy.deepcopy(good)
    bad["slots"]["DenseKV#0|L2|key"]["counters"]["flip_in_cert0.01"] = 2
    r = check(bad, Expectations(layers=2))
    assert r.first_failure == "soundness" and failures(r) == {"flip_in_certified_region"}


def test_order_is_enforced_earlier_failure_invalidates_later_stages(good):
    bad = copy.deepcopy(good)
    bad["slots"]["DenseKV#0|L2|key"]["counters"]["viol_low_int8"] = 3
    assert check(bad, Expectations(layers=2)).first_failure == "soundness"
    # the same violation behind a coverage failure: reported, but only as invalidated
    r = check(bad, Expectations(layers=5))
    assert r.first_failure == "coverage" and not r.passed
    by_stage = {s.stage: s for s in r.stages}
    assert by_stage["magnitude"].status == "invalidated" and by_stage["magnitude"].invalidated_by == "coverage"
    assert by_stage["soundness"].status == "invalidated"
    assert "witness_violation" in failures(r, "soundness")
    # a magnitude failure invalidates a soundness stage that would pass
    rt = _runtime(steps=2)
    _forward(rt, 7, value=3e30)
    r = check(rt.snapshot(), Expectations(layers=2))
    assert [s.status for s in r.stages] == ["pass", "fail", "invalidated"]
    assert not r.passed


def test_every_failure_class_names_a_stage():
    assert set(FAILURE_CLASSES.values()) == set(STAGES)


def test_cli_exit_codes(tmp_path: Path, good, capsys):
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(good))
    bad_snap = copy.deepcopy(good)
    bad_snap["slots"]["DenseKV#0|L2|key"]["counters"]["viol_high_int8"] = 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bad_snap))
    assert main([str(ok), "--expect-layers", "2"]) == 0
    assert main([str(ok), str(bad), "--expect-layers", "2"]) == 1
    assert main([str(ok), "--expect-layers", "3"]) == 1
    assert main([str(tmp_path / "*.json"), "--expect-layers", "2"]) == 1  # glob expands to both
    assert main([]) == 2
    assert main([str(tmp_path / "none-*.json")]) == 2
    assert main([str(ok), str(tmp_path / "missing.json"), "--expect-layers", "2"]) == 1  # named but absent
    out = capsys.readouterr().out
    assert "witness_violation" in out and "first failure: soundness" in out
    assert main([str(bad), "--json"]) == 1
    rec = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert rec["schema"] == "witprobe-gate/1" and rec["first_failure"] == "soundness"


def test_module_entry_point(tmp_path: Path, good):
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(good))
    run = subprocess.run([sys.executable, "-m", "witprobe.gate", str(p), "--expect-layers", "2"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "PASS" in run.stdout
    run = subprocess.run([sys.executable, "-m", "witprobe.gate"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2


# --- the soundness stage on its own: it must fail closed even when coverage would not run first ---
from witprobe.probe.gate import check_soundness  # noqa: E402


def _soundness(snap) -> set[str]:
    return {f.failure for f in check_soundness(snap, Expectations())}


def test_soundness_stage_alone_passes_a_healthy_snapshot(good):
    assert check_soundness(good, Expectations()) == []


@pytest.mark.parametrize("counters,expect", [
    ({}, "witness_violation"),  # no self-check counter at all
    ({"zero_residual_int8": 0}, "witness_violation"),  # counters, but none of them a witness check
    ({"viol_low_int8": None, "viol_high_int8": 0}, "witness_violation"),  # a null self-check
    ({"viol_low_int8": 0, "viol_high_int8": "0"}, "witness_violation"),  # not an integer
    ({"viol_low_int8": 0, "viol_high_int8": 1}, "witness_violation"),
    ({"viol_low_int8": 0, "flip_in_cert0.01": 1}, "flip_in_certified_region"),
    ({"viol_low_int8": 0, "flip_in_cert0.01": None}, "flip_in_certified_region"),
    ({"viol_low_int8": 0, "viol_new_int3": 1}, "witness_violation"),  # not in the table, named like one
    ({"viol_low_int8": 0, "flip_in_new_region": 1}, "flip_in_certified_region"),
], ids=["none", "no-witness-check", "null", "string", "viol", "flip", "flip-null", "unknown-viol", "unknown-flip"])
def test_soundness_stage_alone_fails_closed(good, counters, expect):
    bad = copy.deepcopy(good)
    bad["slots"]["DenseKV#0|L2|key"]["counters"] = counters
    assert expect in _soundness(bad)
    for f in check_soundness(bad, Expectations()):
        v = counters.get(f.where.rsplit(".", 1)[-1], 0)
        if v is None or isinstance(v, str):
            assert "fail closed" in f.message, f  # a null is reported as missing, never as a count


def test_soundness_stage_reads_every_slot(good):
    bad = copy.deepcopy(good)
    last = sorted(bad["slots"])[-1]
    bad["slots"][last]["counters"]["viol_high_int8"] = 1
    found = check_soundness(bad, Expectations())
    assert [f.where for f in found] == [f"{last}.counters.viol_high_int8"]


def test_the_gate_command_stays_standard_library_only():
    code = "import sys, witprobe.gate, witprobe.probe.gate; assert 'torch' not in sys.modules, 'gate imported torch'"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
