import Mathlib

/-!
# Monotonicity of `exp` and `log` (mirror of `coq/Witprobe/ExpLn.v`)

Small facts the chain, Ville and sentinel files share. Coq's `ln` is `Real.log` (both are `0`
at `0` and below). Every theorem has the name, hypotheses and conclusion of the Coq lemma of the
same name.

Main results: `exp_le_mono`, `exp_le_iff` (`x ≤ y ↔ e^x ≤ e^y`), `ln_le_iff` (for positive
arguments), `exp_Rmax` (`exp` commutes with `max`), `ln_neg` (`log q < 0` for `0 < q < 1`).
Counterexample beside `ln_le_iff`: `ln_not_mono_at_zero` (positivity is needed).
-/

namespace WitprobeAnalytic

/-- `x ≤ y → e^x ≤ e^y`. -/
theorem exp_le_mono (x y : ℝ) (h : x ≤ y) : Real.exp x ≤ Real.exp y := Real.exp_le_exp.mpr h

/-- `x ≤ y ↔ e^x ≤ e^y`. -/
theorem exp_le_iff (x y : ℝ) : x ≤ y ↔ Real.exp x ≤ Real.exp y := Real.exp_le_exp.symm

/-- For `x, y > 0`: `log x ≤ log y ↔ x ≤ y`. -/
theorem ln_le_iff (x y : ℝ) (hx : 0 < x) (hy : 0 < y) : (Real.log x ≤ Real.log y ↔ x ≤ y) := by
  rw [exp_le_iff (Real.log x) (Real.log y), Real.exp_log hx, Real.exp_log hy]

/-- `e^(max a b) = max (e^a) (e^b)`. -/
theorem exp_Rmax (a b : ℝ) : Real.exp (max a b) = max (Real.exp a) (Real.exp b) := by
  rcases le_total a b with h | h
  · rw [max_eq_right h, max_eq_right (exp_le_mono a b h)]
  · rw [max_eq_left h, max_eq_left (exp_le_mono b a h)]

/-- `log q < 0` for `0 < q < 1`. -/
theorem ln_neg (q : ℝ) (h0 : 0 < q) (h1 : q < 1) : Real.log q < 0 := Real.log_neg h0 h1

/-- Counterexample: without positivity, `log` is not monotone (`log 0 = 0 > log (1/2)`). -/
theorem ln_not_mono_at_zero : 0 ≤ 1 / 2 ∧ ¬ (Real.log 0 ≤ Real.log (1 / 2)) := by
  refine ⟨by norm_num, ?_⟩
  rw [Real.log_zero]
  exact not_le.mpr (ln_neg (1 / 2) (by norm_num) (by norm_num))

end WitprobeAnalytic
