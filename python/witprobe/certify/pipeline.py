"""Glue of ``certify run``: from a run record to a written run directory.

The directory is assembled in a temporary sibling folder and renamed into place only when every
file is complete, so a failed or interrupted run leaves nothing half-written behind.

A *witprobe run directory* is one whose ``run.json`` is a ``witprobe-run/*`` record and which holds
nothing but the files a run writes (:data:`RUN_FILES`, in :data:`RUN_SUBDIRS`). ``--force`` replaces
only such a directory, and removes only those files: anything else in it (or a directory without
a run record) makes the command refuse before any measurement.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from witprobe.certify.certificate import OBLIGATIONS_FILE, assemble, canonical_json, sha256_text
from witprobe.certify.derive import Derivation, as_run, derive
from witprobe.certify.run_record import RunRecord
from witprobe.certify.kernels import KernelOutcomes, coq_check, lean_check, lean_real_check
from witprobe.cliutil import UsageError, check_writable
from witprobe.formal.render import render_run
from witprobe.formal.render_coq import COQ_FILE, render_coq
from witprobe.formal.render_lean_real import LEAN_REAL_FILE, render_lean_real


REPORT_FILE = "report.html"
"""The page ``certify report DIR`` writes into a run directory by default (derived from its records)."""
RUN_FILES = ("run.json", "certificate.json", COQ_FILE, LEAN_REAL_FILE, OBLIGATIONS_FILE, REPORT_FILE)
"""Every file a run writes, relative to the run directory (with the report ``certify report`` adds)."""
RUN_SUBDIRS = tuple(sorted({str(Path(f).parent) for f in RUN_FILES} - {"."}))
RUN_SCHEMA_PREFIX = "witprobe-run/"


class OutputExists(UsageError, FileExistsError):
    """The output directory exists and may not be replaced (not empty without ``--force``, or not
    a witprobe run directory)."""


def foreign_entries(out: Path) -> list[str]:
    """Entries under ``out`` that a run does not write (relative paths, sorted)."""
    known = set(RUN_FILES) | set(RUN_SUBDIRS)
    found = []
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if rel not in known or (rel in RUN_SUBDIRS and not p.is_dir()) or (rel in RUN_FILES and not p.is_file()):
            found.append(rel)
    return found


def run_dir_problem(out: Path) -> str:
    """Why ``out`` is not a witprobe run directory ('' when it is one)."""
    if not out.is_dir():
        return f"{out} is not a directory"
    run = out / "run.json"
    if not run.is_file():
        return f"{out} has no run.json"
    try:
        schema = json.loads(run.read_text(encoding="utf-8")).get("schema")
    except (OSError, ValueError, AttributeError):
        schema = None
    if not isinstance(schema, str) or not schema.startswith(RUN_SCHEMA_PREFIX):
        return f"{out}/run.json is not a {RUN_SCHEMA_PREFIX}* record"
    foreign = foreign_entries(out)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" (and {len(foreign) - 3} more)" if len(foreign) > 3 else "")
        return f"{out} holds files witprobe did not write: {shown}"
    return ""


def is_run_dir(out: Path) -> bool:
    return not run_dir_problem(out)


@dataclass
class Produced:
    run_text: str
    run_sha: str
    derivation: Derivation
    lean_text: str | None  # obligations/run.lean (arithmetic)
    coq_text: str | None  # obligations/run.v
    lean_real_text: str | None  # obligations/run_real.lean
    outcomes: KernelOutcomes
    certificate: dict[str, Any]


def produce(run: RunRecord | dict[str, Any], lean_mode: str, workdir: Path, lean_timeout_s: float = 600.0,
            coq_mode: str = "auto") -> Produced:
    """Derive, render (``run.lean``, ``run.v``, ``run_real.lean``), check with Coq and Lean and
    assemble; files are written under ``workdir``. A ``run`` given as JSON is checked against
    the record types first."""
    run_text = canonical_json(as_run(run).to_json())
    run_sha = sha256_text(run_text)
    deriv = derive(json.loads(run_text))  # derive from exactly what is stored
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "run.json").write_text(run_text, encoding="utf-8")
    lean_text = render_run(deriv.obligations, run_sha) if deriv.obligations else None
    lean_path = workdir / OBLIGATIONS_FILE
    if lean_text is not None:
        lean_path.parent.mkdir(parents=True, exist_ok=True)
        lean_path.write_text(lean_text, encoding="utf-8")
    coq_text = render_coq(deriv.theorems, run_sha) if deriv.theorems else None
    if coq_text is not None:
        (workdir / COQ_FILE).parent.mkdir(parents=True, exist_ok=True)
        (workdir / COQ_FILE).write_text(coq_text, encoding="utf-8")
    real_text = render_lean_real(deriv.lean_theorems, run_sha) if deriv.lean_theorems else None
    real_path = workdir / LEAN_REAL_FILE
    if real_text is not None:
        real_path.parent.mkdir(parents=True, exist_ok=True)
        real_path.write_text(real_text, encoding="utf-8")
    outcomes = KernelOutcomes(
        coq=coq_check(coq_mode, deriv.theorems, run_sha, timeout_s=lean_timeout_s),
        lean=lean_real_check(lean_mode, real_path, real_text or "", run_sha, deriv.lean_theorems, timeout_s=lean_timeout_s),
        lean_arithmetic=lean_check(lean_mode, lean_path, lean_text or "", run_sha, deriv.obligations,
                                   timeout_s=lean_timeout_s),
    )
    cert = assemble(run_sha, deriv, sha256_text(lean_text) if lean_text is not None else None,
                    sha256_text(coq_text) if coq_text is not None else None, outcomes,
                    sha256_text(real_text) if real_text is not None else None)
    (workdir / "certificate.json").write_text(canonical_json(cert), encoding="utf-8")
    return Produced(run_text, run_sha, deriv, lean_text, coq_text, real_text, outcomes, cert)


def prepare_output(out: Path, force: bool) -> None:
    """Check, before any measurement, that ``out`` can be written.

    An existing non-empty ``out`` is refused unless ``force``, and even then unless it is a
    witprobe run directory; the place it is written in must accept a new directory.
    """
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink():
            raise OutputExists(f"{out} exists and is not a directory")
        if any(out.iterdir()):
            if not force:
                raise OutputExists(f"{out} is not empty; choose another --out or pass --force to replace it")
            problem = run_dir_problem(out)
            if problem:
                raise OutputExists(f"--force replaces only a witprobe run directory: {problem}")
    check_writable(out)


def _remove_run_files(d: Path) -> None:
    """Remove the files a run writes, then the emptied folders (nothing else is touched)."""
    for rel in RUN_FILES:
        (d / rel).unlink(missing_ok=True)
    for rel in RUN_SUBDIRS:
        if (d / rel).is_dir():
            (d / rel).rmdir()
    d.rmdir()


def write_run_dir(run: RunRecord | dict[str, Any], out: Path, lean_mode: str, force: bool = False,
                  coq_mode: str = "auto") -> Produced:
    """Produce the run directory atomically at ``out``."""
    prepare_output(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    old: Path | None = None
    try:
        produced = produce(run, lean_mode, tmp, coq_mode=coq_mode)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp creates 0700; the run directory is ordinary output
        prepare_output(out, force)  # again: the directory may have changed while we measured
        if out.exists() and any(out.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old)  # a verified run directory, moved aside whole
        os.replace(tmp, out)  # onto a missing or empty directory
        if old is not None:
            _remove_run_files(old)
            old = None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)  # our own temp folder
        if old is not None and old.exists():  # interrupted after the old run was moved aside
            if out.exists():
                _remove_run_files(old)  # the new run is in place; the old one was verified ours
            else:
                os.replace(old, out)  # put the old run back
    return produced
