"""A rank's ledger record re-derived from its journal alone (the primary record).

:func:`derive_rank` verifies a journal (:func:`~witprobe.ledger.journal.verify`: chain, hashes,
budget arithmetic) and folds its records into a :class:`RankDerived`: per account the write-side
totals, the exact spend, the read tallies and the e-process path, plus the rank's identity
counters, pool geometry and read-check count. The gate decides every criterion from these values
and compares the per-rank JSON summaries (caches) with them (:func:`compare_summary`).

Record kinds read here (all bodies carry ``rank``; every count is a nonnegative integer):

================== ==================================================================================
``open``           header: ``delta_req`` (``num/den``), ``rank``, ``eprocess: {kappa, delta_e}``
``account_open``   ``uid``, ``rid`` (``None`` for warmup), ``kind`` (``user`` | ``warmup``)
``pool``           ``namespaces_disjoint`` (bool), ``invalidate_on_reuse`` (bool), ``families``
``write``          ``uid``, ``counter`` (``None``: deterministic), ``delta``, ``n_entries``,
                   ``n_authorized``, ``n_violations``, ``n_live_rewritten``, ``n_no_randomness``,
                   ``ep_n``, ``ep_sum``, ``ep_max`` (:class:`~witprobe.ledger.eprocess.FactorSummary`)
``reads``          ``uid`` and every field of :class:`~witprobe.ledger.slots.ReadTally`
``fail_closed``    ``n_entries`` written exact because the batch could not be attributed
``identity_fallback`` ``n_rows`` identified only by the sequence-length fallback
``account_close``  ``uid``, ``draw_digest`` and totals (checked by ``verify``)
``pool_stats``     per family: ``evictions``, ``reuses``, ``prefix_hits``, ... (end of run)
``close``          clean shutdown
================== ==================================================================================

A record of any other kind is ignored (forward compatible); a ``write`` or ``reads`` record for
a uid no ``account_open`` opened is counted in ``unopened_uids`` (the gate fails on it). The
e-processes are folded in journal order with
:meth:`~witprobe.ledger.eprocess.EProcess.add_summary` (exact, see :mod:`~witprobe.ledger.eprocess`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from witprobe.calculus.rounding import fraction_text
from witprobe.ledger.eprocess import EProcess, FactorSummary
from witprobe.ledger.journal import VerifyResult, connect, parse_body, verify
from witprobe.ledger.slots import ReadTally

if TYPE_CHECKING:
    from witprobe.signing import VerifyKey

_TALLY = tuple(f.name for f in fields(ReadTally))


class DeriveError(ValueError):
    """A journal record lacks a field the ledger needs (the message names record and field)."""


@dataclass
class AccountDerived:
    """One account as its journal records add up (field names as in ``Account.record()``)."""

    uid: int
    kind: str
    rid: str | None
    n_write_events: int = 0
    n_prob_events: int = 0
    n_det_events: int = 0
    delta_spent: Fraction = Fraction(0)
    n_entries_written: int = 0
    n_authorized: int = 0
    n_fallback_exact: int = 0
    n_auth_violations: int = 0
    n_slot_reuses: int = 0
    n_factors_skipped_no_randomness: int = 0
    read: ReadTally = field(default_factory=ReadTally)
    eprocess: EProcess = field(default_factory=EProcess)
    draw_digest: str | None = None
    closed: bool = False

    def write_fields(self) -> dict[str, Any]:
        """The write-side fields replicas must agree on (:data:`~witprobe.ledger.accounts.WRITE_KEYS`)."""
        return {"n_write_events": self.n_write_events, "n_prob_events": self.n_prob_events,
                "n_det_events": self.n_det_events, "delta_spent": fraction_text(self.delta_spent),
                "n_entries_written": self.n_entries_written, "n_authorized": self.n_authorized,
                "n_fallback_exact": self.n_fallback_exact, "n_auth_violations": self.n_auth_violations,
                "draw_digest": self.draw_digest}


@dataclass
class RankDerived:
    """Everything the gate needs from one rank's journal."""

    path: Path
    verified: VerifyResult
    rank: int | None = None
    delta_req: Fraction | None = None
    eprocess_params: dict[str, float] | None = None
    accounts: dict[int, AccountDerived] = field(default_factory=dict)
    global_eprocess: EProcess = field(default_factory=EProcess)
    identity_fail_closed: int = 0
    identity_fail_closed_batches: int = 0
    uid_group_fallbacks: int = 0
    pool: dict[str, Any] | None = None
    pool_stats: dict[str, Any] | None = None
    n_read_checks: int = 0
    n_write_events: int = 0
    unopened_uids: set[int] = field(default_factory=set)
    head_seq: int = 0
    head_hash: str = ""

    def users(self) -> list[AccountDerived]:
        return [a for a in self.accounts.values() if a.kind == "user"]


def _count(body: dict[str, Any], key: str, seq: int) -> int:
    v = body.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise DeriveError(f"record {seq}: {key!r} is {v!r}, not a nonnegative integer")
    return v


def _frac(text: Any, seq: int, key: str) -> Fraction:
    try:
        num, _, den = str(text).partition("/")
        return Fraction(int(num), int(den or 1))
    except (ValueError, ZeroDivisionError):
        raise DeriveError(f"record {seq}: {key!r} is {text!r}, not a fraction") from None


def _rows(path: Path):
    db = connect(path, readonly=True)
    try:
        yield from db.execute("SELECT seq, kind, body, hash FROM journal ORDER BY seq")
    finally:
        db.close()


def derive_rank(path: Path | str, key: VerifyKey | None = None) -> RankDerived:
    """Verify ``path`` (with ``key``: its signed heads too) and fold its records (see the module docstring).

    Raises :class:`DeriveError` when a record the ledger needs lacks a field. When verification
    fails, only the verified prefix is folded (``verified.first_bad`` says where it stopped).
    """
    p = Path(path)
    res = verify(p, key=key)
    out = RankDerived(path=p, verified=res)
    if res.n_records == 0:
        return out
    params: dict[str, float] = {}
    for seq, kind, text, h in _rows(p):
        if seq > res.n_records:  # never fold past the last verified record
            break
        body = parse_body(text, p, seq)
        out.head_seq, out.head_hash = seq, h
        if kind == "open":
            out.rank = body.get("rank")
            out.delta_req = _frac(body["delta_req"], seq, "delta_req") if "delta_req" in body else None
            ep = body.get("eprocess")
            if isinstance(ep, dict) and all(isinstance(ep.get(k), (int, float)) for k in ("kappa", "delta_e")):
                params = {"kappa": float(ep["kappa"]), "delta_e": float(ep["delta_e"])}
                try:
                    out.global_eprocess = EProcess(**params)
                except ValueError as e:
                    raise DeriveError(f"record {seq}: eprocess {e}") from None
                out.eprocess_params = params
        elif kind == "account_open":
            uid = _count(body, "uid", seq)
            kind_a = body.get("kind")
            if kind_a not in ("user", "warmup"):
                raise DeriveError(f"record {seq}: account kind {kind_a!r} is neither user nor warmup")
            if uid in out.accounts:
                raise DeriveError(f"record {seq}: account {uid} opened twice")
            out.accounts[uid] = AccountDerived(uid, kind_a, body.get("rid"), eprocess=EProcess(**params))
        elif kind == "pool":
            out.pool = {k: body.get(k) for k in ("namespaces_disjoint", "invalidate_on_reuse", "families")}
        elif kind == "pool_stats":
            out.pool_stats = body.get("families")
        elif kind == "fail_closed":
            out.identity_fail_closed += _count(body, "n_entries", seq)
            out.identity_fail_closed_batches += 1
        elif kind == "identity_fallback":
            out.uid_group_fallbacks += _count(body, "n_rows", seq)
        elif kind in ("write", "reads", "account_close"):
            uid = _count(body, "uid", seq)
            a = out.accounts.get(uid)
            if a is None:
                out.unopened_uids.add(uid)
                continue
            if kind == "write":
                _fold_write(out, a, body, seq)
            elif kind == "reads":
                t = ReadTally(**{k: _count(body, k, seq) for k in _TALLY})
                a.read.add(t)
                out.n_read_checks += t.n_reads
            else:
                a.closed = True
                a.draw_digest = body.get("draw_digest")
    return out


def _fold_write(out: RankDerived, a: AccountDerived, body: dict[str, Any], seq: int) -> None:
    n = _count(body, "n_entries", seq)
    n_auth = _count(body, "n_authorized", seq)
    out.n_write_events += 1
    a.n_write_events += 1
    a.n_entries_written += n
    a.n_authorized += n_auth
    a.n_fallback_exact += n - n_auth
    a.n_auth_violations += _count(body, "n_violations", seq)
    a.n_slot_reuses += _count(body, "n_live_rewritten", seq)
    a.n_factors_skipped_no_randomness += _count(body, "n_no_randomness", seq)
    if body.get("counter") is None:
        a.n_det_events += 1
    else:
        a.n_prob_events += 1
        a.delta_spent += _frac(body.get("delta"), seq, "delta")
    k = _count(body, "ep_n", seq)
    s = FactorSummary(k, body.get("ep_sum"), body.get("ep_max"))
    try:
        a.eprocess.add_summary(s)
        out.global_eprocess.add_summary(s)
    except ValueError as e:
        raise DeriveError(f"record {seq}: {e}") from None


# --- the cache against the record ---------------------------------------------------------------


def _close(x: Any, y: Any) -> bool:
    """Float readings: equal up to 1e-12 relative (both ``None`` counts as equal)."""
    if x is None or y is None:
        return x is None and y is None
    if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
        return False
    return abs(x - y) <= 1e-12 * max(1.0, abs(x), abs(y))


def _eproc_diffs(where: str, cached: Any, e: EProcess) -> list[str]:
    if not isinstance(cached, dict):
        return [f"{where}: e-process record missing"]
    out = []
    if cached.get("n_factors") != e.n_factors:
        out.append(f"{where}: e-process n_factors {cached.get('n_factors')!r}, journal {e.n_factors}")
    if cached.get("crossed") is not e.crossed:
        out.append(f"{where}: e-process crossed {cached.get('crossed')!r}, journal {e.crossed}")
    for k, v in (("log_M", e.log_m), ("log_M_max", e.log_m_max)):
        if not _close(cached.get(k), v):
            out.append(f"{where}: e-process {k} {cached.get(k)!r}, journal {v!r}")
    return out


def compare_summary(snap: dict[str, Any], d: RankDerived) -> list[str]:
    """Every disagreement between a rank's JSON summary and its journal (empty: they agree)."""
    diffs: list[str] = []
    r = d.rank
    if snap.get("rank") != r:
        diffs.append(f"rank {snap.get('rank')!r} in the summary, {r!r} in the journal")
    cached = {}
    for a in snap.get("accounts") or []:
        uid = a.get("uid") if isinstance(a, dict) else None
        if uid in cached:
            diffs.append(f"uid {uid} appears twice in the summary")
        cached[uid] = a
    for uid in sorted(set(cached) | set(d.accounts), key=str):
        c, j = cached.get(uid), d.accounts.get(uid)
        if c is None or j is None:
            diffs.append(f"uid {uid}: only in the {'journal' if c is None else 'summary'}")
            continue
        want: dict[str, Any] = {"kind": j.kind, "rid": j.rid, **j.write_fields(), "n_slot_reuses": j.n_slot_reuses,
                                "n_factors_skipped_no_randomness": j.n_factors_skipped_no_randomness}
        bad = [k for k, v in want.items() if c.get(k) != v]
        rd = c.get("read") if isinstance(c.get("read"), dict) else {}
        bad += [f"read.{k}" for k in _TALLY if rd.get(k) != getattr(j.read, k)]
        if bad:
            diffs.append(f"uid {uid}: {', '.join(bad)} differ from the journal")
        diffs += _eproc_diffs(f"uid {uid}", c.get("eprocess"), j.eprocess)
    diffs += _eproc_diffs("global", snap.get("eprocess_global"), d.global_eprocess)
    ident = snap.get("identity") if isinstance(snap.get("identity"), dict) else {}
    for k, v in (("identity_fail_closed", d.identity_fail_closed), ("uid_group_fallbacks", d.uid_group_fallbacks),
                 ("identity_fail_closed_batches", d.identity_fail_closed_batches)):
        if ident.get(k) != v:
            diffs.append(f"identity.{k} {ident.get(k)!r}, journal {v}")
    pool = snap.get("pool") if isinstance(snap.get("pool"), dict) else {}
    for k in ("namespaces_disjoint", "invalidate_on_reuse"):
        if d.pool is None or pool.get(k) != d.pool.get(k):
            diffs.append(f"pool.{k} {pool.get(k)!r}, journal {None if d.pool is None else d.pool.get(k)!r}")
    if d.pool_stats is not None and pool.get("families") != d.pool_stats:
        diffs.append("pool.families (evictions, reuses, ...) differ from the journal's pool_stats")
    for k, v in (("n_read_checks", d.n_read_checks), ("n_write_events", d.n_write_events)):
        if snap.get(k) != v:
            diffs.append(f"{k} {snap.get(k)!r}, journal {v}")
    jr = snap.get("journal") if isinstance(snap.get("journal"), dict) else {}
    if jr.get("head_seq") != d.head_seq or jr.get("head_hash") != d.head_hash:
        diffs.append(f"journal head {jr.get('head_seq')!r}/{str(jr.get('head_hash'))[:12]} in the summary, "
                     f"{d.head_seq}/{d.head_hash[:12]} in the journal")
    return diffs
