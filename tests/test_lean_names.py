"""Every Lean proof name cited by the Python side is declared in ``Witprobe/`` or ``analytic/``;
the Lean ``Metric`` constructors are exactly the registry metrics marked ``lean=True``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from witprobe.calculus.bridges import cited_proofs
from witprobe.calculus.contracts import TransferKind
from witprobe.calculus.registry import DEFAULT_REGISTRY
from witprobe.formal.names import declared_in_tree, declared_names, missing_names, strip_comments

ROOT = Path(__file__).resolve().parents[1]
LEAN_ROOTS = [ROOT / "Witprobe", ROOT / "Witprobe.lean", ROOT / "analytic"]


def all_cited() -> list[str]:
    names = set(cited_proofs())
    for kind in TransferKind:
        names.update(kind.proofs)
    for entry in DEFAULT_REGISTRY:  # registry entries may cite proofs in future versions
        names.update(getattr(entry, "proofs", ()) or ())
    return sorted(names)


def test_cited_names_are_declared():
    cited = all_cited()
    assert "Witprobe.osc_le_two_linf" in cited
    assert "WitprobeAnalytic.exp_le_expUpper" in cited
    assert missing_names(cited, LEAN_ROOTS) == []


def test_check_fails_when_a_cited_declaration_is_removed(tmp_path):
    copy = tmp_path / "lean"
    shutil.copytree(ROOT / "Witprobe", copy / "Witprobe")
    shutil.copytree(ROOT / "analytic", copy / "analytic")
    roots = [copy / "Witprobe", copy / "analytic"]
    assert missing_names(all_cited(), roots) == []
    bridges = copy / "Witprobe" / "Bridges.lean"
    text = bridges.read_text(encoding="utf-8")
    renamed = re.sub(r"\btheorem osc_le_two_linf\b", "theorem osc_le_two_linf_renamed", text)
    assert renamed != text
    bridges.write_text(renamed, encoding="utf-8")
    assert missing_names(all_cited(), roots) == ["Witprobe.osc_le_two_linf"]


def test_names_in_comments_do_not_count():
    text = "namespace Witprobe\n/-- theorem ghost : True := trivial -/\n-- theorem ghost2 : True\nend Witprobe\n"
    assert declared_names(text) == set()
    assert "ghost" not in strip_comments(text)


def test_scanner_resolves_namespaces_and_dotted_names():
    text = (
        "namespace A\nnamespace B\ntheorem t : True := trivial\nend B\n"
        "@[simp] protected theorem B.u : True := trivial\nsection\ndef v := 1\nend\nend A\n"
        "theorem _root_.top : True := trivial\n"
    )
    assert declared_names(text) == {"A.B.t", "A.B.u", "A.v", "top"}


def _lean_metric_constructors() -> list[str]:
    text = strip_comments((ROOT / "Witprobe" / "Metric.lean").read_text(encoding="utf-8"))
    body = text[text.index("inductive Metric where"):text.index("deriving")]
    return re.findall(r"^\s*\|\s*([A-Za-z][A-Za-z0-9]*)\s*$", body, flags=re.M)


def test_lean_metric_constructors_match_registry():
    lean = _lean_metric_constructors()
    registry = sorted(e.metric.lean_name for e in DEFAULT_REGISTRY if e.lean)
    assert lean, "no constructors parsed from Witprobe/Metric.lean"
    assert sorted(lean) == registry


def lean_sources(root: Path = ROOT) -> list[str]:
    """Every ``.lean`` source of the project: not the build folder, not a committed artifact, and
    not a file inside a witprobe run directory (``certify run`` writes ``obligations/run.lean``
    there, by default under ``runs/``; the template's row of LEAN_STATUS.md covers them)."""
    from witprobe.certify.pipeline import is_run_dir

    def in_run_dir(p: Path) -> bool:
        return any(is_run_dir(a) for a in p.parents if a != root and root in a.parents)

    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*.lean")
        if ".lake" not in p.parts and p.relative_to(root).parts[0] != "artifacts" and not in_run_dir(p)
    )


def test_lean_files_are_listed_in_status_file():
    status = (ROOT / "LEAN_STATUS.md").read_text(encoding="utf-8")
    unlisted = [f for f in lean_sources() if f"`{f}`" not in status]
    assert unlisted == []


def test_lean_sources_pass_the_token_lint():
    from witprobe.formal.lint import lint_tree

    assert lint_tree(ROOT / "Witprobe") == []
    assert lint_tree(ROOT / "analytic") == []
    assert lint_tree(ROOT / "scripts") == []
    for f in ("Witprobe.lean", "WitprobeAudit.lean", "lakefile.lean"):
        from witprobe.formal.lint import lint_text

        assert lint_text((ROOT / f).read_text(encoding="utf-8")) == []


@pytest.mark.lean
def test_library_builds_with_lean():
    from witprobe.formal.lean_runner import LeanRunner, find_toolchain

    tc, reason = find_toolchain()
    if tc is None:
        pytest.skip(reason)
    runner = LeanRunner(tc, ROOT, timeout_s=3600)
    ok, out = runner.build()
    assert ok, out[-4000:]
    import subprocess

    audit = subprocess.run([str(tc.lake), "build", "WitprobeAudit"], cwd=ROOT, capture_output=True, text=True,
                           timeout=3600)
    assert audit.returncode == 0, (audit.stdout + audit.stderr)[-4000:]


def _no_lean_env(tmp_path) -> dict[str, str]:
    import os
    import sys

    return {
        "PATH": str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "WITPROBE_LEAN": str(tmp_path / "missing"),
    }


def test_manifest_export_degrades_without_lean(tmp_path):
    import subprocess
    import sys

    from witprobe.formal.lean_runner import find_toolchain

    env = _no_lean_env(tmp_path)
    if find_toolchain(env)[0] is not None:
        pytest.skip("a Lean toolchain is reachable; the no-Lean path cannot be exercised")
    out = tmp_path / "theorems.json"
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "export_theorems.py"), "--out", str(out)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 2
    assert "no Lean toolchain found" in res.stderr and "was not written" in res.stderr
    assert not out.exists()


def test_lint_script_reports_forbidden_tokens(tmp_path):
    import subprocess
    import sys

    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "lint_lean.py")], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stdout
    from witprobe.formal.lint import lint_text

    assert lint_text("theorem t : True := by sorry") == ["1:24: sorry"]
