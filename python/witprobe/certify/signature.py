"""``signature.json``: a detached Ed25519 signature over a run directory's records.

``certify run --sign KEY`` writes, beside ``run.json`` and ``certificate.json``, the statement

    {"schema": "witprobe-run-signature/1",
     "files": {"run.json": <sha256 hex>, "certificate.json": <sha256 hex>},
     "provenance": {"host", "signed_at" (UTC), "witprobe", "cryptography",
                    "environment" (run.json's: platform, python, torch, transformers, witprobe),
                    "model" (run.json's model.name and model.provenance: weight file hashes where known)},
     "key_id": <sha256 hex of the raw public key>}

and stores it with ``"signature"``: the Ed25519 signature (base64) of the statement's canonical JSON
(:func:`witprobe.signing.statement_bytes`). The obligations files need no entry of their own:
``certificate.json`` records their SHA-256 and ``check`` re-renders them from ``run.json``.

``certify check DIR --key PUB`` recomputes both hashes and verifies the signature
(:func:`check_signature`): a missing, malformed or invalid signature, a file whose hash differs,
or another key's signature is a problem (exit 1). A valid signature proves that the key's holder
signed these bytes and this provenance; it proves nothing about whether the measurement is true
(docs/SIGNING.md).

The file is written inside the run's private build folder (:func:`witprobe.safe_output.new_output_dir`),
so the directory's manifest lists it and ``--force`` may replace it like any file the run wrote.
"""

from __future__ import annotations

import hashlib
import json
import socket
import time
from pathlib import Path
from typing import Any

from witprobe.cliutil import InputError, loads_bounded, read_bytes_capped
from witprobe.signing import ALGORITHM, SigningKey, VerifyKey, statement_bytes

SIGNATURE_FILE = "signature.json"
SCHEMA = "witprobe-run-signature/1"
SIGNED_FILES = ("run.json", "certificate.json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(read_bytes_capped(path)).hexdigest()


def provenance(run_path: Path) -> dict[str, Any]:
    """Where and with what the signature was made, with ``run.json``'s own environment and model
    provenance (copied, so the signature covers them as the signer saw them)."""
    import cryptography

    from witprobe.version import __version__

    run = loads_bounded(read_bytes_capped(run_path), run_path)
    env = run.get("environment") if isinstance(run, dict) else None
    model = run.get("model") if isinstance(run, dict) else None
    return {
        "host": socket.gethostname(),
        "signed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "witprobe": __version__,
        "cryptography": cryptography.__version__,
        "environment": env if isinstance(env, dict) else None,
        "model": {"name": model.get("name"), "provenance": model.get("provenance")} if isinstance(model, dict) else None,
    }


def statement(directory: Path, key_id: str, prov: dict[str, Any]) -> dict[str, Any]:
    """The signed statement of ``directory`` (module docstring)."""
    return {"schema": SCHEMA, "files": {f: _sha256(directory / f) for f in SIGNED_FILES}, "provenance": prov,
            "key_id": key_id}


def sign_run_dir(directory: Path, key: SigningKey) -> dict[str, Any]:
    """Write :data:`SIGNATURE_FILE` into ``directory`` (a folder witprobe is building); returns it."""
    d = Path(directory)
    st = statement(d, key.key_id, provenance(d / "run.json"))
    doc = {**st, "algorithm": ALGORITHM, "signature": key.sign(statement_bytes(st))}
    (d / SIGNATURE_FILE).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return doc


def check_signature(directory: Path, key: VerifyKey) -> list[str]:
    """Problems with ``directory``'s signature under ``key`` (empty when it verifies)."""
    d = Path(directory)
    p = d / SIGNATURE_FILE
    if not p.is_file():
        return [f"{SIGNATURE_FILE} is missing: the run is not signed (certify run --sign KEY signs one)"]
    try:
        doc = loads_bounded(read_bytes_capped(p), p)
    except InputError as e:
        return [f"{SIGNATURE_FILE} {e.problem}"]
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return [f"{SIGNATURE_FILE} is not a {SCHEMA} record"]
    problems = []
    files = doc.get("files") if isinstance(doc.get("files"), dict) else {}
    for f in SIGNED_FILES:
        try:
            now = _sha256(d / f)
        except InputError as e:
            problems.append(f"{f} {e.problem}")
            continue
        if files.get(f) != now:
            problems.append(f"{f} has sha256 {now[:16]}..., the signature covers {str(files.get(f))[:16]}... "
                            "(the file changed since it was signed)")
    if sorted(files) != sorted(SIGNED_FILES):
        problems.append(f"{SIGNATURE_FILE} signs the files {sorted(files)}, not {list(SIGNED_FILES)}")
    if doc.get("key_id") != key.key_id:
        problems.append(f"{SIGNATURE_FILE} is signed by key {str(doc.get('key_id'))[:16]}..., not by the key given "
                        f"({key.key_id[:16]}...)")
    else:
        st = {k: doc.get(k) for k in ("schema", "files", "provenance", "key_id")}
        sig = doc.get("signature")
        if not isinstance(sig, str) or not key.verify(statement_bytes(st), sig):
            problems.append(f"{SIGNATURE_FILE}: the signature does not verify under the key given "
                            "(the signed statement or the signature was altered)")
    return problems
