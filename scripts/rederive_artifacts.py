"""Re-derive the committed run directories from their ``run.json``: ``python scripts/rederive_artifacts.py [DIR ...]``.

``run.json`` is the primary record; ``certificate.json`` and ``obligations/`` are derived from it
(``certify check`` re-derives them and compares byte for byte). After a change to the derivation,
the rendering or the certificate hints that changes no measurement, this rewrites those files in
place with the kernels run again, as ``certify run`` writes them, and leaves every ``run.json``
byte for byte as it was (it refuses a record that would not round-trip). Without arguments it
takes every run directory under ``artifacts/``. To re-measure instead, use ``scripts/regenerate.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    from witprobe.certify.certificate import canonical_json
    from witprobe.certify.derive import as_run
    from witprobe.certify.pipeline import write_run_dir

    args = sys.argv[1:] if argv is None else argv
    dirs = [Path(a) for a in args] or sorted(p.parent for p in (ROOT / "artifacts").glob("**/run.json"))
    for d in dirs:
        text = (d / "run.json").read_text(encoding="utf-8")
        run = json.loads(text)
        if canonical_json(as_run(run).to_json()) != text:
            print(f"{d}: run.json does not round-trip through the record types; not rewritten", file=sys.stderr)
            return 1
        print(f"[rederive] {d}", file=sys.stderr, flush=True)
        produced = write_run_dir(run, d, "auto", force=True)
        if (d / "run.json").read_text(encoding="utf-8") != text:
            print(f"{d}: run.json changed", file=sys.stderr)
            return 1
        print(f"[rederive] {d}: coq {produced.outcomes.coq.status}, verdict {produced.certificate['summary']['verdict']}",
              file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
