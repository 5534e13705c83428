"""Coq, the kernel we can run: find ``coqc``, build the library, check claim theorems, audit.

- **Toolchain**: ``$WITPROBE_COQC`` (the ``coqc`` binary or its folder), else ``coqc`` on ``PATH``.
- **Library**: the sources in ``coq/`` (``$WITPROBE_COQ_LIB``, else the repository's ``coq/`` beside
  the package). They are linted (:func:`lint_source`) and compiled file by file (order of
  ``_CoqProject``) into a fresh folder of the witprobe cache (``<cache>/coq``). Nothing found on
  disk is trusted: a stamp kept beside the ``.vo`` files would be written by whoever can write
  them. The only reuse is of a build this process compiled, after its ``.vo`` files hash as
  ``coqc`` wrote them (hashes held in memory). ``coqchk`` is not the check here: it re-checks the
  ``.vo`` files, but not that they compile these sources (a forged ``.vo`` may define ``tv``
  otherwise and still check).
- **Run file**: rendered by :mod:`witprobe.formal.render_coq`, linted, compiled with ``coqc`` under a
  timeout in a scratch folder. When the kernel rejects a theorem, the error's line names it; it is
  marked ``rejected`` and the file is re-checked without it (at most :data:`MAX_ROUNDS` rounds), so
  one false claim does not hide the status of the others.
- **Lint** (library and run files, outside comments, nested ones included): no ``Admitted``,
  ``admit``, ``Axiom``, ``Parameter``, ``Conjecture``; no switch that makes the kernel skip a check
  (``Unset Guard/Positivity/Universe Checking``, ``bypass_check``, ``Definitional UIP``); no
  ``Variable``/``Hypothesis``/``Context`` outside a ``Section`` (there it is an axiom).
- **Audit**: the file ends with ``Print Assumptions`` of the conjunction of all its theorems (a
  superset of each theorem's assumptions). A second file requires the compiled run (importing
  nothing) and prints them again under ``Set Printing All``. Every line must be a ``name : type``
  declaration (a line such as "f is assumed to be guarded" fails), and each ``(name, type)`` must
  be one of :data:`ALLOWED_ASSUMPTIONS` with the type recorded in
  :data:`witprobe.formal.coq_axioms.AXIOM_TYPES`: the classical axioms the Reals library rests
  on, and the specifications of the primitive 63-bit integers and 64-bit floats (kernel
  primitives; ``interval`` and ``vm_compute`` checkers compute with them). Anything else fails
  closed: every theorem of the file is ``rejected``.

Statuses: ``kernel_checked``, ``rejected`` (the kernel or the audit refused it), ``unchecked``
(with the reason: no ``coqc``, library build failure, timeout).
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from witprobe.cache import cache_root
from witprobe.formal.coq_axioms import AXIOM_TYPES

KERNEL_CHECKED, REJECTED, UNCHECKED = "kernel_checked", "rejected", "unchecked"
LEMMA_CHECKED = "lemma_checked"  # accepted, but the mutation guard showed it does not decide its bound
MAX_ROUNDS = 4

# The classical axioms of Coq's Reals (every real-analysis proof depends on them) ...
REALS_AXIOMS = (
    "ClassicalDedekindReals.sig_forall_dec",
    "ClassicalDedekindReals.sig_not_dec",
    "Classical_Prop.classic",
    "FunctionalExtensionality.functional_extensionality_dep",
)
# ... and the primitive 63-bit integers (kernel-implemented; ``interval`` computes with them).
PRIMITIVE_INT63 = (
    "PrimInt63.int", "PrimInt63.add", "PrimInt63.sub", "PrimInt63.mul", "PrimInt63.eqb", "PrimInt63.ltb",
    "PrimInt63.leb", "PrimInt63.land", "PrimInt63.lor", "PrimInt63.lxor", "PrimInt63.lsl", "PrimInt63.lsr",
    "PrimInt63.div", "PrimInt63.mod", "PrimInt63.compare", "PrimInt63.head0", "PrimInt63.tail0",
    "PrimInt63.addc", "PrimInt63.addcarryc", "PrimInt63.subc", "PrimInt63.subcarryc", "PrimInt63.mulc",
    "PrimInt63.diveucl", "PrimInt63.diveucl_21", "PrimInt63.addmuldiv",
    "Uint63.add_spec", "Uint63.sub_spec", "Uint63.mul_spec", "Uint63.eqb_correct", "Uint63.eqb_refl",
    "Uint63.ltb_spec", "Uint63.leb_spec", "Uint63.land_spec", "Uint63.lor_spec", "Uint63.lxor_spec",
    "Uint63.lsl_spec", "Uint63.lsr_spec", "Uint63.div_spec", "Uint63.mod_spec", "Uint63.compare_def_spec",
    "Uint63.head0_spec", "Uint63.tail0_spec", "Uint63.addc_def_spec", "Uint63.addcarryc_def_spec",
    "Uint63.subc_def_spec", "Uint63.subcarryc_def_spec", "Uint63.mulc_spec", "Uint63.diveucl_def_spec",
    "Uint63.diveucl_21_spec", "Uint63.addmuldiv_def_spec", "Uint63.of_to_Z",
)
# ... and the primitive 64-bit floats (kernel-implemented, the same class as the integers): every
# ``Primitive`` of ``Coq.Floats.PrimFloat`` and every axiom of ``Coq.Floats.FloatAxioms`` that
# specifies one. ``vm_compute`` checkers over Interval's ``PrimitiveFloat`` (``add_UP``,
# ``mul_DN``, ... and their ``*_correct`` lemmas) rest on these.
PRIMITIVE_FLOAT = tuple(f"PrimFloat.{n}" for n in (
    "float", "classify", "abs", "sqrt", "opp", "eqb", "ltb", "leb", "compare", "Leibniz.eqb", "mul", "add", "sub",
    "div", "of_uint63", "normfr_mantissa", "frshiftexp", "ldshiftexp", "next_up", "next_down",
)) + tuple(f"FloatAxioms.{n}" for n in (
    "Prim2SF_valid", "SF2Prim_Prim2SF", "Prim2SF_SF2Prim", "opp_spec", "abs_spec", "eqb_spec", "ltb_spec",
    "leb_spec", "compare_spec", "Leibniz.eqb_spec", "classify_spec", "mul_spec", "add_spec", "sub_spec", "div_spec",
    "sqrt_spec", "of_uint63_spec", "normfr_mantissa_spec", "frshiftexp_spec", "ldshiftexp_spec", "next_up_spec",
    "next_down_spec",
))
ALLOWED_ASSUMPTIONS = frozenset(REALS_AXIOMS + PRIMITIVE_INT63 + PRIMITIVE_FLOAT)
if set(AXIOM_TYPES) != ALLOWED_ASSUMPTIONS:  # pragma: no cover - a maintainer's slip, caught at import
    raise ImportError("coq_axioms.AXIOM_TYPES and coq_runner.ALLOWED_ASSUMPTIONS name different axioms")

_FORBIDDEN = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Parameters|Conjecture)\b")
# switches that make the kernel skip a check (Print Assumptions then says "assumed to be ...")
_BYPASS = re.compile(r"\bUnset\s+(Guard|Positivity|Universe)\s+Checking\b|\b(bypass_check)\b|\b(Definitional\s+UIP)\b")
# the vernacular that opens or closes a scope, and the section-only assumptions
_SCOPED = re.compile(r"\b(Section|Module|End|Variables?|Hypothes[ie]s|Context)\b")
_PREFIX = re.compile(r"(?:\#\[[^\]]*\]|\b(?:Local|Global|Polymorphic|Monomorphic|Cumulative|NonCumulative|Type)\b)\s*$")
_ERROR = re.compile(r'File "(?P<file>[^"]*)", line (?P<line>\d+), characters \d+-\d+:\n(?P<msg>(?:.*\n?)*)')
_THEOREM = re.compile(r"^Theorem (?P<name>[A-Za-z_][A-Za-z0-9_']*) :", re.M)


class CoqError(RuntimeError):
    """The library cannot be built or verified (the message says why)."""


@dataclass(frozen=True)
class CoqToolchain:
    """The ``coqc`` binary and the first line of ``coqc --version``."""

    coqc: Path
    version: str


@dataclass(frozen=True)
class LibraryBuild:
    """A compiled library: the folder holding ``Witprobe/*.vo``, its source hash, how it was had."""

    root: Path
    source_sha256: str
    how: str  # "built" | "verified"
    files: tuple[str, ...]


@dataclass(frozen=True)
class GuardOutcome:
    """The mutation guard of one theorem (:func:`guard_theorems`): ``rejected`` (good: the kernel
    refuses the statement with ``B`` lowered to ``lowered_units``), ``accepted`` (the theorem also
    holds for the lower bound: it does not decide its number), ``error`` or ``not_run``."""

    status: str
    lowered_units: int | None = None
    reason: str = ""


GUARD_NOT_RUN = GuardOutcome("not_run", None, "the theorem was not kernel-checked")


@dataclass(frozen=True)
class TheoremStatus:
    theorem: str
    status: str
    reason: str = ""
    assumptions: tuple[str, ...] = ()
    guard: GuardOutcome = GUARD_NOT_RUN


@dataclass
class CoqOutcome:
    """What Coq said about one run's claim theorems."""

    mode: str
    status: str  # "checked" | "unavailable" | "off" | "build_failed" | "no_theorems"
    reason: str
    toolchain: str | None
    library_sha256: str | None = None
    statuses: dict[str, TheoremStatus] = field(default_factory=dict)

    @property
    def assumptions(self) -> list[str]:
        """The audited assumptions of the checked theorems (one ``Print Assumptions`` of their conjunction)."""
        return sorted({a for st in self.statuses.values() if st.status == KERNEL_CHECKED for a in st.assumptions})

    def to_json(self) -> dict[str, object]:
        return {"mode": self.mode, "status": self.status, "reason": self.reason, "toolchain": self.toolchain,
                "library_sha256": self.library_sha256, "assumptions": self.assumptions}


def find_coqc(env: dict[str, str] | None = None) -> tuple[CoqToolchain | None, str]:
    """Locate ``coqc``; return it with its version, or ``None`` with the reason."""
    env = dict(os.environ if env is None else env)
    override = env.get("WITPROBE_COQC")
    candidates: list[Path] = []
    if override:
        p = Path(override)
        candidates.append(p / "coqc" if p.is_dir() else p)
    found = shutil.which("coqc", path=env.get("PATH", ""))
    if found:
        candidates.append(Path(found))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            try:
                out = subprocess.run([str(c), "--version"], capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if out.returncode == 0 and out.stdout.strip():
                return CoqToolchain(c, out.stdout.strip().splitlines()[0]), ""
    return None, ("no Coq found (looked in $WITPROBE_COQC and PATH); install it with "
                  "`apt-get install -y coq libcoq-interval libcoq-coquelicot` or set WITPROBE_COQC")


def find_library(env: dict[str, str] | None = None) -> Path | None:
    """The library sources: ``$WITPROBE_COQ_LIB``, else ``coq/`` of the repository holding this package."""
    env = dict(os.environ if env is None else env)
    override = env.get("WITPROBE_COQ_LIB")
    cands = [Path(override)] if override else [Path(__file__).resolve().parents[3] / "coq"]
    for c in cands:
        if (c / "_CoqProject").is_file():
            return c
    return None


def library_files(lib: Path) -> list[str]:
    """The ``.v`` files of ``_CoqProject``, in build order (relative paths)."""
    files = [ln.strip() for ln in (lib / "_CoqProject").read_text(encoding="utf-8").splitlines()
             if ln.strip().endswith(".v") and not ln.strip().startswith("#")]
    if not files:
        raise CoqError(f"{lib / '_CoqProject'} lists no .v file")
    return files


_COMMENT_TOKEN = re.compile(r'"|\(\*|\*\)')


def strip_comments(text: str) -> str:
    """``text`` with every comment, nested ones included, replaced by one blank. Strings are kept,
    and a ``(*`` or ``*)`` inside a string, also one inside a comment, counts for nothing (as in
    Coq's lexer; ``""`` inside a string is a quote). An unterminated comment raises ``ValueError``.

    The scan jumps from token to token (a quote, ``(*``, ``*)``) with one regular expression, so a
    certificate's megabytes of literals are copied in slices, not character by character."""
    out, i, depth, n = [], 0, 0, len(text)
    while True:
        m = _COMMENT_TOKEN.search(text, i)
        if m is None:
            if depth == 0:
                out.append(text[i:])
            break
        j, tok = m.start(), m.group()
        if depth == 0:
            out.append(text[i:j])
        if tok == '"':  # a string, also inside a comment (as Coq's lexer reads it)
            k = j + 1
            while True:
                k = text.find('"', k)
                if k == -1:
                    k = n
                    break
                if not text.startswith('""', k):
                    break
                k += 2
            if depth == 0:
                out.append(text[j:k + 1])
            i = k + 1
        elif tok == "(*":
            depth, i = depth + 1, j + 2
        elif depth:  # "*)" closes a comment
            depth, i = depth - 1, j + 2
            if depth == 0:
                out.append(" ")
        else:  # "*)" outside a comment is ordinary text
            out.append("*")
            i = j + 1
    if depth:
        raise ValueError("unterminated comment")
    return "".join(out)


def _sentence_start(code: str, i: int) -> bool:
    """Whether the word at ``i`` starts a command (after ``.``, attributes and ``Local``-like prefixes)."""
    head = code[:i]
    while True:
        m = _PREFIX.search(head)
        if m is None:
            break
        head = head[:m.start()]
    head = head.rstrip()
    return not head or head.endswith(".")


def lint_source(text: str) -> list[str]:
    """What a source must not contain, outside comments: unproved or assumed statements
    (``Admitted``, ``admit``, ``Axiom``, ``Parameter``, ``Conjecture``), a switch that makes the
    kernel skip a check (``Unset Guard/Positivity/Universe Checking``, ``bypass_check``,
    ``Definitional UIP``), and a section assumption (``Variable``, ``Hypothesis``, ``Context``
    and plurals) outside any ``Section`` (there it is a global axiom)."""
    try:
        code = strip_comments(text)
    except ValueError as e:
        return [str(e)]
    found = {m.group(1) for m in _FORBIDDEN.finditer(code)}
    found |= {" ".join(m.group(0).split()) for m in _BYPASS.finditer(code)}
    scopes: list[str] = []  # "section" | "module"
    for m in _SCOPED.finditer(code):
        word = m.group(1)
        if not _sentence_start(code, m.start()):
            continue
        end = code.find(".", m.end())
        while end >= 0 and end + 1 < len(code) and not code[end + 1].isspace():
            end = code.find(".", end + 1)
        sentence = code[m.end():len(code) if end < 0 else end]
        if word == "Section":
            scopes.append("section")
        elif word == "Module" and ":=" not in sentence:
            scopes.append("module")
        elif word == "End":
            if scopes:
                scopes.pop()
        elif word not in ("Module",) and "section" not in scopes:
            found.add(f"{word} outside a section")
    return sorted(found)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def source_hash(tc: CoqToolchain, lib: Path, files: Sequence[str]) -> str:
    h = hashlib.sha256(tc.version.encode())
    for f in files:
        h.update(b"\0" + f.encode() + b"\0" + (lib / f).read_bytes())
    return h.hexdigest()


def _vo(f: str) -> str:
    return f[:-2] + ".vo"


def _run(args: list[str], cwd: Path, timeout_s: float, stdout_only: bool = False) -> tuple[int | None, str]:
    try:
        out = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s:.0f} s"
    return out.returncode, (out.stdout or "") + ("" if stdout_only else (out.stderr or ""))


# The builds this process made: (cache root, source hash) -> (build, SHA-256 of each .vo as coqc
# wrote it). Held in memory, never in the cache folder: whoever can write the cache can write a
# stamp there too, so a build found on disk is never trusted.
_BUILT: dict[tuple[str, str], tuple[LibraryBuild, dict[str, str]]] = {}


def _vo_hashes(root: Path, files: Sequence[str]) -> dict[str, str] | None:
    out = {}
    for f in files:
        p = root / _vo(f)
        if not p.is_file():
            return None
        out[_vo(f)] = _sha256(p.read_bytes())
    return out


def build_library(tc: CoqToolchain, lib: Path, cache: Path | None = None, timeout_s: float = 900.0) -> LibraryBuild:
    """Compile the library into a fresh folder of ``<cache>/coq``; raise :class:`CoqError`.

    The sources are linted first (:func:`lint_source`). Nothing found on disk is reused: the only
    reuse is of a build this same process compiled, after its ``.vo`` files are found to hash as
    they did when ``coqc`` wrote them (``how="verified"``); anything else compiles again
    (``how="built"``). The folder is removed when the process exits.
    """
    files = library_files(lib)
    for f in files:
        if not (lib / f).is_file():
            raise CoqError(f"library file {f} listed in _CoqProject is missing")
        bad = lint_source((lib / f).read_text(encoding="utf-8"))
        if bad:
            raise CoqError(f"library file {f} contains {', '.join(bad)} (unproved or assumed statements, "
                           "or a check the kernel would skip)")
    digest = source_hash(tc, lib, files)
    root = (cache or cache_root()) / "coq"
    key = (str(root.resolve()), digest)
    if key in _BUILT:
        build, hashes = _BUILT[key]
        if _vo_hashes(build.root, files) == hashes:
            return dataclasses.replace(build, how="verified")
        del _BUILT[key]
    root.mkdir(parents=True, exist_ok=True)
    dest = Path(tempfile.mkdtemp(prefix=f"{digest[:24]}-", dir=root))
    try:
        for f in files:
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(lib / f, dest / f)
        for f in files:
            code, text = _run([str(tc.coqc), "-q", "-R", "Witprobe", "Witprobe", f], dest, timeout_s)
            if code != 0:
                tail = " | ".join(text.strip().splitlines()[-4:])
                raise CoqError(f"library file {f} did not compile: {tail}")
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    atexit.register(shutil.rmtree, dest, True)
    build = LibraryBuild(dest, digest, "built", tuple(files))
    hashes = _vo_hashes(dest, files)
    assert hashes is not None
    _BUILT[key] = (build, hashes)
    return build


class AuditError(ValueError):
    """``Print Assumptions`` printed something other than ``name : type`` declarations."""


_DECL = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_'.]*) : (?P<type>\S.*)$", re.S)


def parse_assumptions(text: str) -> tuple[tuple[str, str], ...] | None:
    """``(name, type)`` of each axiom printed by the last ``Print Assumptions`` of ``text``.

    ``()`` when it printed "Closed under the global context", ``None`` when it printed nothing.
    Each entry must be one ``name : type`` declaration (continuation lines start with a blank;
    the type is whitespace-normalized). Any other line, such as "X is assumed to be guarded",
    "X is assumed to be positive" or "X relies on an unsafe hierarchy" (a check the kernel
    skipped), or a second section such as "Section Variables:", raises :class:`AuditError`.
    """
    closed = text.rfind("Closed under the global context")
    axioms = text.rfind("Axioms:")
    if closed < 0 and axioms < 0:
        return None
    if closed > axioms:
        rest = text[closed + len("Closed under the global context"):]
        if rest.strip():
            raise AuditError(f"unexpected text after 'Closed under the global context': {rest.strip()[:200]!r}")
        return ()
    if text[:axioms].strip():
        raise AuditError(f"unexpected text before 'Axioms:': {text[:axioms].strip()[-200:]!r}")
    entries: list[list[str]] = []
    for line in text[axioms + len("Axioms:"):].splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            if not entries:
                raise AuditError(f"indented line before any declaration: {line.strip()[:200]!r}")
            entries[-1].append(line)
        else:
            entries.append([line])
    found = {}
    for entry in entries:
        joined = " ".join(" ".join(entry).split())
        m = _DECL.match(joined)
        if m is None:
            raise AuditError(f"not a declaration: {joined[:200]!r}")
        found[m.group("name")] = m.group("type")
    return tuple(sorted(found.items()))


def audit_assumptions(found: Sequence[tuple[str, str]]) -> list[str]:
    """Why ``found`` (from :func:`parse_assumptions`) is refused: names outside
    :data:`ALLOWED_ASSUMPTIONS`, and allowed names printed with another type than the one recorded
    in :data:`witprobe.formal.coq_axioms.AXIOM_TYPES`; ``[]`` when every axiom is allowed."""
    problems = []
    for name, typ in found:
        if name not in ALLOWED_ASSUMPTIONS:
            problems.append(f"{name} is outside the allowlist")
        elif AXIOM_TYPES[name] != typ:
            problems.append(f"{name} has type {typ[:200]!r}, not the allowed axiom's {AXIOM_TYPES[name][:200]!r}")
    return problems


def theorem_spans(text: str) -> dict[str, tuple[int, int]]:
    """``name -> (first line, last line)`` (1-based) of each ``Theorem ... Qed.`` of a run file."""
    spans = {}
    for m in _THEOREM.finditer(text):
        end = text.find("Qed.", m.end())
        end = len(text) if end < 0 else end
        spans[m.group("name")] = (text.count("\n", 0, m.start()) + 1, text.count("\n", 0, end) + 1)
    return spans


def theorem_at_line(text: str, line: int) -> str | None:
    """The theorem whose declaration spans ``line`` (1-based) of a rendered run file."""
    return next((n for n, (a, b) in theorem_spans(text).items() if a <= line <= b), None)


_PRINT_ASSUMPTIONS = re.compile(r"^Print Assumptions (?P<target>[A-Za-z_][A-Za-z0-9_'.]*)\.[ \t]*$", re.M)
AUDIT_PATH = "WitprobeRun"  # the logical path a run file is compiled under, for the audit to require it


def audit_compiled(tc: CoqToolchain, build: LibraryBuild, folder: Path, module: str, target: str,
                   timeout_s: float = 600.0) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """Audit ``target`` of the compiled ``folder/<module>.vo``: its axioms, and why they are refused.

    A second file requires the compiled module without importing anything (no notation, scope or
    name of the run file or the library is in force) and prints the assumptions under ``Set
    Printing All``, so that a type prints the same whatever the run file imported. Each line must
    be a ``name : type`` declaration of an allowed axiom with its recorded type
    (:func:`parse_assumptions`, :func:`audit_assumptions`); ``[]`` problems means it passes.
    """
    audit = folder / "witprobe_audit.v"
    audit.write_text(f"Require {AUDIT_PATH}.{module}.\nSet Printing All.\nSet Printing Width 4000.\n"
                     f"Print Assumptions {AUDIT_PATH}.{module}.{target}.\n", encoding="utf-8")
    code, out = _run([str(tc.coqc), "-q", "-R", str(build.root / "Witprobe"), "Witprobe", "-Q", str(folder),
                      AUDIT_PATH, str(audit)], folder, timeout_s, stdout_only=True)
    if code != 0:
        return (), [f"the audit did not run (coqc {out.strip()[-300:] if code is not None else out})"]
    try:
        found = parse_assumptions(out)
    except AuditError as e:
        return (), [f"Print Assumptions printed something other than an axiom: {e}"]
    if found is None:
        return (), ["Print Assumptions printed nothing (audit impossible; fail closed)"]
    return found, audit_assumptions(found)


def check_theorems(tc: CoqToolchain, build: LibraryBuild, render: Callable[[Sequence[str]], str],
                   names: Sequence[str], timeout_s: float = 600.0) -> dict[str, TheoremStatus]:
    """Kernel-check the theorems ``names``; ``render(subset)`` gives the file text for a subset.

    The text is linted (:func:`lint_source`), compiled, and its last ``Print Assumptions X.``
    is audited by :func:`audit_compiled`; a lint finding or an audit problem rejects every theorem
    of the file (fail closed).
    """
    statuses: dict[str, TheoremStatus] = {}
    remaining = list(names)
    with tempfile.TemporaryDirectory(prefix="witprobe-coq-") as scratch:
        for _ in range(MAX_ROUNDS):
            if not remaining:
                break
            text = render(remaining)
            bad = lint_source(text)
            targets = _PRINT_ASSUMPTIONS.findall(text)
            if bad or not targets:
                reason = (f"the file contains {', '.join(bad)}" if bad
                          else "the file prints no assumptions (audit impossible; fail closed)")
                for n in remaining:
                    statuses[n] = TheoremStatus(n, REJECTED, reason)
                return statuses
            path = Path(scratch) / "run.v"
            path.write_text(text, encoding="utf-8")
            code, out = _run([str(tc.coqc), "-q", "-R", str(build.root / "Witprobe"), "Witprobe",
                              "-Q", scratch, AUDIT_PATH, str(path)], Path(scratch), timeout_s)
            if code is None:
                for n in remaining:
                    statuses[n] = TheoremStatus(n, UNCHECKED, f"coqc {out}")
                return statuses
            if code == 0:
                found, problems = audit_compiled(tc, build, Path(scratch), "run", targets[-1], timeout_s)
                names_found = tuple(n for n, _ in found)
                for n in remaining:
                    if problems:
                        statuses[n] = TheoremStatus(n, REJECTED, "the audit refused the file: " + "; ".join(problems),
                                                    names_found)
                    else:
                        statuses[n] = TheoremStatus(n, KERNEL_CHECKED, "", names_found)
                return statuses
            m = _ERROR.search(out)
            owner = theorem_at_line(text, int(m.group("line"))) if m else None
            if owner is None or owner not in remaining:
                reason = "coqc failed outside any claim theorem: " + " | ".join(out.strip().splitlines()[-4:])
                for n in remaining:
                    statuses[n] = TheoremStatus(n, UNCHECKED, reason)
                return statuses
            msg = " ".join(m.group("msg").split())[:400] if m else ""
            statuses[owner] = TheoremStatus(owner, REJECTED, f"the kernel rejected it: {msg}")
            remaining.remove(owner)
        for n in remaining:
            statuses[n] = TheoremStatus(n, UNCHECKED, f"not reached within {MAX_ROUNDS} check rounds")
    return statuses


_GUARD = re.compile(r"^\(\* guard (?P<name>[A-Za-z_][A-Za-z0-9_']*) ", re.M)


def guard_at_line(text: str, line: int) -> str | None:
    """The theorem whose guard block (``(* guard NAME ...``) contains ``line`` (1-based)."""
    owner = None
    for m in _GUARD.finditer(text):
        if text.count("\n", 0, m.start()) + 1 > line:
            break
        owner = m.group("name")
    return owner


def guard_theorems(tc: CoqToolchain, build: LibraryBuild, render: Callable[[Sequence[str]], str],
                   names: Sequence[str], timeout_s: float = 600.0) -> dict[str, str]:
    """Run the mutation guard on ``names``: ``render(subset)`` gives a file in which each theorem's
    statement, with its bound lowered, is a ``Goal`` whose original proof must fail
    (``Fail (proof).``). Returns ``{name: "rejected" | "accepted" | "error: why"}``.

    ``coqc`` stops at the first guard whose lowered proof went through ("The command has not
    failed!"): that theorem is ``accepted`` and the file is re-checked without it.
    """
    out_status: dict[str, str] = {}
    remaining = list(names)
    with tempfile.TemporaryDirectory(prefix="witprobe-guard-") as scratch:
        for _ in range(len(names) + 1):
            if not remaining:
                break
            text = render(remaining)
            bad = lint_source(text)
            if bad:
                return {**out_status, **{n: f"error: the guard file contains {', '.join(bad)}" for n in remaining}}
            path = Path(scratch) / "guard.v"
            path.write_text(text, encoding="utf-8")
            code, out = _run([str(tc.coqc), "-q", "-R", str(build.root / "Witprobe"), "Witprobe", str(path)],
                             Path(scratch), timeout_s)
            if code is None:
                return {**out_status, **{n: f"error: coqc {out}" for n in remaining}}
            if code == 0:
                return {**out_status, **{n: "rejected" for n in remaining}}
            m = _ERROR.search(out)
            owner = guard_at_line(text, int(m.group("line"))) if m else None
            if owner is None or owner not in remaining or "has not failed" not in out:
                why = " | ".join(out.strip().splitlines()[-4:])
                return {**out_status, **{n: f"error: coqc failed outside a guard: {why}" for n in remaining}}
            out_status[owner] = "accepted"
            remaining.remove(owner)
    return out_status
