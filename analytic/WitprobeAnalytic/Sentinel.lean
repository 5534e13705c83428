import WitprobeAnalytic.ExpLn

/-!
# Sentinel rounds: how many rounds reach a miss probability `≤ δ`
(mirror of `coq/Witprobe/Sentinel.v`, the round-count part)

For a per-round miss probability `0 < q < 1`, `q^n ≤ δ` iff `n ≥ ln δ / ln q`. Every theorem has
the name, hypotheses and conclusion of the Coq lemma of the same name (Coq's `ln` is `Real.log`,
`INR n` the cast `(n : ℝ)`).

Main results: `sentinel_rounds_iff`, `sentinel_rounds`, `sentinel_rounds_minimal`,
`least_rounds`, `sentinel_rounds_more`. Not yet mirrored (pending in the inventory): the
sampling model (`all_miss`, `miss_prob`, `expect_all_miss`, `miss_prob_eq`,
`sentinel_detection`, …, which need `Ville.v`), `up_rounds`/`sentinel_rounds_up` (Coq's `up`),
and the four worked numbers decided by `interval` (`sentinel_r32_148`, …).
-/

namespace WitprobeAnalytic

/-- For `b < 0`: `a / b ≤ n ↔ n · b ≤ a`. -/
theorem div_neg_le_iff (a b n : ℝ) (hb : b < 0) : (a / b ≤ n ↔ n * b ≤ a) := by
  have hE : a / b * b = a := by
    rw [div_mul_eq_mul_div, mul_div_assoc, div_self hb.ne, mul_one]
  constructor
  · intro h
    have h1 : n * b ≤ a / b * b := mul_le_mul_of_nonpos_right h hb.le
    linarith
  · intro h
    by_contra hc
    push_neg at hc
    have h1 : a / b * b < n * b := mul_lt_mul_of_neg_right hc hb
    linarith

/-- For `0 < q < 1` and `δ > 0`: `q^n ≤ δ ↔ ln δ / ln q ≤ n`. -/
theorem sentinel_rounds_iff (q delta : ℝ) (n : ℕ) (hq : 0 < q ∧ q < 1) (hd : 0 < delta) :
    (q ^ n ≤ delta ↔ Real.log delta / Real.log q ≤ (n : ℝ)) := by
  rw [← ln_le_iff (q ^ n) delta (pow_pos hq.1 n) hd, Real.log_pow,
    div_neg_le_iff (Real.log delta) (Real.log q) (n : ℝ) (ln_neg q hq.1 hq.2)]

/-- Sufficiency: any `n ≥ ln δ / ln q` reaches confidence `1 − δ`. -/
theorem sentinel_rounds (q delta : ℝ) (n : ℕ) (hq : 0 < q ∧ q < 1) (hd : 0 < delta)
    (h : Real.log delta / Real.log q ≤ (n : ℝ)) : q ^ n ≤ delta :=
  (sentinel_rounds_iff q delta n hq hd).mpr h

/-- Minimality: with `n < ln δ / ln q` rounds the miss probability still exceeds `δ`. -/
theorem sentinel_rounds_minimal (q delta : ℝ) (n : ℕ) (hq : 0 < q ∧ q < 1) (hd : 0 < delta)
    (hn : (n : ℝ) < Real.log delta / Real.log q) : delta < q ^ n := by
  by_contra hc
  push_neg at hc
  have h := (sentinel_rounds_iff q delta n hq hd).mp hc
  linarith

theorem ratio_nonneg (q delta : ℝ) (hq : 0 < q ∧ q < 1) (hd : 0 < delta ∧ delta < 1) :
    0 ≤ Real.log delta / Real.log q := by
  have h1 : Real.log delta < 0 := ln_neg delta hd.1 hd.2
  have h2 : Real.log q < 0 := ln_neg q hq.1 hq.2
  rw [← neg_div_neg_eq]
  exact div_nonneg (by linarith) (by linarith)

theorem pow_le_one (q : ℝ) (k : ℕ) (hq : 0 ≤ q ∧ q ≤ 1) : q ^ k ≤ 1 := by
  induction k with
  | zero =>
    rw [pow_zero]
    first
      | done
      | exact le_refl _
  | succ k ih =>
    rw [pow_succ]
    have h0 : 0 ≤ q ^ k := pow_nonneg hq.1 k
    nlinarith [mul_le_mul_of_nonneg_left hq.2 h0, ih]

/-- More rounds never hurt. -/
theorem sentinel_rounds_more (q delta : ℝ) (n k : ℕ) (hq : 0 ≤ q ∧ q ≤ 1) (h : q ^ n ≤ delta) :
    q ^ (n + k) ≤ delta := by
  rw [pow_add]
  have h1 : 0 ≤ q ^ n := pow_nonneg hq.1 n
  have h2 : q ^ k ≤ 1 := pow_le_one q k hq
  have h3 : q ^ n * q ^ k ≤ q ^ n * 1 := mul_le_mul_of_nonneg_left h2 h1
  linarith

/-- `n` rounds suffice and `n − 1` do not, when `n − 1 < ln δ / ln q ≤ n`. -/
theorem least_rounds (q delta : ℝ) (n : ℕ) (hq : 0 < q ∧ q < 1) (hd : 0 < delta) (hn : 1 ≤ n)
    (h : (n : ℝ) - 1 < Real.log delta / Real.log q ∧ Real.log delta / Real.log q ≤ (n : ℝ)) :
    q ^ n ≤ delta ∧ delta < q ^ (n - 1) := by
  refine ⟨sentinel_rounds q delta n hq hd h.2, sentinel_rounds_minimal q delta (n - 1) hq hd ?_⟩
  have hc : ((n - 1 : ℕ) : ℝ) = (n : ℝ) - 1 := by rw [Nat.cast_sub hn, Nat.cast_one]
  rw [hc]
  exact h.1

end WitprobeAnalytic
