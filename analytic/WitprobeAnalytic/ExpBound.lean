import Mathlib
import Witprobe

/-!
# The rational upper bound on the exponential

Main results:
* `WitprobeAnalytic.exp_le_expUpper`: `e^t ≤ (N/(N − t))^N` for `0 ≤ t < N`, from
  `e^{-s} ≥ 1 − s`.
* `WitprobeAnalytic.expUpperOk_sound`: what `Witprobe.expUpperOk tNum tDen E = true` means:
  `e^{tNum/tDen} ≤ E / 2^48`.
-/

namespace WitprobeAnalytic

/-- `e^t ≤ (N / (N − t))^N` for `0 ≤ t < N`: raise `1 − t/N ≤ e^{−t/N}` to the power `N` and
invert. -/
theorem exp_le_expUpper (N : ℕ) (hN : 0 < N) (t : ℝ) (ht0 : 0 ≤ t) (htN : t < N) :
    Real.exp t ≤ ((N : ℝ) / ((N : ℝ) - t)) ^ N := by
  have hNpos : (0 : ℝ) < N := by exact_mod_cast hN
  have hN0 : (N : ℝ) ≠ 0 := ne_of_gt hNpos
  have hpos : 0 < (N : ℝ) - t := by linarith
  have h4 : (1 - t / N) = ((N : ℝ) - t) / N := by field_simp
  have hbase_pos : 0 < 1 - t / N := by rw [h4]; positivity
  have h1 : 1 - t / N ≤ Real.exp (-(t / N)) := by
    have := Real.add_one_le_exp (-(t / N))
    linarith
  have h2 : (1 - t / N) ^ N ≤ Real.exp (-(t / N)) ^ N := pow_le_pow_left hbase_pos.le h1 N
  have h3 : Real.exp (-(t / N)) ^ N = Real.exp (-t) := by
    rw [← Real.exp_nat_mul]
    congr 1
    field_simp
  rw [h3] at h2
  have h5 : 0 < (1 - t / N) ^ N := pow_pos hbase_pos N
  have h7 : ((1 - t / N) ^ N)⁻¹ = ((N : ℝ) / ((N : ℝ) - t)) ^ N := by
    rw [h4, ← inv_pow, inv_div]
  calc Real.exp t = (Real.exp (-t))⁻¹ := by rw [Real.exp_neg, inv_inv]
    _ ≤ ((1 - t / N) ^ N)⁻¹ := inv_le_inv_of_le h5 h2
    _ = ((N : ℝ) / ((N : ℝ) - t)) ^ N := h7

/-- The per-run exp check is sound: `Witprobe.expUpperOk tNum tDen E = true` implies
`e^{tNum/tDen} ≤ E / 2^48`. -/
theorem expUpperOk_sound (tNum tDen e : ℕ) (h : Witprobe.expUpperOk tNum tDen e = true) :
    Real.exp ((tNum : ℝ) / tDen) ≤ (e : ℝ) / (Witprobe.fixedOne : ℝ) := by
  simp only [Witprobe.expUpperOk, Bool.and_eq_true, decide_eq_true_eq] at h
  obtain ⟨⟨hd, hlt⟩, hmul⟩ := h
  rw [Witprobe.pow2k_eq, Witprobe.pow2k_eq] at hmul
  have hdR : (0 : ℝ) < tDen := by exact_mod_cast hd
  have hexpN : Witprobe.expN = 1024 := rfl
  rw [hexpN] at hlt hmul
  have hsub : tNum ≤ 1024 * tDen := hlt.le
  set t : ℝ := (tNum : ℝ) / tDen with ht
  have ht0 : 0 ≤ t := by
    rw [ht]
    positivity
  have htN : t < (1024 : ℕ) := by
    rw [ht, div_lt_iff hdR]
    exact_mod_cast hlt
  have hd0 : (tDen : ℝ) ≠ 0 := ne_of_gt hdR
  have hposR : (0 : ℝ) < 1024 * (tDen : ℝ) - tNum := by
    have h : (tNum : ℝ) < 1024 * (tDen : ℝ) := by exact_mod_cast hlt
    linarith
  have hb := exp_le_expUpper 1024 (by norm_num) t ht0 htN
  have hratio : ((1024 : ℕ) : ℝ) / (((1024 : ℕ) : ℝ) - t)
      = ((1024 * tDen : ℕ) : ℝ) / ((1024 * tDen - tNum : ℕ) : ℝ) := by
    rw [Nat.cast_sub hsub]
    push_cast
    have h1 : (1024 : ℝ) - t ≠ 0 := ne_of_gt (by
      have h := htN
      push_cast at h
      linarith)
    rw [div_eq_div_iff h1 hposR.ne', ht]
    field_simp
    ring
  rw [hratio, div_pow] at hb
  have hF : (0 : ℝ) < (Witprobe.fixedOne : ℝ) := by
    have : (0 : ℕ) < Witprobe.fixedOne := by decide
    exact_mod_cast this
  have hden : (0 : ℝ) < ((1024 * tDen - tNum : ℕ) : ℝ) ^ 2 ^ 10 := by
    have h0 : (0 : ℕ) < 1024 * tDen - tNum := Nat.sub_pos_of_lt hlt
    exact pow_pos (by exact_mod_cast h0) _
  have hmulR : (Witprobe.fixedOne : ℝ) * ((1024 * tDen : ℕ) : ℝ) ^ 2 ^ 10
      ≤ (e : ℝ) * ((1024 * tDen - tNum : ℕ) : ℝ) ^ 2 ^ 10 := by
    exact_mod_cast hmul
  have hpow : (2 : ℕ) ^ 10 = 1024 := by norm_num
  rw [hpow] at hmulR hden
  calc Real.exp t ≤ ((1024 * tDen : ℕ) : ℝ) ^ 1024 / ((1024 * tDen - tNum : ℕ) : ℝ) ^ 1024 := hb
    _ ≤ (e : ℝ) / (Witprobe.fixedOne : ℝ) := by
      rw [div_le_div_iff hden hF]
      linarith

end WitprobeAnalytic
