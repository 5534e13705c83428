"""Fuzz every file reader through its command line: mutate a valid input, run the command in-process.

Targets (each a valid input made here in seconds, no model loaded, no kernel run):

- ``certificate``: ``certificate.json`` of a run directory (``certify show DIR``);
- ``run``: ``run.json`` of that directory, the certificate's ``run_json_sha256`` updated to match
  (``certify report DIR --out FILE``: the mutated run is re-derived);
- ``snapshot``: a probe snapshot (``python -m witprobe.gate FILE``);
- ``journal``: one record body of a closed journal, the chain re-hashed after it (``ledger verify``);
- ``prompts``: a ``.jsonl`` prompts file (:func:`witprobe.models.prompts.read_prompts`).

Mutations (:func:`mutate`): structural ones on the parsed JSON (delete a key, replace a value by
another type, NaN, Infinity, a 5,000-digit or 300-digit integer, deep nesting, a list or string
body) and byte-level ones (truncation, random bytes inserted or overwritten, a non-UTF-8 byte).

Every case must end with exit 0, 1 or 2; never a traceback; a refusal (2) is one stderr line;
and a refusal writes nothing. ``python bench/fuzz_readers.py --cases 3600`` prints the counts;
``tests/test_fuzz_readers.py`` runs a few dozen of the same cases under Hypothesis.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sqlite3
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
ARTIFACT_RUN = ROOT / "artifacts" / "coverage" / "smollm2-int8" / "run.json"
TARGETS = ("certificate", "run", "snapshot", "journal", "prompts")

_SPECIALS: list[tuple[str, str]] = [
    ("null", "null"), ("true", "true"), ("string", '"x\\u001b[31m"'), ("list", "[]"), ("object", "{}"),
    ("negative", "-1"), ("zero", "0"), ("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"),
    ("1e999", "1e999"), ("int300", "9" * 300), ("int5000", "7" * 5000), ("deep", "[" * 3000 + "]" * 3000),
    ("deep60", "[" * 60 + "1" + "]" * 60), ("float", "0.5"), ("big float", "1e308"),
]


def _paths(v: Any, where: tuple = ()) -> list[tuple]:
    out = [where]
    if isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, where + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v[:4]):  # the first few items of a list: enough, and fast
            out += _paths(x, where + (i,))
    return out


_MARK = "\x00MARK\x00"


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of the JSON document ``data``: ``(label, mutated bytes)``."""
    kind = rng.random()
    if kind < 0.2:  # byte level
        op = rng.choice(["truncate", "insert", "overwrite", "non-utf8", "empty"])
        if op == "empty":
            return op, b""
        i = rng.randrange(len(data))
        if op == "truncate":
            return op, data[:i]
        if op == "non-utf8":
            return op, data[:i] + b"\xff\xfe" + data[i:]
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        return op, data[:i] + junk + (data[i:] if op == "insert" else data[i + len(junk):])
    doc = json.loads(data)
    path = rng.choice(_paths(doc))
    if not path:
        label, text = rng.choice(_SPECIALS)
        return f"root={label}", text.encode()
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    if isinstance(parent, dict) and rng.random() < 0.3:
        del parent[key]
        return f"delete {'.'.join(map(str, path))}", json.dumps(doc).encode()
    label, text = rng.choice(_SPECIALS)
    parent[key] = _MARK
    return f"{'.'.join(map(str, path))}={label}", json.dumps(doc).replace(json.dumps(_MARK), text).encode()


def special_cases(data: bytes) -> list[tuple[str, bytes]]:
    """Every special value once, at the deepest field of the document's first branch (deterministic)."""
    doc = json.loads(data)
    path = max(_paths(doc), key=len)
    out = []
    for label, text in _SPECIALS:
        d = json.loads(data)
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        parent[path[-1]] = _MARK
        out.append((f"{'.'.join(map(str, path))}={label}", json.dumps(d).replace(json.dumps(_MARK), text).encode()))
    return out


def _quiet(fn: Callable[[], int]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = fn()
        except SystemExit as e:  # argparse
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


class Fixtures:
    """Valid inputs of every target, made once under ``work``."""

    def __init__(self, work: Path) -> None:
        from witprobe.certify.pipeline import produce

        self.work = work
        self.run_dir = work / "valid-run"
        produce(json.loads(ARTIFACT_RUN.read_text(encoding="utf-8")), "off", self.run_dir, coq_mode="off")
        self.cert = (self.run_dir / "certificate.json").read_bytes()
        self.run = (self.run_dir / "run.json").read_bytes()
        self.snapshot = json.dumps(_snapshot()).encode()
        self.journal = work / "valid.sqlite"
        _write_journal(self.journal)
        self.journal_body = _bodies(self.journal)[2]
        self.prompts = b'{"messages": [{"role": "user", "content": "hi"}]}'

    def valid(self, target: str) -> bytes:
        return {"certificate": self.cert, "run": self.run, "snapshot": self.snapshot,
                "journal": self.journal_body.encode(), "prompts": self.prompts}[target]


def _snapshot() -> dict[str, Any]:
    import torch

    from witprobe.probe.runtime import ProbeConfig, ProbeRuntime

    rt = ProbeRuntime(12, ProbeConfig(layers=(2, 10)))
    for step in range(2):  # two decoder forwards, as tests/probe/test_gate.py makes them
        g = torch.Generator().manual_seed(step)
        for layer in range(rt.num_layers):
            for path in ("key", "value"):
                rt.on_write(layer, path, torch.randn(1, 3, 1 if step else 5, 64, generator=g))
    return rt.snapshot()


def _write_journal(p: Path) -> None:
    from witprobe.ledger.journal import Journal

    j = Journal(p, header={"delta_req": "1/100"})
    for k in range(3):
        j.append("write", {"uid": 1, "counter": k, "delta": f"1/{100 * (k + 1) * (k + 2)}"})
    j.close({"n": 3})


def _bodies(p: Path) -> dict[int, str]:
    db = sqlite3.connect(p)
    try:
        return dict(db.execute("SELECT seq, body FROM journal").fetchall())
    finally:
        db.close()


def _rechain(p: Path, seq: int, body: str) -> None:
    from witprobe.ledger.journal import GENESIS, record_hash

    db = sqlite3.connect(p)
    db.execute("DROP TRIGGER journal_no_update")
    prev = GENESIS
    for s, kind, b in db.execute("SELECT seq, kind, body FROM journal ORDER BY seq").fetchall():
        b = body if s == seq else b
        h = record_hash(s, kind, b, prev)
        db.execute("UPDATE journal SET body = ?, prev = ?, hash = ? WHERE seq = ?", (b, prev, h, s))
        prev = h
    db.commit()
    db.close()


def run_case(fx: Fixtures, target: str, mutated: bytes, case_dir: Path) -> tuple[int, str, str, list[str]]:
    """Run ``target``'s command on ``mutated`` in ``case_dir``: ``(exit, stdout, stderr, problems)``
    where ``problems`` lists every broken promise (a traceback, an exit outside 0..2, a refusal of
    more than one line, a file written on refusal)."""
    import shutil

    from witprobe.certify.certificate import sha256_text

    case_dir.mkdir(parents=True)
    written: list[Path] = []
    if target in ("certificate", "run"):
        d = case_dir / "run"
        shutil.copytree(fx.run_dir, d)
        if target == "certificate":
            (d / "certificate.json").write_bytes(mutated)
            fn = lambda: __import__("witprobe.certify.cli", fromlist=["main"]).main(["show", str(d)])  # noqa: E731
        else:
            (d / "run.json").write_bytes(mutated)
            try:  # the certificate names the mutated run, so the report re-derives it
                cert = json.loads(fx.cert)
                cert["run_json_sha256"] = sha256_text(mutated.decode("utf-8"))
                (d / "certificate.json").write_text(json.dumps(cert, sort_keys=True, indent=1) + "\n")
            except UnicodeDecodeError:
                pass
            page = case_dir / "page.html"
            written.append(page)
            fn = lambda: __import__("witprobe.certify.cli", fromlist=["main"]).main(  # noqa: E731
                ["report", str(d), "--out", str(page)])
    elif target == "snapshot":
        p = case_dir / "snap.json"
        p.write_bytes(mutated)
        fn = lambda: __import__("witprobe.probe.gate", fromlist=["main"]).main([str(p), "--expect-layers", "2"])  # noqa: E731
    elif target == "journal":
        p = case_dir / "journal.sqlite"
        shutil.copy(fx.journal, p)
        _rechain(p, 2, mutated.decode("utf-8", errors="surrogateescape").encode("utf-8", errors="replace").decode())
        fn = lambda: __import__("witprobe.ledger.cli", fromlist=["main"]).main(["verify", str(p)])  # noqa: E731
    else:
        p = case_dir / "prompts.jsonl"
        p.write_bytes(mutated)

        def fn() -> int:
            from witprobe.cliutil import UsageError
            from witprobe.models.prompts import read_prompts

            try:
                read_prompts(p)
                return 0
            except UsageError as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
    before = sorted(str(x) for x in case_dir.rglob("*"))
    code, out, err = _quiet(fn)
    problems = []
    if "Traceback" in err or "internal error" in err:
        problems.append("traceback")
    if code not in (0, 1, 2):
        problems.append(f"exit {code}")
    if code == 2:
        if err.count("\n") > 1:
            problems.append(f"{err.count(chr(10))} stderr lines")
        if any(w.exists() for w in written) or sorted(str(x) for x in case_dir.rglob("*")) != before:
            problems.append("wrote on refusal")
    return code, out, err, problems


def campaign(n: int, seed: int, work: Path, targets: tuple[str, ...] = TARGETS) -> dict[str, Any]:
    fx = Fixtures(work)
    rng = random.Random(seed)
    counts: dict[str, Counter] = {t: Counter() for t in targets}
    broken: list[str] = []
    t0 = time.time()
    for i in range(n):
        target = targets[i % len(targets)]
        label, mutated = mutate(fx.valid(target), rng)
        code, _, err, problems = run_case(fx, target, mutated, work / f"case{i}")
        counts[target][f"exit {code}"] += 1
        if problems:
            counts[target]["broken"] += 1
            broken.append(f"{target} [{label[:60]}]: {', '.join(problems)}: {err.strip()[-300:]}")
        import shutil

        shutil.rmtree(work / f"case{i}", ignore_errors=True)
    return {"cases": n, "seed": seed, "seconds": round(time.time() - t0, 1),
            "counts": {t: dict(c) for t, c in counts.items()}, "broken": broken}


def main() -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=3600)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--targets", default=",".join(TARGETS))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        res = campaign(a.cases, a.seed, Path(tmp), tuple(a.targets.split(",")))
    for t, c in res["counts"].items():
        print(f"{t:<12} " + "  ".join(f"{k}: {v}" for k, v in sorted(c.items())))
    print(f"{res['cases']} cases in {res['seconds']} s (seed {res['seed']}); broken promises: {len(res['broken'])}")
    for b in res["broken"][:50]:
        print("  " + b)
    return 1 if res["broken"] else 0


if __name__ == "__main__":
    sys.exit(main())
