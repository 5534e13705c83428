import Lean
import Witprobe

/-!
# Audit of the axioms used by the Witprobe library

Building this module *is* the audit (`lake build WitprobeAudit`): it walks every declaration
whose name starts with `Witprobe` (theorems, definitions, instances, structures and the
auxiliary declarations the compiler generates) and fails the build if any depends on axioms
other than `propext`, `Classical.choice` and `Quot.sound`. `sorryAx` (an unfinished proof),
`Lean.ofReduceBool` (what the compiler-trusting decision tactic adds) and any axioms declared in
the library are rejected.
Definitions are audited as well as theorems, because a definition can carry a proof field.

It is a separate library target (`lean_lib WitprobeAudit`, not a default target) so that
`lake build` of the library stays independent of `import Lean`.
-/

open Lean Elab Command

namespace WitprobeAudit

/-- The only axioms a Witprobe declaration may depend on. -/
def allowedAxioms : List Name := [``propext, ``Classical.choice, ``Quot.sound]

/-- Every declaration of the library, with the axioms outside `allowedAxioms` it uses. -/
def findViolations : CommandElabM (Nat × Array String) := do
  let env ← getEnv
  let mut checked := 0
  let mut bad : Array String := #[]
  for (c, info) in env.constants.toList do
    if (`Witprobe).isPrefixOf c then
      checked := checked + 1
      if info matches .axiomInfo _ then
        bad := bad.push s!"{c} is an assumed constant (declared without proof)"
      let axs ← collectAxioms c
      for a in axs do
        if !allowedAxioms.contains a then
          bad := bad.push s!"{c} depends on {a}"
  return (checked, bad)

/-- Fail the build on any violation; otherwise report how many declarations were checked. -/
def audit : CommandElabM Unit := do
  let (checked, bad) ← findViolations
  if checked == 0 then
    throwError "Witprobe audit of axioms: no declaration under `Witprobe` was found"
  if !bad.isEmpty then
    throwError "Witprobe audit of axioms failed:\n{String.intercalate "\n" bad.toList}"
  logInfo s!"Witprobe audit of axioms: {checked} declarations use only propext, Classical.choice, Quot.sound"

end WitprobeAudit

run_cmd WitprobeAudit.audit
