import WitprobeAnalytic.Sum

/-!
# Softmax, total variation, and the served-vs-exact ratio form (mirror of `coq/Witprobe/Softmax.v`)

Definitions (vectors of length `n`, see `WitprobeAnalytic.Sum`):
* `partition n s = Σ_t e^{s t}`;
* `softmax n s t = e^{s t} / partition n s`;
* `tv n p p' = ½ · Σ_t |p t − p' t|`, the total-variation distance;
* `tanh x = (e^{2x} − 1) / (e^{2x} + 1)` (Coq's definition; it equals `Real.tanh x`).

Main results: `softmax_pos`, `softmax_sum` (a probability vector), `softmax_shift` (shift
invariance), `softmax_ratio` (the exact distribution is the served one reweighted by
`e^{s − s'}` and renormalized), `tv_sym`, `tv_nonneg`, `tv_empty`. Every theorem has the name,
hypotheses and conclusion of the Coq lemma of the same name.
-/

namespace WitprobeAnalytic

noncomputable def partition (n : ℕ) (s : ℕ → ℝ) : ℝ := sum n (fun t => Real.exp (s t))

noncomputable def softmax (n : ℕ) (s : ℕ → ℝ) : ℕ → ℝ := fun t => Real.exp (s t) / partition n s

noncomputable def tv (n : ℕ) (p p' : ℕ → ℝ) : ℝ := 2⁻¹ * sum n (fun t => |p t - p' t|)

noncomputable def tanh (x : ℝ) : ℝ := (Real.exp (2 * x) - 1) / (Real.exp (2 * x) + 1)

theorem partition_pos (n : ℕ) (s : ℕ → ℝ) (hn : 0 < n) : 0 < partition n s :=
  sum_pos n (fun t => Real.exp (s t)) hn (fun t _ => Real.exp_pos (s t))

theorem softmax_pos (n : ℕ) (s : ℕ → ℝ) (t : ℕ) (hn : 0 < n) : 0 < softmax n s t := by
  show 0 < Real.exp (s t) / partition n s
  exact div_pos (Real.exp_pos (s t)) (partition_pos n s hn)

theorem softmax_sum (n : ℕ) (s : ℕ → ℝ) (hn : 0 < n) : sum n (softmax n s) = 1 := by
  have h1 : sum n (softmax n s) = sum n (fun t => Real.exp (s t)) / partition n s :=
    sum_div_r n (partition n s) (fun t => Real.exp (s t))
  rw [h1]
  exact div_self (partition_pos n s hn).ne'

theorem partition_shift (n : ℕ) (s : ℕ → ℝ) (c : ℝ) :
    partition n (fun i => s i + c) = partition n s * Real.exp c := by
  show sum n (fun i => Real.exp (s i + c)) = sum n (fun t => Real.exp (s t)) * Real.exp c
  rw [← sum_scal_r]
  exact sum_ext n (fun i => Real.exp (s i + c)) (fun t => Real.exp (s t) * Real.exp c)
    (fun i _ => Real.exp_add (s i) c)

/-- Shift invariance: adding the same constant to every score leaves softmax unchanged. -/
theorem softmax_shift (n : ℕ) (s : ℕ → ℝ) (c : ℝ) (t : ℕ) (hn : 0 < n) :
    softmax n (fun i => s i + c) t = softmax n s t := by
  show Real.exp (s t + c) / partition n (fun i => s i + c) = Real.exp (s t) / partition n s
  rw [partition_shift, Real.exp_add]
  exact mul_div_mul_right (Real.exp (s t)) (partition n s) (Real.exp_pos c).ne'

/-- The reweighting normalizer `Z = Σ_t p'_t e^{s_t − s'_t}`. -/
noncomputable def reweight (n : ℕ) (s s' : ℕ → ℝ) : ℝ :=
  sum n (fun t => softmax n s' t * Real.exp (s t - s' t))

/-- `e^{a} = e^{b} · e^{a − b}`. -/
theorem exp_split (a b : ℝ) : Real.exp a = Real.exp b * Real.exp (a - b) := by
  rw [← Real.exp_add]
  congr 1
  ring

/-- `P · (a / P · b) = a · b` for `P ≠ 0`. -/
theorem mul_div_mul_cancel (P a b : ℝ) (hP : P ≠ 0) : P * (a / P * b) = a * b := by
  have h1 : P * (a / P * b) = P * P⁻¹ * (a * b) := by ring
  rw [h1, mul_inv_cancel₀ hP, one_mul]

theorem partition_ratio (n : ℕ) (s s' : ℕ → ℝ) (hn : 0 < n) :
    partition n s = partition n s' * reweight n s s' := by
  have hP : partition n s' ≠ 0 := (partition_pos n s' hn).ne'
  show sum n (fun t => Real.exp (s t))
    = partition n s' * sum n (fun t => Real.exp (s' t) / partition n s' * Real.exp (s t - s' t))
  rw [← sum_scal_l]
  exact sum_ext n (fun t => Real.exp (s t))
    (fun t => partition n s' * (Real.exp (s' t) / partition n s' * Real.exp (s t - s' t)))
    (fun t _ => by
      show Real.exp (s t)
        = partition n s' * (Real.exp (s' t) / partition n s' * Real.exp (s t - s' t))
      rw [mul_div_mul_cancel (partition n s') (Real.exp (s' t)) (Real.exp (s t - s' t)) hP]
      exact exp_split (s t) (s' t))

theorem reweight_pos (n : ℕ) (s s' : ℕ → ℝ) (hn : 0 < n) : 0 < reweight n s s' :=
  sum_pos n (fun t => softmax n s' t * Real.exp (s t - s' t)) hn
    (fun t _ => mul_pos (softmax_pos n s' t hn) (Real.exp_pos (s t - s' t)))

/-- `softmax s = softmax s' · e^{s − s'} / Z`. -/
theorem softmax_ratio (n : ℕ) (s s' : ℕ → ℝ) (t : ℕ) (hn : 0 < n) :
    softmax n s t = softmax n s' t * Real.exp (s t - s' t) / reweight n s s' := by
  show Real.exp (s t) / partition n s
    = Real.exp (s' t) / partition n s' * Real.exp (s t - s' t) / reweight n s s'
  rw [partition_ratio n s s' hn, exp_split (s t) (s' t)]
  ring

theorem tv_sym (n : ℕ) (p p' : ℕ → ℝ) : tv n p p' = tv n p' p := by
  show 2⁻¹ * sum n (fun t => |p t - p' t|) = 2⁻¹ * sum n (fun t => |p' t - p t|)
  rw [sum_ext n (fun t => |p t - p' t|) (fun t => |p' t - p t|)
    (fun t _ => abs_sub_comm (p t) (p' t))]

theorem tv_nonneg (n : ℕ) (p p' : ℕ → ℝ) : 0 ≤ tv n p p' := by
  show 0 ≤ 2⁻¹ * sum n (fun t => |p t - p' t|)
  exact mul_nonneg (by norm_num) (sum_nonneg n (fun t => |p t - p' t|) (fun t _ => abs_nonneg _))

theorem tv_empty (p p' : ℕ → ℝ) : tv 0 p p' = 0 := by
  show 2⁻¹ * sum 0 (fun t => |p t - p' t|) = 0
  rw [sum_O, mul_zero]

end WitprobeAnalytic
