import Mathlib
import Witprobe

/-!
# The rational upper bound on the exponential

Main results:
* `WitprobeAnalytic.exp_le_expUpper`: `e^t ≤ (N/(N − t))^N` for `0 ≤ t < N`, from
  `e^{-s} ≥ 1 − s`.
* `WitprobeAnalytic.expUpperOk_sound`: what `Witprobe.expUpperOk tNum tDen E = true` means:
  `e^{tNum/tDen} ≤ E / 2^48`.

Lean only (no Coq counterpart; the Coq library bounds `exp` with `interval`). Proofs avoid
`positivity` on differences and `field_simp`: every cancellation is `mul_inv_cancel₀`.
-/

namespace WitprobeAnalytic

/-- `e^t ≤ (N / (N − t))^N` for `0 ≤ t < N`: raise `1 − t/N ≤ e^{−t/N}` to the power `N` and
invert. -/
theorem exp_le_expUpper (N : ℕ) (hN : 0 < N) (t : ℝ) (ht0 : 0 ≤ t) (htN : t < N) :
    Real.exp t ≤ ((N : ℝ) / ((N : ℝ) - t)) ^ N := by
  have hNpos : (0 : ℝ) < N := by exact_mod_cast hN
  have hN0 : (N : ℝ) ≠ 0 := ne_of_gt hNpos
  have hpos : 0 < (N : ℝ) - t := by linarith
  have h4 : (1 - t / N) = ((N : ℝ) - t) / N := by rw [sub_div, div_self hN0]
  have hbase_pos : 0 < 1 - t / N := by
    rw [h4]
    exact div_pos hpos hNpos
  have h1 : 1 - t / N ≤ Real.exp (-(t / N)) := by
    have := Real.add_one_le_exp (-(t / N))
    linarith
  have h2 : (1 - t / N) ^ N ≤ Real.exp (-(t / N)) ^ N := by
    first
      | exact pow_le_pow_left hbase_pos.le h1 N
      | exact pow_le_pow_left₀ hbase_pos.le h1 N
  have hmul : (N : ℝ) * (t / N) = t := by
    calc (N : ℝ) * (t / N) = t * ((N : ℝ) * (N : ℝ)⁻¹) := by ring
      _ = t := by rw [mul_inv_cancel₀ hN0, mul_one]
  have h3 : Real.exp (-(t / N)) ^ N = Real.exp (-t) := by
    rw [← Real.exp_nat_mul, mul_neg, hmul]
  rw [h3] at h2
  have h5 : 0 < (1 - t / N) ^ N := pow_pos hbase_pos N
  have h7 : ((1 - t / N) ^ N)⁻¹ = ((N : ℝ) / ((N : ℝ) - t)) ^ N := by
    rw [h4, ← inv_pow, inv_div]
  have h8 : (Real.exp (-t))⁻¹ ≤ ((1 - t / N) ^ N)⁻¹ := by
    first
      | exact inv_le_inv_of_le h5 h2
      | exact inv_anti₀ h5 h2
  calc Real.exp t = (Real.exp (-t))⁻¹ := by rw [Real.exp_neg, inv_inv]
    _ ≤ ((1 - t / N) ^ N)⁻¹ := h8
    _ = ((N : ℝ) / ((N : ℝ) - t)) ^ N := h7

/-- `a·c ≤ b` with `0 < c` gives `a ≤ b / c` (local helper). -/
theorem le_div_of_mul_le_pos'' {a b c : ℝ} (hc : 0 < c) (h : a * c ≤ b) : a ≤ b / c := by
  have h1 : a * c * c⁻¹ ≤ b * c⁻¹ := mul_le_mul_of_nonneg_right h (inv_nonneg.mpr hc.le)
  have h2 : a * c * c⁻¹ = a := by rw [mul_assoc, mul_inv_cancel₀ hc.ne', mul_one]
  rw [div_eq_mul_inv]
  linarith

/-- `b ≤ a·c` with `0 < c` gives `b / c ≤ a` (local copy of the analytic helper, so that this
file needs only Mathlib). -/
theorem div_le_of_le_mul_pos' {a b c : ℝ} (hc : 0 < c) (h : b ≤ a * c) : b / c ≤ a := by
  have h1 : b * c⁻¹ ≤ a * c * c⁻¹ := mul_le_mul_of_nonneg_right h (inv_nonneg.mpr hc.le)
  have h2 : a * c * c⁻¹ = a := by rw [mul_assoc, mul_inv_cancel₀ hc.ne', mul_one]
  rw [div_eq_mul_inv]
  linarith

/-- The per-run exp check is sound: `Witprobe.expUpperOk tNum tDen E = true` implies
`e^{tNum/tDen} ≤ E / 2^48`. -/
theorem expUpperOk_sound (tNum tDen e : ℕ) (h : Witprobe.expUpperOk tNum tDen e = true) :
    Real.exp ((tNum : ℝ) / tDen) ≤ (e : ℝ) / (Witprobe.fixedOne : ℝ) := by
  simp only [Witprobe.expUpperOk, Bool.and_eq_true, decide_eq_true_eq] at h
  obtain ⟨⟨hd, hlt⟩, hmul⟩ := h
  rw [Witprobe.pow2k_eq, Witprobe.pow2k_eq] at hmul
  have hexpN : Witprobe.expN = 1024 := rfl
  rw [hexpN] at hlt hmul
  have hsub : tNum ≤ 1024 * tDen := hlt.le
  have hdR : (0 : ℝ) < tDen := by exact_mod_cast hd
  have hd0 : (tDen : ℝ) ≠ 0 := ne_of_gt hdR
  obtain ⟨t, ht⟩ : ∃ t : ℝ, t = (tNum : ℝ) / tDen := ⟨_, rfl⟩
  rw [← ht]
  have htd : (tDen : ℝ) * t = tNum := by
    rw [ht]
    calc (tDen : ℝ) * ((tNum : ℝ) / tDen) = (tNum : ℝ) * ((tDen : ℝ) * (tDen : ℝ)⁻¹) := by ring
      _ = tNum := by rw [mul_inv_cancel₀ hd0, mul_one]
  have hltR : (tNum : ℝ) < 1024 * (tDen : ℝ) := by exact_mod_cast hlt
  have ht0 : 0 ≤ t := by
    rw [ht]
    exact div_nonneg (Nat.cast_nonneg _) (Nat.cast_nonneg _)
  have htN : t < 1024 := by nlinarith [htd, hltR, hdR]
  have htN' : t < ((1024 : ℕ) : ℝ) := by
    have hc : ((1024 : ℕ) : ℝ) = 1024 := by norm_num
    rw [hc]
    exact htN
  have hb := exp_le_expUpper 1024 (by norm_num) t ht0 htN'
  have hc : ((1024 : ℕ) : ℝ) = 1024 := by norm_num
  rw [hc] at hb
  have hq : (0 : ℝ) < 1024 - t := by linarith
  -- the cast of the Nat inequality, with both sides factored by tDen^1024
  have hnum : ((1024 * tDen : ℕ) : ℝ) = (tDen : ℝ) * 1024 := by push_cast; ring
  have hden : ((1024 * tDen - tNum : ℕ) : ℝ) = (tDen : ℝ) * (1024 - t) := by
    rw [Nat.cast_sub hsub]
    push_cast
    linarith [htd]
  have hpow : (2 : ℕ) ^ 10 = 1024 := by norm_num
  rw [hpow] at hmul
  have hmulR : ((Witprobe.fixedOne * (1024 * tDen) ^ 1024 : ℕ) : ℝ)
      ≤ ((e * (1024 * tDen - tNum) ^ 1024 : ℕ) : ℝ) := Nat.cast_le.mpr hmul
  rw [Nat.cast_mul, Nat.cast_mul, Nat.cast_pow, Nat.cast_pow, hnum, hden, mul_pow, mul_pow]
    at hmulR
  have hT : (0 : ℝ) < (tDen : ℝ) ^ 1024 := pow_pos hdR 1024
  have hA : (0 : ℝ) < (1024 - t) ^ 1024 := pow_pos hq 1024
  have hF : (0 : ℝ) < (Witprobe.fixedOne : ℝ) := by
    have : (0 : ℕ) < Witprobe.fixedOne := by decide
    exact_mod_cast this
  have hmul2 : (tDen : ℝ) ^ 1024 * ((Witprobe.fixedOne : ℝ) * (1024 : ℝ) ^ 1024)
      ≤ (tDen : ℝ) ^ 1024 * ((e : ℝ) * (1024 - t) ^ 1024) := by
    have e1 : (Witprobe.fixedOne : ℝ) * ((tDen : ℝ) ^ 1024 * (1024 : ℝ) ^ 1024)
        = (tDen : ℝ) ^ 1024 * ((Witprobe.fixedOne : ℝ) * (1024 : ℝ) ^ 1024) :=
      mul_left_comm _ _ _
    have e2 : (e : ℝ) * ((tDen : ℝ) ^ 1024 * (1024 - t) ^ 1024)
        = (tDen : ℝ) ^ 1024 * ((e : ℝ) * (1024 - t) ^ 1024) :=
      mul_left_comm _ _ _
    rw [← e1, ← e2]
    exact hmulR
  have hmul3 : (Witprobe.fixedOne : ℝ) * (1024 : ℝ) ^ 1024 ≤ (e : ℝ) * (1024 - t) ^ 1024 :=
    le_of_mul_le_mul_left hmul2 hT
  -- (1024/(1024 − t))^1024 = 1024^1024 / (1024 − t)^1024 ≤ e / F
  have hfin : (1024 : ℝ) ^ 1024 / (1024 - t) ^ 1024 ≤ (e : ℝ) / (Witprobe.fixedOne : ℝ) := by
    apply le_div_of_mul_le_pos'' hF
    have e3 : (1024 : ℝ) ^ 1024 / (1024 - t) ^ 1024 * (Witprobe.fixedOne : ℝ)
        = ((Witprobe.fixedOne : ℝ) * (1024 : ℝ) ^ 1024) / (1024 - t) ^ 1024 := by
      rw [div_mul_eq_mul_div, mul_comm ((1024 : ℝ) ^ 1024) (Witprobe.fixedOne : ℝ)]
    rw [e3]
    apply div_le_of_le_mul_pos' hA
    exact hmul3
  calc Real.exp t ≤ ((1024 : ℝ) / (1024 - t)) ^ 1024 := hb
    _ = (1024 : ℝ) ^ 1024 / (1024 - t) ^ 1024 := div_pow _ _ _
    _ ≤ (e : ℝ) / (Witprobe.fixedOne : ℝ) := hfin

end WitprobeAnalytic
