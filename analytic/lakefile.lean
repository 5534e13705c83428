import Lake
open Lake DSL

/-! The optional analytic package: the real-analysis meaning of witprobe's bridges.

It requires Mathlib, pinned to the tag that matches the root toolchain
(`leanprover/lean4:v4.14.0`), and the core library from the parent folder. It is never a target
of the root package; build it from this folder with `lake exe cache get && lake build`. -/

package witprobeAnalytic where
  leanOptions := #[⟨`autoImplicit, false⟩]

require witprobe from ".."

require mathlib from git "https://github.com/leanprover-community/mathlib4" @ "v4.14.0"

@[default_target]
lean_lib WitprobeAnalytic where
  roots := #[`WitprobeAnalytic]
