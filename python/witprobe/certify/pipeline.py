"""Glue of ``certify run``: from a run record to a written run directory.

The directory is assembled in a temporary sibling folder and renamed into place only when every
file is complete, so a failed or interrupted run leaves nothing half-written behind.
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
from witprobe.certify.derive import Derivation, derive
from witprobe.certify.kernels import KernelOutcomes, coq_check, lean_check, lean_real_check
from witprobe.formal.render import render_run
from witprobe.formal.render_coq import COQ_FILE, render_coq
from witprobe.formal.render_lean_real import LEAN_REAL_FILE, render_lean_real


class OutputExists(FileExistsError):
    """The output directory already holds a run and ``--force`` was not given."""


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


def produce(run: dict[str, Any], lean_mode: str, workdir: Path, lean_timeout_s: float = 600.0,
            coq_mode: str = "auto") -> Produced:
    """Derive, render (``run.lean``, ``run.v``, ``run_real.lean``), check with Coq and Lean and
    assemble; files are written under ``workdir``."""
    run_text = canonical_json(run)
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
    real_text = render_lean_real(deriv.theorems, run_sha) if deriv.theorems else None
    real_path = workdir / LEAN_REAL_FILE
    if real_text is not None:
        real_path.parent.mkdir(parents=True, exist_ok=True)
        real_path.write_text(real_text, encoding="utf-8")
    outcomes = KernelOutcomes(
        coq=coq_check(coq_mode, deriv.theorems, run_sha, timeout_s=lean_timeout_s),
        lean=lean_real_check(lean_mode, real_path, real_text or "", run_sha, deriv.theorems, timeout_s=lean_timeout_s),
        lean_arithmetic=lean_check(lean_mode, lean_path, lean_text or "", run_sha, deriv.obligations,
                                   timeout_s=lean_timeout_s),
    )
    cert = assemble(run_sha, deriv, sha256_text(lean_text) if lean_text is not None else None,
                    sha256_text(coq_text) if coq_text is not None else None, outcomes,
                    sha256_text(real_text) if real_text is not None else None)
    (workdir / "certificate.json").write_text(canonical_json(cert), encoding="utf-8")
    return Produced(run_text, run_sha, deriv, lean_text, coq_text, real_text, outcomes, cert)


def prepare_output(out: Path, force: bool) -> None:
    """Refuse to overwrite an existing run unless ``force``."""
    if out.exists():
        if not out.is_dir():
            raise OutputExists(f"{out} exists and is not a directory")
        if any(out.iterdir()) and not force:
            raise OutputExists(f"{out} is not empty; choose another --out or pass --force to replace it")


def write_run_dir(run: dict[str, Any], out: Path, lean_mode: str, force: bool = False,
                  coq_mode: str = "auto") -> Produced:
    """Produce the run directory atomically at ``out``."""
    prepare_output(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        produced = produce(run, lean_mode, tmp, coq_mode=coq_mode)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp creates 0700; the run directory is ordinary output
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return produced
