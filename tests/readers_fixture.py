"""A run directory of the current certificate schema, made in a second from the committed
``artifacts/coverage/smollm2-int8/run.json`` with the kernels off (every tier empirical): what the
reader tests edit. No model is loaded and no kernel runs."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACT_RUN = ROOT / "artifacts" / "coverage" / "smollm2-int8" / "run.json"


def make_run_dir(d: Path) -> Path:
    from witprobe.certify.pipeline import produce

    produce(json.loads(ARTIFACT_RUN.read_text(encoding="utf-8")), "off", d, coq_mode="off")
    return d
