"""The per-run Lean claim theorems (``obligations/run_real.lean``) through the pipeline.

No Lean toolchain exists here, so the path that would certify a claim by Lean's kernel is driven
by a fake ``lake``/``lean`` pair found through ``$WITPROBE_LEAN`` (test names say so): it
"accepts" a file by printing the standard axiom report for every ``#print axioms`` line, or
rejects one theorem with an error message at its line. What is tested is witprobe's wiring
(discovery of the analytic package, spans, audit, tiers, ``certify check``), not Lean.
"""

from __future__ import annotations

import json
import sys
import stat
from pathlib import Path

import pytest

from witprobe.certify.check import check_dir
from witprobe.certify.cli import main
from witprobe.certify.pipeline import write_run_dir
from witprobe.formal import lean_runner
from witprobe.formal.render_lean_real import LEAN_REAL_FILE

ROOT = Path(__file__).resolve().parents[1]
SMOLLM2_RUN = ROOT / "artifacts" / "coverage" / "smollm2-int8" / "run.json"

ACCEPT = r"""
if [ "$1" = "build" ]; then echo built; exit 0; fi
grep '^#print axioms ' "$3" | sed "s/^#print axioms \(.*\)$/'\1' depends on axioms: [propext, Classical.choice, Quot.sound]/"
exit 0
"""

# rejects theorem L01_attn_tv of a claim file (an error at its line), accepts everything else
REJECT_L01 = r"""
if [ "$1" = "build" ]; then echo built; exit 0; fi
grep '^#print axioms ' "$3" | sed "s/^#print axioms \(.*\)$/'\1' depends on axioms: [propext, Classical.choice, Quot.sound]/"
line=$(grep -n '^theorem L01_attn_tv ' "$3" | cut -d: -f1)
if [ -n "$line" ]; then echo "$3:$line:0: error: linarith failed to find a contradiction"; exit 1; fi
exit 0
"""

# reports a sorry in one claim theorem: the axiom audit must refuse it
SORRY_L02 = r"""
if [ "$1" = "build" ]; then echo built; exit 0; fi
grep '^#print axioms ' "$3" | grep -v 'L02_attn_tv' | sed "s/^#print axioms \(.*\)$/'\1' depends on axioms: [propext, Classical.choice, Quot.sound]/"
grep '^#print axioms .*L02_attn_tv' "$3" | sed "s/^#print axioms \(.*\)$/'\1' depends on axioms: [propext, sorryAx]/"
exit 0
"""


def _fake(tmp_path: Path, lake_body: str, name: str = "fakebin") -> Path:
    d = tmp_path / name
    d.mkdir()
    for exe, body in (("lean", 'echo "Lean (version 4.14.0, fake)"\n'), ("lake", lake_body)):
        p = d / exe
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return d


def assert_arithmetic(c: dict, expected: str) -> None:
    """The Lean arithmetic status (``run.lean``) of attention claim ``c`` is ``expected``. A box-form
    claim has no obligation of its own (its theorem has no numeric side condition, and its Lean
    status is the per-run theorem's alone): there the claim says ``none``, and ``expected`` is
    required of every non-vacuous chain form's obligation beside it."""
    arith = c["kernels"]["lean_arithmetic"]
    if c["form"] != "boxsup":
        assert arith["status"] == expected, arith
        return
    assert arith["status"] == "none" and arith["reason"] == "no obligation", arith
    chain = [f for name, f in c["forms"].items() if name != "boxsup" and not f["vacuous"]]
    assert chain, c["id"]
    assert all(f["obligation"] and f["lean_status"] == expected for f in chain), c["forms"]


@pytest.fixture(scope="module")
def smollm2_run():
    """The committed SmolLM2 run with the box meter's readings removed: its claims are then the
    centred chain form, whose theorems have Lean twins (the box claims are Coq only)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run_variants import without_box

    return without_box(json.loads(SMOLLM2_RUN.read_text()))


def test_the_analytic_package_is_found_and_overridable(tmp_path, monkeypatch):
    monkeypatch.delenv("WITPROBE_LEAN_ANALYTIC", raising=False)
    found = lean_runner.find_analytic_project()
    assert found == ROOT / "analytic"
    monkeypatch.setenv("WITPROBE_LEAN_ANALYTIC", str(tmp_path))
    assert lean_runner.find_analytic_project() is None  # no lakefile there
    (tmp_path / "lakefile.lean").write_text("package other where\n")
    assert lean_runner.find_analytic_project() is None  # not the analytic package
    (tmp_path / "lakefile.lean").write_text("package witprobeAnalytic where\n")
    assert lean_runner.find_analytic_project() == tmp_path


def test_without_lean_the_real_theorems_are_unchecked_with_the_reason(tmp_path, smollm2_run, monkeypatch):
    monkeypatch.setenv("WITPROBE_LEAN", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    cert = write_run_dir(smollm2_run, tmp_path / "run", "auto", coq_mode="off").certificate
    assert (tmp_path / "run" / LEAN_REAL_FILE).is_file()
    assert cert["lean_file"] == LEAN_REAL_FILE and cert["kernels"]["lean"]["status"] == "unavailable"
    attn = [c for c in cert["claims"] if c["kind"] == "attn_tv"]
    assert len(attn) == 30
    for c in attn:
        assert c["kernels"]["lean"]["status"] == "unchecked"
        assert c["kernels"]["lean"]["reason"].startswith("no Lean toolchain")
        assert c["kernels"]["lean"]["theorem"] == c["kernels"]["coq"]["theorem"]
        assert_arithmetic(c, "unchecked")
        assert c["tier"] == "empirical"
    assert cert["summary"]["lean"] == {"theorems": 30, "kernel_checked": 0, "failed": []}


def test_fake_lean_accepting_run_real_certifies_by_lean_and_check_confirms(tmp_path, smollm2_run, monkeypatch, capsys):
    monkeypatch.setenv("WITPROBE_LEAN", str(_fake(tmp_path, ACCEPT)))
    out = tmp_path / "run"
    cert = write_run_dir(smollm2_run, out, "auto", coq_mode="off").certificate
    assert cert["kernels"]["lean"]["status"] == "checked" and "fake" in cert["kernels"]["lean"]["toolchain"]
    attn = [c for c in cert["claims"] if c["kind"] == "attn_tv"]
    for c in attn:
        assert c["kernels"]["coq"]["status"] == "unchecked"  # Coq is off: Lean alone certifies
        assert c["kernels"]["lean"]["status"] == "kernel_checked", c["kernels"]["lean"]
        assert c["kernels"]["lean"]["axioms"] == ["propext", "Classical.choice", "Quot.sound"]
        assert_arithmetic(c, "arithmetic_checked")
        assert c["tier"] == "certified" and c["tier_reason"].endswith("kernel-checked by Lean")
    assert cert["summary"]["lean"]["kernel_checked"] == 30
    assert main(["check", str(out)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["show", str(out)]) == 0
    assert "lean: 30/30 kernel-checked" in capsys.readouterr().out


def test_fake_lean_rejecting_one_theorem_certifies_nothing_by_lean_and_check_names_it(tmp_path, smollm2_run,
                                                                                       monkeypatch):
    """An error in one theorem fails the file (fail closed); arithmetic_checked alone never certifies."""
    monkeypatch.setenv("WITPROBE_LEAN", str(_fake(tmp_path, REJECT_L01)))
    out = tmp_path / "run"
    cert = write_run_dir(smollm2_run, out, "auto", coq_mode="off").certificate
    by_id = {c["id"]: c for c in cert["claims"]}
    assert by_id["L01.attn_tv"]["kernels"]["lean"]["status"] == "failed"
    assert "linarith failed" in by_id["L01.attn_tv"]["kernels"]["lean"]["reason"]
    for c in cert["claims"]:
        if c["kind"] == "attn_tv":
            assert c["kernels"]["lean"]["status"] == "failed"
            assert_arithmetic(c, "arithmetic_checked")
            assert c["tier"] == "empirical"
    assert cert["summary"]["lean"]["kernel_checked"] == 0 and len(cert["summary"]["lean"]["failed"]) == 30
    res = check_dir(out)
    assert any(p.startswith("Lean rejects theorem L01_attn_tv: Lean error at line") for p in res.problems), res.problems


def test_fake_lean_reporting_sorry_is_refused_by_the_axiom_audit(tmp_path, smollm2_run, monkeypatch):
    monkeypatch.setenv("WITPROBE_LEAN", str(_fake(tmp_path, SORRY_L02)))
    cert = write_run_dir(smollm2_run, tmp_path / "run", "auto", coq_mode="off").certificate
    by_id = {c["id"]: c for c in cert["claims"]}
    bad = by_id["L02.attn_tv"]
    assert bad["kernels"]["lean"]["status"] == "failed" and "sorryAx" in bad["kernels"]["lean"]["reason"]
    assert bad["tier"] == "empirical"
    assert by_id["L03.attn_tv"]["tier"] == "certified"
    assert cert["summary"]["lean"]["failed"] == [bad["kernels"]["lean"]["theorem"]]


def test_check_with_lean_here_on_a_certificate_made_without_it(tmp_path, smollm2_run, monkeypatch, capsys):
    monkeypatch.setenv("WITPROBE_LEAN", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    out = tmp_path / "run"
    write_run_dir(smollm2_run, out, "auto", coq_mode="off")
    monkeypatch.undo()  # the fake scripts need the ordinary PATH (grep, sed)
    monkeypatch.setenv("WITPROBE_LEAN", str(_fake(tmp_path, ACCEPT)))
    res = check_dir(out)
    assert res.ok, res.problems
    assert any("made without Lean; Lean here kernel-checks 30/30 claim theorems" in n for n in res.notes), res.notes


def test_check_refuses_lean_results_it_cannot_re_verify(tmp_path, smollm2_run, monkeypatch):
    monkeypatch.setenv("WITPROBE_LEAN", str(_fake(tmp_path, ACCEPT)))
    out = tmp_path / "run"
    write_run_dir(smollm2_run, out, "auto", coq_mode="off")
    monkeypatch.setenv("WITPROBE_LEAN", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    res = check_dir(out)
    assert any("records Lean results that cannot be re-verified here" in p for p in res.problems), res.problems


def test_check_compares_run_real_lean_byte_for_byte(tmp_path, smollm2_run, capsys):
    out = tmp_path / "run"
    write_run_dir(smollm2_run, out, "off", coq_mode="off")
    assert main(["check", str(out)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    path = out / LEAN_REAL_FILE
    text = path.read_text()
    i = text.index("≤ ((", text.index("theorem L04_attn_tv")) + len("≤ ((")
    path.write_text(text[:i] + "9" + text[i:])
    assert main(["check", str(out)]) == 1
    assert f"{LEAN_REAL_FILE} differs from the rendering of run.json" in capsys.readouterr().out
    path.unlink()
    assert main(["check", str(out)]) == 1
    assert f"{LEAN_REAL_FILE} is missing" in capsys.readouterr().out


def test_show_refuses_a_certificate_of_another_schema_with_one_line(tmp_path, smollm2_run, capsys):
    out = tmp_path / "run"
    write_run_dir(smollm2_run, out, "off", coq_mode="off")
    cert = json.loads((out / "certificate.json").read_text())
    cert["schema"] = "witprobe-certificate/2"
    (out / "certificate.json").write_text(json.dumps(cert))
    assert main(["show", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "schema: 'witprobe-certificate/2' is not 'witprobe-certificate/4'" in err and "Traceback" not in err
    assert main(["check", str(out)]) == 2  # an old schema is bad input, named with the way out
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "predates the per-run Lean claim theorems" in err and "re-run" in err
