"""A writer that restarts on an existing journal opens a new segment chained to its verified prefix.

Issue 29 item 4: the old file is never written again (its bytes are unchanged), the new segment's
``open`` record names the last segment's verified prefix, and ``verify`` of the new segment checks
that link: editing the old segment's linked records breaks it. The real server is restarted on one
``--out`` after a ``kill -9`` and after a clean shutdown.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from witprobe.ledger.journal import SEGMENT_LINK, Journal, JournalError, open_segment, read_records, segment_paths, verify

HEADER = {"delta_req": "1/100"}


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _crashed(p: Path, n_writes: int = 3) -> Journal:
    """A journal whose writer stopped without ``close`` (its connection dropped, as a kill leaves it)."""
    j = Journal(p, header=HEADER)
    for k in range(n_writes):
        j.append("write", {"uid": 1, "counter": k, "delta": f"1/{100 * (k + 1) * (k + 2)}"})
    j._db.close()
    return j


def _link(p: Path) -> dict:
    return read_records(p, ("open",))[0][2][SEGMENT_LINK]


def test_restart_after_a_crash_opens_a_segment_and_leaves_the_crashed_file_unchanged(tmp_path):
    p = tmp_path / "journal.sqlite"
    _crashed(p)
    before, old = _sha(p), verify(p)
    assert old.ok and not old.closed
    j = open_segment(p, header=HEADER)
    j.append("write", {"uid": 2, "counter": 0, "delta": "1/200"})
    j.close()
    seg = tmp_path / "journal.2.sqlite"
    assert j.path == seg and segment_paths(p) == [p, seg]
    assert _sha(p) == before  # never opened for writing
    assert verify(p).as_dict() == old.as_dict()
    link = _link(seg)
    assert link == {"file": "journal.sqlite", "n_records": old.n_records, "head": old.head, "status": "unclosed",
                    "reason": ""}
    res = verify(seg)
    assert res.ok and res.closed and any("chains to journal.sqlite" in n for n in res.notes), res.as_dict()


def test_restart_after_a_clean_close_keeps_the_closed_journal_valid(tmp_path):
    p = tmp_path / "journal.sqlite"
    j = Journal(p, header=HEADER)
    j.close()
    assert verify(p).status == "ok"
    for n in (2, 3):  # each restart: the next segment, chained to the one before it
        j = open_segment(p, header=HEADER)
        j.close()
        assert j.path.name == f"journal.{n}.sqlite"
        assert _link(j.path)["file"] == ("journal.sqlite" if n == 2 else "journal.2.sqlite")
    assert [verify(q).status for q in segment_paths(p)] == ["ok", "ok", "ok"]


def _edit(p: Path, seq: int, body: str) -> None:
    db = sqlite3.connect(p)
    db.execute("DROP TRIGGER journal_no_update")
    db.execute("UPDATE journal SET body = ? WHERE seq = ?", (body, seq))
    db.commit()
    db.close()


def test_a_segment_after_a_bad_journal_chains_to_the_records_before_the_bad_one(tmp_path):
    p = tmp_path / "journal.sqlite"
    _crashed(p, n_writes=4)
    _edit(p, 3, '{"counter":1,"delta":"1/2","uid":1}')  # record 3 altered: the verified prefix is 2 records
    bad = verify(p)
    assert not bad.ok and bad.first_bad == 3
    j = open_segment(p, header=HEADER)
    j.close()
    link = _link(j.path)
    assert link["n_records"] == 2 and link["status"] == "bad" and "altered" in link["reason"]
    assert link["head"] == _hash_of(p, 2)
    assert verify(j.path).ok


def _hash_of(p: Path, seq: int) -> str:
    db = sqlite3.connect(p)
    try:
        return db.execute("SELECT hash FROM journal WHERE seq = ?", (seq,)).fetchone()[0]
    finally:
        db.close()


def test_editing_the_linked_prefix_of_an_old_segment_breaks_the_new_one(tmp_path):
    p = tmp_path / "journal.sqlite"
    _crashed(p)
    j = open_segment(p, header=HEADER)
    j.close()
    assert verify(j.path).ok
    _edit(p, 2, '{"counter":0,"delta":"1/3","uid":1}')
    res = verify(j.path)
    assert not res.ok and res.first_bad == 1 and "previous_segment journal.sqlite" in res.reason, res.as_dict()


def test_a_segment_whose_previous_file_is_gone_fails(tmp_path):
    p = tmp_path / "journal.sqlite"
    _crashed(p)
    j = open_segment(p, header=HEADER)
    j.close()
    os.replace(p, tmp_path / "elsewhere.sqlite")
    res = verify(j.path)
    assert not res.ok and "missing" in res.reason


def test_a_journal_path_that_is_a_symlink_gets_no_segment(tmp_path):
    (tmp_path / "user.txt").write_text("mine")
    (tmp_path / "journal.sqlite").symlink_to(tmp_path / "user.txt")
    with pytest.raises(JournalError, match="not a regular file"):
        open_segment(tmp_path / "journal.sqlite", header=HEADER)
    assert (tmp_path / "user.txt").read_text() == "mine" and not (tmp_path / "journal.2.sqlite").exists()


ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python"), "HF_HUB_OFFLINE": "1"}


def _start(out: Path, ready: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "witprobe", "serve-loopback", "--out", str(out), "--ready-file", str(ready),
                             "--max-new-tokens", "2"], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t0 = time.time()
    while not ready.exists():
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.time() - t0 < 300, "server did not get ready"
        time.sleep(0.2)
    return proc


def _generate(port: int, rid: str) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/generate", method="POST",
                                 data=json.dumps({"request_id": rid, "prompt": "Hello there"}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def test_the_server_restarted_after_kill_9_writes_a_new_segment(tmp_path):
    out = tmp_path / "srv"
    proc = _start(out, tmp_path / "ready1.json")
    port = json.loads((tmp_path / "ready1.json").read_text())["port"]
    head = _generate(port, "a")["journal_head"]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = out / "journal.sqlite"
    old = verify(first)
    assert old.ok and not old.closed and old.n_records >= head["seq"]
    before = _sha(first)
    proc = _start(out, tmp_path / "ready2.json")
    port = json.loads((tmp_path / "ready2.json").read_text())["port"]
    _generate(port, "b")
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/shutdown", method="POST", data=b"{}",
                                                  headers={"Content-Type": "application/json"}), timeout=60).read()
    assert proc.wait(timeout=120) == 0
    assert _sha(first) == before
    seg = out / "journal.2.sqlite"
    res = verify(seg)
    assert res.ok and res.closed, res.as_dict()
    assert _link(seg)["n_records"] == old.n_records and _link(seg)["head"] == old.head


def test_serve_refuses_a_ready_file_that_exists_and_leaves_it(tmp_path):
    mine = tmp_path / "precious.txt"
    mine.write_text("mine")
    p = subprocess.run([sys.executable, "-m", "witprobe", "serve-loopback", "--out", str(tmp_path / "o"), "--ready-file", str(mine)],
                       env=ENV, capture_output=True, text=True, timeout=120)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and "--ready-file" in lines[0], p.stderr
    assert mine.read_text() == "mine" and not (tmp_path / "o").exists()
