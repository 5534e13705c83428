import WitprobeAnalytic.Claims
import WitprobeAnalytic.ExpBound

/-!
# Numeric side conditions of the per-run theorems (Lean only)

The per-run Lean theorems (`python/witprobe/formal/templates/run_real.lean.j2`) close the side
condition `tanh (C/2) ≤ B` of `centred_claim` with a rational upper bound on `e^C` and `norm_num`.
(The Coq per-run files use `interval` instead; these lemmas have no Coq counterpart.)

Main results:
* `exp_le_taylor`: for `0 ≤ x ≤ 1`, `e^x ≤ Σ_{m<n} x^m/m! + x^n·(n+1)/(n!·n)` (Mathlib's
  `Real.exp_bound`); the error term is below `2⁻⁴⁸` from `n = 18` on.
* `tanh_half_le_of_exp_le`: `e^C ≤ E` and `(E − 1)/(E + 1) ≤ B` give `tanh (C/2) ≤ B`.
* `tanh_half_le_of_taylor`, `tanh_half_le_of_expUpper`: the two combined with a rational exp
  bound (Taylor for `C ≤ 1`; `(N/(N − C))^N` of `exp_le_expUpper` for `C < N`).
* `plain_half_le_of_expUpper`: `((N/(N − 2E))^N − 1)/2 ≤ B` gives `(e^{2E} − 1)/2 ≤ B`, the side
  condition of `plain_claim` and its banded and sink forms.

The per-run file applies `tanh_half_le_of_expUpper` and `plain_half_le_of_expUpper` with the
`N` of the Python chain (`rounding.EXP_N = 1024`), so the goal left to `norm_num` is the rational
inequality Python already decided (up to its rounding of `e^t` to units, which only loosens it).
-/

namespace WitprobeAnalytic

theorem exp_le_taylor (x : ℝ) (hx0 : 0 ≤ x) (hx1 : x ≤ 1) (n : ℕ) (hn : 0 < n) :
    Real.exp x ≤ ∑ m ∈ Finset.range n, x ^ m / (m.factorial : ℝ)
      + x ^ n * ((n.succ : ℝ) / ((n.factorial : ℝ) * n)) := by
  have habs : |x| ≤ 1 := by rw [abs_of_nonneg hx0]; exact hx1
  have h := Real.exp_bound habs hn
  rw [abs_of_nonneg hx0] at h
  have h2 := (abs_le.mp h).2
  linarith

theorem tanh_half_le_of_exp_le (C E B : ℝ) (hE : Real.exp C ≤ E) (hB : (E - 1) / (E + 1) ≤ B) :
    tanh (C / 2) ≤ B := by
  have he : 0 < Real.exp C := Real.exp_pos C
  have hE0 : 0 < E := lt_of_lt_of_le he hE
  have hmono : (Real.exp C - 1) / (Real.exp C + 1) ≤ (E - 1) / (E + 1) := by
    apply le_div_of_mul_le_pos (show (0 : ℝ) < E + 1 by linarith)
    have e1 : (Real.exp C - 1) / (Real.exp C + 1) * (E + 1)
        = ((Real.exp C - 1) * (E + 1)) / (Real.exp C + 1) := by ring
    rw [e1]
    apply div_le_of_le_mul_pos (show (0 : ℝ) < Real.exp C + 1 by linarith)
    nlinarith [hE]
  rw [tanh_half]
  exact le_trans hmono hB

theorem tanh_half_le_of_taylor (C B : ℝ) (n : ℕ) (hn : 0 < n) (hC0 : 0 ≤ C) (hC1 : C ≤ 1)
    (hB : ((∑ m ∈ Finset.range n, C ^ m / (m.factorial : ℝ)
        + C ^ n * ((n.succ : ℝ) / ((n.factorial : ℝ) * n))) - 1)
      / ((∑ m ∈ Finset.range n, C ^ m / (m.factorial : ℝ)
        + C ^ n * ((n.succ : ℝ) / ((n.factorial : ℝ) * n))) + 1) ≤ B) :
    tanh (C / 2) ≤ B :=
  tanh_half_le_of_exp_le C _ B (exp_le_taylor C hC0 hC1 n hn) hB

theorem tanh_half_le_of_expUpper (N : ℕ) (hN : 0 < N) (C B : ℝ) (hC0 : 0 ≤ C) (hCN : C < N)
    (hB : (((N : ℝ) / ((N : ℝ) - C)) ^ N - 1) / (((N : ℝ) / ((N : ℝ) - C)) ^ N + 1) ≤ B) :
    tanh (C / 2) ≤ B :=
  tanh_half_le_of_exp_le C _ B (exp_le_expUpper N hN C hC0 hCN) hB

theorem plain_half_le_of_expUpper (N : ℕ) (hN : 0 < N) (E B : ℝ) (hE0 : 0 ≤ E) (hEN : 2 * E < N)
    (hB : 2⁻¹ * ((((N : ℝ) / ((N : ℝ) - 2 * E)) ^ N) - 1) ≤ B) :
    2⁻¹ * (Real.exp (2 * E) - 1) ≤ B := by
  have h2E : 0 ≤ 2 * E := by linarith
  have h := exp_le_expUpper N hN (2 * E) h2E hEN
  linarith

end WitprobeAnalytic
