"""Exit codes and clear errors of ``python -m witprobe.ledger``."""

import subprocess
import sys

PY = [sys.executable, "-m", "witprobe.ledger"]


def _run(*args):
    return subprocess.run([*PY, *args], capture_output=True, text=True)


def test_usage_errors(tmp_path):
    p = _run("verify", str(tmp_path / "missing.sqlite"))
    assert p.returncode == 2 and "no such file" in p.stderr
    p = _run("gate", str(tmp_path / "nodir"))
    assert p.returncode == 2 and "not a directory" in p.stderr
    p = _run("simulate", "--out", str(tmp_path / "o"), "--fault", "nonsense")
    assert p.returncode == 2 and "invalid choice" in p.stderr
    p = _run("simulate", "--out", str(tmp_path / "o"), "--trace", str(tmp_path))
    assert p.returncode == 2 and "manifest.json not found" in p.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    p = _run("simulate", "--out", str(tmp_path / "full"))
    assert p.returncode == 2 and "--force" in p.stderr
    p = _run("simulate", "--out", str(tmp_path / "o2"), "--auth-thr", "key=abc")
    assert p.returncode == 2


def test_gate_on_an_empty_directory_fails_closed(tmp_path):
    p = _run("gate", str(tmp_path))
    assert p.returncode == 1 and '"passed": false' in p.stdout


def test_force_replaces_only_a_simulate_run(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("not witprobe's")
    p = _run("simulate", "--out", str(d), "--force")
    assert p.returncode == 2 and "only files witprobe wrote" in p.stderr and "notes.txt" in p.stderr
    assert (d / "notes.txt").read_text() == "not witprobe's"


def test_verify_reports_an_unclosed_journal(tmp_path):
    import json

    from witprobe.ledger.journal import Journal

    j = Journal(tmp_path / "j.sqlite", header={"delta_req": "1/100"})
    j.append("write", {"uid": 1, "counter": 0, "delta": "1/200"})
    del j  # no close record: the writer stopped
    p = _run("verify", str(tmp_path / "j.sqlite"))
    out = json.loads(p.stdout)
    assert p.returncode == 1 and out["status"] == "unclosed" and out["ok"] is False and out["valid"] is True
    assert "unclosed" in p.stderr


def _sim(*args, cwd=None, timeout=400):
    return subprocess.run([*PY, "simulate", "--quiet", "--decode-steps", "4", "--accounts", "4", "--workers", "4", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=timeout)


def test_relative_and_absolute_outputs_for_two_and_three_ranks(tmp_path):
    """A relative --out (with a parent folder) used to become a file:// URL whose first component
    was read as a host: the ranks met at a path outside the run and blocked until gloo timed out."""
    import json

    p = _sim("--out", "runs/rel", "--ranks", "2", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    gate = json.loads((tmp_path / "runs" / "rel" / "gate.json").read_text())
    assert gate["passed"] and gate["source"] == str(tmp_path / "runs" / "rel")
    p = _sim("--out", str(tmp_path / "abs3"), "--ranks", "3")
    assert p.returncode == 0, p.stderr[-2000:]
    assert sorted(x.name for x in (tmp_path / "abs3").glob("journal.rank*.sqlite")) == [f"journal.rank{r}.sqlite" for r in range(3)]
    assert [x.name for x in tmp_path.iterdir() if x.name.startswith(".")] == []  # no partial or replaced dirs left
    p = _sim("--out", str(tmp_path / "abs3"), "--ranks", "2", "--force")  # replaces a previous run
    assert p.returncode == 0 and not (tmp_path / "abs3" / "journal.rank2.sqlite").exists()


def test_interrupted_simulate_leaves_nothing(tmp_path):
    import signal
    import time

    # the child starts with SIGINT at its default even when this test runs in a background job that
    # ignores it (an ignored SIGINT is inherited, and Python then installs no KeyboardInterrupt handler)
    proc = subprocess.Popen([*PY, "simulate", "--quiet", "--ranks", "2", "--out", str(tmp_path / "run")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list(tmp_path.glob(".run.witprobe-*/journal.rank*.sqlite")):
        time.sleep(0.2)
    assert list(tmp_path.glob(".run.witprobe-*/journal.rank*.sqlite")), "the run never started writing"
    time.sleep(1.0)  # mid-run: the ranks are writing their journals
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())
