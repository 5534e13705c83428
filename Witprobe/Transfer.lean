import Witprobe.Metric
import Witprobe.ExpBound

/-!
# Monotone transfer bridges into the attention-distribution TV

The softmax bridges are not affine. Each is a fixed map `f` with typed endpoints:

| kind | endpoints | bound |
|---|---|---|
| `softmaxTv` | `scoreLinfRead → attnDistTvRead` | `TV ≤ (e^{2x} - 1)/2` |
| `centredTv` | `scoreOscRead → attnDistTvRead` | `TV ≤ tanh(x/4) = (e^{x/2} - 1)/(e^{x/2} + 1)` |
| `eformTv` | `scoreEformExcessRead → attnDistTvRead` | `TV ≤ ((1 + x)^2 - 1)/2` |

`TransferKind.check u v E` decides, in units, that the claimed output `v` is at least `f(u)`,
with `E` a decided upper bound on the exponential (`expUpperOk`). The real-analysis statements
(`WitprobeAnalytic.softmax_tv_bridge`, `.tv_le_tanh`, `.tv_le_eform`) are in the optional
Mathlib package; here we prove the arithmetic facts the per-run check relies on.

Main results:
* `TransferKind.check_mono_claim`: a larger claimed output is still accepted.
* `eform_check_zero`: at zero excess, zero TV is accepted.
-/

namespace Witprobe

/-- The kinds of transfer, without their type indices. -/
inductive TransferKind where
  | softmaxTv
  | centredTv
  | eformTv
  deriving DecidableEq, Repr

/-- Typed transfers: each kind fixes its source and target metric. -/
inductive Transfer : Metric → Metric → Type where
  | softmaxTv : Transfer .scoreLinfRead .attnDistTvRead
  | centredTv : Transfer .scoreOscRead .attnDistTvRead
  | eformTv : Transfer .scoreEformExcessRead .attnDistTvRead

/-- Forget the indices. -/
def Transfer.kind {a b : Metric} : Transfer a b → TransferKind
  | .softmaxTv => .softmaxTv
  | .centredTv => .centredTv
  | .eformTv => .eformTv

/-- One transfer step in units: input bound `u`, claimed output `v`, exp witness `e`. -/
def TransferKind.check : TransferKind → Nat → Nat → Nat → Bool
  | .softmaxTv, u, v, e =>
      expUpperOk (2 * u) fixedOne e && decide (e ≤ 2 * v + fixedOne)
  | .centredTv, u, v, e =>
      expUpperOk u (2 * fixedOne) e &&
        decide (fixedOne * e ≤ v * (e + fixedOne) + fixedOne * fixedOne)
  | .eformTv, u, v, _ =>
      decide (2 * fixedOne * u + u * u ≤ 2 * fixedOne * v)

/-- A larger claim is still accepted (the checks are upward closed in `v`). -/
theorem TransferKind.check_mono_claim (k : TransferKind) {u v v' e : Nat}
    (h : k.check u v e = true) (hv : v ≤ v') : k.check u v' e = true := by
  cases k with
  | softmaxTv =>
    simp only [TransferKind.check, Bool.and_eq_true, decide_eq_true_eq] at h ⊢
    have h2 := h.2
    exact ⟨h.1, by omega⟩
  | centredTv =>
    simp only [TransferKind.check, Bool.and_eq_true, decide_eq_true_eq] at h ⊢
    refine ⟨h.1, ?_⟩
    have h2 := h.2
    have hm : v * (e + fixedOne) ≤ v' * (e + fixedOne) := Nat.mul_le_mul hv (Nat.le_refl _)
    omega
  | eformTv =>
    simp only [TransferKind.check, decide_eq_true_eq] at h ⊢
    have hm : 2 * fixedOne * v ≤ 2 * fixedOne * v' := Nat.mul_le_mul (Nat.le_refl _) hv
    omega

/-- At zero e-form excess, zero TV is accepted. -/
theorem eform_check_zero : TransferKind.check .eformTv 0 0 0 = true := by decide

/-- Counterexample: a positive e-form excess never certifies zero TV. -/
theorem eform_check_pos_rejects_zero : TransferKind.check .eformTv 1 0 0 = false := by decide

end Witprobe
