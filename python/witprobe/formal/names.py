"""Declared Lean names, read from the sources without a Lean toolchain.

A small scanner for the subset of Lean syntax our libraries use: ``namespace X`` / ``section`` /
``end``, and declarations introduced by ``theorem``, ``def``, ``abbrev``, ``structure``,
``inductive``, ``instance`` (when named) and ``class``, optionally preceded by modifiers and
attributes. Dotted declaration names (``Tier.meet_comm``) are resolved against the enclosing
namespaces. Comments (``--`` and nested ``/- -/``) are skipped, so a name mentioned in a
docstring does not count as declared.

Used by the cross-check test: every proof name the Python side cites must be declared in
``Witprobe/`` or ``analytic/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

_DECL = re.compile(
    r"^\s*(?:@\[[^\]]*\]\s*)*"
    r"(?:(?:private|protected|noncomputable|partial|unsafe|nonrec)\s+)*"
    r"(theorem|lemma|def|abbrev|structure|inductive|class|instance|opaque)\s+"
    r"(?:\([^)]*\)\s*)?"  # instance priority
    r"([A-Za-z_][A-Za-z0-9_'.]*)"
)
_NAMESPACE = re.compile(r"^\s*namespace\s+([A-Za-z_][A-Za-z0-9_.]*)\s*$")
_SECTION = re.compile(r"^\s*section(?:\s+([A-Za-z_][A-Za-z0-9_.]*))?\s*$")
_END = re.compile(r"^\s*end(?:\s+([A-Za-z_][A-Za-z0-9_.]*))?\s*$")


def strip_comments(text: str) -> str:
    """Remove ``--`` line comments and nested ``/- ... -/`` block comments (docstrings too)."""
    out: list[str] = []
    i, depth, n = 0, 0, len(text)
    in_string = False
    while i < n:
        two = text[i:i + 2]
        if depth == 0 and not in_string and text[i] == '"':
            in_string = True
            out.append(text[i])
            i += 1
            continue
        if in_string:
            out.append(text[i])
            if text[i] == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if text[i] == '"':
                in_string = False
            i += 1
            continue
        if two == "/-":
            depth += 1
            i += 2
            continue
        if depth and two == "-/":
            depth -= 1
            i += 2
            continue
        if depth:
            if text[i] == "\n":
                out.append("\n")
            i += 1
            continue
        if two == "--":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def declared_names(text: str) -> set[str]:
    """Fully qualified names declared in one Lean source text."""
    names: set[str] = set()
    scopes: list[tuple[str, list[str]]] = []  # (kind, namespace components)
    for line in strip_comments(text).splitlines():
        m = _NAMESPACE.match(line)
        if m:
            scopes.append(("namespace", m.group(1).split(".")))
            continue
        m = _SECTION.match(line)
        if m:
            scopes.append(("section", []))
            continue
        m = _END.match(line)
        if m and scopes:
            scopes.pop()
            continue
        m = _DECL.match(line)
        if m:
            name = m.group(2)
            if name.startswith("_root_."):
                names.add(name[len("_root_."):])
                continue
            prefix = [c for _, comps in scopes for c in comps]
            names.add(".".join(prefix + [name]))
    return names


def declared_in_tree(roots: Iterable[Path]) -> set[str]:
    """Names declared in every ``.lean`` file under the given folders (``.lake`` skipped)."""
    names: set[str] = set()
    for root in roots:
        root = Path(root)
        if not root.exists():
            continue
        files = [root] if root.is_file() else sorted(root.rglob("*.lean"))
        for path in files:
            if ".lake" in path.parts:
                continue
            names |= declared_names(path.read_text(encoding="utf-8"))
    return names


def missing_names(cited: Iterable[str], roots: Iterable[Path]) -> list[str]:
    """The cited names that no scanned source declares (sorted)."""
    declared = declared_in_tree(roots)
    return sorted({c for c in cited if c not in declared})
