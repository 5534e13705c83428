import Lake
open Lake DSL

/-! witprobe's proof layer.

The default target `Witprobe` is core Lean 4 only (no Mathlib, no other dependency), so a bare
pinned toolchain builds it. Per-run obligation files produced by `python -m witprobe.certify run`
import `Witprobe` and are checked with `lake env lean <file>`.

`WitprobeAudit` is a separate, non-default target: building it (`lake build WitprobeAudit`)
fails when any declaration under `Witprobe` depends on axioms other than `propext`,
`Classical.choice` and `Quot.sound`. The optional Mathlib package lives in `analytic/` and is
never built from here. -/

package witprobe where
  leanOptions := #[⟨`autoImplicit, false⟩]

@[default_target]
lean_lib Witprobe where
  roots := #[`Witprobe]

lean_lib WitprobeAudit where
  roots := #[`WitprobeAudit]
