import Lean
import Witprobe

/-!
# Theorem manifest export

Run with `lake env lean scripts/ExportTheorems.lean` from the repository root (the script
`scripts/export_theorems.py` does this). Prints one JSON object per line for every theorem
under `Witprobe`: its name, its elaborated statement, and the axioms it depends on. The
statements are printed from the elaborated environment, not transcribed from the sources.
-/

open Lean Elab Command Meta

/-- Emit the manifest lines, sorted by name. -/
def exportTheorems : CommandElabM Unit := do
  let env ← getEnv
  let mut rows : Array (String × String) := #[]
  for (c, info) in env.constants.toList do
    if (`Witprobe).isPrefixOf c && !c.isInternal then
      if let .thmInfo t := info then
        let stmt ← liftTermElabM do
          let fmt ← ppExpr t.type
          return fmt.pretty 100
        let axs ← collectAxioms c
        let obj := Json.mkObj [
          ("name", Json.str c.toString),
          ("statement", Json.str stmt),
          ("axioms", Json.arr (axs.map fun a => Json.str a.toString))]
        rows := rows.push (c.toString, obj.compress)
  let sorted := rows.qsort fun a b => a.1 < b.1
  for (_, line) in sorted do
    liftCoreM (IO.println s!"WITPROBE_THEOREM {line}")

run_cmd exportTheorems
