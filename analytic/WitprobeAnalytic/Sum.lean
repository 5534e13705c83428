import Mathlib

/-!
# Finite sums over real vectors (mirror of `coq/Witprobe/Sum.v`)

A vector of length `n` is a function `ℕ → ℝ` read on the indices `0 … n-1`.
`sum n f = f 0 + … + f (n-1)` is the `Finset.range n` sum; `sum_S` is Coq's defining equation.
Every theorem has the name, hypotheses and conclusion of the Coq lemma of the same name
(`tests/data/kernel_inventory.json` records the correspondence and a test checks it).

Main results: `sum_ext`, `sum_plus`, `sum_minus`, `sum_scal_l`, `sum_scal_r`, `sum_div_r`,
`sum_const`, `sum_le`, `sum_nonneg`, `sum_pos`, `sum_abs_le` (triangle inequality),
`sum_term_le`, `sum_extend`.
-/

namespace WitprobeAnalytic

/-- `sum n f = f 0 + … + f (n-1)`. -/
noncomputable def sum (n : ℕ) (f : ℕ → ℝ) : ℝ := ∑ t ∈ Finset.range n, f t

theorem sum_O (f : ℕ → ℝ) : sum 0 f = 0 := by
  show ∑ t ∈ Finset.range 0, f t = 0
  exact Finset.sum_range_zero f

theorem sum_S (n : ℕ) (f : ℕ → ℝ) : sum (n + 1) f = sum n f + f n := by
  show ∑ t ∈ Finset.range (n + 1), f t = ∑ t ∈ Finset.range n, f t + f n
  exact Finset.sum_range_succ f n

/-- Only the values on `0 … n-1` matter. -/
theorem sum_ext (n : ℕ) (f g : ℕ → ℝ) (h : ∀ t, t < n → f t = g t) : sum n f = sum n g := by
  show ∑ t ∈ Finset.range n, f t = ∑ t ∈ Finset.range n, g t
  exact Finset.sum_congr rfl (fun t ht => h t (Finset.mem_range.mp ht))

theorem sum_plus (n : ℕ) (f g : ℕ → ℝ) : sum n (fun t => f t + g t) = sum n f + sum n g := by
  show ∑ t ∈ Finset.range n, (f t + g t) = ∑ t ∈ Finset.range n, f t + ∑ t ∈ Finset.range n, g t
  exact Finset.sum_add_distrib

theorem sum_minus (n : ℕ) (f g : ℕ → ℝ) : sum n (fun t => f t - g t) = sum n f - sum n g := by
  show ∑ t ∈ Finset.range n, (f t - g t) = ∑ t ∈ Finset.range n, f t - ∑ t ∈ Finset.range n, g t
  exact Finset.sum_sub_distrib

theorem sum_scal_l (n : ℕ) (a : ℝ) (f : ℕ → ℝ) : sum n (fun t => a * f t) = a * sum n f := by
  show ∑ t ∈ Finset.range n, a * f t = a * ∑ t ∈ Finset.range n, f t
  rw [Finset.mul_sum]

theorem sum_scal_r (n : ℕ) (a : ℝ) (f : ℕ → ℝ) : sum n (fun t => f t * a) = sum n f * a := by
  show ∑ t ∈ Finset.range n, f t * a = (∑ t ∈ Finset.range n, f t) * a
  rw [Finset.sum_mul]

theorem sum_div_r (n : ℕ) (a : ℝ) (f : ℕ → ℝ) : sum n (fun t => f t / a) = sum n f / a := by
  show ∑ t ∈ Finset.range n, f t / a = (∑ t ∈ Finset.range n, f t) / a
  rw [Finset.sum_div]

theorem sum_const (n : ℕ) (a : ℝ) : sum n (fun _ => a) = (n : ℝ) * a := by
  show ∑ _t ∈ Finset.range n, a = (n : ℝ) * a
  rw [Finset.sum_const, Finset.card_range, nsmul_eq_mul]

theorem sum_le (n : ℕ) (f g : ℕ → ℝ) (h : ∀ t, t < n → f t ≤ g t) : sum n f ≤ sum n g := by
  show ∑ t ∈ Finset.range n, f t ≤ ∑ t ∈ Finset.range n, g t
  exact Finset.sum_le_sum (fun t ht => h t (Finset.mem_range.mp ht))

theorem sum_nonneg (n : ℕ) (f : ℕ → ℝ) (h : ∀ t, t < n → 0 ≤ f t) : 0 ≤ sum n f := by
  show 0 ≤ ∑ t ∈ Finset.range n, f t
  exact Finset.sum_nonneg (fun t ht => h t (Finset.mem_range.mp ht))

/-- A sum of positive terms over a nonempty range is positive. -/
theorem sum_pos (n : ℕ) (f : ℕ → ℝ) (hn : 0 < n) (h : ∀ t, t < n → 0 < f t) : 0 < sum n f := by
  show 0 < ∑ t ∈ Finset.range n, f t
  exact Finset.sum_pos (fun t ht => h t (Finset.mem_range.mp ht)) ⟨0, Finset.mem_range.mpr hn⟩

/-- Triangle inequality for finite sums. -/
theorem sum_abs_le (n : ℕ) (f : ℕ → ℝ) : |sum n f| ≤ sum n (fun t => |f t|) := by
  show |∑ t ∈ Finset.range n, f t| ≤ ∑ t ∈ Finset.range n, |f t|
  exact Finset.abs_sum_le_sum_abs f (Finset.range n)

/-- A term of a nonnegative sum is at most the sum. -/
theorem sum_term_le (n : ℕ) (f : ℕ → ℝ) (t : ℕ) (h : ∀ i, i < n → 0 ≤ f i) (ht : t < n) :
    f t ≤ sum n f := by
  show f t ≤ ∑ i ∈ Finset.range n, f i
  exact Finset.single_le_sum (f := f) (s := Finset.range n)
    (fun i hi => h i (Finset.mem_range.mp hi)) (Finset.mem_range.mpr ht)

/-- Extending a vector by one coordinate `a` at index `n`. -/
noncomputable def extend (f : ℕ → ℝ) (n : ℕ) (a : ℝ) : ℕ → ℝ := fun t => if t = n then a else f t

theorem sum_extend (n : ℕ) (f : ℕ → ℝ) (a : ℝ) : sum (n + 1) (extend f n a) = sum n f + a := by
  have h1 : sum n (extend f n a) = sum n f :=
    sum_ext n (extend f n a) f (fun t ht => by
      show (if t = n then a else f t) = f t
      rw [if_neg (Nat.ne_of_lt ht)])
  have h2 : extend f n a n = a := by
    show (if n = n then a else f n) = a
    rw [if_pos rfl]
  rw [sum_S, h1, h2]

end WitprobeAnalytic
