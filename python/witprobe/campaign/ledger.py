"""The discrimination campaign on the ledger simulator: registered arms, adjudicated findings.

Arms (full factorial, 8 runs): write-site invalidation on/off (``simulate --fault
no-reuse-invalidation`` is off), pool ``small`` (the users' need: the warmup fills it, so
admissions evict cached blocks) or ``ample`` (``AMPLE_EXTRA_TOKENS`` more, left free: no
eviction), and concurrency 1 or 8 (worker threads *and* requests in flight). Every arm is one
single-replica simulate run in ``DIR/arms/NAME/`` (manifest, journal, summary, gate) plus
``arm.json``, its registered record: a :class:`~witprobe.campaign.adjudication.Run` whose
readings are total over :data:`FIELDS`. The pool readings (evictions, block reuses, prefix hits)
and the outcome are taken from the journal (:mod:`witprobe.ledger.derive`), never from the
summary. The outcome is the share of reads served from the generation the reader attached, per
mille: ``acc_pm = floor(1000 * (reads - corrupted) / reads)``, with ``corrupted`` = out-of-generation
+ unattributed foreign + unwritten reads.

Comparisons (:func:`comparisons`), declared before any arm runs:

- ``invalidation``: invalidation on vs off (small pool, concurrency 8). The pool readings are
  post-treatment (invalidation changes which prefix lookups hit, hence what is allocated), so
  they are declared mediators of this comparison;
- ``concurrency (naive)``: concurrency 1 vs 8 without invalidation (small pool), nothing
  declared. The calculus must reject it if the block-reuse readings differ;
- ``concurrency via block reuse``: the same arms with :data:`BLOCK_REUSE` declared the mediator;
- ``concurrency without reuse pressure``: concurrency 1 vs 8 without invalidation, ample pool,
  nothing declared;
- ``pool size``: small vs ample pool without invalidation at concurrency 8, reuse declared.

The calculus decides each from the readings. Nothing here expects a verdict.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from witprobe.campaign.adjudication import Comparison, Run, adjudicate
from witprobe.ledger.derive import derive_rank
from witprobe.ledger.acceptance import run_gate
from witprobe.ledger.simulate import SimConfig, load_trace, run_rank, write_manifest
from witprobe.safe_output import atomic_write

FIELDS: tuple[str, ...] = (
    "invalidation", "pool_extra_tokens", "concurrency", "code", "seed", "trace", "accounts", "decode_steps",
    "evictions", "reuses", "prefix_hits",
)
BLOCK_REUSE: tuple[str, ...] = ("evictions", "reuses", "prefix_hits")
AMPLE_EXTRA_TOKENS = 4096
FINDINGS_FILE = "findings.json"
ARM_FILE = "arm.json"


@dataclass(frozen=True)
class ArmSpec:
    name: str
    invalidation: bool
    pool: str  # "small" | "ample"
    concurrency: int


ARMS: tuple[ArmSpec, ...] = tuple(
    ArmSpec(f"inv{int(inv)}-{pool}-c{c}", inv, pool, c)
    for inv in (True, False) for pool in ("small", "ample") for c in (1, 8)
)


@dataclass(frozen=True)
class ArmRecord:
    """One registered arm: its run for the calculus and the journal-derived outcome counts."""

    spec: ArmSpec
    run: Run
    reads: int
    corrupted: int
    gate_passed: bool
    gate_failed: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"arm": asdict(self.spec), "registered": dict(self.run.reads), "acc_pm": self.run.acc_pm,
                "reads": self.reads, "corrupted_reads": self.corrupted, "gate_passed": self.gate_passed,
                "gate_failed": list(self.gate_failed)}


def _digest_int(parts: list[bytes]) -> int:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return int(h.hexdigest()[:12], 16)


def code_tag() -> int:
    """Hash of the source under test (the ledger and campaign packages), as an integer tag."""
    root = Path(__file__).resolve().parents[1]
    files = sorted([*root.glob("ledger/*.py"), *root.glob("campaign/*.py")])
    return _digest_int([f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() for f in files])


def trace_tag(trace: Path) -> int:
    files = sorted(p for p in Path(trace).iterdir() if p.is_file())
    return _digest_int([p.name.encode() + b"\0" + p.read_bytes() for p in files])


def run_arm(spec: ArmSpec, base: SimConfig, out: Path, code: int, trace: int) -> ArmRecord:
    """Serve one arm into ``out`` (a fresh directory), gate it, and register its readings."""
    cfg = replace(base, ranks=1, workers=spec.concurrency, max_active=spec.concurrency,
                  fault="none" if spec.invalidation else "no-reuse-invalidation",
                  pool_extra_tokens=0 if spec.pool == "small" else AMPLE_EXTRA_TOKENS)
    out.mkdir(parents=True)
    meta, _ = load_trace(cfg.trace)
    write_manifest(cfg, out, meta, require_coupling=False)
    run_rank(cfg, out, 0)
    gate = run_gate(out)
    d = derive_rank(out / "journal.rank0.sqlite")
    if d.pool_stats is None:
        raise RuntimeError(f"arm {spec.name}: the journal has no pool_stats record")
    pool = {k: sum(int(f[k]) for f in d.pool_stats.values()) for k in ("evictions", "reuses", "prefix_hits")}
    reads = d.n_read_checks
    corrupted = sum(a.read.n_read_out_of_generation + a.read.n_read_foreign_unattributed + a.read.n_read_unwritten
                    for a in d.accounts.values())
    readings = {"invalidation": int(spec.invalidation), "pool_extra_tokens": cfg.pool_extra_tokens,
                "concurrency": spec.concurrency, "code": code, "seed": cfg.seed, "trace": trace,
                "accounts": cfg.accounts, "decode_steps": -1 if cfg.decode_steps is None else cfg.decode_steps, **pool}
    if reads <= 0:
        raise RuntimeError(f"arm {spec.name}: no reads were checked")
    run = Run(spec.name, readings, (1000 * (reads - corrupted)) // reads, FIELDS)
    rec = ArmRecord(spec, run, reads, corrupted, gate.passed, gate.failed)
    (out / ARM_FILE).write_text(json.dumps(rec.as_dict(), indent=1, sort_keys=True) + "\n")
    return rec


def comparisons(arms: dict[str, ArmRecord]) -> list[tuple[str, str, Comparison]]:
    """The campaign's comparisons (see the module docstring): ``(label, claim, comparison)``."""
    r = {k: v.run for k, v in arms.items()}
    return [
        ("invalidation", "write-site invalidation prevents corrupted reads",
         Comparison(r["inv1-small-c8"], r["inv0-small-c8"], ("invalidation",), BLOCK_REUSE)),
        ("concurrency (naive)", "the corruption depends on concurrency",
         Comparison(r["inv0-small-c1"], r["inv0-small-c8"], ("concurrency",), ())),
        ("concurrency via block reuse", "concurrency raises corruption through block reuse",
         Comparison(r["inv0-small-c1"], r["inv0-small-c8"], ("concurrency",), BLOCK_REUSE)),
        ("concurrency without reuse pressure", "the effect of concurrency with an ample pool (no reuse pressure)",
         Comparison(r["inv0-ample-c1"], r["inv0-ample-c8"], ("concurrency",), ())),
        ("pool size", "a small pool raises corruption through block reuse",
         Comparison(r["inv0-ample-c8"], r["inv0-small-c8"], ("pool_extra_tokens",), BLOCK_REUSE)),
    ]


def run_campaign(out: Path, base: SimConfig) -> dict[str, Any]:
    """Run every arm into ``out/arms/``, adjudicate, write ``out/findings.json``; return it."""
    code, trace = code_tag(), trace_tag(base.trace)
    arms = {s.name: run_arm(s, base, out / "arms" / s.name, code, trace) for s in ARMS}
    labelled = comparisons(arms)
    verdicts = adjudicate(c for _, _, c in labelled)
    findings = []
    for (label, claim, cmp), (_, finding, why) in zip(labelled, verdicts):
        findings.append({
            "comparison": label, "claim": claim, "a": cmp.a.name, "b": cmp.b.name,
            "manipulated": list(cmp.manipulated), "mediators": list(cmp.mediators),
            "verdict": "accepted" if finding is not None else "rejected",
            "effect_pm": finding.effect_pm if finding is not None else None,
            "confounded": [str(f) for f in cmp.confounded()], "reason": why,
        })
    config = base.as_dict()
    root = Path(__file__).resolve().parents[3]
    try:  # a path inside the repository is recorded relative to it (the artifact is machine-independent)
        config["trace"] = Path(base.trace).resolve().relative_to(root).as_posix()
    except ValueError:
        pass
    body = {"schema": "witprobe-ledger-campaign/1", "registered_fields": list(FIELDS), "block_reuse": list(BLOCK_REUSE),
            "command": "python -m witprobe.ledger campaign" + (f" --decode-steps {base.decode_steps}" if base.decode_steps else ""),
            "config": config, "arms": {k: v.as_dict() for k, v in arms.items()}, "findings": findings,
            "tier": "empirical"}
    atomic_write(out / FINDINGS_FILE, json.dumps(body, indent=1) + "\n")
    return body
