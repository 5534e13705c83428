"""Token lint of every ``.lean`` file in the repository (core, audit, tools, analytic package).

Exit status 1 and one ``path:line:col: token`` line per hit when any file contains ``sorry``,
``admit``, ``axiom``, ``native_decide``, ``implemented_by`` or ``extern`` (see
``witprobe.formal.lint``); 0 otherwise. Needs no Lean toolchain.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from witprobe.formal.lint import lint_text  # noqa: E402


def main() -> int:
    hits: list[str] = []
    files = sorted(p for p in ROOT.rglob("*.lean") if ".lake" not in p.parts)
    for path in files:
        for h in lint_text(path.read_text(encoding="utf-8")):
            hits.append(f"{path.relative_to(ROOT)}:{h}")
    for h in hits:
        print(h)
    print(f"linted {len(files)} Lean files: {len(hits)} forbidden tokens")
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
