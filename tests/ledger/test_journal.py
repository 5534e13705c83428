"""The durable journal: hash chain, crash safety at random kill points, flipped bytes."""

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from witprobe.ledger.journal import Journal, JournalError, canonical, record_hash, verify

CHILD = r"""
import sys
from witprobe.ledger.journal import Journal
j = Journal(sys.argv[1], header={"delta_req": "1/100"})
print("ready", flush=True)
k = 0
spent_num = 0
while True:
    recs = []
    for uid in (1, 2):
        recs.append(("write", {"uid": uid, "counter": k, "delta": f"1/{100 * (k + 1) * (k + 2)}",
                               "n_entries": 3, "pad": "x" * 200}))
    seqs = j.append_many(recs)
    print(seqs[-1], flush=True)
    k += 1
"""


def _journal(tmp_path: Path, n: int = 20) -> Path:
    p = tmp_path / "j.sqlite"
    j = Journal(p, header={"delta_req": "1/100"})
    for k in range(n):
        j.append("write", {"uid": 1, "counter": k, "delta": f"1/{100 * (k + 1) * (k + 2)}", "n_authorized": 12345 + k})
    j.close({"n": n})
    return p


def test_append_and_verify(tmp_path):
    p = _journal(tmp_path)
    res = verify(p)
    assert res.ok and res.closed and res.n_records == 22, res.reason
    assert res.totals["spent"]["0:1"] == "1/105"  # 20/(100*21)


def test_append_only_triggers(tmp_path):
    p = _journal(tmp_path)
    db = sqlite3.connect(p)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("UPDATE journal SET body='{}' WHERE seq=2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("DELETE FROM journal WHERE seq=2")
    db.close()


def test_flipped_byte_is_found_and_named(tmp_path):
    p = _journal(tmp_path)
    data = bytearray(p.read_bytes())
    at = data.find(b"12350")  # the body of the record with counter 5 (seq 7)
    assert at > 0
    data[at + 4] ^= 0x01  # '0' -> '1'
    p.write_bytes(bytes(data))
    res = verify(p)
    assert not res.ok and res.first_bad == 7 and "altered" in res.reason


def test_random_flipped_bytes_never_pass_silently(tmp_path):
    """Any flip inside the record area is found (or the file is reported unreadable)."""
    p = _journal(tmp_path, 40)
    clean = p.read_bytes()
    rng = random.Random(0)
    bodies = [i for i in range(len(clean)) if clean[i:i + 1] in (b'"', b":", b"{") and i > 4096]
    found = 0
    for i in rng.sample(bodies, 25):
        data = bytearray(clean)
        data[i] ^= 0x04
        p.write_bytes(bytes(data))
        res = verify(p)
        found += not res.ok
    assert found == 25


def test_forged_arithmetic_is_named(tmp_path):
    """A record with a valid hash but a wrong delta (a writer bug) is still refused."""
    p = tmp_path / "j.sqlite"
    j = Journal(p, header={"delta_req": "1/100"})
    j.append("write", {"uid": 1, "counter": 0, "delta": "1/200"})
    j.append("write", {"uid": 1, "counter": 1, "delta": "1/500"})  # should be 1/600
    j.close()
    res = verify(p)
    assert not res.ok and res.first_bad == 3 and "expected 1/600" in res.reason


def test_kill_at_random_points_loses_no_committed_event(tmp_path):
    rng = random.Random(1234)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for trial in range(20):
        p = tmp_path / f"crash{trial}.sqlite"
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(p)], stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + rng.uniform(0.02, 0.4)
        last = 0
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.strip().isdigit():
                last = int(line)
        proc.send_signal(signal.SIGKILL)  # at a random instant, possibly inside a transaction
        for line in proc.stdout.read().split():
            if line.isdigit():
                last = max(last, int(line))
        proc.wait()
        res = verify(p)
        assert res.ok, f"trial {trial}: {res.reason} at record {res.first_bad}"
        assert res.n_records >= last, f"trial {trial}: committed record {last} lost ({res.n_records} on disk)"
        assert not res.closed
        # the chain continues after the crash
        j = Journal(p)
        j.append("write", {"uid": 3, "counter": 0, "delta": "1/200"})
        j.close()
        assert verify(p).ok


def test_bad_inputs(tmp_path):
    assert not verify(tmp_path / "nope.sqlite").ok
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    res = verify(tmp_path / "junk.sqlite")
    assert not res.ok and "unreadable" in res.reason
    with pytest.raises(JournalError, match="synchronous"):
        Journal(tmp_path / "x.sqlite", synchronous="OFF")
    assert canonical({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'
    assert record_hash(1, "k", "{}", "0" * 64) != record_hash(2, "k", "{}", "0" * 64)


def test_verify_cli_names_the_first_bad_record(tmp_path):
    p = _journal(tmp_path)
    data = bytearray(p.read_bytes())
    at = data.find(b"12352")  # counter 7 -> seq 9
    data[at + 4] ^= 0x01
    p.write_bytes(bytes(data))
    proc = subprocess.run([sys.executable, "-m", "witprobe.ledger", "verify", str(p)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["first_bad"] == 9 and "first bad record 9" in proc.stderr


def test_account_close_must_match_its_records(tmp_path):
    p = tmp_path / "j.sqlite"
    j = Journal(p, header={"delta_req": "1/100"})
    j.append("write", {"uid": 4, "counter": 0, "delta": "1/200"})
    j.append("reads", {"uid": 4, "n_reads": 10})
    j.append("reads", {"uid": 4, "n_reads": 5})
    j.append("account_close", {"uid": 4, "n_write_events": 1, "n_prob_events": 1, "delta_spent": "1/200", "n_reads": 14})
    j.close()
    res = verify(p)
    assert not res.ok and res.first_bad == 5 and "n_reads" in res.reason
