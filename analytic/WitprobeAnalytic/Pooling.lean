import WitprobeAnalytic.ScoreBridge
import WitprobeAnalytic.SoftmaxTV

/-!
# Pooling lemma: the error of a gate-pooled entry (mirror of `coq/Witprobe/Pooling.v`)

A pooled entry is, per channel, `Σ_j w_j x_j` over the `m` slots of a window with gate weights
`w_j ≥ 0`, `Σ_j w_j = 1`; with slot errors `Δ_j` the pooled error is `Σ_j w_j Δ_j`. Every theorem
has the name, hypotheses and conclusion of the Coq lemma of the same name.

Main results: `pool_l2` (`|Σ w Δ| ≤ ‖w‖₂ ‖Δ‖₂`), `pool_linf` (gain 1 for probability weights),
`pool_l2_gain_le_1`, `pool_l2_gain_ge` (`1/√m ≤ ‖w‖₂`). Counterexample: `pool_linf_needs_sum_one`.
Not yet mirrored (pending in the inventory): `pool_l2_needs_actual_weights`,
`pool_l2_gain_le_1_needs_nonneg`, `pool_linf_needs_nonneg`.
-/

namespace WitprobeAnalytic

/-- The pooled error `Σ_j w_j Δ_j`. -/
noncomputable def pooled (m : ℕ) (w delta : ℕ → ℝ) : ℝ := sum m (fun j => w j * delta j)

/-- `|Σ_j w_j Δ_j| ≤ ‖w‖₂ ‖Δ‖₂` (any real weights). -/
theorem pool_l2 (m : ℕ) (w delta : ℕ → ℝ) : |pooled m w delta| ≤ norm2 m w * norm2 m delta :=
  cauchy_schwarz m w delta

/-- Probability weights: every weight is at most 1. -/
theorem weight_le_1 (m : ℕ) (w : ℕ → ℝ) (j : ℕ) (hw : ∀ i, i < m → 0 ≤ w i) (hs : sum m w = 1)
    (hj : j < m) : w j ≤ 1 := by
  rw [← hs]
  exact sum_term_le m w j hw hj

/-- For probability weights the l2 gain is at most 1. -/
theorem pool_l2_gain_le_1 (m : ℕ) (w : ℕ → ℝ) (hw : ∀ j, j < m → 0 ≤ w j) (hs : sum m w = 1) :
    norm2 m w ≤ 1 := by
  show Real.sqrt (sum m (fun i => w i * w i)) ≤ 1
  have h : sum m (fun i => w i * w i) ≤ sum m w :=
    sum_le m (fun i => w i * w i) w (fun j hj => by
      show w j * w j ≤ w j
      have h1 := hw j hj
      have h2 := weight_le_1 m w j hw hs hj
      nlinarith [h1, h2])
  rw [hs] at h
  calc Real.sqrt (sum m (fun i => w i * w i)) ≤ Real.sqrt 1 := Real.sqrt_le_sqrt h
    _ = 1 := Real.sqrt_one

/-- For weights summing to 1 over `m > 0` entries, `‖w‖₂ ≥ 1/√m`. -/
theorem pool_l2_gain_ge (m : ℕ) (w : ℕ → ℝ) (hm : 0 < m) (hs : sum m w = 1) :
    (Real.sqrt (m : ℝ))⁻¹ ≤ norm2 m w := by
  have hsm : 0 < Real.sqrt (m : ℝ) := Real.sqrt_pos.mpr (Nat.cast_pos.mpr hm)
  have Hones : norm2 m (fun _ => (1 : ℝ)) = Real.sqrt (m : ℝ) := by
    show Real.sqrt (sum m (fun _ => (1 : ℝ) * 1)) = Real.sqrt (m : ℝ)
    first
      | (rw [sum_const, mul_one, mul_one]; done)
      | (rw [sum_const]; simp)
  have Hcs := cauchy_schwarz m w (fun _ => (1 : ℝ))
  have Hdot : dot m w (fun _ => (1 : ℝ)) = 1 := by
    show sum m (fun j => w j * 1) = 1
    rw [sum_ext m (fun j => w j * 1) w (fun j _ => mul_one (w j))]
    exact hs
  rw [Hdot, abs_one, Hones] at Hcs
  rw [inv_eq_one_div]
  exact div_le_of_le_mul_pos hsm Hcs

/-- If `w_j ≥ 0`, `Σ_j w_j = 1` and `|Δ_j| ≤ D` for all `j < m`, then `|Σ_j w_j Δ_j| ≤ D`. -/
theorem pool_linf (m : ℕ) (w delta : ℕ → ℝ) (D : ℝ) (hw : ∀ j, j < m → 0 ≤ w j) (hs : sum m w = 1)
    (hd : ∀ j, j < m → |delta j| ≤ D) : |pooled m w delta| ≤ D := by
  have h1 : |sum m (fun j => w j * delta j)| ≤ sum m (fun j => |w j * delta j|) :=
    sum_abs_le m (fun j => w j * delta j)
  have h2 : sum m (fun j => |w j * delta j|) ≤ sum m (fun j => w j * D) :=
    sum_le m (fun j => |w j * delta j|) (fun j => w j * D) (fun j hj => by
      show |w j * delta j| ≤ w j * D
      rw [abs_mul, abs_of_nonneg (hw j hj)]
      exact mul_le_mul_of_nonneg_left (hd j hj) (hw j hj))
  have h3 : sum m (fun j => w j * D) = D := by rw [sum_scal_r m D w, hs, one_mul]
  show |sum m (fun j => w j * delta j)| ≤ D
  linarith

/-- Counterexample: without `Σ w = 1` (`m = 1`, `w = 2`, `Δ = 1`, `D = 1`: error `2 > 1`). -/
theorem pool_linf_needs_sum_one : |pooled 1 (fun _ => (2 : ℝ)) (fun _ => 1)| > 1 := by
  have e : pooled 1 (fun _ => (2 : ℝ)) (fun _ => 1) = 2 := by
    show sum 1 (fun _ => (2 : ℝ) * 1) = 2
    rw [sum_one_eq]
    norm_num
  rw [e, abs_of_pos (show (0 : ℝ) < 2 by norm_num)]
  norm_num

end WitprobeAnalytic
