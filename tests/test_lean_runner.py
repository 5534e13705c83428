"""The Lean runner's orchestration. Where a fake executable stands in for Lean, the test name says so."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest

from witprobe.formal import lean_runner
from witprobe.formal.lean_runner import FileCheck, LeanMessage, LeanRunner, parse_output, statuses_from_check

LEAN_OUTPUT = textwrap.dedent("""\
    /tmp/x/run.lean:14:8: error: tactic 'decide' proved that the proposition
      L00_centred.check = true
    is false
    /tmp/x/run.lean:40:0: warning: unused variable `h`
    'WitprobeRun.R0.L00_centred_ok' depends on axioms: [sorryAx]
    'WitprobeRun.R0.L01_plain_ok' depends on axioms: [propext,
     Classical.choice, Quot.sound]
    'WitprobeRun.R0.L02_eform_ok' does not depend on any axioms
    'WitprobeRun.R0.L03_eform_ok' depends on axioms: [propext, Lean.ofReduceBool]
    """)
SPANS = {"L00_centred": [(10, 20), (90, 90)], "L01_plain": [(21, 30), (91, 91)],
         "L02_eform": [(31, 39), (92, 92)], "L03_eform": [(41, 50), (93, 93)]}
THMS = {k: f"WitprobeRun.R0.{k}_ok" for k in SPANS}


def test_parse_output_reads_messages_and_axiom_reports():
    msgs, axioms = parse_output(LEAN_OUTPUT)
    assert [(m.line, m.severity) for m in msgs] == [(14, "error"), (40, "warning")]
    assert "is false" in msgs[0].text
    assert axioms["WitprobeRun.R0.L00_centred_ok"] == ["sorryAx"]
    assert axioms["WitprobeRun.R0.L01_plain_ok"] == ["propext", "Classical.choice", "Quot.sound"]
    assert axioms["WitprobeRun.R0.L02_eform_ok"] == []
    assert lean_runner.audit_axioms(axioms["WitprobeRun.R0.L03_eform_ok"]) == ["Lean.ofReduceBool"]


def test_statuses_map_errors_and_audit_axioms():
    msgs, axioms = parse_output(LEAN_OUTPUT)
    st = statuses_from_check(FileCheck(returncode=1, messages=msgs, axioms=axioms), SPANS, THMS)
    assert st["L00_centred"].status == "failed" and "line 14" in st["L00_centred"].reason
    # the file failed overall, so nothing else may be reported as kernel-checked
    assert all(s.status == "failed" for s in st.values())
    ok = statuses_from_check(FileCheck(returncode=0, messages=[], axioms=axioms), SPANS, THMS)
    assert ok["L01_plain"].status == "kernel_checked"
    assert ok["L02_eform"].status == "kernel_checked"
    assert ok["L00_centred"].status == "failed" and "sorryAx" in ok["L00_centred"].reason
    assert ok["L03_eform"].status == "failed" and "ofReduceBool" in ok["L03_eform"].reason


def test_missing_axiom_report_and_stray_errors_fail_closed():
    st = statuses_from_check(FileCheck(returncode=0, axioms={}), SPANS, THMS)
    assert all(s.status == "failed" and "no axiom report" in s.reason for s in st.values())
    stray = [LeanMessage(200, 1, "error", "unknown identifier")]
    st = statuses_from_check(FileCheck(returncode=1, messages=stray, axioms={}), SPANS, THMS)
    assert all("outside obligations" in s.reason for s in st.values())
    st = statuses_from_check(FileCheck(returncode=None, timed_out=True), SPANS, THMS)
    assert all(s.status == "unchecked" and "timed out" in s.reason for s in st.values())


def _fake_toolchain(tmp_path: Path, lean_body: str, lake_body: str) -> Path:
    d = tmp_path / "fakebin"
    d.mkdir()
    for name, body in (("lean", lean_body), ("lake", lake_body)):
        p = d / name
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return d


def test_find_toolchain_with_fake_executables_via_env(tmp_path):
    d = _fake_toolchain(tmp_path, 'echo "Lean (version 4.14.0, fake)"', "exit 0")
    tc, why = lean_runner.find_toolchain({"WITPROBE_LEAN": str(d), "PATH": "", "HOME": str(tmp_path)})
    assert tc is not None and "4.14.0" in tc.version and why == ""
    tc, why = lean_runner.find_toolchain({"WITPROBE_LEAN": str(d / "lean"), "PATH": "", "HOME": str(tmp_path)})
    assert tc is not None
    tc, why = lean_runner.find_toolchain({"PATH": "", "HOME": str(tmp_path)})
    assert tc is None and "no Lean toolchain" in why


def test_runner_with_fake_lake_parses_a_failing_check(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text(LEAN_OUTPUT)
    d = _fake_toolchain(tmp_path, 'echo "Lean (version 4.14.0, fake)"',
                        f'if [ "$1" = "build" ]; then echo built; exit 0; fi\ncat {out}\nexit 1')
    tc, _ = lean_runner.find_toolchain({"WITPROBE_LEAN": str(d), "PATH": "", "HOME": str(tmp_path)})
    runner = LeanRunner(tc, tmp_path, timeout_s=30)
    assert runner.build() == (True, "built\n")
    check = runner.check_file(tmp_path / "run.lean")
    assert check.returncode == 1 and check.axioms["WitprobeRun.R0.L00_centred_ok"] == ["sorryAx"]


def test_runner_with_fake_lake_enforces_the_timeout(tmp_path):
    d = _fake_toolchain(tmp_path, 'echo "Lean (version 4.14.0, fake)"', "sleep 5\n")
    tc, _ = lean_runner.find_toolchain({"WITPROBE_LEAN": str(d), "PATH": "", "HOME": str(tmp_path)})
    runner = LeanRunner(tc, tmp_path, timeout_s=0.5)
    ok, why = runner.build()
    assert not ok and "timed out" in why
    check = runner.check_file(tmp_path / "run.lean")
    assert check.timed_out


def test_find_project_locates_this_repository():
    root = lean_runner.find_project(Path(__file__).parent)
    assert root is not None and (root / "Witprobe.lean").is_file()


REAL_LEAN, WHY = lean_runner.find_toolchain()


@pytest.mark.skipif(REAL_LEAN is None, reason=f"needs a Lean toolchain: {WHY}")
def test_real_lean_builds_the_library_and_checks_the_golden_obligations(tmp_path):
    import json

    from witprobe.certify.certificate import canonical_json, sha256_text
    from witprobe.certify.derive import derive
    from witprobe.formal.render import obligation_spans, render_run

    run = json.loads((Path(__file__).parent / "data" / "golden" / "run.json").read_text())
    sha = sha256_text(canonical_json(run))
    obs = derive(run).obligations
    text = render_run(obs, sha)
    path = tmp_path / "run.lean"
    path.write_text(text)
    runner = LeanRunner(REAL_LEAN, lean_runner.find_project(Path(__file__).parent))
    ok, out = runner.build()
    assert ok, out
    spans, thms = obligation_spans(text, sha)
    st = statuses_from_check(runner.check_file(path), spans, thms)
    assert {s.status for s in st.values()} == {"kernel_checked"}, st
    os.environ.get("CI")
