"""The live gate: every criterion re-derived from the journal of a ``ledger live`` run, fail closed.

Inputs: ``manifest.json`` (what the driver submitted: the user request ids) and
``journal.sqlite`` (the primary record). Nothing else is read: the server's verdicts and metrics
are caches. A missing reading fails its criterion.

Criteria (name: what must hold, from which records):

- ``journal_verified``: :func:`~witprobe.ledger.journal.verify` accepts the chain, hashes, seq and
  ledger arithmetic (every ``delta`` is ``delta_req/((k+1)(k+2))``, counters do not skip, every
  ``account_close`` equals its account's records), and the journal is closed; with a public key
  (``live --sign``, ``evaluate(d, key)``) the journal must also end with a head signed by it
  (a re-chained journal fails); without one, ``journal_signature`` is listed as not evaluated;
- ``n_user_requests==N``: ``account_open`` records of kind user match the submitted ids one to
  one (a split identity, a missing or an unexpected account fails);
- ``requests_completed``: every user account has its ``account_close``;
- ``all_budgets<=delta_req``: each account's spend, summed exactly from its ``write`` records;
- ``foreign_reads==0`` (unattributed), ``read_unwritten==0``, ``read_out_of_generation==0``,
  ``served_over_radius==0``, ``reads_certified_bytes`` (the values the model read equal the
  certified bytes): sums over ``reads`` records;
- ``identity_fail_closed==0``: no ``fail_closed`` record;
- ``reuse_invalidated``: no ``block_alloc`` hands a previously written block over without
  invalidation, and no ``write`` lands on live slots (``n_live_rewritten``);
- ``pool_namespaces_disjoint``: the ``open`` record's pool families have separate identity maps;
- ``eprocess_has_factors``, ``eprocess_not_crossed``: from the e-process states each ``write``
  record carries (per account and global; ``crossed`` must agree with
  ``log_M_max >= ln(1/delta_e)``) and the ``alarm`` records;
- ``read_checks_present``: every user account was read at least once;
- with the live read meter (the ``open`` record's ``read_meter``): ``attention_bound_every_request``
  (an ``attention`` record per user request with a bound in ``[0, 1]`` for every metered layer),
  ``kernel_audit_mismatches==0`` (no ``audit_mismatch`` record) and, with the exact side pool,
  ``live_bound_not_beaten`` (no row's realized TV above its bound).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from witprobe.cliutil import InputError, read_json_object
from witprobe.ledger.eprocess import DELTA_E
from witprobe.ledger.acceptance import Criterion, GateVerdict
from witprobe.ledger.journal import UNSIGNED_NOTE, read_records, verify

if TYPE_CHECKING:
    from witprobe.signing import VerifyKey

JOURNAL_FILE = "journal.sqlite"
MANIFEST_FILE = "manifest.json"
GATE_FILE = "gate.json"
READ_KEYS = ("n_reads", "n_read_foreign_unattributed", "n_read_foreign_attributed", "n_read_unwritten",
             "n_read_out_of_generation", "n_served_over_radius", "n_read_not_certified")


def _frac(text: Any) -> Fraction:
    num, _, den = str(text).partition("/")
    return Fraction(int(num), int(den or 1))


def _zero(C: dict[str, Criterion], name: str, v: int | None, extra: dict[str, Any] | None = None) -> None:
    C[name] = Criterion(name, v == 0, v if extra is None else {"value": v, **extra},
                        "reading missing" if v is None else ("" if v == 0 else f"{v} > 0"))


def evaluate(d: Path, key: VerifyKey | None = None) -> GateVerdict:
    """Decide every criterion of the live run in directory ``d`` (see the module docstring)."""
    C: dict[str, Criterion] = {}
    problems: list[str] = []
    man: dict[str, Any] | None = None
    try:
        man = read_json_object(d / MANIFEST_FILE)
    except InputError as e:
        problems.append(f"{MANIFEST_FILE}: {e.problem}")
    want = ((man or {}).get("expected") or {}).get("user_requests")
    jp = d / JOURNAL_FILE
    res = verify(jp, key=key)
    C["journal_verified"] = Criterion("journal_verified", res.ok and res.closed, {"records": res.n_records, "first_bad": res.first_bad, "closed": res.closed,
                                                                                  "signature_checked": key is not None},
                                      res.reason or ("" if res.closed else "no close record: the server did not shut down cleanly"))
    try:
        recs = read_records(jp) if jp.is_file() else []
    except Exception as e:  # noqa: BLE001 - an unreadable journal fails every criterion below
        problems.append(f"{JOURNAL_FILE}: {e}")
        recs = []
    header = recs[0][2] if recs and recs[0][1] == "open" else {}
    delta_req = _frac(header["delta_req"]) if "delta_req" in header else None

    opened: dict[int, dict[str, Any]] = {}
    closed: set[int] = set()
    spent: dict[int, Fraction] = {}
    reads: dict[int, dict[str, int]] = {}
    tot = dict.fromkeys(READ_KEYS, 0)
    fail_closed = live_rewrites = unsafe_allocs = restorations = 0
    alarms: list[str] = []
    ep_bad: list[str] = []
    attention: dict[str, dict[str, Any]] = {}
    mismatches: list[dict[str, Any]] = []
    ep_global_n = 0
    thr = math.log(1.0 / DELTA_E)
    for _seq, kind, b in recs:
        if kind == "account_open":
            opened[b["uid"]] = b
        elif kind == "account_close":
            closed.add(b["uid"])
        elif kind == "write":
            u = b["uid"]
            spent[u] = spent.get(u, Fraction(0)) + _frac(b["delta"])
            live_rewrites += int(b.get("n_live_rewritten", 1))
            restorations += int(b.get("n_violations", 0))
            for scope, e in ((f"uid {u}", b.get("eprocess")), ("global", b.get("eprocess_global"))):
                if not isinstance(e, dict):
                    ep_bad.append(f"write {b.get('write_id')}: {scope} e-process state missing")
                    continue
                lm = e.get("log_M_max")
                should = lm is not None and lm >= thr
                if bool(e.get("crossed")) != should:
                    ep_bad.append(f"write {b.get('write_id')}: {scope} crossed={e.get('crossed')} with log_M_max={lm}")
                if e.get("crossed") and scope not in alarms:
                    alarms.append(scope)
            ep_global_n = max(ep_global_n, int((b.get("eprocess_global") or {}).get("n_factors", 0)))
        elif kind == "reads":
            r = reads.setdefault(b["uid"], dict.fromkeys(READ_KEYS, 0))
            for k in READ_KEYS:
                if k not in b:
                    problems.append(f"reads record for uid {b['uid']} lacks {k}")
                    r[k] = r.get(k, 0)
                    tot[k] = None  # type: ignore[assignment]
                    continue
                r[k] += int(b[k])
                if tot[k] is not None:
                    tot[k] += int(b[k])
        elif kind == "fail_closed":
            fail_closed += int(b["n_entries"])
        elif kind == "block_alloc":
            if b.get("reused") and b.get("live_before") and not b.get("invalidated"):
                unsafe_allocs += 1
        elif kind == "alarm":
            if b.get("scope") not in alarms:
                alarms.append(str(b.get("scope")))
        elif kind == "attention":
            attention[str(b.get("rid"))] = b
        elif kind == "audit_mismatch":
            mismatches.append(b)

    users = {u: o for u, o in opened.items() if o.get("kind") == "user"}
    n_req = len(want) if isinstance(want, list) else None
    name = f"n_user_requests=={n_req if n_req is not None else '?'}"
    if n_req is None:
        C[name] = Criterion(name, False, None, "no submitted request list in the manifest")
    else:
        by_rid: dict[str, list[int]] = {}
        for u, o in users.items():
            by_rid.setdefault(o.get("rid"), []).append(u)
        split = {r: v for r, v in by_rid.items() if len(v) > 1}
        missing = [r for r in want if r not in by_rid]
        unexpected = [r for r in by_rid if r not in want]
        ok = not split and not missing and not unexpected and len(users) == n_req
        C[name] = Criterion(name, ok, {"user_accounts": len(users), "split": split, "missing": missing, "unexpected": unexpected},
                           "" if ok else "user accounts do not match the submitted requests one to one"
                           + (f" (split identities: {sorted(split)[:3]})" if split else ""))
    open_users = sorted(u for u in users if u not in closed)
    C["requests_completed"] = Criterion("requests_completed", bool(users) and not open_users, {"closed": len(users) - len(open_users), "open": open_users[:10]},
                                        "" if users and not open_users else (f"accounts never closed: {open_users[:5]}" if users else "no user accounts"))
    if delta_req is None:
        C["all_budgets<=delta_req"] = Criterion("all_budgets<=delta_req", False, None, "the open record declares no delta_req")
    else:
        over = {u: f"{s.numerator}/{s.denominator}" for u, s in spent.items() if s > delta_req}
        worst = max(spent.values(), default=Fraction(0))
        C["all_budgets<=delta_req"] = Criterion("all_budgets<=delta_req", bool(spent) and not over, {"max_spent": f"{worst.numerator}/{worst.denominator}", "over": over},
                                                "" if spent and not over else (f"over budget: {over}" if over else "no write events"))
    _zero(C, "foreign_reads==0", tot["n_read_foreign_unattributed"], {"attributed_to_writer": tot["n_read_foreign_attributed"]})
    _zero(C, "read_unwritten==0", tot["n_read_unwritten"])
    _zero(C, "read_out_of_generation==0", tot["n_read_out_of_generation"])
    _zero(C, "served_over_radius==0", tot["n_served_over_radius"], {"restorations": restorations})
    nc = tot["n_read_not_certified"]
    C["reads_certified_bytes"] = Criterion("reads_certified_bytes", nc == 0, nc, "reading missing" if nc is None else
                                           ("" if nc == 0 else f"{nc} reads saw values other than the certified bytes"))
    _zero(C, "identity_fail_closed==0", fail_closed)
    ok_r = live_rewrites == 0 and unsafe_allocs == 0
    C["reuse_invalidated"] = Criterion("reuse_invalidated", ok_r, {"live_slots_rewritten": live_rewrites, "reused_blocks_not_invalidated": unsafe_allocs},
                                       "" if ok_r else "a block was reused without invalidation")
    disj = (header.get("pool") or {}).get("namespaces_disjoint")
    C["pool_namespaces_disjoint"] = Criterion("pool_namespaces_disjoint", disj is True, disj, "" if disj is True else "pool families share one identity map (or the reading is missing)")
    C["eprocess_has_factors"] = Criterion("eprocess_has_factors", ep_global_n > 0 and not ep_bad, {"global_factors": ep_global_n, "inconsistent": ep_bad[:5]},
                                          "; ".join(ep_bad[:3]) if ep_bad else ("" if ep_global_n > 0 else "no e-process factors"))
    C["eprocess_not_crossed"] = Criterion("eprocess_not_crossed", bool(recs) and not alarms, alarms[:10], "" if not alarms else f"alarm: {', '.join(alarms[:3])} crossed ln(1/delta_e)")
    unread = sorted(u for u in users if reads.get(u, {}).get("n_reads", 0) <= 0)
    C["read_checks_present"] = Criterion("read_checks_present", bool(users) and not unread, {"reads": tot["n_reads"], "unread_accounts": unread[:10]},
                                         "" if users and not unread else "an account was never read")
    rm = header.get("read_meter")
    if isinstance(rm, dict):
        _attention_criteria(C, rm, [str(o.get("rid")) for o in users.values()], attention, mismatches)
    not_eval = {} if key is not None else {"journal_signature": UNSIGNED_NOTE}
    return GateVerdict(str(d), C, tuple(problems), not_eval)


def _attention_criteria(C: dict[str, Criterion], rm: dict[str, Any], rids: list[str], attention: dict[str, dict[str, Any]],
                        mismatches: list[dict[str, Any]]) -> None:
    """The read meter's criteria (journals whose ``open`` record declares one): every user request
    has an ``attention`` record with a bound for every metered layer; no ``audit_mismatch``; no
    row's realized TV above its bound (with the exact side pool)."""
    layers = rm.get("metered_layers")
    n = len(layers) if isinstance(layers, list) else None
    bad = [r for r in rids if not (isinstance((attention.get(r) or {}).get("bound_max_per_layer"), list)
                                   and len(attention[r]["bound_max_per_layer"]) == n
                                   and all(isinstance(x, (int, float)) and 0 <= x <= 1 for x in attention[r]["bound_max_per_layer"]))]
    ok = n is not None and bool(rids) and not bad
    C["attention_bound_every_request"] = Criterion(
        "attention_bound_every_request", ok, {"requests": len(rids), "layers": n, "missing": bad[:10]},
        "" if ok else f"requests without a live bound for every metered layer: {bad[:5]}")
    _zero(C, "kernel_audit_mismatches==0", len(mismatches),
          {"audited_rows": sum(int((a.get("audit") or {}).get("rows", 0)) for a in attention.values()),
           "first": mismatches[:3]})
    if rm.get("exact_side_pool"):
        beaten = [a.get("bound_beaten") for a in attention.values()]
        _zero(C, "live_bound_not_beaten", None if any(not isinstance(x, int) for x in beaten) else sum(beaten))


def failing(rep: GateVerdict) -> list[str]:
    """Names of the failed criteria."""
    return [k for k, c in rep.criteria.items() if not c.ok]


def run_gate(d: Path, write: bool = True, key: VerifyKey | None = None) -> GateVerdict:
    """:func:`evaluate` and, with ``write``, store the report as ``gate.json``
    (:func:`witprobe.safe_output.write_into`: never over a file witprobe did not write)."""
    from witprobe.safe_output import check_into, write_into

    if write:
        check_into(d, [GATE_FILE])
    rep = evaluate(d, key)
    if write:
        write_into(d, GATE_FILE, json.dumps(rep.as_dict(), indent=1, default=str) + "\n", "witprobe.ledger live")
    return rep
