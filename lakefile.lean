import Lake
open Lake DSL

/-! witprobe's proof layer.

The default target `Witprobe` is core Lean 4 only (no Mathlib, no other dependency), so a bare
pinned toolchain builds it. Per-run obligation files produced by `python -m witprobe.certify run`
import `Witprobe` and are checked with `lake env lean <file>`. -/

package witprobe where
  leanOptions := #[⟨`autoImplicit, false⟩]

@[default_target]
lean_lib Witprobe where
  roots := #[`Witprobe]
