"""The acceptance gate of a concurrent ledger run: the paper's twelve criteria, fail closed.

``gate(DIR)`` reads ``manifest.json`` (what was submitted: user request ids, ranks, delta_req),
every ``ledger.rank{r}.json`` and ``journal.rank{r}.sqlite``, and decides each criterion. The
exit code is the verdict (0 pass, 1 fail). Unlike the paper's gate script:

- a missing or null reading **fails** its criterion (never ``None == 0 -> True``);
- user accounts are matched to the *submitted* request ids, so an account split into several
  (fragmentation), two requests merged into one account, or a missing/unexpected account each
  fail ``n_user_requests``; nothing is taken as "the last N accounts";
- replica coupling compares the write-side fields for the **union** of accounts over all ranks,
  and needs at least two ranks to say anything (one rank cannot show coupling).

Criteria beyond the paper's twelve: ``read_out_of_generation==0``, ``pool_namespaces_disjoint``,
``journal_verified`` and ``read_checks_present``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from witprobe.ledger.accounts import WRITE_KEYS
from witprobe.ledger.journal import verify

GATE_FILE = "gate.json"
_RANK_FILE = re.compile(r"^ledger\.rank(\d+)\.json$")


@dataclass
class Criterion:
    ok: bool
    value: Any
    why: str = ""


@dataclass
class GateReport:
    criteria: dict[str, Criterion] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.criteria) and all(c.ok for c in self.criteria.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "n_criteria": len(self.criteria),
            "n_failed": sum(not c.ok for c in self.criteria.values()),
            "criteria": {k: {"ok": c.ok, "value": c.value, "why": c.why} for k, c in self.criteria.items()},
            "problems": self.problems,
        }


def _frac(x: Any) -> Fraction | None:
    try:
        num, _, den = str(x).partition("/")
        return Fraction(int(num), int(den or 1))
    except (ValueError, ZeroDivisionError):
        return None


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _sum_field(ranks: dict[int, dict], path: tuple[str, ...], users_only: bool = False) -> int | None:
    """Sum an integer field over every account of every rank; ``None`` if any reading is missing."""
    total = 0
    for snap in ranks.values():
        for a in snap.get("accounts") or []:
            if users_only and a.get("kind") != "user":
                continue
            v: Any = a
            for k in path:
                v = v.get(k) if isinstance(v, dict) else None
            if _int(v) is None:
                return None
            total += v
    return total


def load_run(d: Path) -> tuple[dict[str, Any] | None, dict[int, dict[str, Any]], list[str]]:
    problems: list[str] = []
    man = None
    mp = d / "manifest.json"
    if mp.is_file():
        try:
            man = json.loads(mp.read_text(encoding="utf-8"))
        except ValueError as e:
            problems.append(f"manifest.json is not JSON: {e}")
    else:
        problems.append("manifest.json is missing: the gate cannot know what was submitted")
    ranks: dict[int, dict[str, Any]] = {}
    for p in sorted(d.iterdir()):
        m = _RANK_FILE.match(p.name)
        if m:
            try:
                ranks[int(m.group(1))] = json.loads(p.read_text(encoding="utf-8"))
            except ValueError as e:
                problems.append(f"{p.name} is not JSON: {e}")
    return man, ranks, problems


def evaluate(d: Path) -> GateReport:
    """Decide every criterion for run directory ``d`` (see the module docstring)."""
    man, ranks, problems = load_run(d)
    rep = GateReport(problems=problems)
    C = rep.criteria
    exp = (man or {}).get("expected") or {}
    want_rids = exp.get("user_requests")
    want_ranks = _int(exp.get("ranks"))
    delta_req = _frac(exp.get("delta_req")) if exp.get("delta_req") is not None else None
    n_req = len(want_rids) if isinstance(want_rids, list) else None

    # 1. one account per submitted request, on every rank
    key = f"n_user_requests=={n_req if n_req is not None else '?'}"
    if n_req is None or not ranks:
        C[key] = Criterion(False, None, "no submitted request list in the manifest" if n_req is None else "no rank files")
    else:
        per_rank, ok = {}, True
        for r, snap in sorted(ranks.items()):
            users = [a for a in snap.get("accounts") or [] if a.get("kind") == "user"]
            by_rid: dict[Any, list[int]] = {}
            for a in users:
                by_rid.setdefault(a.get("rid"), []).append(a.get("uid"))
            split = {str(k): v for k, v in by_rid.items() if len(v) > 1}
            missing = [x for x in want_rids if x not in by_rid]
            unexpected = [str(k) for k in by_rid if k not in want_rids]
            ok_r = len(users) == n_req and not split and not missing and not unexpected
            ok &= ok_r
            per_rank[r] = {"user_accounts": len(users), "split": split, "missing": missing, "unexpected": unexpected}
        C[key] = Criterion(ok, per_rank, "" if ok else "user accounts do not match the submitted requests one to one")

    # 2. budgets, exactly
    if delta_req is None or not ranks:
        C["all_budgets<=delta_req"] = Criterion(False, None, "delta_req missing from the manifest" if delta_req is None else "no rank files")
    else:
        bad, worst = [], Fraction(0)
        for r, snap in ranks.items():
            for a in snap.get("accounts") or []:
                s, k = _frac(a.get("delta_spent")), _int(a.get("n_prob_events"))
                if s is None or k is None:
                    bad.append(f"rank {r} uid {a.get('uid')}: spend or event count missing")
                    continue
                worst = max(worst, s)
                if not 0 <= s <= delta_req or s != delta_req * k / (k + 1):
                    bad.append(f"rank {r} uid {a.get('uid')}: spend {s} with k={k}")
        n_acc = sum(len(s.get("accounts") or []) for s in ranks.values())
        C["all_budgets<=delta_req"] = Criterion(not bad and n_acc > 0, {"max_spent": float(worst), "max_spent_exact": f"{worst.numerator}/{worst.denominator}", "accounts": n_acc, "bad": bad[:10]},
                                                "; ".join(bad[:3]) if bad else ("" if n_acc else "no accounts"))

    def zero(name: str, path: tuple[str, ...], users_only: bool = False, extra: dict | None = None) -> None:
        v = _sum_field(ranks, path, users_only) if ranks else None
        C[name] = Criterion(v == 0, v if extra is None else {"value": v, **extra},
                            "reading missing" if v is None else ("" if v == 0 else f"{v} > 0"))

    attributed = _sum_field(ranks, ("read", "n_read_foreign_attributed")) if ranks else None
    zero("foreign_reads==0", ("read", "n_read_foreign_unattributed"), extra={"foreign_reads_attributed_to_writer": attributed})
    zero("read_unwritten==0", ("read", "n_read_unwritten"))
    viol = _sum_field(ranks, ("n_auth_violations",), False) if ranks else None
    served = _sum_field(ranks, ("read", "n_served_over_radius"), False) if ranks else None
    ok5 = viol == 0 and served == 0
    C["auth_violations==0"] = Criterion(ok5, {"restorations": viol, "served_over_radius": served},
                                        "reading missing" if viol is None or served is None else ("" if ok5 else "violations > 0"))
    for name, fld in (("uid_group_fallbacks==0", "uid_group_fallbacks"), ("identity_fail_closed==0", "identity_fail_closed")):
        vals = [_int((s.get("identity") or {}).get(fld)) for s in ranks.values()]
        v = None if not vals or any(x is None for x in vals) else sum(vals)
        C[name] = Criterion(v == 0, v, "reading missing" if v is None else ("" if v == 0 else f"{v} > 0"))

    # 8-10. e-process: present, with factors, not crossed (per account and global)
    has, present, crossed, why8, why9 = True, True, [], [], []
    for r, snap in ranks.items():
        procs = [("global", snap.get("eprocess_global"))] + [(f"uid {a.get('uid')}", a.get("eprocess")) for a in snap.get("accounts") or []]
        g = snap.get("eprocess_global") or {}
        if not (_int(g.get("n_factors")) or 0) > 0:
            has = False
            why8.append(f"rank {r}: global e-process has no factors")
        for a in snap.get("accounts") or []:
            e = a.get("eprocess") or {}
            want = (_int(a.get("n_authorized")) or 0) - (_int(a.get("n_factors_skipped_no_randomness")) or 0)
            if _int(e.get("n_factors")) != want:
                has = False
                why8.append(f"rank {r} uid {a.get('uid')}: {e.get('n_factors')} factors for {want} authorized entries with randomness")
        for name, e in procs:
            e = e or {}
            n = _int(e.get("n_factors"))
            lm = e.get("log_M_max")
            if n is None or (n > 0 and not (isinstance(lm, (int, float)) and math.isfinite(lm))):
                present = False
                why9.append(f"rank {r} {name}: log_M_max missing")
            if e.get("crossed") is not False:
                crossed.append(f"rank {r} {name}: crossed={e.get('crossed')!r}")
    if not ranks:
        has = present = False
    C["eprocess_has_factors"] = Criterion(has, {r: (s.get("eprocess_global") or {}).get("n_factors") for r, s in ranks.items()}, "; ".join(why8[:3]))
    C["eprocess_logM_present"] = Criterion(present, {r: (s.get("eprocess_global") or {}).get("log_M_max") for r, s in ranks.items()}, "; ".join(why9[:3]))
    C["eprocess_not_crossed"] = Criterion(bool(ranks) and not crossed, crossed[:10], "; ".join(crossed[:3]))

    # 11-12. replicas
    seen = sorted(ranks)
    key = f"n_ranks_seen=={want_ranks if want_ranks is not None else '?'}"
    ok11 = want_ranks is not None and want_ranks >= 1 and seen == list(range(want_ranks))
    C[key] = Criterion(ok11, seen, "" if ok11 else f"rank files {seen}, expected ranks 0..{(want_ranks or 0) - 1}")
    C["replica_coupling_identical"] = _coupling(d, ranks)

    # extras
    zero("read_out_of_generation==0", ("read", "n_read_out_of_generation"))
    disj = [(s.get("pool") or {}).get("namespaces_disjoint") for s in ranks.values()]
    C["pool_namespaces_disjoint"] = Criterion(bool(disj) and all(x is True for x in disj), disj, "" if disj and all(x is True for x in disj) else "pool families share an identity map (or the reading is missing)")
    C["journal_verified"] = _journals(d, ranks)
    n_reads = [_int(s.get("n_read_checks")) for s in ranks.values()]
    ok_r = bool(n_reads) and all(x is not None and x > 0 for x in n_reads)
    C["read_checks_present"] = Criterion(ok_r, n_reads, "" if ok_r else "a rank checked no reads")
    return rep


def _coupling(d: Path, ranks: dict[int, dict]) -> Criterion:
    if len(ranks) < 2:
        return Criterion(False, {"ranks": len(ranks)}, "coupling needs at least two ranks")
    tables: dict[int, dict[str, dict]] = {}
    for r, snap in ranks.items():
        tables[r] = {}
        for a in snap.get("accounts") or []:
            name = a.get("rid") if a.get("kind") == "user" else f"{a.get('kind')}:{a.get('uid')}"
            if name in tables[r]:
                name = f"{name}#uid{a.get('uid')}"
            tables[r][str(name)] = {k: a.get(k) for k in WRITE_KEYS}
    union = sorted(set().union(*[set(t) for t in tables.values()]))
    mism = []
    for name in union:
        rows = {r: tables[r].get(name) for r in tables}
        if any(v is None for v in rows.values()):
            mism.append(f"{name}: missing on ranks {[r for r, v in rows.items() if v is None]}")
            continue
        if any(None in v.values() for v in rows.values()):
            mism.append(f"{name}: a write field is null")
            continue
        first = next(iter(rows.values()))
        for r, v in rows.items():
            diff = [k for k in WRITE_KEYS if v[k] != first[k]]
            if diff:
                mism.append(f"{name}: rank {r} differs in {diff}")
    dist = None
    cp = d / "coupling.json"
    if cp.is_file():
        try:
            dist = json.loads(cp.read_text(encoding="utf-8"))
        except ValueError:
            mism.append("coupling.json is not JSON")
    else:
        mism.append("coupling.json (the torch.distributed exchange) is missing")
    if isinstance(dist, dict) and dist.get("identical") is not True:
        mism.append("the ranks' torch.distributed exchange found differences")
    ok = not mism and bool(union)
    return Criterion(ok, {"accounts_compared": len(union), "ranks": sorted(ranks), "fields": list(WRITE_KEYS),
                          "distributed": None if dist is None else {k: dist.get(k) for k in ("identical", "world_size", "backend")},
                          "mismatches": mism[:10]}, "; ".join(mism[:3]))


def _journals(d: Path, ranks: dict[int, dict]) -> Criterion:
    if not ranks:
        return Criterion(False, None, "no rank files")
    out, ok, why = {}, True, []
    for r, snap in ranks.items():
        j = d / f"journal.rank{r}.sqlite"
        res = verify(j)
        head = (snap.get("journal") or {}).get("head_seq")
        spent_j = res.totals.get("spent", {}) if res.ok else {}
        mismatch = []
        for a in snap.get("accounts") or []:
            if (_int(a.get("n_prob_events")) or 0) > 0:
                if spent_j.get(f"{r}:{a.get('uid')}") != a.get("delta_spent"):
                    mismatch.append(a.get("uid"))
        ok_r = res.ok and res.closed and head == res.n_records and not mismatch
        ok &= ok_r
        if not ok_r:
            why.append(f"rank {r}: " + (res.reason or ("not closed" if not res.closed else
                                                       f"head {head} vs {res.n_records} records" if head != res.n_records else f"spend differs for uids {mismatch}")))
        out[r] = {"ok": res.ok, "records": res.n_records, "first_bad": res.first_bad, "closed": res.closed}
    return Criterion(ok, out, "; ".join(why))


def run_gate(d: Path, write: bool = True) -> GateReport:
    rep = evaluate(d)
    if write:
        tmp = d / (GATE_FILE + ".tmp")
        tmp.write_text(json.dumps(rep.as_dict(), indent=1, sort_keys=False, default=str) + "\n")
        tmp.replace(d / GATE_FILE)
    return rep
