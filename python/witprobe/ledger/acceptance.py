"""The acceptance gate of a ledger run: every criterion re-derived from the journal, fail closed.

The hash-chained journal is the primary record; per-rank JSON summaries are caches. The gate
re-derives each criterion from the journal (:mod:`witprobe.ledger.derive`) and compares every
summary it finds with the journal-derived values: any disagreement fails ``summaries_match_journal``
and no summary value enters any other criterion. Editing a summary therefore cannot turn a
failing run into a pass; editing the journal breaks its hash chain (``journal_verified``). A hash
chain can be recomputed by whoever edits the journal (re-chained): only with a public key
(``run_gate(d, key=...)``, ``gate --key``) does ``journal_verified`` also require each journal to
end with a head signed by the writer's key; without one the gate lists ``journal_signature`` under
``not_evaluated`` and says so.

Python API (what a serving attachment calls)::

    from witprobe.ledger.acceptance import Expected, evaluate_journal

    v = evaluate_journal("runs/ledger")              # a run directory (manifest.json + journals)
    v = evaluate_journal("j.sqlite", expected=Expected(user_requests=("r1", "r2"),
                         delta_req=Fraction(1, 100), ranks=1, require_coupling=False))
    v.passed          # bool: every evaluated criterion holds
    v.failed          # tuple of failing criterion names, e.g. ("read_out_of_generation==0",)
    v.criteria[name]  # Criterion(name, ok, value, why)
    v.as_dict()       # the JSON written to gate.json

``path`` is a run directory (journals ``journal.rank{r}.sqlite``, summaries
``ledger.rank{r}.json``, and ``manifest.json`` with ``expected: {user_requests, ranks,
delta_req}``, unless ``expected`` is given) or a single journal file (then ``expected`` is
required and ``summaries`` optional). A missing reading fails its criterion. In a directory every
journal needs its summary (``simulate`` writes both); a summary without a journal fails too.

Criteria (the paper's twelve, then four more, then the cache check):

- ``n_user_requests==N``: per rank, the ``user`` accounts opened in the journal match the
  submitted request ids one to one (a split, merged, missing or unexpected account fails);
- ``all_budgets<=delta_req``: per account the re-derived spend ``s`` and event count ``k``
  satisfy ``s == delta_req * k / (k + 1) <= delta_req`` exactly, and the journal's ``delta_req``
  equals the submitted one;
- ``foreign_reads==0``, ``read_unwritten==0``, ``read_out_of_generation==0``: sums of the
  journal's read tallies; ``auth_violations==0``: restorations plus reads served over radius;
- ``uid_group_fallbacks==0``, ``identity_fail_closed==0``: journal ``identity_fallback`` and
  ``fail_closed`` records;
- ``eprocess_has_factors`` (global process has factors; each account has one factor per
  authorized entry with randomness), ``eprocess_logM_present``, ``eprocess_not_crossed``: from
  the e-processes folded in journal order;
- ``n_ranks_seen==R``: journals of ranks ``0..R-1``, each declaring its rank;
- ``replica_coupling_identical`` (only when coupling is required, the default): the write-side
  fields of the union of accounts agree over all ranks (two ranks at least), and the ranks'
  torch.distributed exchange (``coupling.json``) agrees too;
- ``pool_namespaces_disjoint`` (the journal's ``pool`` record), ``journal_verified`` (chain,
  arithmetic, closed), ``read_checks_present`` (each rank checked reads), ``accounts_opened``
  (no record for a uid that was never opened, and every account closed);
- ``summaries_match_journal``: every summary equals the journal, field for field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from witprobe.ledger.accounts import WRITE_KEYS
from witprobe.ledger.derive import DeriveError, RankDerived, compare_summary, derive_rank
from witprobe.ledger.journal import UNSIGNED_NOTE
from witprobe.ledger.replica import COUPLING_FILE

if TYPE_CHECKING:
    from witprobe.signing import VerifyKey

GATE_FILE = "gate.json"
MANIFEST_FILE = "manifest.json"
_RANK_JSON = re.compile(r"^ledger\.rank(\d+)\.json$")
_RANK_JOURNAL = re.compile(r"^journal\.rank(\d+)\.sqlite$")


@dataclass(frozen=True)
class Criterion:
    """One named criterion: ``ok``, the reading it was decided on, and why it failed."""

    name: str
    ok: bool
    value: Any
    why: str = ""


@dataclass(frozen=True)
class Expected:
    """What was submitted (the gate compares the journal against this, never against itself)."""

    user_requests: tuple[str, ...]
    delta_req: Fraction
    ranks: int = 1
    require_coupling: bool = True

    @classmethod
    def from_manifest(cls, man: Mapping[str, Any]) -> "Expected":
        """From ``manifest.json``'s ``expected`` block; raises ``ValueError`` naming a bad field."""
        exp = man.get("expected")
        if not isinstance(exp, Mapping):
            raise ValueError("manifest has no 'expected' block")
        rids = exp.get("user_requests")
        if not isinstance(rids, list) or not all(isinstance(x, str) for x in rids):
            raise ValueError("manifest expected.user_requests is not a list of request ids")
        ranks = exp.get("ranks")
        if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
            raise ValueError(f"manifest expected.ranks is {ranks!r}, not a positive integer")
        try:
            num, _, den = str(exp["delta_req"]).partition("/")
            d = Fraction(int(num), int(den or 1))
        except (KeyError, ValueError, ZeroDivisionError):
            raise ValueError(f"manifest expected.delta_req is {exp.get('delta_req')!r}, not a fraction") from None
        coupling = exp.get("require_coupling", True)
        if not isinstance(coupling, bool):
            raise ValueError("manifest expected.require_coupling is not a boolean")
        return cls(tuple(rids), d, ranks, coupling)


@dataclass(frozen=True)
class GateVerdict:
    """The gate's decision: named criteria, problems met while reading, and what was not evaluated."""

    source: str
    criteria: dict[str, Criterion] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    not_evaluated: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.criteria) and all(c.ok for c in self.criteria.values())

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(k for k, c in self.criteria.items() if not c.ok)

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "source": self.source,
            "n_criteria": len(self.criteria),
            "n_failed": len(self.failed),
            "failed": list(self.failed),
            "criteria": {k: {"ok": c.ok, "value": c.value, "why": c.why} for k, c in self.criteria.items()},
            "not_evaluated": self.not_evaluated,
            "problems": list(self.problems),
            "primary_record": "journal",
        }


GateReport = GateVerdict  # the former name


# --- reading a run ---------------------------------------------------------------------------------


def _load_json(p: Path, problems: list[str]) -> Any:
    from witprobe.cliutil import InputError, read_json

    try:
        return read_json(p)
    except InputError as e:
        problems.append(f"{p.name} is not readable JSON: {e.problem}")
        return None


def _derive(p: Path, problems: list[str], key: VerifyKey | None = None) -> RankDerived | None:
    try:
        return derive_rank(p, key)
    except (DeriveError, OSError, ValueError) as e:
        problems.append(f"{p.name}: {e}")
        return None


def evaluate_journal(path: Path | str, expected: Expected | None = None,
                     summaries: Mapping[int, Any] | None = None, key: VerifyKey | None = None) -> GateVerdict:
    """Decide every criterion from the journal(s) at ``path`` (see the module docstring); with
    ``key``, ``journal_verified`` also requires every journal to end with a head signed by it."""
    p = Path(path)
    problems: list[str] = []
    journals: dict[int, Path] = {}
    snaps: dict[int, Any] = dict(summaries or {})
    orphans: list[str] = []
    coupling: Any = None
    if p.is_dir():
        for q in sorted(p.iterdir()):
            if (m := _RANK_JOURNAL.match(q.name)):
                journals[int(m.group(1))] = q
            elif (m := _RANK_JSON.match(q.name)) and summaries is None:
                snaps[int(m.group(1))] = _load_json(q, problems)
        if expected is None:
            mp = p / MANIFEST_FILE
            if not mp.is_file():
                problems.append("manifest.json is missing: the gate cannot know what was submitted")
            else:
                man = _load_json(mp, problems)
                try:
                    expected = Expected.from_manifest(man if isinstance(man, Mapping) else {})
                except ValueError as e:
                    problems.append(str(e))
        missing_snap = sorted(set(journals) - set(snaps))
        orphans = [f"ledger.rank{r}.json has no journal" for r in sorted(set(snaps) - set(journals))]
        orphans += [f"journal.rank{r}.sqlite has no summary ledger.rank{r}.json" for r in missing_snap]
        cp = p / COUPLING_FILE
        coupling = _load_json(cp, problems) if cp.is_file() else None
    elif p.is_file():
        journals[0] = p
        if expected is None:
            problems.append("a single journal needs `expected` (what was submitted)")
    else:
        problems.append(f"{p}: no such run directory or journal")
    ranks: dict[int, RankDerived] = {}
    for r, jp in journals.items():
        d = _derive(jp, problems, key)
        if d is not None:
            if p.is_file() and isinstance(d.rank, int):
                ranks[d.rank] = d
                if r in snaps and d.rank != r:
                    snaps[d.rank] = snaps.pop(r)
            else:
                ranks[r] = d
    C: dict[str, Criterion] = {}
    not_eval: dict[str, str] = {}
    _decide(C, not_eval, ranks, expected, coupling)
    if key is None:
        not_eval["journal_signature"] = UNSIGNED_NOTE
    C["summaries_match_journal"] = _summaries(ranks, snaps, orphans, set(journals))
    return GateVerdict(str(p), C, tuple(problems), not_eval)


def _put(C: dict[str, Criterion], name: str, ok: bool, value: Any, why: str = "") -> None:
    C[name] = Criterion(name, bool(ok), value, "" if ok else (why or "failed"))


def _decide(C: dict[str, Criterion], not_eval: dict[str, str], ranks: dict[int, RankDerived],
            exp: Expected | None, coupling: Any) -> None:
    none = "no readable journal" if not ranks else ""
    n_req = len(exp.user_requests) if exp else None

    # 1. one account per submitted request, on every rank
    key = f"n_user_requests=={n_req if n_req is not None else '?'}"
    if exp is None or none:
        _put(C, key, False, None, none or "no submitted request list")
    else:
        per_rank, ok = {}, True
        for r, d in sorted(ranks.items()):
            by_rid: dict[Any, list[int]] = {}
            for a in d.users():
                by_rid.setdefault(a.rid, []).append(a.uid)
            split = {str(k): v for k, v in by_rid.items() if len(v) > 1}
            missing = [x for x in exp.user_requests if x not in by_rid]
            unexpected = [str(k) for k in by_rid if k not in exp.user_requests]
            ok_r = len(d.users()) == n_req and not split and not missing and not unexpected
            ok &= ok_r
            per_rank[r] = {"user_accounts": len(d.users()), "split": split, "missing": missing, "unexpected": unexpected}
        _put(C, key, ok, per_rank, "user accounts do not match the submitted requests one to one")

    # 2. budgets, exactly
    if exp is None or none:
        _put(C, "all_budgets<=delta_req", False, None, none or "delta_req was not submitted")
    else:
        bad, worst, n_acc = [], Fraction(0), 0
        for r, d in ranks.items():
            if d.delta_req != exp.delta_req:
                bad.append(f"rank {r}: journal delta_req {d.delta_req} differs from the submitted {exp.delta_req}")
            for a in d.accounts.values():
                n_acc += 1
                s, k = a.delta_spent, a.n_prob_events
                worst = max(worst, s)
                if not 0 <= s <= exp.delta_req or s != exp.delta_req * k / (k + 1):
                    bad.append(f"rank {r} uid {a.uid}: spend {s} with k={k}")
        _put(C, "all_budgets<=delta_req", not bad and n_acc > 0,
             {"max_spent": float(worst), "max_spent_exact": f"{worst.numerator}/{worst.denominator}", "accounts": n_acc,
              "bad": bad[:10]}, "; ".join(bad[:3]) or "no accounts")

    def tally(name: str, k: str) -> int | None:
        return sum(getattr(a.read, k) for d in ranks.values() for a in d.accounts.values()) if ranks else None

    def zero(name: str, v: int | None, extra: dict | None = None) -> None:
        _put(C, name, v == 0, v if extra is None else {"value": v, **extra}, none or f"{v} > 0")

    zero("foreign_reads==0", tally("foreign", "n_read_foreign_unattributed"),
         {"foreign_reads_attributed_to_writer": tally("attr", "n_read_foreign_attributed")})
    zero("read_unwritten==0", tally("unwritten", "n_read_unwritten"))
    viol = sum(a.n_auth_violations for d in ranks.values() for a in d.accounts.values()) if ranks else None
    served = tally("served", "n_served_over_radius")
    _put(C, "auth_violations==0", viol == 0 and served == 0, {"restorations": viol, "served_over_radius": served},
         none or "violations > 0")
    zero("uid_group_fallbacks==0", sum(d.uid_group_fallbacks for d in ranks.values()) if ranks else None)
    zero("identity_fail_closed==0", sum(d.identity_fail_closed for d in ranks.values()) if ranks else None)

    # 8-10. e-processes, folded from the journal
    has, present, crossed, why8, why9 = bool(ranks), bool(ranks), [], [], []
    for r, d in ranks.items():
        if d.eprocess_params is None:
            present = False
            why9.append(f"rank {r}: the journal header declares no e-process parameters")
        if d.global_eprocess.n_factors <= 0:
            has = False
            why8.append(f"rank {r}: global e-process has no factors")
        procs = [("global", d.global_eprocess)] + [(f"uid {a.uid}", a.eprocess) for a in d.accounts.values()]
        for a in d.accounts.values():
            want = a.n_authorized - a.n_factors_skipped_no_randomness
            if a.eprocess.n_factors != want:
                has = False
                why8.append(f"rank {r} uid {a.uid}: {a.eprocess.n_factors} factors for {want} authorized entries with randomness")
        for name, e in procs:
            if e.n_factors > 0 and e.log_m_max is None:
                present = False
                why9.append(f"rank {r} {name}: log_M_max missing")
            if e.crossed:
                crossed.append(f"rank {r} {name}: crossed (log_M_max {e.log_m_max:.4g} >= {e.threshold:.4g})")
    _put(C, "eprocess_has_factors", has, {r: d.global_eprocess.n_factors for r, d in ranks.items()}, none or "; ".join(why8[:3]))
    _put(C, "eprocess_logM_present", present, {r: d.global_eprocess.log_m_max for r, d in ranks.items()}, none or "; ".join(why9[:3]))
    _put(C, "eprocess_not_crossed", bool(ranks) and not crossed, crossed[:10], none or "; ".join(crossed[:3]))

    # 11-12. replicas
    want_ranks = exp.ranks if exp else None
    seen = sorted(ranks)
    declared = {r: d.rank for r, d in ranks.items()}
    ok11 = want_ranks is not None and seen == list(range(want_ranks)) and all(declared[r] == r for r in seen)
    _put(C, f"n_ranks_seen=={want_ranks if want_ranks is not None else '?'}", ok11, seen,
         f"journals of ranks {seen} (declared {declared}), expected ranks 0..{(want_ranks or 0) - 1}")
    if exp is not None and not exp.require_coupling:
        not_eval["replica_coupling_identical"] = "coupling not required (declared single replica)"
    else:
        C["replica_coupling_identical"] = _coupling(ranks, coupling)

    # extras
    zero("read_out_of_generation==0", tally("gen", "n_read_out_of_generation"))
    disj = {r: (d.pool or {}).get("namespaces_disjoint") for r, d in ranks.items()}
    _put(C, "pool_namespaces_disjoint", bool(disj) and all(x is True for x in disj.values()), disj,
         none or "pool families share an identity map (or the journal has no pool record)")
    jv, ok_j, why_j = {}, bool(ranks), []
    for r, d in ranks.items():
        v = d.verified
        jv[r] = {"ok": v.ok, "records": v.n_records, "first_bad": v.first_bad, "closed": v.closed,
                 "signature_checked": bool(v.signature.get("checked"))}
        if not (v.ok and v.closed):
            ok_j = False
            why_j.append(f"rank {r}: " + (v.reason if not v.ok else "unclosed (no close record)"))
    _put(C, "journal_verified", ok_j, jv, none or "; ".join(why_j))
    n_reads = {r: d.n_read_checks for r, d in ranks.items()}
    _put(C, "read_checks_present", bool(n_reads) and all(x > 0 for x in n_reads.values()), n_reads,
         none or "a rank checked no reads")
    unopened = {r: sorted(d.unopened_uids) for r, d in ranks.items() if d.unopened_uids}
    unclosed = {r: sorted(a.uid for a in d.accounts.values() if not a.closed) for r, d in ranks.items()}
    unclosed = {r: v for r, v in unclosed.items() if v}
    _put(C, "accounts_opened", bool(ranks) and not unopened and not unclosed, {"unopened": unopened, "unclosed": unclosed},
         none or "records for uids never opened, or accounts never closed")


def _coupling(ranks: dict[int, RankDerived], dist: Any) -> Criterion:
    name = "replica_coupling_identical"
    if len(ranks) < 2:
        return Criterion(name, False, {"ranks": len(ranks)}, "coupling needs at least two ranks")
    tables: dict[int, dict[str, dict]] = {}
    for r, d in ranks.items():
        tables[r] = {}
        for a in d.accounts.values():
            key = a.rid if a.kind == "user" else f"{a.kind}:{a.uid}"
            if key in tables[r]:
                key = f"{key}#uid{a.uid}"
            tables[r][str(key)] = a.write_fields()
    union = sorted(set().union(*[set(t) for t in tables.values()]))
    mism = []
    for key in union:
        rows = {r: tables[r].get(key) for r in tables}
        if any(v is None for v in rows.values()):
            mism.append(f"{key}: missing on ranks {[r for r, v in rows.items() if v is None]}")
            continue
        if any(None in v.values() for v in rows.values()):
            mism.append(f"{key}: a write field is missing (account not closed with a draw digest)")
            continue
        first = next(iter(rows.values()))
        for r, v in rows.items():
            diff = [k for k in WRITE_KEYS if v[k] != first[k]]
            if diff:
                mism.append(f"{key}: rank {r} differs in {diff}")
    if dist is None:
        mism.append("coupling.json (the torch.distributed exchange) is missing")
    elif not isinstance(dist, dict) or dist.get("identical") is not True:
        mism.append("the ranks' torch.distributed exchange found differences")
    ok = not mism and bool(union)
    return Criterion(name, ok, {"accounts_compared": len(union), "ranks": sorted(ranks), "fields": list(WRITE_KEYS),
                                "distributed": {k: dist.get(k) for k in ("identical", "world_size", "backend")} if isinstance(dist, dict) else None,
                                "mismatches": mism[:10]}, "; ".join(mism[:3]))


def _summaries(ranks: dict[int, RankDerived], snaps: Mapping[int, Any], orphans: Sequence[str],
               journal_ranks: set[int]) -> Criterion:
    name = "summaries_match_journal"
    diffs: dict[str, list[str]] = {}
    if orphans:
        diffs["files"] = list(orphans)
    for r, snap in sorted(snaps.items()):
        d = ranks.get(r)
        if d is None:
            if r in journal_ranks:
                diffs[f"rank {r}"] = ["its journal could not be read"]
            continue
        if not isinstance(snap, dict):
            diffs[f"rank {r}"] = ["the summary is not a JSON object"]
            continue
        dd = compare_summary(snap, d)
        if dd:
            diffs[f"rank {r}"] = dd[:10] + ([f"... {len(dd) - 10} more"] if len(dd) > 10 else [])
    ok = bool(ranks) and not diffs
    first = next((f"{k}: {v[0]}" for k, v in diffs.items()), "no readable journal")
    return Criterion(name, ok, {"compared": sorted(r for r in snaps if r in ranks), "differences": diffs},
                     "" if ok else f"a summary (cache) disagrees with its journal: {first}")


# --- compatibility and files -------------------------------------------------------------------------


def evaluate(d: Path) -> GateVerdict:
    """:func:`evaluate_journal` of a run directory."""
    return evaluate_journal(d)


def run_gate(d: Path, write: bool = True, key: VerifyKey | None = None) -> GateVerdict:
    """Evaluate run directory ``d`` (with ``key``: signed journal heads required) and write
    ``gate.json`` there (:func:`witprobe.safe_output.write_into`: atomically, recorded in ``d``'s
    manifest, and never over a file witprobe did not write)."""
    from witprobe.safe_output import check_into, write_into

    if write:
        check_into(d, [GATE_FILE])
    rep = evaluate_journal(d, key=key)
    if write:
        write_into(d, GATE_FILE, json.dumps(rep.as_dict(), indent=1, sort_keys=False, default=str) + "\n",
                   "witprobe.ledger gate")
    return rep
