"""Re-check every committed per-run obligation file (``artifacts/**/*.lean``) with Lean.

Each file is checked with ``lake env lean FILE`` from the repository root; the run fails if Lean
reports an error or a nonzero exit status, or if a ``#print axioms`` line reports anything
beyond ``propext``, ``Classical.choice`` and ``Quot.sound``. Needs the library built first
(``lake build``). Exit status: 0 all files pass (or there are none), 1 a file failed, 2 no
Lean toolchain.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from witprobe.formal.lean_runner import LeanRunner, audit_axioms, find_toolchain  # noqa: E402


def main() -> int:
    files = sorted(p for p in (ROOT / "artifacts").rglob("*.lean")) if (ROOT / "artifacts").exists() else []
    if not files:
        print("no committed obligation files under artifacts/; nothing to check")
        return 0
    tc, reason = find_toolchain()
    if tc is None:
        print(f"cannot check obligations: {reason}", file=sys.stderr)
        return 2
    runner = LeanRunner(tc, ROOT, timeout_s=1800)
    failed = 0
    for f in files:
        res = runner.check_file(f)
        errors = [m for m in res.messages if m.severity == "error"]
        bad_axioms = {name: audit_axioms(axs) for name, axs in res.axioms.items() if audit_axioms(axs)}
        rel = f.relative_to(ROOT)
        if res.timed_out or res.returncode != 0 or errors or bad_axioms:
            failed += 1
            print(f"FAIL {rel}: status {res.returncode}, {len(errors)} errors, non-standard axioms {bad_axioms}")
            for m in errors[:5]:
                print(f"  line {m.line}: {m.text[:300]}")
        else:
            print(f"ok   {rel}: {len(res.axioms)} theorems, axioms audited")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
