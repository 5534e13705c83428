"""Token lint for the trusted Lean sources and every rendered obligation file.

Forbidden anywhere (code and comments alike): ``sorry``, ``admit``, ``axiom``, ``native_decide``,
``implemented_by``, ``extern``. Each would either skip a proof or trust the compiler; the
kernel-checked tier must never rest on them. Matching is on whole words, so ``axioms`` in
``#print axioms`` and names such as ``axiomInfo`` pass.
"""

from __future__ import annotations

import re
from pathlib import Path

FORBIDDEN = ("sorry", "admit", "axiom", "native_decide", "implemented_by", "extern")
_PATTERN = re.compile(r"(?<![A-Za-z0-9_'.])(" + "|".join(FORBIDDEN) + r")(?![A-Za-z0-9_'])")


def lint_text(text: str) -> list[str]:
    """``line:col: token`` for every forbidden token in ``text``."""
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        for m in _PATTERN.finditer(line):
            out.append(f"{i}:{m.start() + 1}: {m.group(1)}")
    return out


def lint_tree(root: Path) -> list[str]:
    """Lint every ``.lean`` file below ``root``; ``path:line:col: token`` per hit."""
    hits = []
    for path in sorted(Path(root).rglob("*.lean")):
        if ".lake" in path.parts:
            continue
        for h in lint_text(path.read_text(encoding="utf-8")):
            hits.append(f"{path}:{h}")
    return hits
