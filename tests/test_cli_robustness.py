"""Every witprobe command line: usage errors before any measurement, `--force` that only replaces
its own run, clean interrupts and broken pipes, one-line errors for corrupt inputs, `--version`,
`--quiet`, and the README's two commands one after the other."""

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

from witprobe.certify.cli import main

ROOT = Path(__file__).resolve().parents[1]
ARTIFACT = ROOT / "artifacts" / "coverage" / "qwen3-int8"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""),
       "HF_HUB_OFFLINE": "1"}
FAST = ["--model", "qwen3", "--max-new-tokens", "2", "--prompt", "hello there", "--no-reference",
        "--coq", "off", "--lean", "off"]


def _py(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, env=ENV, cwd=kw.pop("cwd", ROOT),
                          timeout=kw.pop("timeout", 600), **kw)


def _one_line_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("module", ["witprobe.certify", "witprobe.ledger", "witprobe.gate"])
def test_version(module):
    from witprobe import __version__

    p = _py(module, "--version")
    assert p.returncode == 0 and f"witprobe {__version__}" in p.stdout, (p.stdout, p.stderr)


def _usage_cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    if tmp.is_dir():
        (tmp / "a_file").write_text("x")
        (tmp / "user").mkdir()
        (tmp / "user" / "precious.txt").write_text("mine")
    return {
        "unknown model": (["--model", "nope"], "unknown model 'nope'"),
        "model path that does not exist": (["--model", str(tmp / "missing-model")], "no such file or directory"),
        "bands that do not divide the head dimension": (["--model", "qwen3", "--bands", "3"], "does not divide"),
        "output under a file": (["--model", "qwen3", "--out", str(tmp / "a_file" / "run")], "is not a directory"),
        "unwritable output": (["--model", "qwen3", "--out", "/proc/witprobe-run"], "cannot write"),
        "non-empty output without --force": (["--model", "qwen3", "--out", str(tmp / "user")], "not empty"),
        "--force on a directory that is not a run": (["--model", "qwen3", "--out", str(tmp / "user"), "--force"],
                                                     "only files witprobe wrote"),
        "zero new tokens": (["--model", "qwen3", "--max-new-tokens", "0"], "max_new_tokens"),
    }


@pytest.mark.parametrize("case", sorted(_usage_cases(Path("/nonexistent")).keys()))
def test_usage_errors_exit_2_with_one_line_before_any_measurement(case, tmp_path, capsys):
    args, expect = _usage_cases(tmp_path)[case]
    if "--out" not in args:
        args = [*args, "--out", str(tmp_path / "out")]
    assert main(["run", *args]) == 2
    err = capsys.readouterr().err
    assert "measuring" not in err, "a usage error must be caught before any measurement"
    err = "\n".join(ln for ln in err.splitlines() if not ln.startswith("[witprobe] loading"))
    assert expect in _one_line_error(err)
    assert (tmp_path / "user" / "precious.txt").read_text() == "mine"
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary folder left behind"


def test_force_replaces_a_run_and_removes_only_what_witprobe_wrote(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", *FAST, "--out", str(out), "--quiet"]) == 0
    first = (out / "run.json").read_text()
    assert main(["run", *FAST, "--out", str(out), "--quiet"]) == 2  # no --force
    assert main(["run", *FAST, "--max-new-tokens", "3", "--out", str(out), "--quiet", "--force"]) == 0
    assert (out / "run.json").read_text() != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"], "no temporary or old folder left"
    (out / "notes.txt").write_text("mine")  # a file witprobe did not write: --force now refuses
    capsys.readouterr()
    assert main(["run", *FAST, "--out", str(out), "--quiet", "--force"]) == 2
    assert "notes.txt" in _one_line_error(capsys.readouterr().err)
    assert (out / "notes.txt").read_text() == "mine" and (out / "run.json").is_file()


def test_force_never_empties_the_current_directory(tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    p = _py("witprobe.certify", "run", *FAST, "--out", ".", "--force", cwd=tmp_path)
    assert p.returncode == 2 and "only files witprobe wrote" in _one_line_error(p.stderr)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["keep.txt"]


def test_interrupt_during_writing_leaves_nothing_behind(tmp_path, monkeypatch, capsys):
    """The kernels' phase is interrupted: exit 130, the run directory and its temp folder are gone,
    and an old run being replaced is put back untouched."""
    import witprobe.certify.pipeline as pipeline

    real = pipeline.produce

    def interrupted(run, lean_mode, workdir, **kw):
        real(run, lean_mode, workdir, **kw)  # every file written into the temp folder, then Ctrl-C
        raise KeyboardInterrupt

    out = tmp_path / "run"
    monkeypatch.setattr(pipeline, "produce", interrupted)
    assert main(["run", *FAST, "--out", str(out), "--quiet"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(pipeline, "produce", real)
    assert main(["run", *FAST, "--out", str(out), "--quiet"]) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    monkeypatch.setattr(pipeline, "produce", interrupted)
    assert main(["run", *FAST, "--max-new-tokens", "3", "--out", str(out), "--quiet", "--force"]) == 130
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before and sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_sigint_during_measurement_exits_130_and_writes_nothing(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "witprobe.certify", "run", "--model", "qwen3", "--max-new-tokens",
                             "4096", "--coq", "off", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # see test_cli.py
    err_lines = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        err_lines.append(line)
        if "measuring" in line:
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, "".join(err_lines) + rest
    assert "Traceback" not in rest and rest.strip().splitlines()[-1].endswith("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_broken_pipe_exits_quietly():
    for args in (["witprobe.certify", "show", str(ARTIFACT)], ["witprobe.gate", "--help"]):
        proc = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=ENV, cwd=ROOT)
        proc.stdout.close()  # the reader goes away before anything is written
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
        if args[1] == "show":
            assert proc.returncode == 141 and err == "", err
        else:  # argparse prints help and exits before the handler; it must not trace back either
            assert "Traceback" not in err


def _copy_run(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(ARTIFACT, d)
    return d


def _edit(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


CORRUPT = {
    "certificate.json truncated": ("show", "certificate.json", lambda p: p.write_text(p.read_text()[:100]),
                                   "not valid JSON"),
    "certificate.json a list": ("show", "certificate.json", lambda p: p.write_text("[]"), "expected a JSON object"),
    "certificate.json claims missing": ("show", "certificate.json", lambda p: _edit(p, lambda d: d.pop("claims")),
                                        "certificate.json.claims: missing"),
    "certificate.json a bound not a number": (
        "show", "certificate.json",
        lambda p: _edit(p, lambda d: d["claims"][1]["bound"].__setitem__("exact", "lots")), "field claims[1].bound.exact"),
    "certificate.json a tier missing": ("show", "certificate.json",
                                        lambda p: _edit(p, lambda d: d["claims"][2].pop("tier")), "claims[2].tier: missing"),
    "certificate.json summary.coq a string": ("show", "certificate.json",
                                              lambda p: _edit(p, lambda d: d["summary"].__setitem__("coq", "x")),
                                              "certificate.json.summary.coq: expected a CoqSummary object"),
    "run.json truncated (check)": ("check", "run.json", lambda p: p.write_text(p.read_text()[:50]), "not valid JSON"),
    "run.json foreign schema (check)": ("check", "run.json", lambda p: _edit(p, lambda d: d.__setitem__("schema", "x")),
                                        "field schema"),
    "run.json a layer without reads (check)": ("check", "run.json",
                                               lambda p: _edit(p, lambda d: d["layers"][1].pop("read")), "layers[1]"),
    "certificate.json truncated (check)": ("check", "certificate.json", lambda p: p.write_text("{"), "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_input_files_exit_2_naming_file_and_field(case, tmp_path, capsys):
    cmd, name, corrupt, expect = CORRUPT[case]
    d = _copy_run(tmp_path)
    corrupt(d / name)
    assert main([cmd, str(d)]) == 2
    captured = capsys.readouterr()
    line = _one_line_error(captured.err)
    assert name in line and expect in line, line
    assert captured.out == "", "nothing printed before the error"


def test_corrupt_snapshot_and_journal_and_ledger_inputs_exit_2(tmp_path):
    snap = tmp_path / "snap.json"
    snap.write_text('{"schema": "witprobe-probe/1", ')
    p = _py("witprobe.gate", str(snap), "--expect-layers", "2")
    assert p.returncode == 2 and "snap.json" in _one_line_error(p.stderr) and "not valid JSON" in p.stderr
    journal = tmp_path / "journal.rank0.sqlite"
    journal.write_bytes(os.urandom(4096))
    p = _py("witprobe.ledger", "verify", str(journal))
    assert p.returncode == 2 and "journal.rank0.sqlite" in _one_line_error(p.stderr)
    run = tmp_path / "ledger-run"
    run.mkdir()
    (run / "manifest.json").write_text('{"tool": ')
    p = _py("witprobe.ledger", "gate", str(run))
    assert p.returncode == 2 and "manifest.json" in _one_line_error(p.stderr)


def test_ledger_force_refuses_a_directory_it_did_not_write(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "data.csv").write_text("1,2")
    p = _py("witprobe.ledger", "simulate", "--out", str(tmp_path / "mine"), "--force", "--ranks", "1")
    assert p.returncode == 2 and "only files witprobe wrote" in _one_line_error(p.stderr)
    assert (tmp_path / "mine" / "data.csv").read_text() == "1,2"


@pytest.mark.slow
def test_quiet_silences_third_party_progress_bars(tmp_path, smollm2):
    """SmolLM2's loader goes through transformers' `from_pretrained`, which draws a tqdm bar."""
    args = ["witprobe.certify", "run", "--model", "smollm2", "--max-new-tokens", "1", "--prompt", "hi",
            "--no-reference", "--coq", "off", "--lean", "off"]
    loud = _py(*args, "--out", str(tmp_path / "a"))
    assert loud.returncode == 0 and "Loading weights" in loud.stderr, loud.stderr
    quiet = _py(*args, "--out", str(tmp_path / "b"), "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_readme_run_then_readme_tests_in_one_clone(tmp_path):
    """The README's first command writes runs/<...>/obligations/run.lean into the clone; the suite's
    scan of Lean sources (run second) must not count it."""
    import importlib.util

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True,
                   capture_output=True, timeout=300)
    p = _py("witprobe.certify", "run", *FAST, "--quiet", cwd=clone)  # default --out: runs/<model>-<codec>-<time>
    assert p.returncode == 0, p.stderr
    written = list((clone / "runs").glob("*/obligations/run.lean"))
    assert len(written) == 1
    spec = importlib.util.spec_from_file_location("lean_names_clone", ROOT / "tests" / "test_lean_names.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert not [f for f in mod.lean_sources(clone) if f.startswith("runs/")]
    status = (clone / "LEAN_STATUS.md").read_text(encoding="utf-8")
    assert [f for f in mod.lean_sources(clone) if f"`{f}`" not in status] == []
    (written[0].parents[1] / "extra.txt").write_text("a user file: no longer a run directory")
    assert "runs/" in " ".join(mod.lean_sources(clone)), "the scan must still see .lean files outside runs"
    out = subprocess.run(["git", "status", "--porcelain", "--ignored", "runs"], cwd=clone, capture_output=True,
                         text=True).stdout
    assert out.startswith("!!"), "runs/ is git-ignored"
