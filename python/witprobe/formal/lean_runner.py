"""Find a Lean toolchain, build the library once, check obligation files, audit axioms.

Two projects: the core library (``package witprobe``, the arithmetic obligations
``obligations/run.lean``) and the analytic package (``analytic/``, ``package witprobeAnalytic``,
Mathlib; the per-run claim theorems ``obligations/run_real.lean``). Discovery order: ``$WITPROBE_LEAN`` (a directory holding ``lake``/``lean``, or the path of either
binary), then ``PATH``, then ``~/.elan/bin``. Each file is checked with ``lake env lean FILE`` in
the Lean project (the folder whose ``lakefile.lean`` declares ``package witprobe``), under a
timeout. Lean's messages (``file:line:col: error: text``) are parsed and mapped to the obligation
whose declarations span that line. ``#print axioms`` output is audited: only ``propext``,
``Classical.choice`` and ``Quot.sound`` are allowed.

Every obligation ends ``kernel_checked``, ``failed`` (Lean rejected it, or the audit did) or
``unchecked`` with the reason (no toolchain, library build failure, timeout).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ALLOWED_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})
KERNEL_CHECKED, FAILED, UNCHECKED = "kernel_checked", "failed", "unchecked"

_MSG = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|info)(?:\(.*?\))?: (?P<text>.*)$")
_AXIOMS = re.compile(r"'(?P<name>[^'\s]+)' depends on axioms: \[(?P<axioms>[^\]]*)\]")
_NO_AXIOMS = re.compile(r"'(?P<name>[^'\s]+)' does not depend on any axioms")


@dataclass(frozen=True)
class LeanToolchain:
    """Paths of ``lake`` and ``lean`` and the version string ``lean --version`` printed."""

    lake: Path
    lean: Path
    version: str


@dataclass(frozen=True)
class LeanMessage:
    line: int
    col: int
    severity: str
    text: str


@dataclass
class FileCheck:
    """Outcome of one ``lake env lean FILE`` run."""

    returncode: int | None
    messages: list[LeanMessage] = field(default_factory=list)
    axioms: dict[str, list[str]] = field(default_factory=dict)
    timed_out: bool = False
    output: str = ""


def parse_output(text: str) -> tuple[list[LeanMessage], dict[str, list[str]]]:
    """Messages (``file:line:col: severity: text`` plus continuation lines) and ``#print axioms``
    reports (possibly wrapped over several lines) from Lean's output."""
    messages: list[LeanMessage] = []
    current: dict | None = None
    for line in text.splitlines():
        m = _MSG.match(line)
        if m:
            if current:
                messages.append(LeanMessage(**current))
            current = {"line": int(m.group("line")), "col": int(m.group("col")), "severity": m.group("sev"),
                       "text": m.group("text")}
        elif current is not None and not line.startswith("'"):
            current["text"] += "\n" + line
        else:
            if current:
                messages.append(LeanMessage(**current))
            current = None
    if current:
        messages.append(LeanMessage(**current))
    axioms: dict[str, list[str]] = {}
    for m in _AXIOMS.finditer(text):
        axioms[m.group("name")] = [a.strip() for a in m.group("axioms").split(",") if a.strip()]
    for m in _NO_AXIOMS.finditer(text):
        axioms[m.group("name")] = []
    return messages, axioms


def audit_axioms(axioms: list[str]) -> list[str]:
    """The axioms outside the standard three (``sorryAx``, ``Lean.ofReduceBool``, user axioms ...)."""
    return [a for a in axioms if a not in ALLOWED_AXIOMS]


def _version(lean: Path) -> str | None:
    try:
        out = subprocess.run([str(lean), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or out.stderr.strip()


def find_toolchain(env: dict[str, str] | None = None) -> tuple[LeanToolchain | None, str]:
    """Locate ``lake`` and ``lean``; return the toolchain or ``None`` with the reason."""
    env = dict(os.environ if env is None else env)
    dirs: list[Path] = []
    override = env.get("WITPROBE_LEAN")
    if override:
        p = Path(override)
        dirs.append(p if p.is_dir() else p.parent)
    for name in ("lake", "lean"):
        found = shutil.which(name, path=env.get("PATH", ""))
        if found:
            dirs.append(Path(found).parent)
    home = env.get("HOME")
    if home:
        dirs.append(Path(home) / ".elan" / "bin")
    for d in dirs:
        lake, lean = d / "lake", d / "lean"
        if lake.is_file() and os.access(lake, os.X_OK) and lean.is_file() and os.access(lean, os.X_OK):
            version = _version(lean)
            if version is None:
                continue
            return LeanToolchain(lake=lake, lean=lean, version=version), ""
    return None, "no Lean toolchain found (looked in $WITPROBE_LEAN, PATH, ~/.elan/bin); install elan or set WITPROBE_LEAN"


def find_project(start: Path | None = None) -> Path | None:
    """The Lean project root: ``$WITPROBE_LEAN_PROJECT``, else the nearest folder (from ``start``, then
    from this package) whose ``lakefile.lean`` declares ``package witprobe``."""
    env = os.environ.get("WITPROBE_LEAN_PROJECT")
    if env:
        return Path(env) if (Path(env) / "lakefile.lean").is_file() else None
    for base in [start or Path.cwd(), Path(__file__).resolve()]:
        for d in [base, *base.parents]:
            lf = d / "lakefile.lean"
            if lf.is_file() and "package witprobe" in lf.read_text(encoding="utf-8", errors="replace"):
                return d
    return None


def find_analytic_project(core: Path | None = None) -> Path | None:
    """The analytic Lean package (Mathlib; it holds ``WitprobeAnalytic``, which the per-run claim
    theorems ``obligations/run_real.lean`` import): ``$WITPROBE_LEAN_ANALYTIC``, else ``analytic/``
    of the core project; ``None`` unless its ``lakefile.lean`` declares ``package witprobeAnalytic``."""
    env = os.environ.get("WITPROBE_LEAN_ANALYTIC")
    if env:
        cand: Path | None = Path(env)
    else:
        root = core or find_project()
        cand = root / "analytic" if root is not None else None
    if cand is None or not (cand / "lakefile.lean").is_file():
        return None
    text = (cand / "lakefile.lean").read_text(encoding="utf-8", errors="replace")
    return cand if "package witprobeAnalytic" in text else None


class LeanRunner:
    """Builds the library once and checks files; every subprocess has a timeout."""

    def __init__(self, toolchain: LeanToolchain, project: Path, timeout_s: float = 600.0) -> None:
        self.toolchain = toolchain
        self.project = project
        self.timeout_s = timeout_s
        self._build: tuple[bool, str] | None = None

    def _run(self, args: list[str]) -> tuple[int | None, str, bool]:
        try:
            out = subprocess.run(
                args, cwd=self.project, capture_output=True, text=True, timeout=self.timeout_s,
                env={**os.environ, "PATH": f"{self.toolchain.lake.parent}{os.pathsep}{os.environ.get('PATH', '')}"},
            )
        except subprocess.TimeoutExpired as e:
            text = (e.stdout or "") if isinstance(e.stdout, str) else ""
            return None, text, True
        return out.returncode, (out.stdout or "") + (out.stderr or ""), False

    def build(self) -> tuple[bool, str]:
        """``lake build`` once per runner; ``(ok, output)``."""
        if self._build is None:
            code, text, timed_out = self._run([str(self.toolchain.lake), "build"])
            if timed_out:
                self._build = (False, f"lake build timed out after {self.timeout_s:.0f} s")
            else:
                self._build = (code == 0, text)
        return self._build

    def check_file(self, path: Path) -> FileCheck:
        code, text, timed_out = self._run([str(self.toolchain.lake), "env", "lean", str(Path(path).resolve())])
        messages, axioms = parse_output(text)
        return FileCheck(returncode=code, messages=messages, axioms=axioms, timed_out=timed_out, output=text)


@dataclass(frozen=True)
class ObligationStatus:
    ident: str
    status: str
    reason: str = ""
    axioms: tuple[str, ...] = ()


def statuses_from_check(
    check: FileCheck, spans: dict[str, list[tuple[int, int]]], theorems: dict[str, str]
) -> dict[str, ObligationStatus]:
    """Map a file check to a status per obligation.

    ``spans[ident]`` lists the line ranges of the obligation's declarations and its
    ``#print axioms`` line; ``theorems[ident]`` is the fully qualified theorem whose axioms are
    audited. An error outside every span fails every obligation of the file (fail closed).
    """
    out: dict[str, ObligationStatus] = {}
    if check.timed_out:
        for ident in spans:
            out[ident] = ObligationStatus(ident, UNCHECKED, "Lean timed out on the obligation file")
        return out

    def inside(line: int, ranges: list[tuple[int, int]]) -> bool:
        return any(a <= line <= b for a, b in ranges)

    errors = [m for m in check.messages if m.severity == "error"]
    stray = [m for m in errors if not any(inside(m.line, r) for r in spans.values())]
    for ident, ranges in spans.items():
        mine = [m for m in errors if inside(m.line, ranges)]
        if mine:
            out[ident] = ObligationStatus(ident, FAILED, f"Lean error at line {mine[0].line}: {mine[0].text[:300]}")
        elif stray:
            out[ident] = ObligationStatus(
                ident, FAILED, f"Lean error outside obligations at line {stray[0].line}: {stray[0].text[:300]}"
            )
        elif check.returncode != 0:
            out[ident] = ObligationStatus(ident, FAILED, f"lean exited with status {check.returncode}")
        elif (axioms := check.axioms.get(theorems[ident])) is None:
            out[ident] = ObligationStatus(ident, FAILED, f"no axiom report for {theorems[ident]}")
        elif bad := audit_axioms(axioms):
            out[ident] = ObligationStatus(ident, FAILED, f"depends on non-standard axioms {bad}", tuple(axioms))
        else:
            out[ident] = ObligationStatus(ident, KERNEL_CHECKED, "", tuple(axioms))
    return out
