"""Export the theorem manifest of the Witprobe library to ``artifacts/theorems.json``.

Runs ``lake env lean scripts/ExportTheorems.lean`` (after ``lake build``), which prints every
theorem under ``Witprobe`` from the elaborated environment with its statement and the axioms it
uses. Without a Lean toolchain nothing is written: the script says so and exits with status 2,
so a stale manifest is never mistaken for a fresh one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from witprobe.formal.lean_runner import ALLOWED_AXIOMS, find_toolchain  # noqa: E402

PREFIX = "WITPROBE_THEOREM "


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "artifacts" / "theorems.json")
    args = ap.parse_args(argv)
    tc, reason = find_toolchain()
    if tc is None:
        print(f"theorem manifest not exported: {reason}. {args.out} was not written.", file=sys.stderr)
        return 2
    env_path = f"{tc.lake.parent}"
    build = subprocess.run([str(tc.lake), "build"], cwd=ROOT, capture_output=True, text=True)
    if build.returncode != 0:
        print(build.stdout + build.stderr, file=sys.stderr)
        print("lake build failed; manifest not exported", file=sys.stderr)
        return 1
    out = subprocess.run(
        [str(tc.lake), "env", "lean", str(ROOT / "scripts" / "ExportTheorems.lean")],
        cwd=ROOT, capture_output=True, text=True,
        env={**__import__("os").environ, "PATH": env_path + ":" + __import__("os").environ.get("PATH", "")},
    )
    if out.returncode != 0:
        print(out.stdout + out.stderr, file=sys.stderr)
        print("ExportTheorems.lean failed; manifest not exported", file=sys.stderr)
        return 1
    rows = [json.loads(line[len(PREFIX):]) for line in out.stdout.splitlines() if line.startswith(PREFIX)]
    bad = [r["name"] for r in rows if set(r["axioms"]) - ALLOWED_AXIOMS]
    manifest = {"toolchain": tc.version, "count": len(rows), "theorems": rows,
                "nonstandard_axioms": bad}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(rows)} theorems)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
