"""Coq, the kernel we can run: find ``coqc``, build the library, check claim theorems, audit.

- **Toolchain**: ``$WITPROBE_COQC`` (the ``coqc`` binary or its folder), else ``coqc`` on ``PATH``.
- **Library**: the sources in ``coq/`` (``$WITPROBE_COQ_LIB``, else the repository's ``coq/`` beside
  the package). They are linted (no ``Admitted``/``admit``/``Axiom``/``Parameter``/``Conjecture``),
  hashed with the ``coqc`` version, and compiled file by file (order of ``_CoqProject``) into the
  witprobe cache (``<cache>/coq/<hash>``). A later check reuses that build only after verifying
  the SHA-256 of every ``.vo`` against the stamp written at build time; anything else rebuilds.
  Either way the library a run is checked against is built, or its build hash verified, in the
  same check.
- **Run file**: rendered by :mod:`witprobe.formal.render_coq`, compiled with ``coqc`` under a
  timeout in a scratch folder. When the kernel rejects a theorem, the error's line names it; it is
  marked ``rejected`` and the file is re-checked without it (at most :data:`MAX_ROUNDS` rounds), so
  one false claim does not hide the status of the others.
- **Audit**: the file ends with ``Print Assumptions`` of the conjunction of all its theorems (a
  superset of each theorem's assumptions). Every name must be in :data:`ALLOWED_ASSUMPTIONS`:
  the classical axioms the Reals library rests on, and the specifications of the primitive
  63-bit integers the ``interval`` tactic computes with (kernel primitives). Anything else fails
  closed: every theorem of the file is ``rejected``.

Statuses: ``kernel_checked``, ``rejected`` (the kernel or the audit refused it), ``unchecked``
(with the reason: no ``coqc``, library build failure, timeout).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from witprobe.cache import cache_root

KERNEL_CHECKED, REJECTED, UNCHECKED = "kernel_checked", "rejected", "unchecked"
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
ALLOWED_ASSUMPTIONS = frozenset(REALS_AXIOMS + PRIMITIVE_INT63)

_FORBIDDEN = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Parameters|Conjecture)\b")
_COMMENT = re.compile(r"\(\*.*?\*\)", re.S)
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
class TheoremStatus:
    theorem: str
    status: str
    reason: str = ""
    assumptions: tuple[str, ...] = ()


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


def lint_source(text: str) -> list[str]:
    """Forbidden vernacular outside comments (an unproved or assumed statement)."""
    return sorted(set(m.group(1) for m in _FORBIDDEN.finditer(_COMMENT.sub(" ", text))))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def source_hash(tc: CoqToolchain, lib: Path, files: Sequence[str]) -> str:
    h = hashlib.sha256(tc.version.encode())
    for f in files:
        h.update(b"\0" + f.encode() + b"\0" + (lib / f).read_bytes())
    return h.hexdigest()


def _vo(f: str) -> str:
    return f[:-2] + ".vo"


def _run(args: list[str], cwd: Path, timeout_s: float) -> tuple[int | None, str]:
    try:
        out = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s:.0f} s"
    return out.returncode, (out.stdout or "") + (out.stderr or "")


def _verify(dest: Path, digest: str, files: Sequence[str]) -> bool:
    stamp = dest / "witprobe-build.json"
    try:
        meta = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if meta.get("source_sha256") != digest:
        return False
    vo = meta.get("vo_sha256") or {}
    for f in files:
        p = dest / _vo(f)
        if not p.is_file() or vo.get(_vo(f)) != _sha256(p.read_bytes()):
            return False
    return True


def build_library(tc: CoqToolchain, lib: Path, cache: Path | None = None, timeout_s: float = 900.0) -> LibraryBuild:
    """Compile the library (or verify a cached build of exactly these sources); raise :class:`CoqError`."""
    files = library_files(lib)
    for f in files:
        if not (lib / f).is_file():
            raise CoqError(f"library file {f} listed in _CoqProject is missing")
        bad = lint_source((lib / f).read_text(encoding="utf-8"))
        if bad:
            raise CoqError(f"library file {f} contains {', '.join(bad)} (unproved or assumed statements)")
    digest = source_hash(tc, lib, files)
    root = (cache or cache_root()) / "coq"
    dest = root / digest[:24]
    if _verify(dest, digest, files):
        return LibraryBuild(dest, digest, "verified", tuple(files))
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        for f in files:
            (tmp / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(lib / f, tmp / f)
        for f in files:
            code, text = _run([str(tc.coqc), "-q", "-R", "Witprobe", "Witprobe", f], tmp, timeout_s)
            if code != 0:
                tail = " | ".join(text.strip().splitlines()[-4:])
                raise CoqError(f"library file {f} did not compile: {tail}")
        meta = {"source_sha256": digest, "coqc": tc.version,
                "vo_sha256": {_vo(f): _sha256((tmp / _vo(f)).read_bytes()) for f in files}}
        (tmp / "witprobe-build.json").write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest, ignore_errors=True)
        try:
            os.replace(tmp, dest)
        except OSError:
            if not _verify(dest, digest, files):  # a concurrent builder did not win either
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return LibraryBuild(dest, digest, "built", tuple(files))


def parse_assumptions(text: str) -> tuple[str, ...] | None:
    """Names printed by the last ``Print Assumptions`` (``()`` if closed), ``None`` if absent."""
    closed = text.rfind("Closed under the global context")
    axioms = text.rfind("Axioms:")
    if closed < 0 and axioms < 0:
        return None
    if closed > axioms:
        return ()
    names = []
    for line in text[axioms + len("Axioms:"):].splitlines():
        if line and not line[0].isspace():
            names.append(line.split(" : ")[0].split()[0])
    return tuple(sorted(set(names)))


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


def check_theorems(tc: CoqToolchain, build: LibraryBuild, render: Callable[[Sequence[str]], str],
                   names: Sequence[str], timeout_s: float = 600.0) -> dict[str, TheoremStatus]:
    """Kernel-check the theorems ``names``; ``render(subset)`` gives the file text for a subset."""
    statuses: dict[str, TheoremStatus] = {}
    remaining = list(names)
    with tempfile.TemporaryDirectory(prefix="witprobe-coq-") as scratch:
        for _ in range(MAX_ROUNDS):
            if not remaining:
                break
            text = render(remaining)
            path = Path(scratch) / "run.v"
            path.write_text(text, encoding="utf-8")
            code, out = _run([str(tc.coqc), "-q", "-R", str(build.root / "Witprobe"), "Witprobe", str(path)],
                             Path(scratch), timeout_s)
            if code is None:
                for n in remaining:
                    statuses[n] = TheoremStatus(n, UNCHECKED, f"coqc {out}")
                return statuses
            if code == 0:
                found = parse_assumptions(out)
                if found is None:
                    reason = "Print Assumptions printed nothing (audit impossible; fail closed)"
                    for n in remaining:
                        statuses[n] = TheoremStatus(n, REJECTED, reason)
                    return statuses
                outside = [a for a in found if a not in ALLOWED_ASSUMPTIONS]
                for n in remaining:
                    if outside:
                        statuses[n] = TheoremStatus(n, REJECTED, "assumptions outside the allowlist: " + ", ".join(outside), found)
                    else:
                        statuses[n] = TheoremStatus(n, KERNEL_CHECKED, "", found)
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
