import WitprobeAnalytic.Softmax

/-!
# Selection, restriction and rank stability (mirror of `coq/Witprobe/Selection.v`)

Index sets are `ℕ → Bool` (`inI`: exact top set, `inIh`: served top set). Every theorem has the
name, hypotheses and conclusion of the Coq lemma of the same name.

Main results: `tv_selection_split`, `tv_selection_le` (the selection lemma: TV is half the
dropped plus added mass plus half the common-part difference), `tv_restrict` (restricting and
renormalizing a probability vector costs exactly the mass outside), `osc_le_twice_linf`,
`rank_prefix_stable`, `top_set_stable`, `rank_stable_radii`. Counterexample:
`osc_needs_factor_two`. Not yet mirrored (pending in the inventory):
`tv_selection_needs_nonneg`, `tv_restrict_needs_nonneg`, `rank_prefix_needs_strict_gap`.
-/

namespace WitprobeAnalytic

noncomputable def mass_out (n : ℕ) (p : ℕ → ℝ) (inIh : ℕ → Bool) : ℝ :=
  sum n (fun t => if inIh t then 0 else p t)

noncomputable def mass_in (n : ℕ) (phat : ℕ → ℝ) (inI : ℕ → Bool) : ℝ :=
  sum n (fun t => if inI t then 0 else phat t)

noncomputable def inter_diff (n : ℕ) (inI inIh : ℕ → Bool) (p phat : ℕ → ℝ) : ℝ :=
  sum n (fun t => if inI t && inIh t then |p t - phat t| else 0)

/-- One key: `|p − p̂|` splits into the dropped, the added and the common part. -/
theorem selection_term (a b : ℝ) (i ih : Bool) (ha : 0 ≤ a) (hb : 0 ≤ b) (hi : i = false → a = 0)
    (hih : ih = false → b = 0) :
    |a - b| = (if ih then 0 else a) + (if i then 0 else b) + (if i && ih then |a - b| else 0) := by
  cases i <;> cases ih
  · rw [hi rfl, hih rfl]
    simp
  · rw [hi rfl]
    simp [abs_of_nonneg hb]
  · rw [hih rfl]
    simp [abs_of_nonneg ha]
  · simp

/-- `p` is a nonnegative vector supported on `I`. -/
def supported (n : ℕ) (p : ℕ → ℝ) (inI : ℕ → Bool) : Prop :=
  ∀ t, t < n → 0 ≤ p t ∧ (inI t = false → p t = 0)

noncomputable def selection_bound (n : ℕ) (inI inIh : ℕ → Bool) (p phat : ℕ → ℝ) : ℝ :=
  2⁻¹ * (mass_out n p inIh + mass_in n phat inI) + 2⁻¹ * inter_diff n inI inIh p phat

theorem tv_selection_split (n : ℕ) (inI inIh : ℕ → Bool) (p phat : ℕ → ℝ)
    (hp : supported n p inI) (hph : supported n phat inIh) :
    tv n p phat = selection_bound n inI inIh p phat := by
  show 2⁻¹ * sum n (fun t => |p t - phat t|)
    = 2⁻¹ * (sum n (fun t => if inIh t then 0 else p t) + sum n (fun t => if inI t then 0 else phat t))
      + 2⁻¹ * sum n (fun t => if inI t && inIh t then |p t - phat t| else 0)
  rw [← mul_add, ← sum_plus, ← sum_plus]
  congr 1
  exact sum_ext n (fun t => |p t - phat t|)
    (fun t => (if inIh t then 0 else p t) + (if inI t then 0 else phat t)
      + (if inI t && inIh t then |p t - phat t| else 0))
    (fun t ht => selection_term (p t) (phat t) (inI t) (inIh t) (hp t ht).1 (hph t ht).1
      (hp t ht).2 (hph t ht).2)

theorem tv_selection_le (n : ℕ) (inI inIh : ℕ → Bool) (p phat : ℕ → ℝ)
    (hp : supported n p inI) (hph : supported n phat inIh) :
    tv n p phat ≤ selection_bound n inI inIh p phat :=
  le_of_eq (tv_selection_split n inI inIh p phat hp hph)

noncomputable def mass_on (n : ℕ) (p : ℕ → ℝ) (inS : ℕ → Bool) : ℝ :=
  sum n (fun t => if inS t then p t else 0)

noncomputable def restrict (n : ℕ) (p : ℕ → ℝ) (inS : ℕ → Bool) : ℕ → ℝ :=
  fun t => if inS t then p t / mass_on n p inS else 0

theorem mass_on_out (n : ℕ) (p : ℕ → ℝ) (inS : ℕ → Bool) :
    mass_on n p inS + mass_out n p inS = sum n p := by
  show sum n (fun t => if inS t then p t else 0) + sum n (fun t => if inS t then 0 else p t) = sum n p
  rw [← sum_plus]
  exact sum_ext n (fun t => (if inS t then p t else 0) + (if inS t then 0 else p t)) p
    (fun t _ => by cases inS t <;> simp)

theorem mass_out_nonneg (n : ℕ) (p : ℕ → ℝ) (inS : ℕ → Bool) (hp : ∀ t, t < n → 0 ≤ p t) :
    0 ≤ mass_out n p inS :=
  sum_nonneg n (fun t => if inS t then 0 else p t)
    (fun t ht => by cases inS t <;> simp [hp t ht])

/-- One key of `|p − p|_S / M|` with `0 < M ≤ 1`. -/
theorem restrict_term (a M : ℝ) (s : Bool) (ha : 0 ≤ a) (hM : 0 < M) (hM1 : M ≤ 1) :
    |a - (if s then a / M else 0)| = (if s then a else 0) * (M⁻¹ - 1) + (if s then 0 else a) := by
  cases s
  · show |a - 0| = 0 * (M⁻¹ - 1) + a
    rw [sub_zero, abs_of_nonneg ha]
    ring
  · show |a - a / M| = a * (M⁻¹ - 1) + 0
    have hinv : 1 ≤ M⁻¹ := by nlinarith [mul_inv_cancel₀ hM.ne', inv_pos.mpr hM]
    have h1 : a * 1 ≤ a * M⁻¹ := mul_le_mul_of_nonneg_left hinv ha
    have h2 : a - a / M ≤ 0 := by
      rw [div_eq_mul_inv]
      linarith
    rw [abs_of_nonpos h2, div_eq_mul_inv]
    ring

theorem restrict_sum (n : ℕ) (p : ℕ → ℝ) (inS : ℕ → Bool) (M : ℝ) (hp : ∀ t, t < n → 0 ≤ p t)
    (hM : 0 < M) (hM1 : M ≤ 1) :
    sum n (fun t => |p t - (if inS t then p t / M else 0)|)
      = mass_on n p inS * (M⁻¹ - 1) + mass_out n p inS := by
  show sum n (fun t => |p t - (if inS t then p t / M else 0)|)
    = sum n (fun t => if inS t then p t else 0) * (M⁻¹ - 1) + sum n (fun t => if inS t then 0 else p t)
  rw [← sum_scal_r, ← sum_plus]
  exact sum_ext n (fun t => |p t - (if inS t then p t / M else 0)|)
    (fun t => (if inS t then p t else 0) * (M⁻¹ - 1) + (if inS t then 0 else p t))
    (fun t ht => restrict_term (p t) M (inS t) (hp t ht) hM hM1)

/-- `tv p (p|_S / p(S)) = p(not S)` for a probability vector `p` with `p(S) > 0`. -/
theorem tv_restrict (n : ℕ) (p : ℕ → ℝ) (inS : ℕ → Bool) (hp : ∀ t, t < n → 0 ≤ p t)
    (hs : sum n p = 1) (hM : 0 < mass_on n p inS) :
    tv n p (restrict n p inS) = mass_out n p inS := by
  have Hsplit := mass_on_out n p inS
  have HM1 : mass_on n p inS ≤ 1 := by
    have := mass_out_nonneg n p inS hp
    linarith
  show 2⁻¹ * sum n (fun t => |p t - (if inS t then p t / mass_on n p inS else 0)|) = mass_out n p inS
  rw [restrict_sum n p inS (mass_on n p inS) hp hM HM1]
  have hinv : mass_on n p inS * (mass_on n p inS)⁻¹ = 1 := mul_inv_cancel₀ hM.ne'
  rw [hs] at Hsplit
  linarith [hinv, Hsplit]

/-! ## Rank-prefix stability -/

theorem osc_le_twice_linf (n : ℕ) (d : ℕ → ℝ) (C : ℝ) (i j : ℕ) (h : ∀ t, t < n → |d t| ≤ C)
    (hi : i < n) (hj : j < n) : d i - d j ≤ 2 * C := by
  have h1 := abs_le.mp (h i hi)
  have h2 := abs_le.mp (h j hj)
  linarith [h1.1, h1.2, h2.1, h2.2]

/-- Counterexample: the factor 2 is needed (`d = (1, −1)`, `C = 1`). -/
theorem osc_needs_factor_two :
    let d := fun (t : ℕ) => if t = 0 then (1 : ℝ) else -1
    (∀ t, t < 2 → |d t| ≤ 1) ∧ d 0 - d 1 > 1 := by
  intro d
  refine ⟨fun t _ => ?_, ?_⟩
  · by_cases ht : t = 0
    · show |if t = 0 then (1 : ℝ) else -1| ≤ 1
      rw [if_pos ht]
      norm_num
    · show |if t = 0 then (1 : ℝ) else -1| ≤ 1
      rw [if_neg ht]
      norm_num
  · show (if (0 : ℕ) = 0 then (1 : ℝ) else -1) - (if (1 : ℕ) = 0 then (1 : ℝ) else -1) > 1
    rw [if_pos rfl, if_neg Nat.one_ne_zero]
    norm_num

theorem rank_prefix_stable (n : ℕ) (s s' : ℕ → ℝ) (eps : ℝ) (i j : ℕ)
    (h : ∀ t, t < n → |s t - s' t| ≤ eps) (hi : i < n) (hj : j < n) (hgap : s i - s j > 2 * eps) :
    s' i > s' j := by
  have h1 : (s i - s' i) - (s j - s' j) ≤ 2 * eps :=
    osc_le_twice_linf n (fun t => s t - s' t) eps i j h hi hj
  linarith

theorem top_set_stable (n : ℕ) (inI : ℕ → Bool) (s s' : ℕ → ℝ) (eps : ℝ)
    (h : ∀ t, t < n → |s t - s' t| ≤ eps)
    (hgap : ∀ i j, i < n → j < n → inI i = true → inI j = false → s i - s j > 2 * eps) :
    ∀ i j, i < n → j < n → inI i = true → inI j = false → s' i > s' j :=
  fun i j hi hj hiI hjI => rank_prefix_stable n s s' eps i j h hi hj (hgap i j hi hj hiI hjI)

theorem rank_stable_radii (n : ℕ) (s s' eps : ℕ → ℝ) (i j : ℕ) (h : ∀ t, t < n → |s t - s' t| ≤ eps t)
    (hi : i < n) (hj : j < n) (hgap : s' i - eps i > s' j + eps j) : s i > s j := by
  have h1 := abs_le.mp (h i hi)
  have h2 := abs_le.mp (h j hj)
  linarith [h1.1, h1.2, h2.1, h2.2]

end WitprobeAnalytic
