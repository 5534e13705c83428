"""Tamper evidence that needs a key: signed journal heads, client-held heads, signed run directories.

No model runs: small synthetic journals, the committed artifact ``artifacts/coverage/smollm2-int8``
for the run signature, and ``certify check``'s re-derivation stubbed where only the signature is
under test (the re-derivation has its own tests).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import urllib.request
from fractions import Fraction
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from witprobe.ledger.cli import main as ledger
from witprobe.ledger.journal import _SCHEMA, GENESIS, Journal, canonical, record_hash, verify
from witprobe.signing import PRIVATE_FILE, PUBLIC_FILE, generate, load_private, load_public

ROOT = Path(__file__).resolve().parents[1]
ARTIFACT = ROOT / "artifacts" / "coverage" / "smollm2-int8"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    priv, pub = generate(d / "a")
    priv_b, pub_b = generate(d / "b")
    return SimpleNamespace(priv=priv, pub=pub, other_pub=pub_b, signer=load_private(priv), verifier=load_public(pub))


def _signed_journal(path: Path, signer, n: int = 12) -> tuple[Path, dict]:
    """A closed, signed journal of ``n`` write events; returns it and a signed head a client took
    after event 8 (as the server's ``journal_head`` field: seq, hash, signed_head)."""
    j = Journal(path, header={"delta_req": "1/100"}, signer=signer)
    held = None
    for k in range(n):
        j.append("write", {"uid": 1, "counter": k, "delta": f"1/{100 * (k + 1) * (k + 2)}", "n_authorized": 100 + k})
        if k == 8:
            sh = j.signed_head()
            held = {"seq": sh.n_records, "hash": sh.head, "signed_head": sh.as_dict()}
    j.close({"n": n})
    return path, held


def _rows(path: Path) -> list[tuple[int, str, dict]]:
    db = sqlite3.connect(path)
    try:
        return [(s, k, json.loads(b)) for s, k, b in db.execute("SELECT seq, kind, body FROM journal ORDER BY seq")]
    finally:
        db.close()


def _rechain(rows: list[tuple[int, str, dict]], out: Path) -> Path:
    """Write ``rows`` as a fresh journal with every hash recomputed: what anyone can do without a key.
    A signed head whose ``head`` is ``"point"`` is pointed at the record before it (its signature kept)."""
    db = sqlite3.connect(out)
    db.executescript(_SCHEMA)
    prev = GENESIS
    for seq, (_, kind, body) in enumerate(rows, start=1):
        if body.get("head") == "point":
            body = {**body, "head": prev, "n_records": seq - 1}
        text = canonical(body)
        h = record_hash(seq, kind, text, prev)
        db.execute("INSERT INTO journal VALUES (?,?,?,?,?)", (seq, kind, text, prev, h))
        prev = h
    db.commit()
    db.close()
    return out


def _edited(rows):
    """Record 5 (a write event) changed in a field the arithmetic does not check."""
    return [(s, k, {**b, "n_authorized": 999999} if s == 5 else b) for s, k, b in rows]


def test_keygen_writes_a_private_key_0600_and_never_overwrites(tmp_path, capsys):
    out = tmp_path / "k"
    assert ledger(["keygen", "--out", str(out)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (os.stat(out / PRIVATE_FILE).st_mode & 0o777) == 0o600
    assert info["key_id"] == load_public(out / PUBLIC_FILE).key_id == load_private(out / PRIVATE_FILE).key_id
    before = (out / PRIVATE_FILE).read_bytes()
    assert ledger(["keygen", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exists" in err
    assert (out / PRIVATE_FILE).read_bytes() == before


def test_signed_journal_verifies_with_its_key_and_says_hash_chained_without(tmp_path, keys, capsys):
    p, _ = _signed_journal(tmp_path / "j.sqlite", keys.signer)
    res = verify(p, key=keys.verifier)
    assert res.status == "ok" and res.signature["checked"] and res.signature["covered_records"] == res.n_records - 1
    assert ledger(["verify", str(p), "--key", str(keys.pub)]) == 0
    assert ledger(["verify", str(p)]) == 0
    err = capsys.readouterr().err
    assert "only hash-chained" in err and "re-chain" in err


def test_rechained_journal_passes_without_the_key_and_fails_with_it(tmp_path, keys, capsys):
    p, _ = _signed_journal(tmp_path / "j.sqlite", keys.signer)
    rows = _edited(_rows(p))
    # the forger keeps the signed head record and points it at the new head (the old signature stays)
    forged = rows[:-1] + [(0, "signed_head", {**rows[-1][2], "head": "point"})]
    q = _rechain(forged, tmp_path / "forged.sqlite")
    assert verify(q).status == "ok"  # a hash chain alone cannot tell
    res = verify(q, key=keys.verifier)
    assert res.status == "bad" and res.first_bad == len(forged) and "does not verify" in res.reason
    # or the forger drops the signed heads altogether
    stripped = _rechain([r for r in rows if r[1] != "signed_head"], tmp_path / "stripped.sqlite")
    assert verify(stripped).status == "ok"
    res = verify(stripped, key=keys.verifier)
    assert res.status == "bad" and "no signed head" in res.reason
    assert ledger(["verify", str(stripped), "--key", str(keys.pub)]) == 1
    assert "first bad record 1: no signed head" in capsys.readouterr().err


def test_records_after_the_last_signed_head_and_a_wrong_key_fail(tmp_path, keys):
    p, _ = _signed_journal(tmp_path / "j.sqlite", keys.signer)
    rows = _rows(p) + [(0, "write", {"uid": 2, "counter": None, "delta": "0/1"})]
    q = _rechain(rows, tmp_path / "appended.sqlite")
    res = verify(q, key=keys.verifier)
    assert res.status == "bad" and res.first_bad == len(rows) and "follow the last signed head" in res.reason
    res = verify(p, key=load_public(keys.other_pub))
    assert res.status == "bad" and "not by the key given" in res.reason


def test_client_held_head_catches_truncation_and_rechaining(tmp_path, keys, capsys):
    p, held = _signed_journal(tmp_path / "j.sqlite", keys.signer)
    head_file = tmp_path / "head.json"
    head_file.write_text(json.dumps(held))
    assert ledger(["verify", str(p), "--key", str(keys.pub), "--expect-head", str(head_file)]) == 0
    rows = _rows(p)
    n = held["seq"]
    # truncated: records from 7 on cut, and the journal closed again (no key: no signed head)
    cut = _rechain(rows[:6] + [(0, "close", {})], tmp_path / "cut.sqlite")
    assert verify(cut).status == "ok"
    res = verify(cut, expect=load_expected(head_file))
    assert res.status == "bad" and "truncated" in res.reason
    assert ledger(["verify", str(cut), "--expect-head", str(head_file)]) == 1
    assert "truncated" in capsys.readouterr().err
    # re-chained: record 5 edited, every hash after it recomputed (the signed head dropped)
    re = _rechain([r for r in _edited(rows) if r[1] != "signed_head"], tmp_path / "re.sqlite")
    assert verify(re).status == "ok"
    res = verify(re, expect=load_expected(head_file))
    assert res.status == "bad" and res.first_bad == n and "re-chained" in res.reason
    assert ledger(["verify", str(re), "--expect-head", f"{n}:{held['hash']}"]) == 1
    # a head whose signature was forged is refused with the key (and only noted without it)
    bad = {**held, "signed_head": {**held["signed_head"], "signature": held["signed_head"]["signature"][::-1]}}
    head_file.write_text(json.dumps(bad))
    assert verify(p, expect=load_expected(head_file)).status == "ok"
    assert ledger(["verify", str(p), "--key", str(keys.pub), "--expect-head", str(head_file)]) == 1


def load_expected(path: Path):
    from witprobe.ledger.signed_head import parse_expected

    return parse_expected(str(path))


@pytest.mark.parametrize("what", ["missing", "garbage", "world-readable private"])
def test_unreadable_key_exits_2_with_one_line(tmp_path, keys, capsys, what):
    p, _ = _signed_journal(tmp_path / "j.sqlite", keys.signer)
    key = tmp_path / "key.pem"
    if what == "garbage":
        key.write_text("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n")
    elif what == "world-readable private":
        shutil.copy(keys.priv, key)
        key.chmod(0o644)
    assert ledger(["verify", str(p), "--key", str(key)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_gates_require_the_signed_head_with_a_key(tmp_path, keys):
    from witprobe.ledger.acceptance import Expected, evaluate_journal
    from witprobe.serving.live_gate import evaluate

    p, _ = _signed_journal(tmp_path / "j.sqlite", keys.signer)
    exp = Expected(("r1",), Fraction(1, 100), require_coupling=False)
    assert evaluate_journal(p, exp, key=keys.verifier).criteria["journal_verified"].ok
    unsigned = evaluate_journal(p, exp)
    assert "journal_signature" in unsigned.not_evaluated
    q = _rechain([r for r in _edited(_rows(p)) if r[1] != "signed_head"], tmp_path / "stripped.sqlite")
    assert evaluate_journal(q, exp).criteria["journal_verified"].ok  # re-chained: the chain alone passes
    v = evaluate_journal(q, exp, key=keys.verifier).criteria["journal_verified"]
    assert not v.ok and "no signed head" in v.why
    live = tmp_path / "live"
    live.mkdir()
    (live / "manifest.json").write_text(json.dumps({"expected": {"user_requests": ["r1"]}}))
    shutil.copy(q, live / "journal.sqlite")
    assert evaluate(live).criteria["journal_verified"].ok
    assert not evaluate(live, keys.verifier).criteria["journal_verified"].ok
    assert ledger(["gate", str(live), "--key", str(tmp_path / "nope.pub")]) == 2


def test_server_returns_a_signed_head_a_client_can_check_later(tmp_path, keys):
    from witprobe.serving.server import Handler

    j = Journal(tmp_path / "journal.sqlite", header={"delta_req": "1/100"}, signer=keys.signer)
    j.append("write", {"uid": 1, "counter": 0, "delta": "1/200"})
    handler = type("H", (Handler,), {"engine": SimpleNamespace(ledger=SimpleNamespace(journal=j))})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{httpd.server_address[1]}/journal/head", timeout=10) as r:
            head = json.loads(r.read())
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert head["seq"] == 2 and head["signed_head"]["n_records"] == 2 and head["signed_head"]["key_id"] == keys.signer.key_id
    j.append("write", {"uid": 1, "counter": 1, "delta": "1/600"})
    j.close()
    (tmp_path / "head.json").write_text(json.dumps(head))
    assert ledger(["verify", str(j.path), "--key", str(keys.pub), "--expect-head", str(tmp_path / "head.json")]) == 0
    # without a signer the server's head is unchanged: {seq, hash}
    assert Handler._head(SimpleNamespace(engine=SimpleNamespace(ledger=SimpleNamespace(
        journal=Journal(tmp_path / "plain.sqlite"))))).keys() == {"seq", "hash"}


# --- signed run directories ---------------------------------------------------------------------


@pytest.fixture
def run_dir(tmp_path, keys):
    from witprobe.certify.signature import sign_run_dir

    d = tmp_path / "run"
    shutil.copytree(ARTIFACT, d)
    sign_run_dir(d, keys.signer)
    return d


@pytest.fixture
def certify(monkeypatch):
    """``certify`` in-process, with the re-derivation (Coq, Lean: minutes) stubbed to agree."""
    from witprobe.certify import check
    from witprobe.certify.cli import main

    monkeypatch.setattr(check, "check_dir", lambda d: check.CheckResult())
    return main


def test_signed_run_checks_and_an_edited_run_json_does_not(run_dir, keys, certify, capsys):
    doc = json.loads((run_dir / "signature.json").read_text())
    assert doc["provenance"]["model"]["provenance"]["gguf_sha256"] and doc["provenance"]["host"]
    assert certify(["check", str(run_dir), "--key", str(keys.pub)]) == 0
    assert "verifies under key" in capsys.readouterr().out
    run = run_dir / "run.json"
    text = run.read_text()
    assert '"num_layers": 30' in text
    run.write_text(text.replace('"num_layers": 30', '"num_layers": 31', 1))
    assert certify(["check", str(run_dir), "--key", str(keys.pub)]) == 1
    assert "run.json has sha256" in capsys.readouterr().out


def test_forged_statement_wrong_key_and_missing_signature_are_problems(run_dir, keys, certify, capsys):
    assert certify(["check", str(run_dir), "--key", str(keys.other_pub)]) == 1
    assert "not by the key given" in capsys.readouterr().out
    sig = run_dir / "signature.json"
    doc = json.loads(sig.read_text())
    doc["provenance"]["host"] = "elsewhere"
    sig.write_text(json.dumps(doc))
    assert certify(["check", str(run_dir), "--key", str(keys.pub)]) == 1
    assert "does not verify" in capsys.readouterr().out
    assert certify(["check", str(run_dir)]) == 0  # without a key the signature is not read
    assert "was not checked" in capsys.readouterr().out
    sig.unlink()
    assert certify(["check", str(run_dir), "--key", str(keys.pub)]) == 1
    assert "signature.json is missing" in capsys.readouterr().out
    assert certify(["check", str(run_dir), "--key", str(run_dir / "nope.pub")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_signature_is_in_the_manifest_so_force_may_replace_it(tmp_path, keys, monkeypatch):
    from witprobe.certify import pipeline
    from witprobe.safe_output import check_replaceable, read_manifest

    def fake_produce(run, lean_mode, tmp, coq_mode="auto"):
        for f in ("run.json", "certificate.json"):
            shutil.copy(ARTIFACT / f, tmp / f)

    monkeypatch.setattr(pipeline, "produce", fake_produce)
    out = tmp_path / "run"
    pipeline.write_run_dir({}, out, "off", signer=keys.signer)
    assert "signature.json" in read_manifest(out).files
    assert pipeline.run_dir_problem(out) == ""
    check_replaceable(out, True, pipeline.RUN_TOOL)  # --force may replace it: no refusal
    pipeline.write_run_dir({}, out, "off", force=True)
    assert not (out / "signature.json").exists()


def test_certify_run_refuses_an_unreadable_key_or_one_inside_out(tmp_path, keys, capsys):
    from witprobe.certify.cli import main

    assert main(["run", "--sign", str(tmp_path / "nope.key"), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert main(["run", "--sign", str(keys.priv), "--out", str(keys.priv.parent), "--quiet"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "no such file" in err[0] and "inside the output" in err[1]
    assert not (tmp_path / "r").exists()
