"""The durable journal: append-only, hash-chained, in SQLite (WAL).

Every ledger event is one row ``(seq, kind, body, prev, hash)`` with ``body`` canonical JSON
(sorted keys, no spaces) and ``hash = sha256(seq | kind | body | prev)`` (fields joined by the
unit separator ``0x1f``); ``prev`` is the hash of record ``seq - 1`` (64 zeros for the first).
Triggers refuse ``UPDATE`` and ``DELETE``.

Durability: an event is *committed* when :meth:`Journal.append_many` returns. The journal runs
in WAL mode; ``synchronous=NORMAL`` (default) survives the writing process being killed at any
instant (the WAL is in the OS page cache once a commit returns); ``synchronous=FULL`` also
survives power loss, at the price of one fsync per commit.

:func:`verify` accepts a journal or names its first bad record: a broken chain, a wrong hash, a
gap in ``seq``, a body that is not canonical JSON, or a ledger record whose arithmetic is wrong
(a write event whose ``delta`` is not ``delta_req / ((k+1)(k+2))`` for the account's counter
``k``, a counter that skips, a spend above ``delta_req``, an ``account_close`` whose totals differ
from what the account's ``write`` and ``reads`` records add up to, or a record for an account after
its close). A flipped byte in a record changes its
hash; a flipped byte in SQLite's own structures makes the database unreadable, which is reported
as such. A journal without a ``close`` record was not shut down cleanly (a crash): it is still
valid up to its last committed record, and ``verify`` says so.

A hash chain is evidence only against someone who cannot write the file: anyone who can may edit a
record and recompute every hash after it. A journal opened with a signing key
(:class:`~witprobe.signing.SigningKey`) also carries ``signed_head`` records
(:mod:`witprobe.ledger.signed_head`), one after ``close`` and one per :meth:`Journal.checkpoint`;
``verify(path, key=...)`` then requires each to verify under the public key and the journal to end
with one, and ``verify(path, expect=...)`` compares the journal with a head a client holds
(truncation, re-chaining). Without a key, ``verify`` checks the signed heads against the chain only
and says that the journal is only hash-chained.

This module imports no torch, so a writer process can start in milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from witprobe.cliutil import InputError
from witprobe.ledger.signed_head import RECORD_KIND as SIGNED_HEAD, SignedHead, from_json, sign_head

if TYPE_CHECKING:
    from witprobe.signing import SigningKey, VerifyKey

FORMAT = "witprobe-ledger-journal/1"
GENESIS = "0" * 64
SEP = "\x1f"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS journal_no_update BEFORE UPDATE ON journal
BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END;
CREATE TRIGGER IF NOT EXISTS journal_no_delete BEFORE DELETE ON journal
BEGIN SELECT RAISE(ABORT, 'the journal is append-only'); END;
"""


def connect(path: Path | str, *, readonly: bool = False, **kwargs: Any) -> sqlite3.Connection:
    """Open the SQLite file at ``path``, a plain path and never a URI: ``audit%41.sqlite`` is that
    file (not ``auditA.sqlite``) and ``run#1/journal.sqlite`` is in ``run#1/``. Read-only opens go
    through a ``file:`` URI built from the percent-encoded absolute path (``mode=ro``), unless a
    ``-wal`` file beside it needs a writable connection to be read; other opens use the absolute
    path (which never starts with ``file:``)."""
    p = Path(path).absolute()
    if readonly and not Path(str(p) + "-wal").exists():
        return sqlite3.connect("file:" + urllib.parse.quote(str(p)) + "?mode=ro", uri=True, **kwargs)
    return sqlite3.connect(str(p), **kwargs)


def parse_body(body: str, path: Path | str, seq: Any) -> dict[str, Any]:
    """A record body: a JSON object within the readers' limits (:func:`witprobe.cliutil.loads_bounded`);
    :class:`witprobe.cliutil.InputError` naming the journal and the record otherwise."""
    from witprobe.cliutil import loads_bounded

    v = loads_bounded(body, path, f"record {seq}")
    if not isinstance(v, dict):
        raise InputError(path, f"record {seq}", f"the body is a JSON {type(v).__name__}, not an object")
    return v


class JournalError(RuntimeError):
    """The journal cannot be opened or appended to (the message says why)."""


def canonical(body: dict[str, Any]) -> str:
    """Canonical JSON of a record body (sorted keys, compact, ASCII)."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def record_hash(seq: int, kind: str, body: str, prev: str) -> str:
    return hashlib.sha256(f"{seq}{SEP}{kind}{SEP}{body}{SEP}{prev}".encode()).hexdigest()


class Journal:
    """Append-only hash-chained journal. Thread-safe: appends are serialized by one lock.

    With ``signer``, :meth:`close` appends a signed head of the whole journal after the ``close``
    record, :meth:`checkpoint` appends one on demand, and :meth:`signed_head` signs the current
    head for a client (module docstring)."""

    def __init__(self, path: Path | str, *, synchronous: str = "NORMAL", header: dict[str, Any] | None = None,
                 signer: SigningKey | None = None) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise JournalError(f"synchronous must be NORMAL or FULL, got {synchronous!r}")
        self.path = Path(path)
        self.signer = signer
        self._lock = threading.RLock()
        try:
            self._db = connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1").fetchone()
        except sqlite3.DatabaseError as e:
            raise JournalError(f"cannot open journal {self.path}: {e}") from None
        self._seq, self._head = (row[0], row[1]) if row else (0, GENESIS)
        if row is None:
            self.append("open", {"format": FORMAT, **(header or {})})
        self.closed = False

    @property
    def head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the last committed record."""
        return self._seq, self._head

    def append(self, kind: str, body: dict[str, Any]) -> int:
        return self.append_many([(kind, body)])[-1]

    def append_many(self, records: Iterable[tuple[str, dict[str, Any]]]) -> list[int]:
        """Append records in one transaction; returns their seqs once committed."""
        rows = []
        with self._lock:
            seq, head = self._seq, self._head
            for kind, body in records:
                if not isinstance(kind, str) or not kind:
                    raise JournalError(f"record kind must be a nonempty string, got {kind!r}")
                text = canonical(body)
                seq += 1
                h = record_hash(seq, kind, text, head)
                rows.append((seq, kind, text, head, h))
                head = h
            if not rows:
                return []
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT INTO journal(seq, kind, body, prev, hash) VALUES (?,?,?,?,?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._seq, self._head = seq, head
        return [r[0] for r in rows]

    def signed_head(self) -> SignedHead | None:
        """The last committed record's ``(seq, hash)`` signed now (None without a signer)."""
        if self.signer is None:
            return None
        seq, head = self.head
        return sign_head(self.signer, seq, head)

    def checkpoint(self) -> int | None:
        """Append a ``signed_head`` record signing every record before it; returns its seq
        (None without a signer)."""
        if self.signer is None:
            return None
        with self._lock:  # no append may slip between the head signed and the record that carries it
            seq, head = self.head
            return self.append(SIGNED_HEAD, sign_head(self.signer, seq, head).as_dict())

    def close(self, summary: dict[str, Any] | None = None) -> None:
        """Append the ``close`` record (and, with a signer, the signed head after it), checkpoint
        the WAL into the database file, and close."""
        if self.closed:
            return
        self.append("close", summary or {})
        self.checkpoint()
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.close()
            self.closed = True


@dataclass
class VerifyResult:
    """Outcome of :func:`verify`. ``first_bad`` is the seq of the first bad record (or None)."""

    ok: bool
    n_records: int = 0
    first_bad: int | None = None
    reason: str = ""
    head: str = GENESIS
    closed: bool = False
    notes: list[str] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)
    signature: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``ok`` (valid and closed), ``unclosed`` (valid, no close record) or ``bad``."""
        return "bad" if not self.ok else ("ok" if self.closed else "unclosed")

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "ok": self.status == "ok",
            "valid": self.ok, "n_records": self.n_records, "first_bad": self.first_bad, "reason": self.reason,
            "head": self.head, "closed": self.closed, "notes": self.notes, "totals": self.totals,
            "signature": self.signature,
        }


class _Semantics:
    """Re-derives per-account budgets from write events (the ledger's arithmetic, exactly)."""

    def __init__(self) -> None:
        self.delta_req: Fraction | None = None
        self.counter: dict[str, int] = {}
        self.spent: dict[str, Fraction] = {}
        self.writes: dict[str, int] = {}
        self.reads: dict[str, int] = {}
        self.closed: set[str] = set()
        self.n_events = 0

    def check(self, kind: str, body: dict[str, Any]) -> str | None:
        if kind == "open":
            if body.get("format") != FORMAT:
                return f"unknown journal format {body.get('format')!r}"
            if "delta_req" in body:
                self.delta_req = _frac(body["delta_req"])
            return None
        acct = f"{body.get('rank', 0)}:{body.get('uid')}"
        if kind in ("write", "reads") and acct in self.closed:
            return f"account {acct}: {kind} record after its account_close"
        if kind == "reads":
            n = body.get("n_reads")
            if not isinstance(n, int) or n < 0:
                return f"account {acct}: read summary without a valid n_reads"
            self.reads[acct] = self.reads.get(acct, 0) + n
            return None
        if kind == "account_close":
            return self._close(acct, body)
        if kind != "write":
            return None
        self.n_events += 1
        self.writes[acct] = self.writes.get(acct, 0) + 1
        k = body.get("counter")
        if k is None:  # deterministic event: spends 0
            return None if _frac(body.get("delta", "0/1")) == 0 else "deterministic write event with nonzero delta"
        expect = self.counter.get(acct, 0)
        if k != expect:
            return f"account {acct}: counter {k} where {expect} was due (skipped or repeated event)"
        if self.delta_req is None:
            return "write event before the open record declared delta_req"
        d = _frac(body["delta"])
        want = self.delta_req / ((k + 1) * (k + 2))
        if d != want:
            return f"account {acct}: delta {d} at counter {k}, expected {want}"
        self.counter[acct] = k + 1
        self.spent[acct] = self.spent.get(acct, Fraction(0)) + d
        if self.spent[acct] > self.delta_req:
            return f"account {acct}: spend {self.spent[acct]} exceeds delta_req {self.delta_req}"
        if "spent" in body and _frac(body["spent"]) != self.spent[acct]:
            return f"account {acct}: recorded spend {body['spent']} differs from the re-derived {self.spent[acct]}"
        return None

    def _close(self, acct: str, body: dict[str, Any]) -> str | None:
        """An account's closing record must equal what its write and read records add up to."""
        self.closed.add(acct)
        want = {
            "n_write_events": self.writes.get(acct, 0),
            "n_prob_events": self.counter.get(acct, 0),
            "delta_spent": self.spent.get(acct, Fraction(0)),
            "n_reads": self.reads.get(acct, 0),
        }
        got = dict(body)
        got["delta_spent"] = _frac(body.get("delta_spent", "-1/1"))
        diff = [k for k, v in want.items() if got.get(k) != v]
        if diff:
            return f"account {acct}: account_close disagrees with its records on {diff}"
        return None


def _frac(text: str) -> Fraction:
    num, _, den = str(text).partition("/")
    return Fraction(int(num), int(den or 1))


UNSIGNED_NOTE = ("hash-chained only: anyone who can write the journal can edit a record and re-chain every hash "
                 "after it; pass a public key (--key) to require signed heads")


def verify(path: Path | str, key: VerifyKey | None = None, expect: SignedHead | None = None) -> VerifyResult:
    """Check the chain, hashes, seq continuity, canonical bodies and ledger arithmetic; every
    ``signed_head`` record against the chain; with ``key`` every signed head's signature and that
    the journal ends with one; with ``expect`` that record ``expect.n_records`` exists and has
    hash ``expect.head`` (and, with ``key``, that ``expect`` is signed by it)."""
    p = Path(path)
    if not p.is_file():
        return VerifyResult(ok=False, reason=f"{p}: no such journal file")
    res = VerifyResult(ok=True)
    sem = _Semantics()
    heads = _Heads(key, expect)
    prev_hash = GENESIS
    try:
        db = connect(p, readonly=True)
        try:
            cur = db.execute("SELECT seq, kind, body, prev, hash FROM journal ORDER BY seq")
            prev_hash, due = GENESIS, 1
            for seq, kind, body, prev, h in cur:
                bad = _check_record(seq, kind, body, prev, h, due, prev_hash, p)
                if bad is None:
                    try:
                        parsed = parse_body(body, p, seq)
                        bad = sem.check(kind, parsed)
                        if bad is None and kind == SIGNED_HEAD:
                            bad = heads.record(seq, prev, parsed, p)
                    except (ValueError, KeyError, TypeError, ZeroDivisionError, OverflowError) as e:
                        bad = f"record body does not parse as a ledger record: {e}"
                    except InputError as e:
                        bad = f"signed head: {e.problem}"
                if bad is None and seq == 1 and kind == "open" and SEGMENT_LINK in parsed:
                    bad = _check_link(parsed[SEGMENT_LINK], p)
                    if bad is None:
                        res.notes.append(f"a segment: record 1 chains to {parsed[SEGMENT_LINK]['file']} at record "
                                         f"{parsed[SEGMENT_LINK]['n_records']}, which verifies")
                if bad is not None:
                    res.ok, res.first_bad, res.reason, res.head = False, seq, bad, prev_hash
                    return res
                heads.seen(seq, h)
                res.n_records = seq
                res.closed = kind == "close" or (kind == SIGNED_HEAD and res.closed)
                prev_hash, due = h, seq + 1
            res.head = prev_hash
        finally:
            db.close()
    except sqlite3.DatabaseError as e:
        res.ok = False
        res.first_bad = res.n_records + 1
        res.head = prev_hash
        res.reason = f"the SQLite file is unreadable after record {res.n_records}: {e}"
        return res
    if res.n_records == 0:
        res.ok, res.reason = False, "empty journal (no open record)"
        return res
    heads.finish(res)
    if not res.ok:
        return res
    if not res.closed:
        res.notes.append("no close record: the writer did not shut down cleanly; valid up to the last committed record")
    res.totals = {"write_events": sem.n_events, "accounts": len(sem.counter),
                  "spent": {a: f"{s.numerator}/{s.denominator}" for a, s in sorted(sem.spent.items())}}
    return res


class _Heads:
    """The signed-head checks of :func:`verify` (module docstring of :mod:`witprobe.ledger.signed_head`)."""

    def __init__(self, key: VerifyKey | None, expect: SignedHead | None) -> None:
        self.key, self.expect = key, expect
        self.n_signed = 0
        self.last_signed = 0  # seq of the last signed_head record
        self.covered = 0  # records covered by it
        self.last_seq = 0
        self.expect_hash: str | None = None

    def record(self, seq: int, prev: str, body: dict[str, Any], path: Path) -> str | None:
        sh = from_json(body, path, f"record {seq}")
        if not sh.signed:
            return "a signed_head record without a signature"
        if sh.n_records != seq - 1 or sh.head != prev:
            return f"the signed head names record {sh.n_records} and not the record before it ({seq - 1}, hash {prev[:16]})"
        if self.key is not None:
            why = sh.signature_problem(self.key)
            if why is not None:
                return f"signed head: {why}"
        self.n_signed += 1
        self.last_signed, self.covered = seq, sh.n_records
        return None

    def seen(self, seq: int, h: str) -> None:
        self.last_seq = seq
        if self.expect is not None and seq == self.expect.n_records:
            self.expect_hash = h

    def finish(self, res: VerifyResult) -> None:
        """Decide what the whole journal needs: signature coverage (with a key) and the expected head."""
        sig: dict[str, Any] = {"checked": self.key is not None, "signed_heads": self.n_signed}
        if self.key is None:
            sig["note"] = UNSIGNED_NOTE
            res.notes.append(UNSIGNED_NOTE)
        else:
            sig["key_id"] = self.key.key_id
            sig["covered_records"] = self.covered
            if self.n_signed == 0:
                res.ok, res.first_bad = False, 1
                res.reason = "no signed head: the journal was not written with a signing key (or its signed heads were removed)"
            elif self.last_signed != self.last_seq:
                res.ok, res.first_bad = False, self.last_signed + 1
                res.reason = (f"records {self.last_signed + 1} to {self.last_seq} follow the last signed head "
                              "(appended without the key, or the writer stopped before signing)")
        res.signature = sig
        e = self.expect
        if e is None or not res.ok:
            return
        sig["expected_head"] = {"n_records": e.n_records, "head": e.head, "signed": e.signed}
        if self.expect_hash is None:
            res.ok, res.first_bad = False, self.last_seq + 1
            res.reason = (f"truncated: the journal has {self.last_seq} records, shorter than the head a client holds "
                          f"({e.n_records} records)")
        elif self.expect_hash != e.head:
            res.ok, res.first_bad = False, e.n_records
            res.reason = (f"re-chained: record {e.n_records} has hash {self.expect_hash[:16]}..., the head a client holds "
                          f"says {e.head[:16]}...")
        elif e.signed and self.key is not None:
            why = e.signature_problem(self.key)
            if why is not None:
                res.ok, res.first_bad = False, e.n_records
                res.reason = f"the head a client holds: {why}"
        elif e.signed:
            res.notes.append("the head a client holds is signed, and its signature was not checked (no --key)")


def _check_record(seq: Any, kind: Any, body: Any, prev: Any, h: Any, expect: int, prev_hash: str,
                  path: Path) -> str | None:
    if seq != expect:
        return f"seq {seq} where {expect} was due (a record is missing or out of order)"
    if not all(isinstance(x, str) for x in (kind, body, prev, h)):
        return "a field has the wrong type"
    if prev != prev_hash:
        return "prev does not equal the hash of the previous record (broken chain)"
    if record_hash(seq, kind, body, prev) != h:
        return "hash does not match the record's content (the record was altered)"
    try:
        if canonical(parse_body(body, path, seq)) != body:
            return "body is not canonical JSON"
    except InputError as e:
        return f"body: {e.problem}"
    return None


SEGMENT_LINK = "previous_segment"
"""The key of a segment's ``open`` record that names the segment before it (:func:`open_segment`)."""


def segment_paths(path: Path | str) -> list[Path]:
    """The segments of the journal ``path`` that exist, in order: ``path`` (``journal.sqlite``), then
    ``journal.2.sqlite``, ``journal.3.sqlite``, ... up to the first that is missing."""
    p = Path(path)
    out, n = [], 1
    while True:
        q = p if n == 1 else p.with_name(f"{p.stem}.{n}{p.suffix}")
        if not q.exists() and not q.is_symlink():
            return out
        out.append(q)
        n += 1


def open_segment(path: Path | str, *, synchronous: str = "NORMAL", header: dict[str, Any] | None = None,
                 signer: SigningKey | None = None) -> Journal:
    """The journal a (re)starting writer appends to, never an existing file.

    Without a journal at ``path``, a new one there. Otherwise, a writer restarting after a crash or
    a shutdown: a new segment file (:func:`segment_paths`: the next ``NAME.N.sqlite``) whose ``open``
    record carries ``previous_segment = {file, n_records, head, status, reason}``: the last
    segment's *verified prefix* (all of it when :func:`verify` accepts it; else the records before
    the first bad one) and how that segment ended (``ok``, ``unclosed`` or ``bad``). The earlier
    segments are never opened for writing, so what they committed stays valid; :func:`verify` of a
    segment checks the link (the named record of the file beside it still has that hash)."""
    p = Path(path)
    segs = segment_paths(p)
    if not segs:
        return Journal(p, synchronous=synchronous, header=header, signer=signer)
    last = segs[-1]
    if last.is_symlink() or not last.is_file():
        raise JournalError(f"cannot open a segment after {last}: it is not a regular file")
    res = verify(last)
    link = {"file": last.name, "n_records": res.n_records, "head": res.head, "status": res.status,
            "reason": res.reason}
    nxt = p.with_name(f"{p.stem}.{len(segs) + 1}{p.suffix}")
    return Journal(nxt, synchronous=synchronous, header={**(header or {}), SEGMENT_LINK: link}, signer=signer)


def _check_link(link: Any, path: Path) -> str | None:
    """``None`` when the segment before ``path`` (named by ``link``) has ``link['head']`` as the hash of
    record ``link['n_records']`` and its records up to there verify; else why not."""
    if not isinstance(link, dict) or not isinstance(link.get("file"), str) or not isinstance(link.get("head"), str) \
            or isinstance(link.get("n_records"), bool) or not isinstance(link.get("n_records"), int):
        return "previous_segment must be {file, n_records, head, ...}"
    name = link["file"]
    if Path(name).name != name or name in ("", ".", ".."):
        return f"previous_segment names {name!r}, not a file beside this one"
    prev = path.with_name(name)
    if not prev.is_file():
        return f"previous_segment {name} is missing"
    res = verify(prev)
    if res.n_records < link["n_records"] or (res.n_records == link["n_records"] and res.head != link["head"]):
        return (f"previous_segment {name}: its verified records ({res.n_records}, head {res.head[:16]}) are not the "
                f"{link['n_records']} records, head {link['head'][:16]}, that this segment chains to")
    if res.n_records > link["n_records"]:
        db = connect(prev, readonly=True)
        try:
            row = db.execute("SELECT hash FROM journal WHERE seq = ?", (link["n_records"],)).fetchone()
        finally:
            db.close()
        if (row[0] if row else GENESIS) != link["head"]:
            return f"previous_segment {name}: record {link['n_records']} no longer has the hash this segment chains to"
    return None


def read_records(path: Path | str, kinds: tuple[str, ...] | None = None) -> list[tuple[int, str, dict[str, Any]]]:
    """All records ``(seq, kind, body)`` (optionally of some kinds), for reports and tests."""
    db = connect(path, readonly=True)
    try:
        rows = db.execute("SELECT seq, kind, body FROM journal ORDER BY seq").fetchall()
    finally:
        db.close()
    return [(s, k, parse_body(b, path, s)) for s, k, b in rows if kinds is None or k in kinds]
