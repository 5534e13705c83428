"""The Lean mirror states the same theorems as the kernel-checked Coq library.

``tests/data/kernel_inventory.json`` pairs each mirrored Coq file with its Lean file and lists every
Coq ``Lemma``/``Theorem`` of it with a one-line statement marker (Coq syntax). The checks:

* every ``coq/Witprobe/*.v`` is mirrored or listed as pending (with a reason), and every ``.lean`` file
  under ``Witprobe/`` and ``analytic/`` is a mirror or listed as Lean-only (with a reason);
* in each mirrored pair, the Coq names are exactly the inventory names plus the pending ones, and the
  Lean theorem names exactly the inventory names plus the listed Lean helpers (one-to-one);
* each marker agrees with the Coq statement *and* with the Lean statement: same variables, same
  number of hypotheses, and the same identifiers, numerals and relation symbols in every hypothesis
  and in the conclusion (``tests/kernel_inventory.py`` defines this normal form), so neither side
  nor the marker can drift silently;
* definitions correspond by name, and their bodies by the same signature.

Each check is broken once below (a renamed Lean theorem, a dropped hypothesis, a changed constant, an
unlisted Coq file) to show that it fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_inventory as ki  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
INVENTORY = ROOT / "tests" / "data" / "kernel_inventory.json"


def load() -> dict:
    return json.loads(INVENTORY.read_text(encoding="utf-8"))


def pair_problems(entry: dict, coq_text: str, lean_text: str) -> list[str]:
    """Everything wrong with one mirrored pair (empty when it corresponds)."""
    errs: list[str] = []
    coq = ki.coq_declarations(coq_text)
    module = Path(entry["coq"]).stem + "."  # Lean may qualify a name by the Coq module (Coq allows
    lean = {n[len(module):] if n.startswith(module) else n: h  # the same name in two modules)
            for n, h in ki.lean_declarations(lean_text).items()}
    listed = {t["name"]: t["stmt"] for t in entry["theorems"]}
    pending = set(entry.get("coq_pending", {}))
    helpers = set(entry.get("lean_helpers", {}))
    where = entry["coq"]
    if set(listed) & pending:
        errs.append(f"{where}: listed and pending: {sorted(set(listed) & pending)}")
    for n in sorted(set(coq) - set(listed) - pending):
        errs.append(f"{where}: Coq theorem {n} is neither in the inventory nor pending")
    for n in sorted(set(listed) - set(coq)):
        errs.append(f"{where}: inventory theorem {n} is not in the Coq file")
    for n in sorted((set(listed) - pending) - set(lean)):
        errs.append(f"{entry['lean']}: no Lean mirror of Coq theorem {n}")
    for n in sorted(set(lean) - set(listed) - helpers):
        errs.append(f"{entry['lean']}: Lean theorem {n} mirrors no inventory theorem and is not a listed helper")
    for n in sorted(helpers - set(lean)):
        errs.append(f"{entry['lean']}: listed helper {n} is not declared")
    for n in sorted(helpers & set(coq)):
        errs.append(f"{entry['lean']}: helper {n} has a Coq counterpart; list it as a theorem")
    section_vars = {t["name"]: tuple(t.get("section_vars", ())) for t in entry["theorems"]}
    for n, stmt in listed.items():
        if n not in coq or n not in lean:
            continue
        marker = ki.marker_statement(n, stmt)
        c = ki.parse_statement(n, coq[n], lean=False)
        l_ = ki.parse_statement(n, lean[n], lean=True)
        sv = section_vars.get(n, ())
        if sv:  # Coq Section variables: explicit leading parameters in Lean, implicit in the Coq text
            if l_.variables[:len(sv)] != sv:
                errs.append(f"{entry['lean']}: {n} must start with the Coq section variables {sv}")
            l_ = ki.drop_names(l_, sv)
            marker = ki.drop_names(marker, sv)
            c = ki.drop_names(c, sv)
        if c != marker:
            errs.append(f"{where}: Coq statement of {n} differs from its marker:\n  coq    {c}\n  marker {marker}")
        if l_ != marker:
            errs.append(f"{entry['lean']}: Lean statement of {n} differs from its marker:\n"
                        f"  lean   {l_}\n  marker {marker}")
    cdefs = ki.coq_definition_bodies(coq_text)
    unq = lambda n: n[len(module):] if n.startswith(module) else n  # noqa: E731 (as for theorems)
    ldefs = {unq(n): b for n, b in ki.lean_definition_bodies(lean_text).items()}
    ldef_names = {unq(n) for n in ki.lean_definitions(lean_text)}
    listed_defs = {d["name"]: d for d in entry.get("definitions", [])}
    if set(cdefs) != set(listed_defs):
        errs.append(f"{where}: definitions {sorted(cdefs)} but inventory lists {sorted(listed_defs)}")
    pending_defs = {n for n, d in listed_defs.items() if d.get("pending")}
    if set(listed_defs) - pending_defs != ldef_names:
        errs.append(f"{entry['lean']}: definitions {sorted(ldef_names)} but inventory lists "
                    f"{sorted(set(listed_defs) - pending_defs)} (pending: {sorted(pending_defs)})")
    for n, d in listed_defs.items():
        if d.get("body") is None or n not in cdefs or n not in ldefs:
            continue
        m = ki.part_signature(d["body"], lean=False)
        if ki.part_signature(cdefs[n], lean=False) != m:
            errs.append(f"{where}: body of definition {n} differs from its marker")
        if ki.part_signature(ldefs[n], lean=True) != m:
            errs.append(f"{entry['lean']}: body of definition {n} differs from its marker")
    return errs


def test_inventory_pairs_correspond():
    inv = load()
    errs: list[str] = []
    for entry in inv["files"]:
        errs += pair_problems(entry, (ROOT / entry["coq"]).read_text(encoding="utf-8"),
                              (ROOT / entry["lean"]).read_text(encoding="utf-8"))
    assert errs == [], "\n".join(errs)


def unclassified_coq_files(inv: dict) -> list[str]:
    """Coq library files that the inventory neither mirrors nor lists as pending."""
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "coq" / "Witprobe").glob("*.v")}
    return sorted(files - {e["coq"] for e in inv["files"]} - set(inv["coq_pending_files"]))


def test_every_coq_file_is_mirrored_or_pending():
    inv = load()
    mirrored = {e["coq"] for e in inv["files"]}
    pending = set(inv["coq_pending_files"])
    assert not mirrored & pending
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "coq" / "Witprobe").glob("*.v")}
    unclassified = unclassified_coq_files(inv)
    assert unclassified == [], f"Coq files with neither a Lean mirror nor a pending entry: {unclassified}"
    stale = sorted((mirrored | pending) - files)
    assert stale == [], f"inventory names Coq files that do not exist: {stale}"
    assert all(reason.strip() for reason in inv["coq_pending_files"].values())


def test_every_lean_file_is_mirror_or_lean_only():
    inv = load()
    mirrors = {e["lean"] for e in inv["files"]}
    lean_only = set(inv["lean_only_files"])
    assert not mirrors & lean_only
    files = {p.relative_to(ROOT).as_posix()
             for root in (ROOT / "Witprobe", ROOT / "analytic") for p in root.rglob("*.lean")
             if ".lake" not in p.parts}
    assert sorted(files - mirrors - lean_only) == []
    assert sorted((mirrors | lean_only) - files) == []


def test_inventory_is_not_trivial():
    inv = load()
    names = {t["name"] for e in inv["files"] for t in e["theorems"]}
    for n in ("tv_le_tanh_osc", "tv_le_tanh_radius", "tv_le_eform", "tv_le_plain", "centred_claim",
              "sum_ext", "softmax_sum"):
        assert n in names


# --- each check fails when its guarded property is broken -------------------------------------

def _entry(name: str) -> tuple[dict, str, str]:
    e = next(x for x in load()["files"] if x["coq"].endswith(f"/{name}.v"))
    return e, (ROOT / e["coq"]).read_text(encoding="utf-8"), (ROOT / e["lean"]).read_text(encoding="utf-8")


def test_fails_when_a_lean_mirror_is_missing():
    e, coq, lean = _entry("SoftmaxTV")
    assert pair_problems(e, coq, lean) == []
    broken = lean.replace("theorem tv_le_tanh_osc", "theorem tv_le_tanh_osc_renamed")
    errs = pair_problems(e, coq, broken)
    assert any("no Lean mirror of Coq theorem tv_le_tanh_osc" in x for x in errs)
    assert any("tv_le_tanh_osc_renamed mirrors no inventory theorem" in x for x in errs)


def test_fails_when_a_coq_theorem_is_not_inventoried():
    e, coq, lean = _entry("Claims")
    extra = coq + "\nLemma ghost_claim (x : R) : x <= x.\nProof. lra. Qed.\n"
    assert any("Coq theorem ghost_claim" in x for x in pair_problems(e, extra, lean))


BREAKS = [  # (Coq file, side broken, old text, new text, expected message)
    ("SoftmaxTV", "lean", "theorem tv_le_tanh_radius (n : ℕ) (s s' : ℕ → ℝ) (C : ℝ) (hC : 0 ≤ C)",
     "theorem tv_le_tanh_radius (n : ℕ) (s s' : ℕ → ℝ) (C : ℝ)", "Lean statement of tv_le_tanh_radius"),
    ("SoftmaxTV", "lean", "tv n (softmax n s) (softmax n s') ≤ tanh ((hi - lo) / 4)",
     "tv n (softmax n s) (softmax n s') ≤ tanh ((hi - lo) / 2)", "Lean statement of tv_le_tanh_osc"),
    ("Claims", "coq", "(forall t, (t < n)%nat -> Rabs (s t - s' t) <= C) ->\n  tv n",
     "(forall t, (t < n)%nat -> Rabs (s t - s' t) < C) ->\n  tv n", "Coq statement of centred_claim"),
    ("Softmax", "lean", "noncomputable def tv (n : ℕ) (p p' : ℕ → ℝ) : ℝ := 2⁻¹ * sum n",
     "noncomputable def tv (n : ℕ) (p p' : ℕ → ℝ) : ℝ := 4⁻¹ * sum n", "body of definition tv"),
    ("ClaimsLatent", "lean", "theorem latent_radius (dn nbc nbr : ℕ)", "theorem latent_radius (nbc dn nbr : ℕ)",
     "section variables"),
]


@pytest.mark.parametrize("name,side,old,new,expect", BREAKS, ids=[b[4] for b in BREAKS])
def test_fails_when_a_statement_is_broken(name, side, old, new, expect):
    e, coq, lean = _entry(name)
    assert pair_problems(e, coq, lean) == []
    if side == "lean":
        lean, before = lean.replace(old, new, 1), lean
        assert lean != before
    else:
        coq, before = coq.replace(old, new, 1), coq
        assert coq != before
    assert any(expect in x for x in pair_problems(e, coq, lean))


def test_unclassified_coq_file_is_reported():
    inv = load()
    assert unclassified_coq_files(inv) == []
    dropped = inv["files"].pop(0)["coq"]  # forget one mirrored pair
    assert unclassified_coq_files(inv) == [dropped]


@pytest.mark.parametrize("text,lean,expect", [
    ("(x : R) : 0 <= x -> x <= 1", False, 1),
    ("(x : ℝ) (h : 0 ≤ x) : x ≤ 1", True, 1),
    ("(f g : nat -> R) : f = g", False, 0),
])
def test_hypothesis_count(text, lean, expect):
    assert len(ki.parse_statement("t", text, lean).hyps) == expect
