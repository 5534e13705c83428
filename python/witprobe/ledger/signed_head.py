"""Signed heads of the journal: a record count and the chain's head hash, signed with Ed25519.

The journal alone is a hash chain (:mod:`witprobe.ledger.journal`): anyone who can write the file
can edit a record and recompute every hash after it (*re-chain* it), and the result verifies.
A **signed head** (a checkpoint; the anchor is Certificate Transparency's signed tree head,
RFC 6962 section 3.5, and Sigstore Rekor's checkpoints) is the statement

    {"schema": "witprobe-signed-head/1", "n_records": n, "head": h, "time": t, "key_id": k}

signed by the journal writer's private key (:mod:`witprobe.signing`): ``h`` is the hash of record
``n`` (64 hex digits), ``t`` the UTC time of signing (``YYYY-MM-DDTHH:MM:SSZ``, the signer's
clock: an assertion, not a timestamp anyone witnessed), ``k`` the key id.

Signed heads are used in two places:

- **in the journal**, as ``signed_head`` records whose body is the statement's fields plus
  ``signature``; the writer appends one after its ``close`` record (and wherever
  :meth:`~witprobe.ledger.journal.Journal.checkpoint` is called). Record ``s`` must sign record
  ``s - 1``: ``n_records == s - 1`` and ``head`` equal to the record's own ``prev``. With a key,
  ``verify`` requires every signed head to verify and the journal to end with one, so a re-chained
  journal (every hash changed after the edit) fails without the key to re-sign it;
- **held by a client** (the live server returns one with each response): ``verify
  --expect-head`` requires record ``n`` to exist (else the journal was *truncated*) and its hash
  to equal ``head`` (else it was *re-chained*).

A signature proves that the key's holder signed this head; it says nothing about whether the
ledger's records describe what the server did.
"""

from __future__ import annotations

import re
import time as _time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from witprobe.cliutil import InputError, loads_bounded, read_text_capped
from witprobe.signing import SigningKey, VerifyKey, statement_bytes

SCHEMA = "witprobe-signed-head/1"
RECORD_KIND = "signed_head"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MAX_HEAD_FILE_BYTES = 1 << 20


def utc_now() -> str:
    """The current UTC time, ``YYYY-MM-DDTHH:MM:SSZ``."""
    return _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime())


@dataclass(frozen=True)
class SignedHead:
    """A journal head ``(n_records, head)``, optionally signed (``time``, ``key_id``, ``signature``).

    ``n_records`` counts records (the seq of the record whose hash is ``head``)."""

    n_records: int
    head: str
    time: str | None = None
    key_id: str | None = None
    signature: str | None = None

    @property
    def signed(self) -> bool:
        return self.signature is not None

    def statement(self) -> dict[str, Any]:
        """The object whose canonical JSON is signed (:func:`witprobe.signing.statement_bytes`)."""
        return {"schema": SCHEMA, "n_records": self.n_records, "head": self.head, "time": self.time,
                "key_id": self.key_id}

    def as_dict(self) -> dict[str, Any]:
        """The record body (and the JSON a client stores): the statement's fields and ``signature``."""
        d = {"n_records": self.n_records, "head": self.head}
        if self.signed:
            d.update(time=self.time, key_id=self.key_id, signature=self.signature)
        return d

    def signature_problem(self, key: VerifyKey) -> str | None:
        """Why this head's signature does not verify under ``key`` (None when it does)."""
        if not self.signed:
            return "the head is not signed"
        if self.key_id != key.key_id:
            return f"signed by key {str(self.key_id)[:16]}..., not by the key given ({key.key_id[:16]}...)"
        if not key.verify(statement_bytes(self.statement()), str(self.signature)):
            return "the signature does not verify under the key given (the head or the record was altered)"
        return None


def sign_head(key: SigningKey, n_records: int, head: str, when: str | None = None) -> SignedHead:
    """The head ``(n_records, head)`` signed with ``key`` at ``when`` (default: now, UTC)."""
    unsigned = SignedHead(n_records, head, when or utc_now(), key.key_id)
    return SignedHead(unsigned.n_records, unsigned.head, unsigned.time, unsigned.key_id,
                      key.sign(statement_bytes(unsigned.statement())))


def from_json(obj: Any, path: Path | str, field: str = "") -> SignedHead:
    """A head from JSON: ``{"n_records", "head"[, "time", "key_id", "signature"]}`` (a signed head),
    ``{"seq", "hash"}`` (the server's ``journal_head``), or either inside ``"signed_head"`` (a
    server response); :class:`InputError` naming the field otherwise."""
    if isinstance(obj, dict) and isinstance(obj.get("signed_head"), dict):
        obj, field = obj["signed_head"], f"{field}.signed_head" if field else "signed_head"
    if not isinstance(obj, dict):
        raise InputError(path, field, f"expected a JSON object, found {type(obj).__name__}")
    n, h = (obj.get("n_records"), obj.get("head")) if "n_records" in obj else (obj.get("seq"), obj.get("hash"))
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(path, field, f"the record count {n!r} is not a positive integer")
    if not isinstance(h, str) or not _HEX64.match(h):
        raise InputError(path, field, "the head is not 64 lowercase hex digits")
    sig = obj.get("signature")
    if sig is None:
        return SignedHead(n, h)
    t, k = obj.get("time"), obj.get("key_id")
    if not isinstance(sig, str) or not isinstance(k, str) or not _HEX64.match(k):
        raise InputError(path, field, "a signed head needs a signature string and a 64-hex key_id")
    if not isinstance(t, str) or not _TIME.match(t):
        raise InputError(path, field, f"the time {t!r} is not YYYY-MM-DDTHH:MM:SSZ")
    return SignedHead(n, h, t, k, sig)


def parse_expected(text: str) -> SignedHead:
    """``--expect-head``: a file holding a head's JSON (:func:`from_json`), or ``N:HASH``."""
    m = re.match(r"^(\d{1,18}):([0-9a-f]{64})$", text)
    if m and not Path(text).exists():
        if int(m.group(1)) < 1:
            raise InputError("--expect-head", "", "the record count must be positive")
        return SignedHead(int(m.group(1)), m.group(2))
    data = loads_bounded(read_text_capped(text, MAX_HEAD_FILE_BYTES), text)
    return from_json(data, text)
