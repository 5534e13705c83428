"""The acceptance gate for probe snapshots: coverage, then magnitude sanity, then soundness.

``python -m witprobe.gate SNAPSHOT... --expect-layers N`` (:mod:`witprobe.gate`, the command) reads ``witprobe-probe/1`` snapshots
(:mod:`witprobe.probe.runtime`) and checks three stages in a fixed order (paper section 6). A
failure at one stage *invalidates* every stage after it: those stages are still evaluated and
reported, marked ``invalidated``, and can never make the snapshot pass. Each check guards one
named failure class, a way the probe can produce a clean exit and a wrong number:

coverage
    ``snapshot_invalid``        not a ``witprobe-probe/1`` record, an ``err`` set, or no coverage/slots;
    ``counter_missing``         a required counter is null or missing (fail closed, never a pass):
                                call counts, statistic counts, and the self-check counters;
    ``zero_trigger``            the probe never metered a call;
    ``state_overwrite``         per-layer state overwrote itself: a slot's key disagrees with its
                                ``(owner, layer, path)``, slot call counts do not add up to the
                                runtime's own count, a statistic was folded fewer times than the
                                meter executed, or layers of one path saw different call counts;
    ``path_never_taken``        a probe attached to a write path that was never taken;
    ``layer_coverage_mismatch`` observed layers differ from ``--expect-layers`` or the declared set,
                                or a layer outside the declared set was metered;
    ``device_counter_not_exceeding_host``  liveness: under graph replay the device execution
                                counter must exceed the host call count (a host count freezes at
                                capture; a probe absent from the graph leaves the device count
                                equal); without graphs the two must be equal;
magnitude
    ``non_finite``              NaN or infinity in a statistic;
    ``magnitude_out_of_range``  readings of uninitialized memory beyond a valid range: a magnitude
                                above the limit (1e6), a norm below 0, a bounded reading outside
                                [0, 1], a negative count;
soundness (the counters and their classes are the table of :mod:`witprobe.self_checks`)
    ``witness_violation``       a ``viol_*`` self-check counter is nonzero (or absent: fail closed);
    ``flip_in_certified_region`` a ``flip_in_cert*`` counter is nonzero.

Exit code: 0 every snapshot passes, 1 any fails, 2 no input. Standard library only (with
:mod:`witprobe.self_checks`, itself standard library only).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from witprobe.self_checks import failure_class, probe_witness_gaps

PROBE_SCHEMA = "witprobe-probe/1"
GATE_SCHEMA = "witprobe-gate/1"
STAGES = ("coverage", "magnitude", "soundness")
MAGNITUDE_LIMIT = 1e6
BOUNDED_TOL = 1e-6

FAILURE_CLASSES: dict[str, str] = {
    "snapshot_invalid": "coverage",
    "counter_missing": "coverage",
    "zero_trigger": "coverage",
    "state_overwrite": "coverage",
    "path_never_taken": "coverage",
    "layer_coverage_mismatch": "coverage",
    "device_counter_not_exceeding_host": "coverage",
    "non_finite": "magnitude",
    "magnitude_out_of_range": "magnitude",
    "witness_violation": "soundness",
    "flip_in_certified_region": "soundness",
}

# Statistic key prefixes whose values are magnitudes (norms); readings bounded in [0, 1].
MAGNITUDE_PREFIXES = ("x_norm", "wit_", "true_", "score_abs", "margin", "a_t")
NONNEGATIVE_PREFIXES = ("x_norm", "wit_", "true_", "rel_", "tight_")
BOUNDED_PREFIXES = ("rel_", "top1_norm", "entropy_n", "eff_frac")


@dataclass
class Finding:
    """One failed check: its failure class, where, and what was seen."""

    failure: str
    where: str
    message: str


@dataclass
class StageResult:
    """``status`` is ``pass``, ``fail`` or ``invalidated`` (an earlier stage failed)."""

    stage: str
    status: str
    findings: list[Finding] = field(default_factory=list)
    invalidated_by: str | None = None


@dataclass
class GateResult:
    source: str
    passed: bool
    first_failure: str | None
    stages: list[StageResult]

    def to_json(self) -> dict[str, Any]:
        return {"schema": GATE_SCHEMA, **asdict(self)}


@dataclass(frozen=True)
class Expectations:
    """What the caller declares: layer count or set, paths, and whether graphs replayed."""

    layers: int | tuple[int, ...] | None = None
    paths: tuple[str, ...] = ()
    replay: bool = False
    magnitude_limit: float = MAGNITUDE_LIMIT


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_call_count(v: Any) -> bool:
    """A call or fold count: an integer >= 0 (a negative count would pass every sum below)."""
    return _is_count(v) and v >= 0


def _stats(s: dict[str, Any]) -> dict[str, Any]:
    """A slot's statistics (the coverage stage reports a slot whose ``stats`` is not an object)."""
    st = s.get("stats")
    return st if isinstance(st, dict) else {}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _Findings:
    def __init__(self) -> None:
        self.items: list[Finding] = []

    def add(self, failure: str, where: str, message: str) -> None:
        if failure not in FAILURE_CLASSES:
            raise KeyError(f"unknown failure class {failure!r}")
        self.items.append(Finding(failure, where, message))


def _slot_objects(snap: Any) -> Iterable[tuple[str, dict[str, Any]]]:
    """The slots of a snapshot that are objects (the coverage stage reports the others)."""
    if isinstance(snap, dict):
        yield from ((k, s) for k, s in _slots(snap).items() if isinstance(s, dict))


def _witness_gaps(counters: Any) -> list[str]:
    """The witness self-checks a slot's counters lack (:func:`witprobe.self_checks.probe_witness_gaps`)."""
    return probe_witness_gaps(counters) if isinstance(counters, dict) else ["viol_*"]


def _slots(snap: dict[str, Any]) -> dict[str, dict[str, Any]]:
    slots = snap.get("slots")
    return slots if isinstance(slots, dict) else {}


# --- coverage ------------------------------------------------------------------------------------
def check_coverage(snap: Any, exp: Expectations) -> list[Finding]:
    f = _Findings()
    if not isinstance(snap, dict):
        f.add("snapshot_invalid", "snapshot", f"not a JSON object ({type(snap).__name__})")
        return f.items
    if snap.get("schema") != PROBE_SCHEMA:
        f.add("snapshot_invalid", "schema", f"schema {snap.get('schema')!r}, expected {PROBE_SCHEMA!r}")
    if snap.get("err") is not None:
        f.add("snapshot_invalid", "err", f"the probe reported an error: {snap.get('err')!r}")
    cov = snap.get("coverage")
    if not isinstance(cov, dict):
        f.add("snapshot_invalid", "coverage", "the coverage record is missing")
    if not isinstance(snap.get("slots"), dict):
        f.add("snapshot_invalid", "slots", "the slots record is missing")
    if f.items:
        return f.items
    slots = _slots(snap)

    # counters that coverage reads: null or missing fails closed
    for name in ("n_calls", "declared_layers", "graph_safe"):
        if cov.get(name) is None:
            f.add("counter_missing", f"coverage.{name}", "null or missing")
    if cov.get("n_calls") is not None and not _is_call_count(cov["n_calls"]):
        f.add("counter_missing", "coverage.n_calls", f"not an integer count >= 0: {cov['n_calls']!r}")
    if cov.get("declared_layers") is not None and not (isinstance(cov["declared_layers"], list)
                                                        and all(_is_call_count(x) for x in cov["declared_layers"])):
        f.add("counter_missing", "coverage.declared_layers", "not a list of layer indices")
    for key, s in slots.items():
        if not isinstance(s, dict):
            f.add("counter_missing", key, "slot is not an object")
            continue
        for name in ("host_calls", "device_calls"):
            if not _is_call_count(s.get(name)):
                f.add("counter_missing", f"{key}.{name}", f"null, missing or not an integer >= 0: {s.get(name)!r}")
        if not (isinstance(s.get("owner"), str) and isinstance(s.get("path"), str)
                and (s.get("layer") is None or _is_count(s.get("layer")))):
            f.add("counter_missing", key, "slot owner and path are not strings, or its layer is not an index: "
                  f"{s.get('owner')!r:.30} {s.get('path')!r:.30} {s.get('layer')!r:.30}")
        if not isinstance(s.get("stats"), dict) or not s["stats"]:
            f.add("counter_missing", f"{key}.stats", f"not a nonempty object of statistics: {s.get('stats')!r:.40}")
        for sk, st in _stats(s).items():
            if not isinstance(st, dict) or not _is_call_count(st.get("calls")) or not _is_call_count(st.get("n")):
                f.add("counter_missing", f"{key}.stats.{sk}", "calls or n is null, missing or not an integer >= 0")
        counters = s.get("counters")
        gaps = _witness_gaps(counters)
        if gaps:
            f.add("counter_missing", f"{key}.counters", f"missing self-check counters: {', '.join(gaps)}")
        else:
            for ck, c in counters.items():
                if not _is_count(c):
                    f.add("counter_missing", f"{key}.counters.{ck}", f"null or not an integer: {c!r}")
    by_layer = cov.get("device_calls_by_layer")
    if by_layer is None:
        f.add("counter_missing", "coverage.device_calls_by_layer", "null or missing")
    elif not isinstance(by_layer, dict) or not all(
        isinstance(v, list) and all(_is_call_count(c) for c in v) for v in by_layer.values()
    ):
        f.add("counter_missing", "coverage.device_calls_by_layer", "not a map of integer lists")
    if f.items:
        return f.items  # every later coverage check would read a missing counter

    host_total = sum(s["host_calls"] for s in slots.values())
    if cov["n_calls"] == 0 or host_total == 0:
        f.add("zero_trigger", "coverage.n_calls", f"the probe metered no call (n_calls={cov['n_calls']}, "
              f"slot calls={host_total})")
        return f.items

    # state_overwrite
    for key, s in slots.items():
        ident = f"{s.get('owner')}|L{s.get('layer')}|{s.get('path')}"
        if not _is_count(s.get("layer")):
            f.add("state_overwrite", key, f"slot layer {s.get('layer')!r} is not a layer index")
        elif key != ident:
            f.add("state_overwrite", key, f"slot key does not match its identity {ident!r}")
        for sk, st in _stats(s).items():
            if st["calls"] != s["device_calls"]:
                f.add("state_overwrite", f"{key}.stats.{sk}", f"folded {st['calls']} times but the meter executed "
                      f"{s['device_calls']} times (accumulator state replaced)")
    if host_total != cov["n_calls"]:
        f.add("state_overwrite", "coverage.n_calls", f"slots account for {host_total} metered calls, the runtime "
              f"counted {cov['n_calls']} (a slot's state was overwritten or lost)")
    per_path: dict[tuple[Any, Any], dict[Any, int]] = {}
    for s in slots.values():
        per_path.setdefault((s.get("owner"), s.get("path")), {})[s.get("layer")] = s["host_calls"]
    for (owner, path), calls in sorted(per_path.items(), key=str):
        if len(set(calls.values())) > 1:
            f.add("state_overwrite", f"{owner}|{path}", f"layers saw different call counts {calls} (every layer "
                  "is written once per forward; per-layer state is shared or overwritten)")

    # path_never_taken
    for key, s in slots.items():
        if s["host_calls"] == 0:
            f.add("path_never_taken", key, "the probe is attached but this write path was never taken")
    taken = {s.get("path") for s in slots.values() if s["host_calls"] > 0}
    declared_paths = cov.get("paths_declared") or []
    if not isinstance(declared_paths, list) or not all(isinstance(p, str) for p in declared_paths):
        f.add("path_never_taken", "coverage.paths_declared", f"not a list of path names: {str(declared_paths)[:80]}")
        declared_paths = []
    for p in declared_paths + list(exp.paths):
        if p not in taken:
            f.add("path_never_taken", f"path {p}", "declared path with no metered call")

    # layer_coverage_mismatch
    observed = sorted({s.get("layer") for s in slots.values() if s["host_calls"] > 0 and _is_count(s.get("layer"))})
    declared = cov["declared_layers"]
    if isinstance(exp.layers, int):
        if len(observed) != exp.layers:
            f.add("layer_coverage_mismatch", "layers", f"observed {len(observed)} layers {observed}, expected {exp.layers}")
    elif exp.layers is not None:
        if sorted(exp.layers) != observed:
            f.add("layer_coverage_mismatch", "layers", f"observed layers {observed}, expected {sorted(exp.layers)}")
    if sorted(declared) != observed:
        f.add("layer_coverage_mismatch", "layers", f"observed layers {observed} differ from the declared {sorted(declared)}")
    for path, counts in by_layer.items():
        stray = [i for i, c in enumerate(counts) if c and i not in declared]
        if stray:
            f.add("layer_coverage_mismatch", f"path {path}", f"layers {stray} are outside the declared set but were metered")

    # liveness: device execution counter vs host call count
    replay = bool(cov["graph_safe"]) or exp.replay
    dev_total = sum(s["device_calls"] for s in slots.values())
    for key, s in slots.items():
        if s["device_calls"] < s["host_calls"]:
            f.add("device_counter_not_exceeding_host", key, f"device executed {s['device_calls']} < host calls "
                  f"{s['host_calls']} (the meter did not run)")
        elif not replay and s["device_calls"] != s["host_calls"]:
            f.add("device_counter_not_exceeding_host", key, f"without graphs device {s['device_calls']} must equal "
                  f"host {s['host_calls']}")
    if replay and dev_total <= host_total:
        f.add("device_counter_not_exceeding_host", "coverage", f"graph replay expected but device executions "
              f"{dev_total} <= host calls {host_total}: no replay-time accumulation (probe absent from the graph)")
    return f.items


# --- magnitude -----------------------------------------------------------------------------------
def _stat_values(st: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    for name in ("sum", "mean", "min", "max"):
        if name in st:
            yield name, st[name]


def check_magnitude(snap: Any, exp: Expectations) -> list[Finding]:
    f = _Findings()
    for key, s in _slot_objects(snap):
        for sk, st in _stats(s).items():
            if not isinstance(st, dict):
                continue
            where = f"{key}.stats.{sk}"
            for name, v in _stat_values(st):  # a statistic folded 0 times holds null, never NaN
                if not (_is_number(v) and math.isfinite(v)) and (v is not None or st.get("n")):
                    f.add("non_finite", f"{where}.{name}", f"{v!r}")
            if not st.get("n"):
                continue
            vals = [(n, v) for n, v in _stat_values(st) if _is_number(v) and math.isfinite(v)]
            if sk.startswith(MAGNITUDE_PREFIXES):
                for name, v in vals:
                    if name != "sum" and abs(v) > exp.magnitude_limit:
                        f.add("magnitude_out_of_range", f"{where}.{name}", f"|{v:.6g}| > {exp.magnitude_limit:g} "
                              "(uninitialized memory beyond the valid range?)")
            if sk.startswith(NONNEGATIVE_PREFIXES):
                for name, v in vals:
                    if v < 0:
                        f.add("magnitude_out_of_range", f"{where}.{name}", f"{v:.6g} < 0 for a norm or ratio")
            if sk.startswith(BOUNDED_PREFIXES):
                for name, v in vals:
                    if name != "sum" and not -BOUNDED_TOL <= v <= 1 + BOUNDED_TOL:
                        f.add("magnitude_out_of_range", f"{where}.{name}", f"{v:.6g} outside [0, 1]")
        counters = s.get("counters")
        for ck, c in (counters.items() if isinstance(counters, dict) else ()):
            if _is_count(c) and c < 0:
                f.add("magnitude_out_of_range", f"{key}.counters.{ck}", f"negative count {c}")
    return f.items


# --- soundness -----------------------------------------------------------------------------------
def check_soundness(snap: Any, exp: Expectations) -> list[Finding]:
    f = _Findings()
    for key, s in _slot_objects(snap):
        counters = s.get("counters")
        gaps = _witness_gaps(counters)
        if gaps:
            f.add("witness_violation", key, f"missing self-check counters {', '.join(gaps)} (fail closed)")
        if not isinstance(counters, dict):
            continue
        for ck, c in sorted(counters.items()):
            failure = failure_class(ck)
            if failure is None:
                continue
            if not _is_count(c):
                f.add(failure, f"{key}.counters.{ck}", f"null or not an integer ({c!r}): fail closed")
            elif c != 0:
                f.add(failure, f"{key}.counters.{ck}", f"{c} (must be 0)")
    return f.items


CHECKS = {"coverage": check_coverage, "magnitude": check_magnitude, "soundness": check_soundness}


def check(snap: Any, exp: Expectations | None = None, source: str = "<snapshot>") -> GateResult:
    """Run the three stages in order; a failed stage invalidates every later one."""
    exp = exp or Expectations()
    stages: list[StageResult] = []
    first: str | None = None
    for stage in STAGES:
        findings = CHECKS[stage](snap, exp)
        if first is not None:
            stages.append(StageResult(stage, "invalidated", findings, invalidated_by=first))
            continue
        if findings:
            first = stage
            stages.append(StageResult(stage, "fail", findings))
        else:
            stages.append(StageResult(stage, "pass"))
    return GateResult(source, first is None, first, stages)


def check_file(path: Path, exp: Expectations) -> GateResult:
    """Gate one snapshot file; :class:`witprobe.cliutil.InputError` if it is not a JSON object."""
    from witprobe.cliutil import read_json_object

    return check(read_json_object(Path(path), allow_nonfinite=True), exp, str(path))


def format_result(r: GateResult) -> str:
    lines = [f"{r.source}: {'PASS' if r.passed else 'FAIL'}"
             + ("" if r.passed else f" (first failure: {r.first_failure})")]
    for st in r.stages:
        if st.status == "invalidated":
            own = "would fail" if st.findings else "would pass"
            lines.append(f"  {st.stage:<10} invalidated by {st.invalidated_by} ({own}; not trusted)")
        else:
            lines.append(f"  {st.stage:<10} {st.status}")
        for fd in st.findings[:20]:
            lines.append(f"    {fd.failure}: {fd.where}: {fd.message}")
        if len(st.findings) > 20:
            lines.append(f"    ... {len(st.findings) - 20} more")
    return "\n".join(lines)


def _parse_layers(text: str | None) -> int | tuple[int, ...] | None:
    if text is None:
        return None
    if "," in text or text.startswith("["):
        return tuple(int(t) for t in text.strip("[]").split(",") if t.strip())
    return int(text)


def _parser() -> argparse.ArgumentParser:
    from witprobe.cliutil import OneLineParser, add_version

    ap = OneLineParser(prog="python -m witprobe.gate", description="Acceptance gate for probe snapshots "
                                 "(coverage -> magnitude -> soundness). Exit 0 pass, 1 fail, 2 no input.")
    add_version(ap)
    ap.add_argument("snapshots", nargs="*", help="snapshot JSON files (globs are expanded)")
    ap.add_argument("--expect-layers", help="number of observed layers N, or a list 3,17")
    ap.add_argument("--expect-paths", default="", help="comma-separated write paths that must be taken")
    ap.add_argument("--expect-replay", action="store_true",
                    help="require replay-time accumulation (device executions > host calls) even if the "
                    "snapshot does not say graph_safe")
    ap.add_argument("--magnitude-limit", type=float, default=MAGNITUDE_LIMIT,
                    help="largest magnitude a norm statistic may reach, a finite number > 0 (default: %(default)g)")
    ap.add_argument("--json", action="store_true", help="print one JSON record per snapshot")
    return ap


def main(argv: list[str] | None = None) -> int:
    from witprobe.cliutil import run_handler

    return run_handler(_run, _parser().parse_args(argv), "witprobe.gate")


def _run(args: argparse.Namespace) -> int:
    paths: list[Path] = []
    missing: list[str] = []
    for pattern in args.snapshots:
        hits = sorted(glob.glob(pattern))
        if hits:
            paths += [Path(h) for h in hits]
        else:
            missing.append(pattern)
    if not paths:
        print("witprobe.gate: no snapshot to check" + (f" (not found: {', '.join(missing)})" if missing else ""),
              file=sys.stderr)
        return 2
    if not (math.isfinite(args.magnitude_limit) and args.magnitude_limit > 0):
        # NaN would make every `abs(v) > limit` false: the magnitude stage would pass everything
        print(f"witprobe.gate: --magnitude-limit must be a finite number > 0, got {args.magnitude_limit}",
              file=sys.stderr)
        return 2
    try:
        exp = Expectations(
            layers=_parse_layers(args.expect_layers),
            paths=tuple(p for p in args.expect_paths.split(",") if p),
            replay=args.expect_replay,
            magnitude_limit=args.magnitude_limit,
        )
    except ValueError as e:
        print(f"witprobe.gate: bad --expect-layers: {e}", file=sys.stderr)
        return 2
    results = [check_file(p, exp) for p in paths]
    for m in missing:  # named explicitly but absent: fail closed, never a silent skip
        results.append(GateResult(m, False, "coverage", [
            StageResult("coverage", "fail", [Finding("snapshot_invalid", m, "file not found")]),
            StageResult("magnitude", "invalidated", invalidated_by="coverage"),
            StageResult("soundness", "invalidated", invalidated_by="coverage"),
        ]))
    for r in results:
        print(json.dumps(r.to_json(), sort_keys=True) if args.json else format_result(r))
    ok = all(r.passed for r in results)
    if not args.json:
        print(f"gate: {'PASS' if ok else 'FAIL'} ({sum(r.passed for r in results)}/{len(results)} snapshots pass)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
