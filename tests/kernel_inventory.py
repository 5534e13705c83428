"""Parsing of Coq and Lean theorem statements into a comparable normal form.

Used by ``tests/test_kernel_inventory.py``. A statement is split into its variables (binders
whose type is built from base types and arrows), its hypotheses (the other binders, then the
top-level implications) and its conclusion (the last top-level implication segment, or the
first one that starts with a quantifier). Each part is reduced to a *signature*: the set of
identifiers (Coq and Lean spellings mapped to one vocabulary: ``Rabs``/``|x|`` -> ``abs``,
``Real.exp`` -> ``exp``, ``ln``/``Real.log`` -> ``log``, ``Rmax`` -> ``max``, Coq ``S n`` ->
``n`` and the numeral ``1``, Lean ``List.drop``/``List.tail``/``List.length``/``List.Nodup``/``some``/``none``/``∈`` -> Coq's
``skipn``/``tl``/``length``/``NoDup``/``Some``/``None``/``In``; ``list``/``List`` are base types like ``nat``; a set, because Coq's ``a <= x <= b`` names ``x`` once and Lean's
``a ≤ x ∧ x ≤ b`` twice), the multiset of numerals, and the multiset of relation symbols (``≤ < > ≥
= ≠ ↔ ¬ ∨ →``; ``∧`` is not compared because Coq writes ``a <= b <= c`` for a conjunction).
Two statements agree when their variables, their number of hypotheses, and the signature of
every hypothesis and of the conclusion agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COQ_DECL = re.compile(r"^\s*(Lemma|Theorem|Corollary|Proposition|Fact|Remark)\s+([A-Za-z_][A-Za-z0-9_']*)",
                      re.M)
COQ_DEF = re.compile(r"^\s*(Definition|Fixpoint)\s+([A-Za-z_][A-Za-z0-9_']*)", re.M)
LEAN_DECL = re.compile(r"^\s*(?:@\[[^\]]*\]\s*)?(?:private\s+|protected\s+)?theorem\s+([A-Za-z_][A-Za-z0-9_'.?!]*)",
                       re.M)
LEAN_DEF = re.compile(r"^\s*(?:@\[[^\]]*\]\s*)?(?:noncomputable\s+)?(?:private\s+|protected\s+)?def\s+"
                      r"([A-Za-z_][A-Za-z0-9_'.?!]*)", re.M)

LET_BINDER = re.compile(r"\blet\s+[A-Za-z_][A-Za-z0-9_']*\s*(:[^\n]*)?$")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_'.]*|\d+")
TYPE_WORDS = {"nat", "R", "Prop", "Type", "ℕ", "ℝ", "bool", "Bool", "Nat", "Real", "list", "List"}  # base types
KEYWORDS = {"forall", "exists", "fun", "if", "then", "else", "let", "in", "match", "with", "end"}
# Lean spellings of Coq's list functions (Ville.v): skipn, tl, length
LEAN_ALIASES = {"List.drop": "skipn", "List.tail": "tl", "List.length": "length", "List.Nodup": "NoDup",
                "some": "Some", "none": "None",
                # Chain.v's record projections; Coq coerces a nonnegreal to R silently
                "contract.gain": "gain", "contract.offset": "offset", "transfer.tf": "tf",
                "nonnegreal.nonneg": None}
ALIASES = {"Rabs": "abs", "Real.exp": "exp", "ln": "log", "Real.log": "log", "Rmax": "max",
           "Rmin": "min", "INR": None, "Nat.eqb": None, "S": None, "Real.sqrt": "sqrt", "_": None}
RELATIONS_COQ = [("<->", "↔"), ("<=", "≤"), (">=", "≥"), ("<>", "≠"), ("->", "→"), ("/\\", "∧"),
                 ("\\/", "∨"), ("~", "¬"), ("<", "<"), (">", ">"), ("=", "=")]
RELATIONS_LEAN = ["↔", "≤", "≥", "≠", "→", "∧", "∨", "¬", "<", ">", "="]
COMPARED_RELATIONS = {"↔", "≤", "≥", "≠", "→", "∨", "¬", "<", ">", "="}


def strip_coq_comments(text: str) -> str:
    out, depth, i = [], 0, 0
    while i < len(text):
        if text.startswith("(*", i):
            depth += 1
            i += 2
        elif text.startswith("*)", i) and depth:
            depth -= 1
            i += 2
        else:
            if not depth:
                out.append(text[i])
            i += 1
    return "".join(out)


def strip_lean_comments(text: str) -> str:
    text = re.sub(r"/-.*?-/", " ", text, flags=re.S)
    return re.sub(r"--[^\n]*", " ", text)


@dataclass(frozen=True)
class Part:
    """Signature of one hypothesis or conclusion."""
    idents: tuple[str, ...]
    numerals: tuple[str, ...]
    relations: tuple[str, ...]


@dataclass(frozen=True)
class Statement:
    name: str
    variables: tuple[str, ...]
    hyps: tuple[Part, ...]
    concl: Part


def _top_level(text: str, at, first: bool = False) -> list[int]:
    """Indices ``i`` at bracket depth 0 where ``at(text, i)`` holds (only the first if ``first``)."""
    hits, depth = [], 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and at(text, i):
            hits.append(i)
            if first:
                break
    return hits


def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` at bracket depth 0 (``->`` never splits Coq's ``<->``)."""
    cuts = _top_level(text, lambda s, i: s.startswith(sep, i) and not (sep == "->" and i > 0 and s[i - 1] == "<"))
    parts, start = [], 0
    for i in cuts:
        if i >= start:
            parts.append(text[start:i])
            start = i + len(sep)
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _binder_groups(text: str) -> tuple[list[str], str]:
    """Leading bracketed binder groups of a declaration head, and the rest after the top-level ':'."""
    groups, i = [], 0
    text = text.strip()
    while i < len(text) and text[i] in "([{":
        close = {"(": ")", "[": "]", "{": "}"}[text[i]]
        depth, j = 0, i
        while j < len(text):
            if text[j] in "([{":
                depth += 1
            elif text[j] in ")]}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        assert text[j] == close, f"unbalanced binder in {text[:80]!r}"
        groups.append(text[i + 1:j])
        i = j + 1
        while i < len(text) and text[i].isspace():
            i += 1
    rest = text[i:]
    assert rest.startswith(":"), f"expected ':' after binders in {text[:120]!r}"
    return groups, rest[1:]


def _is_prop(ty: str, lean: bool) -> bool:
    """A binder is a hypothesis unless its type is built from base types and arrows only."""
    words = WORD.findall(ty.replace("ℕ", " nat ").replace("ℝ", " R "))
    if words and all(w in TYPE_WORDS for w in words):
        return False
    return True


def strip_quantifier_types(text: str) -> str:
    """``forall (n : nat) (s s' : nat -> R), P`` -> ``forall n s s', P`` (and ``∀`` alike), so that
    Coq's untyped ``forall d x y`` and Lean's typed ``∀ (d : ℕ) (x y : ℕ → ℝ)`` compare equal."""
    out, i = [], 0
    while i < len(text):
        m = re.compile(r"(forall|∀|exists|∃)\s*").match(text, i)
        if not m or (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            out.append(text[i])
            i += 1
            continue
        out.append(m.group(0))
        i = m.end()
        while i < len(text) and text[i].isspace():
            i += 1
        while i < len(text) and text[i] == "(":
            depth, j = 0, i
            while j < len(text):
                depth += text[j] == "("
                depth -= text[j] == ")"
                if depth == 0:
                    break
                j += 1
            group = text[i + 1:j]
            out.append(" " + group.split(":", 1)[0] + " ")
            i = j + 1
            while i < len(text) and text[i].isspace():
                i += 1
    return "".join(out)


def part_signature(text: str, lean: bool) -> Part:
    rels: list[str] = []
    t = strip_quantifier_types(text).replace("=>", " ").replace("↦", " ")
    if lean:
        t = t.replace("Real.exp", " exp ").replace("Real.log", " log ").replace("⁻¹", " ").replace("∈", " In ")
        if "|" in t:
            rels_abs = True
            t = t.replace("|", " ")
        else:
            rels_abs = False
        for r in RELATIONS_LEAN:
            rels.extend([r] * t.count(r))
            t = t.replace(r, " ")
        t = t.replace("∀", " ").replace("∃", " ")
    else:
        rels_abs = False
        t = t.replace("%nat", " ").replace("%R", " ")
        for c, r in RELATIONS_COQ:
            rels.extend([r] * t.count(c))
            t = t.replace(c, " ")
        rels.extend(["="] * t.count("Nat.eqb"))
    idents: list[str] = []
    nums: list[str] = []
    for w in WORD.findall(t):
        if w.isdigit():
            nums.append(w)
            continue
        if w in TYPE_WORDS or w in KEYWORDS:
            continue
        if not lean and w == "S":
            nums.append("1")
        if not lean and w == "O":  # Coq's nat zero
            nums.append("0")
            continue
        mapped = (ALIASES.get(w, w) if (not lean or w in ("Real.exp", "Real.log", "Real.sqrt", "_"))
                  else LEAN_ALIASES.get(w, w))
        if lean and w == "_":
            mapped = None
        if mapped:
            idents.append(mapped)
    if rels_abs:
        idents.extend(["abs"] * (text.count("|") // 2))
    return Part(tuple(sorted(set(idents))), tuple(sorted(nums)),
                tuple(sorted(r for r in rels if r in COMPARED_RELATIONS)))


def parse_statement(name: str, head: str, lean: bool) -> Statement:
    """``head`` is the declaration text after its name, up to ``:=`` (Lean) or the final ``.`` (Coq)."""
    groups, concl = _binder_groups(head)
    variables, hyps = [], []
    for g in groups:
        if ":" not in g:
            continue
        names, ty = g.split(":", 1)
        if _is_prop(ty, lean):
            hyps.append(part_signature(ty, lean))
        elif not ty.strip().startswith(("Fintype", "Nonempty")):
            variables.extend(names.split())
    arrow = "→" if lean else "->"
    segs = _split_top(concl, arrow)
    quant = ("∀", "∃") if lean else ("forall", "exists")
    out = []
    for k, s in enumerate(segs):
        if s.startswith(quant) or k == len(segs) - 1:
            out.append(f" {arrow} ".join(segs[k:]))
            break
        hyps.append(part_signature(s, lean))
    return Statement(name, tuple(variables), tuple(hyps), part_signature(out[0], lean))


def coq_declarations(text: str) -> dict[str, str]:
    """Coq ``Lemma``/``Theorem`` name -> head (binders and statement)."""
    text = strip_coq_comments(text)
    out = {}
    for m in COQ_DECL.finditer(text):
        end = re.search(r"\.\s", text[m.end():])
        assert end, f"unterminated Coq statement {m.group(2)}"
        out[m.group(2)] = text[m.end():m.end() + end.start()].strip()
    return out


def coq_definitions(text: str) -> list[str]:
    return [m.group(2) for m in COQ_DEF.finditer(strip_coq_comments(text))]


def lean_declarations(text: str) -> dict[str, str]:
    """Lean ``theorem`` name -> head (binders and statement, up to the top-level ``:=``)."""
    text = strip_lean_comments(text)
    out = {}
    for m in LEAN_DECL.finditer(text):
        rest = text[m.end():]
        ends = _top_level(rest, lambda s, i: s.startswith(":=", i) and not LET_BINDER.search(s[:i]), first=True)
        out[m.group(1)] = rest[:ends[0] if ends else len(rest)].strip()
    return out


def lean_definitions(text: str) -> list[str]:
    return [m.group(1) for m in LEAN_DEF.finditer(strip_lean_comments(text))]


def marker_statement(name: str, stmt: str) -> Statement:
    """A marker is a one-line statement in Coq syntax: ``binders : statement``."""
    return parse_statement(name, stmt, lean=False)


def coq_definition_bodies(text: str) -> dict[str, str]:
    """Coq ``Definition`` name -> body (after ``:=``, up to the final ``.``)."""
    text = strip_coq_comments(text)
    out = {}
    for m in COQ_DEF.finditer(text):
        end = re.search(r"\.\s", text[m.end():])
        decl = text[m.end():m.end() + end.start()]
        out[m.group(2)] = decl.split(":=", 1)[1].strip() if ":=" in decl else ""
    return out


def lean_definition_bodies(text: str) -> dict[str, str]:
    """Lean ``def`` name -> body (after the top-level ``:=``, up to the next blank line)."""
    text = strip_lean_comments(text)
    out = {}
    for m in LEAN_DEF.finditer(text):
        rest = text[m.end():]
        stop = re.search(r"\n\s*\n", rest)
        decl = rest[:stop.start()] if stop else rest
        out[m.group(1)] = decl.split(":=", 1)[1].strip() if ":=" in decl else ""
    return out


def one_line(text: str) -> str:
    return " ".join(text.split())


def drop_names(st: Statement, names: tuple[str, ...]) -> Statement:
    """The statement without the given variable names (for Coq ``Section`` variables)."""
    def part(p: Part) -> Part:
        return Part(tuple(i for i in p.idents if i not in names), p.numerals, p.relations)
    return Statement(st.name, tuple(v for v in st.variables if v not in names),
                     tuple(part(h) for h in st.hyps), part(st.concl))
