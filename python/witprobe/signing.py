"""Ed25519 keys and detached signatures: who produced a set of bytes (never whether they are true).

A witprobe signing key is an Ed25519 key pair (RFC 8032) kept in two PEM files:

- ``witprobe-signing.key``: the private key (PKCS #8, unencrypted), mode 0600. It stays outside
  every output directory; a command that signs refuses a key inside the directory it writes.
- ``witprobe-signing.pub``: the public key (SubjectPublicKeyInfo), what a verifier holds.

A key is named by its **key id**: the SHA-256 (hex) of the 32 raw public-key bytes. A signature
is the 64-byte Ed25519 signature of a byte string, written as standard base64 (88 characters).
What is signed is always a *statement*: the canonical JSON (sorted keys, compact, ASCII) of a
small object that names its own schema, so a signature made for one kind of statement never
verifies as another.

A valid signature proves that the holder of the private key signed exactly these bytes. It proves
nothing about the measurement, the model or the machine the bytes describe (docs/SIGNING.md).

Cryptography is the ``cryptography`` package's (OpenSSL); nothing here is hand-written crypto.
A key file that is missing, unreadable, not PEM, or not Ed25519 is an
:class:`~witprobe.cliutil.InputError` (every command line: one ``error:`` line, exit 2).
"""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from witprobe.cliutil import InputError, UsageError, read_bytes_capped

PRIVATE_FILE = "witprobe-signing.key"
PUBLIC_FILE = "witprobe-signing.pub"
ALGORITHM = "Ed25519"
MAX_KEY_BYTES = 16 * 1024
"""The largest key file read (an Ed25519 PEM file is about 120 bytes)."""


@dataclass(frozen=True)
class VerifyKey:
    """An Ed25519 public key and its key id (hex SHA-256 of the 32 raw public-key bytes)."""

    public: Ed25519PublicKey
    key_id: str

    def verify(self, data: bytes, signature: str) -> bool:
        """Whether ``signature`` (base64 of 64 bytes) is this key's Ed25519 signature of ``data``."""
        try:
            raw = base64.b64decode(signature, validate=True)
        except (binascii.Error, ValueError, TypeError):
            return False
        if len(raw) != 64:
            return False
        try:
            self.public.verify(raw, data)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 private key, with its public half (:class:`VerifyKey`)."""

    private: Ed25519PrivateKey
    verify_key: VerifyKey

    @property
    def key_id(self) -> str:
        return self.verify_key.key_id

    def sign(self, data: bytes) -> str:
        """The Ed25519 signature of ``data``, base64 (standard alphabet, padded)."""
        return base64.b64encode(self.private.sign(data)).decode("ascii")


def statement_bytes(statement: dict[str, Any]) -> bytes:
    """The bytes that are signed: canonical JSON of ``statement`` (sorted keys, compact, ASCII)."""
    return json.dumps(statement, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def _key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def _verify_key(public: Ed25519PublicKey) -> VerifyKey:
    return VerifyKey(public, _key_id(public))


def load_public(path: Path | str) -> VerifyKey:
    """The public key in ``path`` (PEM SubjectPublicKeyInfo; a private key file is accepted too,
    its public half is used); :class:`InputError` naming the file otherwise."""
    data = read_bytes_capped(path, MAX_KEY_BYTES)
    if b"PRIVATE KEY" in data:
        return load_private(path).verify_key
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as e:
        raise InputError(path, "", f"not a PEM public key ({_first_line(e)})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise InputError(path, "", f"a {type(key).__name__.lstrip('_')}, not an {ALGORITHM} public key")
    return _verify_key(key)


def load_private(path: Path | str) -> SigningKey:
    """The private key in ``path`` (PEM PKCS #8, unencrypted); :class:`InputError` naming the file
    when it is unreadable, not an Ed25519 private key, or readable by other users (mode & 077:
    a signing key others can read signs for them too)."""
    data = read_bytes_capped(path, MAX_KEY_BYTES)
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise InputError(path, "", f"cannot be read ({e.strerror or e})") from None
    if stat.S_IMODE(mode) & 0o077:
        raise InputError(path, "", f"is readable by other users (mode {stat.S_IMODE(mode):04o}); "
                                   f"a private key must be 0600: chmod 600 {path}")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise InputError(path, "", "is encrypted; witprobe reads unencrypted PKCS #8 keys (keygen writes one)") from None
    except (ValueError, UnsupportedAlgorithm) as e:
        raise InputError(path, "", f"not a PEM private key ({_first_line(e)})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError(path, "", f"a {type(key).__name__.lstrip('_')}, not an {ALGORITHM} private key")
    return SigningKey(key, _verify_key(key.public_key()))


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def check_outside(key_path: Path | str, out: Path | str) -> None:
    """:class:`UsageError` when the private key ``key_path`` lies inside the output ``out`` (a key
    there would be published with the output, or removed by ``--force``)."""
    k = Path(os.path.realpath(key_path))
    o = Path(os.path.realpath(out))
    if k == o or o in k.parents:
        raise UsageError(f"the signing key {key_path} lies inside the output {out}; keep it outside")


def generate(out: Path | str) -> tuple[Path, Path]:
    """Generate a key pair into directory ``out`` (created 0700 if missing): :data:`PRIVATE_FILE`
    (0600) and :data:`PUBLIC_FILE` (0644 less the umask). Each file is written to a fresh
    ``mkstemp`` file and hard-linked into place, so an existing file is never replaced
    (:class:`UsageError`, and nothing is written when either file exists)."""
    d = Path(out)
    if os.path.lexists(d) and not d.is_dir():
        raise UsageError(f"cannot write keys into {d}: it is not a directory")
    priv_path, pub_path = d / PRIVATE_FILE, d / PUBLIC_FILE
    for p in (priv_path, pub_path):
        if os.path.lexists(p):
            raise UsageError(f"{p} exists; witprobe never replaces a key (choose another --out)")
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {d}: {e.strerror or e}") from None
    key = Ed25519PrivateKey.generate()
    priv = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    umask = os.umask(0)
    os.umask(umask)
    _link_new(priv_path, priv, 0o600)
    try:
        _link_new(pub_path, pub, 0o644 & ~umask)
    except BaseException:
        os.unlink(priv_path)  # the private key written a moment ago, by this call
        raise
    return priv_path, pub_path


def _link_new(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a fresh ``mkstemp`` file beside ``path`` (0600), set ``mode``, then
    ``link`` it to ``path`` (fails if ``path`` exists: never replaces)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise UsageError(f"{path} exists; witprobe never replaces a key") from None
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV):
                raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
            fd2 = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
            with os.fdopen(fd2, "wb") as f:  # no hard links on this file system: O_EXCL create
                f.write(data)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
