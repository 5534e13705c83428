"""The Coq audit refuses every known way to get a theorem past the kernel without a proof.

Each bypass is refused twice, independently: by the source lint (library and run files), and by
the audit of ``Print Assumptions`` on the compiled file (every line a ``name : type`` declaration
of an allowed axiom with its recorded type). A cached library is never trusted: only a build this
process compiled, whose ``.vo`` files still hash as written, is reused.

These tests need ``coqc`` (and Interval for the primitive floats); they skip without Coq, except
under CI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from witprobe.formal import coq_runner
from witprobe.formal.coq_axioms import AXIOM_TYPES

COQC, COQ_WHY = coq_runner.find_coqc()
if COQC is None and os.environ.get("CI"):
    raise RuntimeError(f"CI must run the Coq tests, but {COQ_WHY}")
pytestmark = pytest.mark.skipif(COQC is None, reason=f"no Coq here: {COQ_WHY}")


def _library(tmp_path: Path, files: dict[str, str] | None = None) -> coq_runner.LibraryBuild:
    """A stand-in library build: ``Witprobe/<name>.v`` for each entry, compiled (none by default)."""
    root = tmp_path / "lib"
    (root / "Witprobe").mkdir(parents=True)
    for name, text in (files or {}).items():
        (root / "Witprobe" / f"{name}.v").write_text(text)
        code, out = coq_runner._run([str(COQC.coqc), "-q", "-R", "Witprobe", "Witprobe", f"Witprobe/{name}.v"], root, 300)
        assert code == 0, out
    return coq_runner.LibraryBuild(root, "0" * 64, "built", ())


def _audit(tmp_path: Path, text: str, target: str = "t", library: dict[str, str] | None = None):
    """Compile ``text`` as a run file, then audit ``target``: (axioms found, problems)."""
    build = _library(tmp_path, library)
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.v").write_text(text)
    code, out = coq_runner._run([str(COQC.coqc), "-q", "-R", str(build.root / "Witprobe"), "Witprobe",
                                 "-Q", str(folder), coq_runner.AUDIT_PATH, "run.v"], folder, 300)
    assert code == 0, out  # the kernel accepts every one of these files: only the audit can refuse it
    return coq_runner.audit_compiled(COQC, build, folder, "run", target)


# One file per bypass; each proves False (or uses a skipped check) and compiles.
GUARD_IN_LIBRARY_LIKE_MODULE = """
Module Classical_Prop.
Unset Guard Checking.
Fixpoint classic (n : nat) : False := classic n.
Set Guard Checking.
End Classical_Prop.
Theorem t : False. Proof. exact (Classical_Prop.classic 0). Qed.
"""
BYPASS_ATTRIBUTE = """
#[bypass_check(guard)]
Fixpoint loop (n : nat) : False := loop n.
Theorem t : False. Proof. exact (loop 0). Qed.
"""
POSITIVITY = """
Unset Positivity Checking.
Inductive bad := mk : (bad -> False) -> bad.
Set Positivity Checking.
Definition f (b : bad) : False := match b with mk g => g b end.
Theorem t : False. Proof. exact (f (mk f)). Qed.
"""
UNIVERSES = """
Unset Universe Checking.
Definition U := Type.
Definition x : U := U.
Set Universe Checking.
Theorem t : True. Proof. pose x. exact I. Qed.
"""
VARIABLE_OUTSIDE_SECTION = """
Variable cheat : False.
Theorem t : False. Proof. exact cheat. Qed.
"""
ALLOWED_NAME_OTHER_TYPE = """
Module Classical_Prop. Axiom classic : False. End Classical_Prop.
Theorem t : False. Proof. exact Classical_Prop.classic. Qed.
"""


@pytest.mark.parametrize("text, lint, printed", [
    (GUARD_IN_LIBRARY_LIKE_MODULE, "Unset Guard Checking", "Classical_Prop.classic is assumed to be guarded"),
    (BYPASS_ATTRIBUTE, "bypass_check", "loop is assumed to be guarded"),
    (POSITIVITY, "Unset Positivity Checking", "bad is assumed to be positive"),
    (UNIVERSES, "Unset Universe Checking", "relies on an unsafe hierarchy"),
], ids=["guard-in-library-like-module", "bypass_check-attribute", "positivity", "universes"])
def test_a_skipped_kernel_check_is_refused_by_the_lint_and_by_the_audit(tmp_path, text, lint, printed):
    assert lint in coq_runner.lint_source(text)
    found, problems = _audit(tmp_path, text + "Print Assumptions t.\n")
    assert found == () and len(problems) == 1, problems
    assert "printed something other than an axiom" in problems[0] and printed in problems[0]


def test_a_guard_bypass_in_a_library_module_under_an_allowed_name_is_refused(tmp_path):
    """The reported hole: a library file ``Classical_Prop.v`` whose ``classic`` is a fixpoint
    under ``Unset Guard Checking``. The audit prints "Classical_Prop.classic is assumed to be
    guarded", whose first word is an allowed name."""
    lib = {"Classical_Prop": "Unset Guard Checking.\nFixpoint classic (n : nat) : False := classic n.\n"}
    assert coq_runner.lint_source(lib["Classical_Prop"]) == ["Unset Guard Checking"]
    found, problems = _audit(tmp_path, "Require Witprobe.Classical_Prop.\n"
                             "Theorem t : False. Proof. exact (Classical_Prop.classic 0). Qed.\n", library=lib)
    assert found == () and len(problems) == 1
    assert "'Classical_Prop.classic is assumed to be guarded.'" in problems[0]


def test_a_variable_outside_a_section_is_refused_by_the_lint_and_by_the_audit(tmp_path):
    assert coq_runner.lint_source(VARIABLE_OUTSIDE_SECTION) == ["Variable outside a section"]
    found, problems = _audit(tmp_path, VARIABLE_OUTSIDE_SECTION)
    assert [n for n, _ in found] == ["run.cheat"] and problems == ["run.cheat is outside the allowlist"]


def test_an_axiom_with_an_allowed_name_but_another_type_is_refused(tmp_path):
    """A library module named like the real one prints its axiom under the allowed name."""
    assert coq_runner.lint_source(ALLOWED_NAME_OTHER_TYPE) == ["Axiom"]
    found, problems = _audit(tmp_path, "Require Witprobe.Classical_Prop.\n"
                             "Theorem t : False. Proof. exact Classical_Prop.classic. Qed.\n",
                             library={"Classical_Prop": "Axiom classic : False.\n"})
    assert found == (("Classical_Prop.classic", "False"),)  # the name alone would pass
    assert problems == ["Classical_Prop.classic has type 'False', not the allowed axiom's "
                        "'forall P : Prop, or P (not P)'"]


def test_an_axiom_declared_in_the_run_file_under_an_allowed_name_is_refused(tmp_path):
    found, problems = _audit(tmp_path, ALLOWED_NAME_OTHER_TYPE)
    assert found == (("run.Classical_Prop.classic", "False"),)  # the audit names it from outside the file
    assert problems == ["run.Classical_Prop.classic is outside the allowlist"]


def test_the_real_allowed_axioms_pass_the_audit(tmp_path):
    text = ("From Coq Require Import Classical_Prop.\n"
            "Theorem t : forall P : Prop, P \\/ ~ P. Proof. exact classic. Qed.\n")
    found, problems = _audit(tmp_path, text)
    assert found == (("Classical_Prop.classic", AXIOM_TYPES["Classical_Prop.classic"]),) and problems == []


def test_primitive_float_checkers_rest_only_on_the_primitive_float_allowlist(tmp_path):
    """A ``vm_compute`` check on primitive floats and Interval's directed-rounding lemma: every
    axiom printed is allowed with its type, and the float ones are in PRIMITIVE_FLOAT."""
    text = ("From Interval Require Import Float.Primitive_ops.\n"
            "From Coq Require Import Floats.\n"
            "Lemma cmp : PrimFloat.ltb 1%float 2%float = true. Proof. vm_compute. reflexivity. Qed.\n"
            "Definition t := conj cmp PrimitiveFloat.add_UP_correct.\n")
    found, problems = _audit(tmp_path, text)
    names = {n for n, _ in found}
    assert problems == [] and names <= coq_runner.ALLOWED_ASSUMPTIONS
    assert {"FloatAxioms.add_spec", "PrimFloat.add", "PrimFloat.float"} <= names
    assert names & set(coq_runner.PRIMITIVE_FLOAT) and not names - set(coq_runner.PRIMITIVE_FLOAT) - set(
        coq_runner.PRIMITIVE_INT63) - set(coq_runner.REALS_AXIOMS)


def test_every_recorded_axiom_type_is_what_this_coqc_prints(tmp_path):
    lines = ["Require Coq.Reals.Reals Coq.Logic.FunctionalExtensionality Coq.Floats.Floats "
             "Coq.Numbers.Cyclic.Int63.Uint63.", "Set Printing All.", "Set Printing Width 4000."]
    lines += [f"Print Assumptions {n}." for n in sorted(coq_runner.ALLOWED_ASSUMPTIONS)]
    (tmp_path / "types.v").write_text("\n".join(lines) + "\n")
    code, out = coq_runner._run([str(COQC.coqc), "-q", "types.v"], tmp_path, 300, stdout_only=True)
    assert code == 0, out
    printed = {}
    for block in out.split("Axioms:")[1:]:
        printed.update(coq_runner.parse_assumptions("Axioms:" + block))
    assert printed == AXIOM_TYPES


def test_parse_assumptions_reads_declarations_only():
    assert coq_runner.parse_assumptions("Closed under the global context\n") == ()
    assert coq_runner.parse_assumptions("nothing here") is None
    multi = "Axioms:\nA.b\n  : forall x : nat,\n    x = x\nC.d : Set\n"
    assert coq_runner.parse_assumptions(multi) == (("A.b", "forall x : nat, x = x"), ("C.d", "Set"))
    for bad in ("Axioms:\nf is assumed to be guarded.\n", "Axioms:\nX relies on definitional UIP.\n",
                "Section Variables:\nx : nat\nAxioms:\nA.b : Set\n", "Axioms:\n  : Set\n",
                "Axioms:\nA.b : Set\nbad is assumed to be positive.\n"):
        with pytest.raises(coq_runner.AuditError):
            coq_runner.parse_assumptions(bad)


def test_lint_reads_nested_comments_and_strings():
    lint = coq_runner.lint_source
    assert lint("(* Admitted (* Axiom *) Unset Guard Checking *) Lemma x : True. Proof. exact I. Qed.") == []
    assert lint("(* a (* b *) Axiom c : False. *) Lemma x : True. Proof. exact I. Qed.") == []
    assert lint("(* a *) Axiom c : False. (* b *)") == ["Axiom"]
    assert lint('(* a "*)" *) Axiom c : False.') == ["Axiom"]  # a string inside a comment closes nothing
    assert lint("(* never closed") == ["unterminated comment"]
    assert lint("Local Unset\n  Universe Checking.") == ["Unset Universe Checking"]
    assert lint("#[local] Hypothesis h : False.") == ["Hypothesis outside a section"]
    assert lint("Section S. Variables x y : nat. Context (h : x = y). End S.") == []
    assert lint("Section S. End S. Context (h : False).") == ["Context outside a section"]
    assert lint("Module M. Hypotheses h g : False. End M.") == ["Hypotheses outside a section"]
    assert lint("Module N := Nat. Variable v : False.") == ["Variable outside a section"]
    assert lint("Definition Variable_x := 1. Lemma l : True. Proof. exact I. Qed.") == []


def test_a_library_that_skips_a_check_is_refused_before_it_is_built(tmp_path):
    lib = tmp_path / "coq"
    (lib / "Witprobe").mkdir(parents=True)
    (lib / "_CoqProject").write_text("-R Witprobe Witprobe\nWitprobe/Lib.v\n")
    (lib / "Witprobe" / "Lib.v").write_text(GUARD_IN_LIBRARY_LIKE_MODULE)
    with pytest.raises(coq_runner.CoqError, match="Unset Guard Checking"):
        coq_runner.build_library(COQC, lib, cache=tmp_path / "cache")


def test_check_theorems_lints_the_file_it_is_given(tmp_path):
    build = _library(tmp_path)
    statuses = coq_runner.check_theorems(COQC, build, lambda sub: BYPASS_ATTRIBUTE + "Print Assumptions t.\n", ["t"])
    assert statuses["t"].status == coq_runner.REJECTED and "bypass_check" in statuses["t"].reason


def test_check_theorems_audits_types_end_to_end(tmp_path, monkeypatch):
    """With the lint out of the way, the audit alone refuses the file (two independent defences)."""
    monkeypatch.setattr(coq_runner, "lint_source", lambda text: [])
    build = _library(tmp_path, {"Classical_Prop": "Axiom classic : False.\n"})
    text = "Require Witprobe.Classical_Prop.\nTheorem t : False. Proof. exact Classical_Prop.classic. Qed.\n" \
           "Print Assumptions t.\n"
    statuses = coq_runner.check_theorems(COQC, build, lambda sub: text, ["t"])
    assert statuses["t"].status == coq_runner.REJECTED and "has type 'False'" in statuses["t"].reason
    guard = GUARD_IN_LIBRARY_LIKE_MODULE + "Print Assumptions t.\n"
    statuses = coq_runner.check_theorems(COQC, build, lambda sub: guard, ["t"])
    assert statuses["t"].status == coq_runner.REJECTED and "assumed to be guarded" in statuses["t"].reason


def _tiny_library(tmp_path: Path) -> Path:
    lib = tmp_path / "coq"
    (lib / "Witprobe").mkdir(parents=True)
    (lib / "_CoqProject").write_text("-R Witprobe Witprobe\nWitprobe/A.v\n")
    (lib / "Witprobe" / "A.v").write_text("Definition x := 1.\nLemma x_is_1 : x = 1. Proof. reflexivity. Qed.\n")
    return lib


def test_a_tampered_cached_vo_with_a_forged_stamp_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(coq_runner, "_BUILT", {})
    lib, cache = _tiny_library(tmp_path), tmp_path / "cache"
    # a cache as the stamp-based runner wrote it: a forged .vo (another x) with a matching stamp
    forged_src = tmp_path / "forged"
    (forged_src / "Witprobe").mkdir(parents=True)
    (forged_src / "Witprobe" / "A.v").write_text("Definition x := 2.\nLemma x_is_1 : x = 2. Proof. reflexivity. Qed.\n")
    code, out = coq_runner._run([str(COQC.coqc), "-q", "-R", "Witprobe", "Witprobe", "Witprobe/A.v"], forged_src, 300)
    assert code == 0, out
    forged_vo = (forged_src / "Witprobe" / "A.vo").read_bytes()
    digest = coq_runner.source_hash(COQC, lib, ["Witprobe/A.v"])
    stale = cache / "coq" / digest[:24]
    (stale / "Witprobe").mkdir(parents=True)
    (stale / "Witprobe" / "A.vo").write_bytes(forged_vo)
    (stale / "witprobe-build.json").write_text(json.dumps(
        {"source_sha256": digest, "vo_sha256": {"Witprobe/A.vo": coq_runner._sha256(forged_vo)}}))
    build = coq_runner.build_library(COQC, lib, cache=cache)
    assert build.how == "built" and build.root != stale
    assert (build.root / "Witprobe" / "A.vo").read_bytes() != forged_vo
    # this process's own build is reused only while its .vo hashes as coqc wrote it
    assert coq_runner.build_library(COQC, lib, cache=cache).how == "verified"
    (build.root / "Witprobe" / "A.vo").write_bytes(forged_vo)
    again = coq_runner.build_library(COQC, lib, cache=cache)
    assert again.how == "built" and (again.root / "Witprobe" / "A.vo").read_bytes() != forged_vo
