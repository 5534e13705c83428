import WitprobeAnalytic.SoftmaxTV

/-!
# Failure-probability budgets (mirror of `coq/Witprobe/Budget.v`, telescoping part)

The `i`-th probabilistic event of a request gets the share `δ/((i+1)(i+2))`; the shares of any
number of events sum to `δ n/(n+1) < δ`. Every theorem has the name, hypotheses and conclusion
of the Coq lemma of the same name (Coq's `INR n` is the cast `(n : ℝ)`).

Main results: `telescope_sum`, `telescope_sum_le`, `telescope_sum_lt`, `share_pos`;
counterexample `flat_budget_exceeds`. Not yet mirrored (pending in the inventory): the
two-layer budget (`two_layer_spend`, `prob_count`, …) and the finite union bound (`prob`,
`union`, `union_bound`, `ledger_sound`, …).

Lean-only helper: `div_lt_of_lt_mul_pos`.
-/

namespace WitprobeAnalytic

/-- The share of the `i`-th probabilistic event: `δ/((i+1)(i+2))`. -/
noncomputable def share (delta : ℝ) (i : ℕ) : ℝ := delta / (((i : ℝ) + 1) * ((i : ℝ) + 2))

/-- The closed form `δ n/(n+1)`. -/
noncomputable def spent (delta : ℝ) (n : ℕ) : ℝ := delta * (n : ℝ) / ((n : ℝ) + 1)

theorem INR_plus1_pos (n : ℕ) : 0 < (n : ℝ) + 1 := by
  have h : (0 : ℝ) ≤ (n : ℝ) := Nat.cast_nonneg n
  linarith

/-- Lean-only helper: `a < b·c` and `0 < c` give `a / c < b`. -/
theorem div_lt_of_lt_mul_pos {a b c : ℝ} (hc : 0 < c) (h : a < b * c) : a / c < b := by
  have h1 : a * c⁻¹ < b * c * c⁻¹ := mul_lt_mul_of_pos_right h (inv_pos.mpr hc)
  have h2 : b * c * c⁻¹ = b := by rw [mul_assoc, mul_inv_cancel₀ hc.ne', mul_one]
  rw [div_eq_mul_inv]
  linarith

/-- One telescoping step: `δ n/(n+1) + δ/((n+1)(n+2)) = δ (n+1)/(n+2)`. -/
theorem spent_S (delta : ℝ) (n : ℕ) : spent delta n + share delta n = spent delta (n + 1) := by
  have h1 : (0 : ℝ) < (n : ℝ) + 1 := INR_plus1_pos n
  have h2 : (0 : ℝ) < (n : ℝ) + 2 := by linarith
  show delta * (n : ℝ) / ((n : ℝ) + 1) + delta / (((n : ℝ) + 1) * ((n : ℝ) + 2))
    = delta * ((n + 1 : ℕ) : ℝ) / (((n + 1 : ℕ) : ℝ) + 1)
  have hc : ((n + 1 : ℕ) : ℝ) = (n : ℝ) + 1 := by push_cast; ring
  rw [hc]
  have h3 : (0 : ℝ) < (n : ℝ) + 1 + 1 := by linarith
  first
    | (rw [div_add_div _ _ h1.ne' (mul_pos h1 h2).ne',
        div_eq_div_iff (mul_pos h1 (mul_pos h1 h2)).ne' h3.ne']; ring)
    | (field_simp; ring)

/-- Telescoping sum: `Σ_{i<n} δ/((i+1)(i+2)) = δ n/(n+1)`. -/
theorem telescope_sum (delta : ℝ) (n : ℕ) : sum n (share delta) = spent delta n := by
  induction n with
  | zero =>
    show sum 0 (share delta) = delta * ((0 : ℕ) : ℝ) / (((0 : ℕ) : ℝ) + 1)
    rw [sum_O]
    simp
  | succ n ih =>
    rw [sum_S, ih]
    exact spent_S delta n

/-- Each share is positive when `δ > 0`. -/
theorem share_pos (delta : ℝ) (i : ℕ) (h : 0 < delta) : 0 < share delta i := by
  have h1 : (0 : ℝ) < (i : ℝ) + 1 := INR_plus1_pos i
  show 0 < delta / (((i : ℝ) + 1) * ((i : ℝ) + 2))
  exact div_pos h (mul_pos h1 (by linarith))

theorem spent_le (delta : ℝ) (n : ℕ) (h : 0 ≤ delta) : spent delta n ≤ delta := by
  have h1 : (0 : ℝ) < (n : ℝ) + 1 := INR_plus1_pos n
  show delta * (n : ℝ) / ((n : ℝ) + 1) ≤ delta
  apply div_le_of_le_mul_pos h1
  nlinarith [h]

theorem spent_lt (delta : ℝ) (n : ℕ) (h : 0 < delta) : spent delta n < delta := by
  have h1 : (0 : ℝ) < (n : ℝ) + 1 := INR_plus1_pos n
  show delta * (n : ℝ) / ((n : ℝ) + 1) < delta
  apply div_lt_of_lt_mul_pos h1
  nlinarith [h]

/-- The spend never exceeds the budget. -/
theorem telescope_sum_le (delta : ℝ) (n : ℕ) (h : 0 ≤ delta) : sum n (share delta) ≤ delta := by
  rw [telescope_sum]
  exact spent_le delta n h

/-- … and stays strictly below it for `δ > 0`. -/
theorem telescope_sum_lt (delta : ℝ) (n : ℕ) (h : 0 < delta) : sum n (share delta) < delta := by
  rw [telescope_sum]
  exact spent_lt delta n h

/-- Counterexample: a flat share `δ/N` overspends once there are `N + 1` events. -/
theorem flat_budget_exceeds (delta : ℝ) (N : ℕ) (h : 0 < delta) (hN : 1 ≤ N) :
    delta < sum (N + 1) (fun _ => delta / (N : ℝ)) := by
  have hN1 : (1 : ℝ) ≤ (N : ℝ) := by exact_mod_cast hN
  have hN0 : (N : ℝ) ≠ 0 := by
    have : (0 : ℝ) < (N : ℝ) := by linarith
    exact this.ne'
  rw [sum_const]
  have hc : ((N + 1 : ℕ) : ℝ) = (N : ℝ) + 1 := by push_cast; ring
  rw [hc]
  have e1 : (N : ℝ) * (delta / (N : ℝ)) = delta := by
    calc (N : ℝ) * (delta / (N : ℝ)) = delta * ((N : ℝ) * (N : ℝ)⁻¹) := by ring
      _ = delta := by rw [mul_inv_cancel₀ hN0, mul_one]
  have e2 : ((N : ℝ) + 1) * (delta / (N : ℝ)) = (N : ℝ) * (delta / (N : ℝ)) + delta / (N : ℝ) := by
    ring
  have hpos : 0 < delta / (N : ℝ) := div_pos h (by linarith)
  rw [e2, e1]
  linarith

end WitprobeAnalytic
