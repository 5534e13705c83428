"""Glue of ``certify run``: from a run record to a written run directory.

The directory is written through :mod:`witprobe.safe_output`: assembled in a fresh private
sibling folder and renamed into place only when every file is complete (a failed or interrupted
run leaves nothing half-written behind), with a manifest of the files and their SHA-256.
``--force`` replaces only a directory whose every file ``certify run`` wrote and nobody changed
since (its manifest says so), and removes only those files: anything else in it (a foreign file,
a symbolic link, a modified file, a directory without that manifest) makes the command refuse
before any measurement. A second writer on the same directory fails at once (exit 2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from witprobe.certify import RUN_TOOL
from witprobe.certify.certificate import OBLIGATIONS_FILE, assemble, canonical_json, sha256_text
from witprobe.certify.derive import Derivation, as_run, derive
from witprobe.certify.run_record import RunRecord
from witprobe.certify.signature import SIGNATURE_FILE, sign_run_dir
from witprobe.certify.kernels import KernelOutcomes, coq_check, lean_check, lean_real_check
from witprobe.cliutil import MAX_INPUT_BYTES, InputError, check_json_value, check_writable, read_json
from witprobe.formal.render import render_run
from witprobe.formal.render_coq import COQ_FILE, render_coq
from witprobe.formal.render_lean_real import LEAN_REAL_FILE, render_lean_real
from witprobe.safe_output import MANIFEST, check_replaceable, hold, new_output_dir

if TYPE_CHECKING:
    from witprobe.signing import SigningKey


REPORT_FILE = "report.html"
"""The page ``certify report DIR`` writes into a run directory by default (derived from its records)."""
RUN_FILES = ("run.json", "certificate.json", COQ_FILE, LEAN_REAL_FILE, OBLIGATIONS_FILE, REPORT_FILE, SIGNATURE_FILE)
"""Every file a run writes, relative to the run directory (with the report ``certify report`` adds,
and ``signature.json`` when ``certify run --sign`` signs it)."""
RUN_SUBDIRS = tuple(sorted({str(Path(f).parent) for f in RUN_FILES} - {"."}))
RUN_SCHEMA_PREFIX = "witprobe-run/"


def foreign_entries(out: Path) -> list[str]:
    """Entries under ``out`` that a run does not write (relative paths, sorted; by name only: what
    ``--force`` may remove is decided by :mod:`witprobe.safe_output`, never by this)."""
    known = set(RUN_FILES) | set(RUN_SUBDIRS) | {MANIFEST}
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
        schema = read_json(run).get("schema")
    except (InputError, AttributeError):
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


def certificate_without_kernels(run: RunRecord | dict[str, Any]) -> dict[str, Any]:
    """The certificate of ``run`` with every proof kernel off, written nowhere (the benches: bounds,
    realizations and self-checks are those of a kernel-checked run; every tier is empirical)."""
    text = canonical_json(as_run(run).to_json())
    sha = sha256_text(text)
    deriv = derive(json.loads(text))
    unused = Path("unused.lean")
    outcomes = KernelOutcomes(coq=coq_check("off", deriv.theorems, sha),
                              lean=lean_real_check("off", unused, "", sha, deriv.lean_theorems),
                              lean_arithmetic=lean_check("off", unused, "", sha, deriv.obligations))
    return assemble(sha, deriv, None, None, outcomes, None)


def produce(run: RunRecord | dict[str, Any], lean_mode: str, workdir: Path, lean_timeout_s: float = 600.0,
            coq_mode: str = "auto") -> Produced:
    """Derive, render (``run.lean``, ``run.v``, ``run_real.lean``), check with Coq and Lean and
    assemble; files are written under ``workdir``. A ``run`` given as JSON is checked against
    the record types first."""
    run_text = canonical_json(as_run(run).to_json())
    run_sha = sha256_text(run_text)
    if len(run_text.encode("utf-8")) > MAX_INPUT_BYTES:  # never write a record witprobe's own readers refuse
        raise InputError("run.json", "", f"would be {len(run_text.encode('utf-8'))} bytes, over the readers' limit "
                                         f"of {MAX_INPUT_BYTES} bytes: measure fewer or shorter prompts")
    stored = json.loads(run_text)
    check_json_value(stored, "run.json")
    deriv = derive(stored)  # derive from exactly what is stored
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
    check_json_value(cert, "certificate.json")
    (workdir / "certificate.json").write_text(canonical_json(cert), encoding="utf-8")
    return Produced(run_text, run_sha, deriv, lean_text, coq_text, real_text, outcomes, cert)


def prepare_output(out: Path, force: bool) -> None:
    """Check, before any measurement, that ``out`` can be written, and take its writer's lock
    (held until the command ends: a second writer on ``out`` fails at once, exit 2).

    An existing non-empty ``out`` is refused unless ``force``, and even then unless every file in
    it is one ``certify run`` wrote, unchanged (:func:`witprobe.safe_output.check_replaceable`).
    """
    check_replaceable(out, force, RUN_TOOL)
    check_writable(out)
    hold(out)
    check_replaceable(out, force, RUN_TOOL)  # again, under the lock


def write_run_dir(run: RunRecord | dict[str, Any], out: Path, lean_mode: str, force: bool = False,
                  coq_mode: str = "auto", signer: SigningKey | None = None) -> Produced:
    """Produce the run directory atomically at ``out`` (:func:`witprobe.safe_output.new_output_dir`);
    with ``signer``, ``signature.json`` too (:mod:`witprobe.certify.signature`), listed in the
    directory's manifest like every other file the run wrote."""
    with new_output_dir(out, RUN_TOOL, force) as tmp:
        produced = produce(run, lean_mode, tmp, coq_mode=coq_mode)
        if signer is not None:
            sign_run_dir(tmp, signer)
    return produced
