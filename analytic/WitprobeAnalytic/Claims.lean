import WitprobeAnalytic.SoftmaxTV

/-!
# Per-claim lemmas: the statements a run's theorems instantiate (mirror of `coq/Witprobe/Claims.v`)

A run's claim on one layer has the form "for all score vectors within the run's measured
radius, `TV(exact softmax, served softmax) ≤ B`". The per-run file proves it by applying one
lemma below to the run's rational constants and closing the numeric side condition
(`tanh (C/2) ≤ B`, `(e^{2E} − 1)/2 ≤ B`, or `X + X²/2 ≤ B`). Every theorem has the name,
hypotheses and conclusion of the Coq lemma of the same name.

Main results (score level; `s` exact, `s'` served):
* `centred_claim`: `0 ≤ C`, `tanh (C/2) ≤ B`, `|s_t − s'_t| ≤ C` for `t < n` give `TV ≤ B`;
* `plain_claim`: `0 ≤ E`, `(e^{2E} − 1)/2 ≤ B`, `|s_t − s'_t| ≤ E` give `TV ≤ B`;
* `eform_claim`: `0 ≤ X`, `X + X²/2 ≤ B`, `|s_t − s'_t| ≤ c_t` and `E_{p'}[e^{c}] ≤ 1 + X`
  give `TV ≤ B`;
* `centred_sink_claim`, `plain_sink_claim`, `eform_sink_claim`: the same with a sink column.

A run's theorem states none of these directly: it states the claim on what its memory class's
meter measures, through that class's score bridge (`ClaimsBanded`, `ClaimsSink`, `ClaimsLatent`);
these lemmas are the last step of those proofs.

Sharpness: `centred_claim_sharp` (two keys attain `tanh (C/2)`).
-/

namespace WitprobeAnalytic

theorem centred_claim (C B : ℝ) (hC : 0 ≤ C) (hB : tanh (C / 2) ≤ B) :
    ∀ (n : ℕ) (s s' : ℕ → ℝ), (∀ t, t < n → |s t - s' t| ≤ C) →
      tv n (softmax n s) (softmax n s') ≤ B :=
  fun n s s' hd => le_trans (tv_le_tanh_radius n s s' C hC hd) hB

theorem plain_claim (E B : ℝ) (hE : 0 ≤ E) (hB : 2⁻¹ * (Real.exp (2 * E) - 1) ≤ B) :
    ∀ (n : ℕ) (s s' : ℕ → ℝ), (∀ t, t < n → |s t - s' t| ≤ E) →
      tv n (softmax n s) (softmax n s') ≤ B :=
  fun n s s' hd => le_trans (tv_le_plain n s s' E hE hd) hB

theorem eform_claim (X B : ℝ) (hX : 0 ≤ X) (hB : X + X * X / 2 ≤ B) :
    ∀ (n : ℕ) (s s' c : ℕ → ℝ), 0 < n → (∀ t, t < n → |s t - s' t| ≤ c t) →
      emoment n s' c ≤ 1 + X → tv n (softmax n s) (softmax n s') ≤ B := by
  intro n s s' c hn hd hM
  have h1 := tv_le_eform n s s' c hn hd
  have hpos : 0 ≤ emoment n s' c :=
    sum_nonneg n (fun t => softmax n s' t * Real.exp (c t))
      (fun t _ => mul_nonneg (softmax_pos n s' t hn).le (Real.exp_pos (c t)).le)
  have h2 : emoment n s' c * emoment n s' c ≤ (1 + X) * (1 + X) :=
    mul_le_mul hM hM hpos (by linarith)
  nlinarith [h1, h2]

theorem centred_sink_claim (C B : ℝ) (hC : 0 ≤ C) (hB : tanh (C / 2) ≤ B) :
    ∀ (n : ℕ) (s s' : ℕ → ℝ) (sigma : ℝ), (∀ t, t < n → |s t - s' t| ≤ C) →
      tv (n + 1) (softmax (n + 1) (extend s n sigma)) (softmax (n + 1) (extend s' n sigma)) ≤ B :=
  fun n s s' sigma hd => le_trans (tv_sink_le_tanh_radius n s s' sigma C hC hd) hB

theorem plain_sink_claim (E B : ℝ) (hE : 0 ≤ E) (hB : 2⁻¹ * (Real.exp (2 * E) - 1) ≤ B) :
    ∀ (n : ℕ) (s s' : ℕ → ℝ) (sigma : ℝ), (∀ t, t < n → |s t - s' t| ≤ E) →
      tv (n + 1) (softmax (n + 1) (extend s n sigma)) (softmax (n + 1) (extend s' n sigma)) ≤ B :=
  fun n s s' sigma hd =>
    plain_claim E B hE hB (n + 1) (extend s n sigma) (extend s' n sigma)
      (sink_radius n s s' (fun _ => E) sigma hd hE)

theorem eform_sink_claim (X B : ℝ) (hX : 0 ≤ X) (hB : X + X * X / 2 ≤ B) :
    ∀ (n : ℕ) (s s' c : ℕ → ℝ) (sigma : ℝ), (∀ t, t < n → |s t - s' t| ≤ c t) → 0 ≤ c n →
      emoment (n + 1) (extend s' n sigma) c ≤ 1 + X →
      tv (n + 1) (softmax (n + 1) (extend s n sigma)) (softmax (n + 1) (extend s' n sigma)) ≤ B :=
  fun n s s' c sigma hd hc hM =>
    eform_claim X B hX hB (n + 1) (extend s n sigma) (extend s' n sigma) c (Nat.succ_pos n)
      (sink_radius n s s' c sigma hd hc) hM

/-- Sharpness: for `C = 2`, the scores `s = (1, −1)` and `s' = (−1, 1)` satisfy `|s_t − s'_t| ≤ 2`
and have `TV = tanh 1 = tanh (C/2)`, so the side condition `tanh (C/2) ≤ B` cannot be weakened. -/
theorem centred_claim_sharp :
    tv 2 (softmax 2 (fun t => if t = 0 then 1 else -(1))) (softmax 2 (fun t => if t = 0 then -(1) else 1))
      = tanh 1 := by
  have he : 0 < Real.exp 1 := Real.exp_pos 1
  have hi : 0 < Real.exp (-1) := Real.exp_pos (-1)
  have hS : 0 < Real.exp 1 + Real.exp (-1) := by linarith
  have hIE : Real.exp (-1) ≤ Real.exp 1 := exp_le_mono _ _ (by norm_num)
  have hEI : Real.exp 1 * Real.exp (-1) = 1 := by
    rw [← Real.exp_add]
    norm_num
  have hP : partition 2 (fun t : ℕ => if t = 0 then (1 : ℝ) else -(1)) = Real.exp 1 + Real.exp (-1) := by
    show sum 2 (fun t => Real.exp (if t = 0 then (1 : ℝ) else -(1))) = _
    rw [sum_two_eq]
    show Real.exp (if (0 : ℕ) = 0 then (1 : ℝ) else -(1)) + Real.exp (if (1 : ℕ) = 0 then (1 : ℝ) else -(1))
      = _
    rw [if_pos (rfl : (0 : ℕ) = 0), if_neg Nat.one_ne_zero]
  have hP' : partition 2 (fun t : ℕ => if t = 0 then -(1 : ℝ) else 1) = Real.exp 1 + Real.exp (-1) := by
    show sum 2 (fun t => Real.exp (if t = 0 then -(1 : ℝ) else 1)) = _
    rw [sum_two_eq]
    show Real.exp (if (0 : ℕ) = 0 then -(1 : ℝ) else 1) + Real.exp (if (1 : ℕ) = 0 then -(1 : ℝ) else 1)
      = _
    rw [if_pos (rfl : (0 : ℕ) = 0), if_neg Nat.one_ne_zero, add_comm]
  have htv : tv 2 (softmax 2 (fun t : ℕ => if t = 0 then (1 : ℝ) else -(1)))
      (softmax 2 (fun t : ℕ => if t = 0 then -(1 : ℝ) else 1))
      = 2⁻¹ * (|Real.exp 1 / (Real.exp 1 + Real.exp (-1)) - Real.exp (-1) / (Real.exp 1 + Real.exp (-1))|
        + |Real.exp (-1) / (Real.exp 1 + Real.exp (-1)) - Real.exp 1 / (Real.exp 1 + Real.exp (-1))|) := by
    show 2⁻¹ * sum 2 (fun t => |Real.exp (if t = 0 then (1 : ℝ) else -(1))
        / partition 2 (fun t : ℕ => if t = 0 then (1 : ℝ) else -(1))
      - Real.exp (if t = 0 then -(1 : ℝ) else 1) / partition 2 (fun t : ℕ => if t = 0 then -(1 : ℝ) else 1)|)
      = _
    rw [sum_two_eq, hP, hP']
    show 2⁻¹ * (|Real.exp (if (0 : ℕ) = 0 then (1 : ℝ) else -(1)) / (Real.exp 1 + Real.exp (-1))
        - Real.exp (if (0 : ℕ) = 0 then -(1 : ℝ) else 1) / (Real.exp 1 + Real.exp (-1))|
      + |Real.exp (if (1 : ℕ) = 0 then (1 : ℝ) else -(1)) / (Real.exp 1 + Real.exp (-1))
        - Real.exp (if (1 : ℕ) = 0 then -(1 : ℝ) else 1) / (Real.exp 1 + Real.exp (-1))|) = _
    rw [if_pos (rfl : (0 : ℕ) = 0), if_pos (rfl : (0 : ℕ) = 0), if_neg Nat.one_ne_zero,
      if_neg Nat.one_ne_zero]
  rw [htv]
  have hD : Real.exp 1 / (Real.exp 1 + Real.exp (-1)) - Real.exp (-1) / (Real.exp 1 + Real.exp (-1))
      = (Real.exp 1 - Real.exp (-1)) / (Real.exp 1 + Real.exp (-1)) := by ring
  have hD' : Real.exp (-1) / (Real.exp 1 + Real.exp (-1)) - Real.exp 1 / (Real.exp 1 + Real.exp (-1))
      = -((Real.exp 1 - Real.exp (-1)) / (Real.exp 1 + Real.exp (-1))) := by ring
  rw [hD, hD', abs_neg,
    abs_of_nonneg (div_nonneg (show (0 : ℝ) ≤ Real.exp 1 - Real.exp (-1) by linarith) hS.le)]
  have htanh : tanh 1 = (Real.exp 1 - Real.exp (-1)) / (Real.exp 1 + Real.exp (-1)) := by
    show (Real.exp (2 * 1) - 1) / (Real.exp (2 * 1) + 1) = _
    have h2 : Real.exp (2 * 1) = Real.exp 1 * Real.exp 1 := by
      rw [← Real.exp_add]
      norm_num
    have hden : Real.exp 1 * Real.exp 1 + 1 ≠ 0 := ne_of_gt (by nlinarith [mul_pos he he])
    rw [h2, div_eq_div_iff hden hS.ne']
    linear_combination (2 * Real.exp 1) * hEI
  rw [htanh]
  ring

end WitprobeAnalytic
