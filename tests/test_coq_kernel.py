"""The Coq trust chain: library build and audit, per-run claim theorems, rejection, check.

These tests need ``coqc`` with the Interval library. They skip (with the reason) only on a
developer machine without Coq; under CI (``CI`` set) a missing Coq is a failure, never a skip.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import shutil
import sys
from pathlib import Path

import pytest

from witprobe.calculus import rounding
from witprobe.certify.certificate import assemble
from witprobe.certify.check import check_dir
from witprobe.certify.cli import main
from witprobe.certify.derive import derive
from witprobe.certify.kernels import KernelOutcomes, coq_check, lean_check, lean_real_check
from witprobe.certify.pipeline import write_run_dir
from witprobe.formal import coq_runner
from witprobe.formal.render_coq import COQ_FILE, render_coq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_variants import without_box  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMOLLM2_RUN = ROOT / "artifacts" / "coverage" / "smollm2-int8" / "run.json"
COQC, COQ_WHY = coq_runner.find_coqc()
if COQC is None and os.environ.get("CI"):
    raise RuntimeError(f"CI must run the Coq tests, but {COQ_WHY}")
pytestmark = pytest.mark.skipif(COQC is None, reason=f"no Coq here: {COQ_WHY}")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    lib = coq_runner.find_library()
    assert lib is not None, "the repository's coq/ library was not found"
    return coq_runner.build_library(COQC, lib, cache=tmp_path_factory.mktemp("coqcache"))


@pytest.fixture(scope="module")
def smollm2_run():
    return json.loads(SMOLLM2_RUN.read_text())


def test_library_sources_have_no_unproved_or_assumed_statements():
    lib = coq_runner.find_library()
    for f in coq_runner.library_files(lib):
        assert coq_runner.lint_source((lib / f).read_text()) == [], f
    assert coq_runner.lint_source("(* Admitted in a comment is fine *) Lemma x : True. Proof. exact I. Qed.") == []
    assert coq_runner.lint_source("Lemma x : False. Admitted.") == ["Admitted"]
    assert coq_runner.lint_source("Axiom cheat : False.") == ["Axiom"]


def test_library_builds_then_is_verified_by_hash_and_a_tampered_build_is_rebuilt(library, tmp_path):
    assert library.how == "built"
    lib = coq_runner.find_library()
    cache = library.root.parents[1]
    again = coq_runner.build_library(COQC, lib, cache=cache)
    assert again.how == "verified" and again.root == library.root  # this process's own build, hashes in memory
    vo = again.root / "Witprobe" / "Claims.vo"
    vo.write_bytes(vo.read_bytes() + b"\0")
    rebuilt = coq_runner.build_library(COQC, lib, cache=cache)
    assert rebuilt.how == "built" and rebuilt.root != library.root


def test_a_library_with_admitted_is_refused(tmp_path):
    lib = tmp_path / "coq"
    (lib / "Witprobe").mkdir(parents=True)
    (lib / "_CoqProject").write_text("-R Witprobe Witprobe\nWitprobe/Bad.v\n")
    (lib / "Witprobe" / "Bad.v").write_text("Lemma bad : False.\nAdmitted.\n")
    with pytest.raises(coq_runner.CoqError, match="Admitted"):
        coq_runner.build_library(COQC, lib, cache=tmp_path / "cache")


def test_smollm2_claim_theorems_are_kernel_checked_within_the_allowlist(library, smollm2_run):
    deriv = derive(smollm2_run)
    assert len(deriv.theorems) == 30 and {t.shape for t in deriv.theorems} == {"boxsup"}  # the box is tightest
    text = render_coq(deriv.theorems, "0" * 64)
    statuses = coq_runner.check_theorems(COQC, library, lambda sub: render_coq([t for t in deriv.theorems if t.theorem in sub], "0" * 64),
                                         [t.theorem for t in deriv.theorems])
    assert {s.status for s in statuses.values()} == {coq_runner.KERNEL_CHECKED}, statuses
    found = set(next(iter(statuses.values())).assumptions)
    assert found and found <= coq_runner.ALLOWED_ASSUMPTIONS
    assert set(coq_runner.REALS_AXIOMS) <= found
    assert "Theorem L00_attn_tv :" in text and "Print Assumptions" in text


def test_every_form_and_shape_the_renderer_emits_is_kernel_checked(library):
    """One theorem of each (form, shape) pair that run.v (and its Lean twin run_real.lean) can
    hold, from the committed runs' real constants: dense KV (SmolLM2, Qwen3: banded, plain banded),
    latent (MLA), sinks (V4), and score level."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from claim_shapes import every_form

    first = {}
    for i, name in enumerate(("smollm2-int8", "mla-int8", "v4-int8", "qwen3-int8")):
        run = json.loads((ROOT / "artifacts" / "coverage" / name / "run.json").read_text())
        for t in every_form(run, f"R{i}_"):
            first.setdefault((t.form, t.shape), t)
        for t in derive(run).theorems:  # the box claims derivation makes (dense and latent KV)
            if t.form == "boxsup":  # renamed with its shipped rows' definition (one file holds both runs)
                name, rows = f"R{i}_{t.theorem}_box", f"{t.theorem}_rows"
                first.setdefault((t.form, t.shape), dataclasses.replace(
                    t, theorem=name, statement=t.statement.replace(rows, f"{name}_rows"),
                    proof=t.proof.replace(rows, f"{name}_rows"), definitions=t.definitions.replace(rows, f"{name}_rows")))
    assert set(first) == {(f, s) for f in ("centred", "eform", "plain") for s in ("banded", "latent", "sink", "score")} | {
        ("boxsup", "boxsup"), ("boxsup", "boxsup_latent")}
    sel = list(first.values())
    statuses = coq_runner.check_theorems(
        COQC, library, lambda sub: render_coq([t for t in sel if t.theorem in sub], "e" * 64), [t.theorem for t in sel])
    assert {n: s.status for n, s in statuses.items()} == {t.theorem: coq_runner.KERNEL_CHECKED for t in sel}


def _lowered(th, units: int):
    """The same theorem with its claimed bound ``B`` replaced by ``units / 2**48`` (statement and
    proof: a box claim's proof names ``B`` to its checker)."""
    from witprobe.formal.claim_theorems import lowered_theorem

    return lowered_theorem(th, units)


def _without_box(run: dict) -> dict:
    return without_box(run)


def test_a_bound_lowered_below_its_true_value_is_rejected_and_not_certified(library, smollm2_run, monkeypatch):
    deriv = derive(_without_box(smollm2_run))
    victim = deriv.theorems[7]
    assert victim.form == "centred"
    c = rounding.from_units(victim.constants[0].units)
    true_value = math.tanh(float(c) / 2)  # the supremum for radius C (sharp, two keys)
    lowered = _lowered(victim, int(true_value * rounding.UNIT * (1 - 1e-6)))
    deriv.theorems[7] = lowered
    monkeypatch.setattr(coq_runner, "MAX_ROUNDS", 2)
    outcome = coq_check("auto", deriv.theorems, "1" * 64)
    assert outcome.statuses[lowered.theorem].status == coq_runner.REJECTED
    assert "rejected" in outcome.statuses[lowered.theorem].reason
    others = [s for n, s in outcome.statuses.items() if n != lowered.theorem]
    assert {s.status for s in others} == {coq_runner.KERNEL_CHECKED}
    off = KernelOutcomes(coq=outcome, lean=lean_real_check("off", Path("x"), "", "1" * 64, deriv.theorems),
                         lean_arithmetic=lean_check("off", Path("x"), "", "1" * 64, []))
    cert = assemble("1" * 64, deriv, None, None, off, None)
    claim = next(c for c in cert["claims"] if c["id"] == victim.claim_id)
    assert claim["tier"] == "empirical" and claim["kernels"]["coq"]["status"] == "rejected"
    assert cert["summary"]["coq"]["rejected"] == [f"Run_1111111111111111.{lowered.theorem}"]
    assert sum(c["tier"] == "certified" for c in cert["claims"]) == 29
    # the bound it replaced is true: raising it back is accepted
    ok = coq_check("auto", [victim], "1" * 64)
    assert ok.statuses[victim.theorem].status == coq_runner.KERNEL_CHECKED


def test_an_assumption_outside_the_allowlist_rejects_every_theorem(library, smollm2_run, monkeypatch):
    deriv = derive(smollm2_run)
    th = deriv.theorems[:2]

    def render(sub):
        text = render_coq([t for t in th if t.theorem in sub], "2" * 64)
        cheat = "Module Run_2222222222222222.\nAxiom cheat : forall P : Prop, P.\n"
        text = text.replace("Module Run_2222222222222222.\n", cheat, 1)
        return text.replace(th[0].proof, "apply cheat.", 1)

    statuses = coq_runner.check_theorems(COQC, library, render, [t.theorem for t in th])
    assert {s.status for s in statuses.values()} == {coq_runner.REJECTED}
    assert all("the file contains Axiom" in s.reason for s in statuses.values())  # the lint, first
    monkeypatch.setattr(coq_runner, "lint_source", lambda text: [])  # the audit, second and independent
    statuses = coq_runner.check_theorems(COQC, library, render, [t.theorem for t in th])
    assert {s.status for s in statuses.values()} == {coq_runner.REJECTED}
    assert all("Run_2222222222222222.cheat is outside the allowlist" in s.reason for s in statuses.values())


def test_check_catches_a_constant_edited_in_run_v(tmp_path, smollm2_run, capsys):
    out = tmp_path / "run"
    # the untouched run checks: test_certify.py::test_check_accepts_the_untouched_run; the edit is
    # caught by comparing run.v with the rendering of run.json, before and without any kernel run
    write_run_dir(smollm2_run, out, "off", coq_mode="off")
    v = out / COQ_FILE
    text = v.read_text()
    i = text.index("<= (", text.index("Theorem L04_attn_tv")) + len("<= (")
    v.write_text(text[:i] + "9" + text[i:])
    assert main(["check", str(out)]) == 1
    assert f"{COQ_FILE} differs from the rendering of run.json" in capsys.readouterr().out


def test_check_exits_1_on_a_fail_verdict(tmp_path, smollm2_run, capsys):
    bad = json.loads(json.dumps(smollm2_run))
    bad["layers"][3]["read"]["rows_centred_beaten"] = 2
    out = tmp_path / "failing"
    produced = write_run_dir(bad, out, "off", coq_mode="off")  # the verdict is the run's, not the kernel's
    assert produced.certificate["summary"]["verdict"] == "fail"
    assert main(["check", str(out)]) == 1
    report = capsys.readouterr().out
    assert "verdict is 'fail'" in report and "certificate.json differs" not in report


def test_check_names_a_theorem_the_kernel_rejects_here(tmp_path, smollm2_run, capsys, monkeypatch):
    out = tmp_path / "run"
    write_run_dir(smollm2_run, out, "off", coq_mode="off")
    import witprobe.certify.derive as derive_mod

    real = derive_mod.boxsup_theorem  # every SmolLM2 claim is a box claim

    def lowered(claim_id, bound_units, *rest):
        th = real(claim_id, bound_units, *rest)
        return _lowered(th, 1) if claim_id == "L02.attn_tv" else th

    monkeypatch.setattr(derive_mod, "boxsup_theorem", lowered)
    monkeypatch.setattr(coq_runner, "MAX_ROUNDS", 1)
    cert = json.loads((out / "certificate.json").read_text())
    cert["kernels"]["coq"]["mode"] = "auto"
    (out / "certificate.json").write_text(json.dumps(cert))
    res = check_dir(out)
    assert any("Coq rejects theorem L02_attn_tv" in p for p in res.problems), res.problems


def test_without_coq_every_claim_is_empirical_with_the_reason(tmp_path, smollm2_run, monkeypatch):
    monkeypatch.setenv("WITPROBE_COQC", str(tmp_path / "no-coqc"))
    monkeypatch.setenv("PATH", str(tmp_path))
    out = tmp_path / "run"
    produced = write_run_dir(smollm2_run, out, "off")
    cert = produced.certificate
    assert cert["kernels"]["coq"]["status"] == "unavailable"
    with_theorem = [c for c in cert["claims"] if c["theorem"] is not None]
    assert with_theorem, "the run states theorems for its TV claims"
    for c in cert["claims"]:
        assert c["tier"] == "empirical"
        if c["theorem"] is not None:  # a theorem exists: empirical only because no kernel ran
            assert "not kernel-checked" in c["tier_reason"] and "no Coq found" in c["tier_reason"]
        else:  # no theorem states it (the attention-output bounds): that reason, never a certified tier
            assert ("no kernel-checked theorem states this" in c["tier_reason"]
                    or "trivial TV <= 1" in c["tier_reason"]), c["tier_reason"]
    assert cert["summary"]["coq"]["kernel_checked"] == 0


def test_coq_required_without_coq_exits_3_before_measuring(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WITPROBE_COQC", str(tmp_path / "no-coqc"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["run", "--out", str(tmp_path / "r"), "--coq", "required", "--quiet"]) == 3
    assert "no Coq found" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_check_compiles_the_run_v_on_disk_as_well(tmp_path, smollm2_run, capsys):
    """A bound lowered by hand in run.v is reported as a difference from the rendering and, on
    its own terms, as a theorem the kernel rejects in the file on disk."""
    out = tmp_path / "run"
    write_run_dir(_without_box(smollm2_run), out, "off")
    v = out / COQ_FILE
    text = v.read_text()
    start = text.index("Theorem L04_attn_tv")
    i = text.rindex("<= (", start, text.index("Proof.", start)) + len("<= (")
    j = text.index(" /", i)
    v.write_text(text[:i] + "1" + text[j:])  # B = 2^-48
    res = check_dir(out)
    assert any(f"{COQ_FILE} differs from the rendering" in p for p in res.problems), res.problems
    assert any(p.startswith(f"{COQ_FILE} on disk: Coq rejects theorem L04_attn_tv") for p in res.problems), res.problems
