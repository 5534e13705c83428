"""The ``--force`` safety matrix: no witprobe command deletes or overwrites a file it did not write.

Each refusal case drives a real command line (``python -m witprobe.certify ...``,
``python -m witprobe.ledger ...``) against a directory holding a user's files and asserts exit 2,
one ``error:`` line without a traceback, and that every file under the test's folder is
byte-identical afterwards (nothing written, nothing removed, no temporary or lock left).
The positive cases check that ``--force`` still replaces what witprobe wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from witprobe import safe_output
from witprobe.safe_output import MANIFEST

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""),
       "HF_HUB_OFFLINE": "1"}
FAST_RUN = ["--model", "qwen3", "--max-new-tokens", "2", "--prompt", "hello there", "--no-reference",
            "--coq", "off", "--lean", "off", "--quiet"]
SIM = ["simulate", "--quiet", "--ranks", "1", "--accounts", "2", "--workers", "2", "--decode-steps", "2"]
SIM_RC = 1  # one rank (fast): simulate requires replica coupling, so its gate fails on that criterion alone


def _py(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, env=ENV, cwd=ROOT,
                          timeout=timeout)


def _one_line_error(p: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, (p.returncode, p.stderr[-3000:])
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in p.stderr, p.stderr
    return lines[0]


def snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root`` (links not followed): file bytes, link targets, folders."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = p.read_bytes()
    return out


def _user_files(d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "NOTES.md").write_text("my notes\n")
    (d / "main.py").write_text("print('mine')\n")


# --------------------------------------------------------------------------- fixtures: real outputs


@pytest.fixture(scope="module")
def certify_run(tmp_path_factory) -> Path:
    """A run directory ``certify run`` wrote (tiny qwen3 configuration, no kernels)."""
    from witprobe.certify.cli import main

    out = tmp_path_factory.mktemp("certify") / "run"
    assert main(["run", *FAST_RUN, "--out", str(out)]) == 0
    assert (out / MANIFEST).is_file()
    return out


@pytest.fixture(scope="module")
def simulate_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("simulate") / "run"
    p = _py("witprobe.ledger", *SIM, "--out", str(out))
    assert p.returncode == SIM_RC and _failing(out) == ["replica_coupling_identical"], p.stderr[-3000:]
    return out


def _failing(run: Path) -> list[str]:
    gate = json.loads((run / "gate.json").read_text())
    return sorted(k for k, c in gate["criteria"].items() if not c["ok"])


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


# --------------------------------------------------------------------------- the matrix (refusals)


def _refused(tmp_path: Path, *argv: str, expect: str) -> str:
    before = snapshot(tmp_path)
    p = _py(*argv)
    line = _one_line_error(p)
    assert expect in line, line
    assert snapshot(tmp_path) == before, "a refused command changed files"
    return line


def test_certify_force_refuses_a_symlinked_output_dir(tmp_path, certify_run):
    victim = _copy(certify_run, tmp_path / "elsewhere")  # a run witprobe wrote, reached through a link
    _user_files(victim / "mine")
    (tmp_path / "out").symlink_to(victim, target_is_directory=True)
    _refused(tmp_path, "witprobe.certify", "run", *FAST_RUN, "--out", str(tmp_path / "out"), "--force",
             expect="symbolic link")


def test_certify_force_refuses_a_symlinked_obligations_folder(tmp_path, certify_run):
    run = _copy(certify_run, tmp_path / "run")
    user = tmp_path / "user-src"
    user.mkdir()
    for f in (run / "obligations").iterdir():  # the user's folder even holds files of the same names
        (user / f.name).write_text("the user's own " + f.name)
    (user / "thesis.tex").write_text("\\section{mine}")
    shutil.rmtree(run / "obligations")
    (run / "obligations").symlink_to(user, target_is_directory=True)
    line = _refused(tmp_path, "witprobe.certify", "run", *FAST_RUN, "--out", str(run), "--force",
                    expect="obligations (a symbolic link)")
    assert "only files witprobe wrote" in line
    assert not list(tmp_path.glob(".run.*")), "no .run.old-* or temporary folder"


def test_certify_force_refuses_a_foreign_file(tmp_path, certify_run):
    run = _copy(certify_run, tmp_path / "run")
    (run / "notes.txt").write_text("mine")
    _refused(tmp_path, "witprobe.certify", "run", *FAST_RUN, "--out", str(run), "--force",
             expect="notes.txt (witprobe did not write it)")


def test_certify_force_refuses_a_modified_witprobe_file(tmp_path, certify_run):
    run = _copy(certify_run, tmp_path / "run")
    cert = json.loads((run / "certificate.json").read_text())
    cert["note"] = "edited by hand"
    (run / "certificate.json").write_text(json.dumps(cert))
    _refused(tmp_path, "witprobe.certify", "run", *FAST_RUN, "--out", str(run), "--force",
             expect="certificate.json (changed since witprobe wrote it)")


@pytest.mark.parametrize("manifest", [
    {"schema": "witprobe-output/1", "tool": "witprobe.certify run", "files": {"main.py": "0" * 64}},
    {"schema": "witprobe-output/1", "tool": "witprobe.certify run", "files": {"../main.py": "0" * 64}},
    {"schema": "witprobe-output/1", "tool": "witprobe.certify run"},
    {"tool": "witprobe.certify run", "files": {}},
    "not an object",
], ids=["wrong-hash", "escaping-path", "no-files", "no-schema", "not-an-object"])
def test_certify_force_refuses_a_look_alike_manifest(tmp_path, manifest):
    d = tmp_path / "mine"
    _user_files(d)
    (d / MANIFEST).write_text(json.dumps(manifest))
    _refused(tmp_path, "witprobe.certify", "run", *FAST_RUN, "--out", str(d), "--force",
             expect="only files witprobe wrote")


@pytest.mark.parametrize("schema", [None, "witprobe-output/0", "witprobe-run/1"])
def test_a_manifest_with_the_right_hashes_but_not_witprobes_schema_is_not_trusted(tmp_path, schema):
    d = tmp_path / "mine"
    _user_files(d)
    man = {"tool": "witprobe.certify run", "files": {n: safe_output.sha256_file(d / n) for n in ("NOTES.md", "main.py")}}
    if schema is not None:
        man["schema"] = schema
    (d / MANIFEST).write_text(json.dumps(man))
    _refused(tmp_path, "witprobe.certify", "run", *FAST_RUN, "--out", str(d), "--force",
             expect="is not a manifest witprobe wrote")


def test_simulate_force_refuses_a_look_alike_manifest_json(tmp_path):
    d = tmp_path / "mine"
    _user_files(d)
    (d / "manifest.json").write_text(json.dumps({"tool": "witprobe.ledger simulate"}))
    _refused(tmp_path, "witprobe.ledger", *SIM, "--out", str(d), "--force", expect="no witprobe manifest")


def test_simulate_force_refuses_a_run_of_another_command(tmp_path, certify_run):
    run = _copy(certify_run, tmp_path / "run")  # witprobe's files, but not simulate's
    _refused(tmp_path, "witprobe.ledger", *SIM, "--out", str(run), "--force",
             expect="written by witprobe.certify run, not witprobe.ledger simulate")


def test_campaign_force_refuses_a_directory_holding_findings_json(tmp_path):
    d = tmp_path / "mine"
    _user_files(d)
    (d / "findings.json").write_text("{}")
    _refused(tmp_path, "witprobe.ledger", "campaign", "--decode-steps", "2", "--out", str(d), "--force",
             expect="only files witprobe wrote")


def test_live_force_refuses_files_named_like_a_live_run(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "draft.part").write_text("half a novel")
    (d / "manifest.json").write_text(json.dumps({"tool": "witprobe.ledger live"}))
    (d / "server.log").write_text("my server's log")
    _refused(tmp_path, "witprobe.ledger", "live", "--out", str(d), "--force", expect="only files witprobe wrote")


def test_gate_never_writes_through_a_planted_tmp_symlink(tmp_path, simulate_run):
    run = _copy(simulate_run, tmp_path / "run")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (run / "gate.json.tmp").symlink_to(victim)
    (run / "gate.json").unlink()
    p = _py("witprobe.ledger", "gate", str(run))
    assert p.returncode == SIM_RC, p.stderr[-2000:]
    assert victim.read_text() == "precious" and (run / "gate.json.tmp").is_symlink()
    assert _failing(run) == ["replica_coupling_identical"]
    assert not list(run.glob(".gate.json.*")), "no temporary left"


def test_gate_refuses_to_overwrite_a_gate_json_it_did_not_write(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "gate.json").write_text("my own gate notes")
    _refused(tmp_path, "witprobe.ledger", "gate", str(d), expect="witprobe did not write it")


def test_sentinel_out_never_writes_through_a_planted_tmp_symlink(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "X.tmp").symlink_to(victim)
    p = _py("witprobe.ledger", "sentinel", "--trials", "5", "--decode-steps", "2", "--out", str(tmp_path / "X"))
    assert p.returncode in (0, 1), p.stderr[-2000:]
    assert victim.read_text() == "precious" and (tmp_path / "X.tmp").is_symlink()
    assert json.loads((tmp_path / "X").read_text())["pool"]["blocks"] > 0
    _refused(tmp_path, "witprobe.ledger", "sentinel", "--trials", "5", "--out", str(tmp_path / "X"),
             expect="exists; pass --force")


def test_out_file_symlink_is_refused_even_with_force(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "schema.json").symlink_to(victim)
    _refused(tmp_path, "witprobe.certify", "schema", "--out", str(tmp_path / "schema.json"), "--force",
             expect="symbolic link")


def test_coverage_out_refuses_a_users_table(tmp_path):
    d = tmp_path / "cov"
    d.mkdir()
    (d / "coverage.json").write_text('{"mine": true}')
    _refused(tmp_path, "witprobe.certify", "coverage", "--models", "qwen3", "--out", str(d), expect="pass --force")
    _refused(tmp_path, "witprobe.certify", "coverage", "--models", "qwen3", "--out", str(d), "--force",
             expect="coverage.json exists and witprobe did not write it")


@pytest.mark.parametrize("argv", [
    ("witprobe.ledger", "record", "--out", "{d}/data.bin"),
    ("witprobe.ledger", "record", "--out", "{d}", "--force"),
    ("witprobe.certify", "schema", "--out", "{d}/data.bin"),
    ("witprobe.certify", "report", "{run}", "--out", "{d}/data.bin"),
], ids=["record-onto-a-file", "record-force-onto-a-user-dir", "schema-onto-a-file", "report-onto-a-file"])
def test_no_command_overwrites_a_users_file_without_force(tmp_path, certify_run, argv):
    d = tmp_path / "mine"
    _user_files(d)
    (d / "data.bin").write_bytes(os.urandom(64))
    run = _copy(certify_run, tmp_path / "run")
    _refused(tmp_path, *(a.format(d=d, run=run) for a in argv), expect=str(d))


def test_record_has_no_default_output_inside_the_package():
    p = _py("witprobe.ledger", "record")
    assert p.returncode == 2 and "--out" in p.stderr


def test_a_file_at_the_lock_name_is_never_taken_over(tmp_path, certify_run):
    (tmp_path / ".run.witprobe-lock").write_text("my file, named oddly")
    _refused(tmp_path, "witprobe.certify", "run", *FAST_RUN, "--out", str(tmp_path / "run"),
             expect="not a witprobe lock file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_force_in_a_read_only_directory_exits_2(tmp_path, certify_run):
    run = _copy(certify_run, tmp_path / "run")
    os.chmod(run, 0o555)
    try:
        _refused(tmp_path, "witprobe.certify", "run", *FAST_RUN, "--out", str(run), "--force", expect="cannot")
    finally:
        os.chmod(run, 0o755)


def test_force_that_cannot_remove_exits_2_with_one_line(tmp_path, certify_run, monkeypatch, capsys):
    """A read-only directory as root sees (permission denied on unlink), simulated: exit 2, one line."""
    from witprobe.certify.cli import main

    run = _copy(certify_run, tmp_path / "run")
    real_unlink = os.unlink

    def denied(path, *a, dir_fd=None, **kw):
        if dir_fd is not None and os.readlink(f"/proc/self/fd/{dir_fd}") == str(run):  # only in the old run
            raise PermissionError(13, "Permission denied", path)
        return real_unlink(path, *a, dir_fd=dir_fd, **kw)

    monkeypatch.setattr(safe_output.os, "unlink", denied)
    capsys.readouterr()
    assert main(["run", *FAST_RUN, "--out", str(run), "--force"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "Permission denied" in err[0], err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary or lock left"


def test_read_only_parent_exits_2(tmp_path):
    _refused(tmp_path, "witprobe.ledger", *SIM, "--out", "/proc/witprobe-run", expect="cannot write")


def test_a_second_concurrent_writer_fails_with_exit_2(tmp_path):
    out = tmp_path / "run"
    first = subprocess.Popen([sys.executable, "-m", "witprobe.ledger", *SIM, "--accounts", "4", "--decode-steps", "6",
                              "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                             cwd=ROOT)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not list(tmp_path.glob(".run.witprobe-*/journal.rank*.sqlite")):
            assert first.poll() is None, first.stderr.read()[-2000:]
            time.sleep(0.1)
        first.send_signal(signal.SIGSTOP)  # frozen mid-run, holding its lock: the test cannot race it
        try:
            for argv in ((*SIM, "--out", str(out), "--force"), ("live", "--out", str(out), "--force")):
                p = _py("witprobe.ledger", *argv)
                assert "being written by another witprobe command" in _one_line_error(p)
        finally:
            first.send_signal(signal.SIGCONT)
    finally:
        _, err = first.communicate(timeout=600)
    assert first.returncode == SIM_RC and _failing(out) == ["replica_coupling_identical"], err[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"], "no temporary or lock left"


# --------------------------------------------------------------------------- what --force still does


def test_force_replaces_a_run_it_wrote_and_a_derived_page_is_rewritten(tmp_path, certify_run):
    from witprobe.certify.cli import main

    run = _copy(certify_run, tmp_path / "run")
    assert main(["report", str(run)]) == 0
    assert main(["report", str(run)]) == 0  # its own page, unchanged: rewritten
    man = json.loads((run / MANIFEST).read_text())
    assert "report.html" in man["files"]
    assert main(["run", *FAST_RUN, "--max-new-tokens", "3", "--out", str(run), "--force"]) == 0
    assert not (run / "report.html").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"], "no temporary, old or lock folder left"


def test_simulate_force_replaces_its_own_run(tmp_path, simulate_run):
    run = _copy(simulate_run, tmp_path / "run")
    p = _py("witprobe.ledger", *SIM, "--out", str(run), "--force")
    assert p.returncode == SIM_RC, p.stderr[-2000:]
    assert _failing(run) == ["replica_coupling_identical"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    (run / "journal.rank0.sqlite").write_bytes(b"edited")
    _refused(tmp_path, "witprobe.ledger", *SIM, "--out", str(run), "--force",
             expect="journal.rank0.sqlite (changed since witprobe wrote it)")


# --------------------------------------------------------------------------- the module itself


def test_new_output_dir_leaves_nothing_on_error(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with safe_output.new_output_dir(out, "t") as tmp:
            (tmp / "half").write_text("written")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_temporaries_are_fresh_private_names(tmp_path):
    out = tmp_path / "out"
    seen = []
    for _ in range(2):
        with safe_output.new_output_dir(out, "t", force=True) as tmp:
            seen.append(tmp.name)
            assert (tmp.stat().st_mode & 0o077) == 0, "a private folder"
            (tmp / "f").write_text("x")
    assert seen[0] != seen[1] and all(s.startswith(".out.witprobe-") for s in seen)


KILLED_WRITER = """
import os, signal, sys
from witprobe import safe_output
with safe_output.new_output_dir(sys.argv[1], "t") as tmp:
    (tmp / "half").write_text("half written")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_writer_killed_with_sigkill_leaves_a_folder_the_next_writer_removes(tmp_path):
    out = tmp_path / "out"
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(out)], capture_output=True, text=True, timeout=120)
        assert p.returncode == -signal.SIGKILL, p.stderr
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out.witprobe-") and p.is_dir())
    assert len(left) == 1 and not out.exists()  # the second writer removed the first one's folder
    mine = tmp_path / ".out.witprobe-mine"  # the user's folder, named like witprobe's: no mark
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    forged = tmp_path / ".out.witprobe-forged"  # a mark with other bytes is not witprobe's
    forged.mkdir()
    (forged / safe_output.PARTIAL_MARK).write_text("something else\n")
    with safe_output.new_output_dir(out, "t") as tmp:
        (tmp / "f").write_text("x")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert not any(n in names for n in left), names
    assert (mine / "notes.txt").read_text() == "mine" and forged.is_dir() and (out / "f").read_text() == "x"
    assert not (out / safe_output.PARTIAL_MARK).exists()
    assert set(safe_output.read_manifest(out).files) == {"f"}


def test_force_replaces_a_standalone_file_only_if_witprobe_wrote_it_unchanged(tmp_path):
    """``--out FILE --force`` (schema, report, replay, sentinel, reads): the file is replaced only when
    its record ``.NAME.witprobe`` names its current sha256 (the CLI fuzz found ``certify schema --out
    precious.txt --force`` writing over a user's file)."""
    mine = tmp_path / "notes.json"
    mine.write_text("mine\n")
    with pytest.raises(safe_output.OutputRefused, match="witprobe did not write it"):
        safe_output.write_file(mine, "{}\n", force=True)
    assert mine.read_text() == "mine\n"
    out = tmp_path / "schema.json"
    safe_output.write_file(out, "{}\n")
    assert (tmp_path / ".schema.json.witprobe").is_file()
    safe_output.write_file(out, '{"a": 1}\n', force=True)  # its own file, unchanged: replaced
    assert out.read_text() == '{"a": 1}\n'
    out.write_text("edited by a person\n")
    with pytest.raises(safe_output.OutputRefused, match="changed since"):
        safe_output.write_file(out, "{}\n", force=True)
    assert out.read_text() == "edited by a person\n"
    # a record that is a link is never read through, and a copied record does not vouch for another file
    other = tmp_path / "other.json"
    other.write_text("{}\n")
    (tmp_path / ".other.json.witprobe").symlink_to(tmp_path / ".schema.json.witprobe")
    with pytest.raises(safe_output.OutputRefused, match="witprobe did not write it"):
        safe_output.write_file(other, "[]\n", force=True)
    assert other.read_text() == "{}\n"


def test_a_refused_out_is_refused_before_the_measurement_is_imported(tmp_path):
    """``certify run --out D --force`` on a folder witprobe did not write exits 2 before the
    measurement's imports (``witprobe.certify.measure`` and transformers' models: about 4 s of
    start-up), and the parser of every ``certify`` command counts the default prompts without them."""
    d = tmp_path / "mine"
    _user_files(d)
    code = ("import sys\nfrom witprobe.certify.cli import main\n"
            f"rc = main(['run', *{FAST_RUN!r}, '--out', {str(d)!r}, '--force'])\n"
            "print(rc, any(m in sys.modules for m in ('witprobe.certify.measure', 'transformers.modeling_utils')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=120)
    assert done.stdout.split()[-2:] == ["2", "False"], done.stdout + done.stderr
    assert "witprobe did not write it" in done.stderr
    assert snapshot(d) == {"NOTES.md": b"my notes\n", "main.py": b"print('mine')\n"}
