"""Journal paths are plain paths, never SQLite URIs; hostile journal bodies and e-process
parameters give a named bad record or exit 2 with one line, never a traceback (issue 29)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from witprobe.ledger.cli import main
from witprobe.ledger.derive import DeriveError, derive_rank
from witprobe.ledger.journal import GENESIS, Journal, record_hash, verify


def _journal(p: Path, header: dict | None = None) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    j = Journal(p, header=header or {"delta_req": "1/100"})
    for k in range(3):
        j.append("write", {"uid": 1, "counter": k, "delta": f"1/{100 * (k + 1) * (k + 2)}"})
    j.close({"n": 3})
    return p


def test_a_percent_escape_in_a_name_is_not_decoded(tmp_path, capsys):
    _journal(tmp_path / "auditA.sqlite")
    literal = tmp_path / "audit%41.sqlite"
    assert not verify(literal).ok  # no such file: auditA.sqlite is never read in its place
    literal.write_bytes((tmp_path / "auditA.sqlite").read_bytes()[:100] + b"\0" * 4000)
    res = verify(literal)
    assert not res.ok and "unreadable" in res.reason
    assert main(["verify", str(tmp_path / "audit%41.sqlite")]) == 1
    capsys.readouterr()


@pytest.mark.parametrize("folder", ["run#1", "run?mode=rw", "a%20b", "file:x"])
def test_a_journal_in_a_folder_with_uri_characters_verifies(tmp_path, monkeypatch, folder):
    p = _journal(tmp_path / folder / "journal.sqlite")
    assert verify(p).ok and verify(p).closed
    monkeypatch.chdir(tmp_path)  # relative, as a user types it
    assert verify(Path(folder) / "journal.sqlite").ok
    assert derive_rank(Path(folder) / "journal.sqlite").verified.ok


def _rechain(p: Path, seq: int, body: str) -> None:
    """Replace record ``seq``'s body and recompute every hash after it (what the chain alone allows)."""
    db = sqlite3.connect(p)
    db.execute("DROP TRIGGER journal_no_update")
    rows = db.execute("SELECT seq, kind, body FROM journal ORDER BY seq").fetchall()
    prev = GENESIS
    for s, kind, b in rows:
        b = body if s == seq else b
        h = record_hash(s, kind, b, prev)
        db.execute("UPDATE journal SET body = ?, prev = ?, hash = ? WHERE seq = ?", (b, prev, h, s))
        prev = h
    db.commit()
    db.close()


@pytest.mark.parametrize("body", ["[1,2]", '"x"', "[" * 3000 + "]" * 3000, '{"n":' + "9" * 5000 + "}",
                                  '{"delta":NaN}'])
def test_hostile_bodies_are_a_named_bad_record(tmp_path, capsys, body):
    p = _journal(tmp_path / "j.sqlite")
    _rechain(p, 2, body)
    res = verify(p)
    assert not res.ok and res.first_bad == 2
    assert main(["verify", str(p)]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err


def test_a_zero_delta_e_is_a_derive_error(tmp_path):
    p = _journal(tmp_path / "j.sqlite", {"delta_req": "1/100", "eprocess": {"kappa": 1.0, "delta_e": 0}})
    with pytest.raises(DeriveError, match="delta_e must lie in"):
        derive_rank(p)


@pytest.mark.parametrize("args", [["--delta-req", "1/0"], ["--delta-req", "nan"], ["--auth-thr", "key=nan"],
                                  ["--auth-thr", "key=-1"], ["--auth-thr", "foo=1,key=1,value=1"],
                                  ["--nonce", "-1"], ["--nonce", str(2**40)], ["--nonce", "x"]])
def test_bad_simulate_options_exit_2_with_one_line(tmp_path, capsys, args):
    with pytest.raises(SystemExit) as e:
        code = main(["simulate", "--out", str(tmp_path / "sim"), *args])
        raise SystemExit(code)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    assert not (tmp_path / "sim").exists()
