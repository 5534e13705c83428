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

Not yet mirrored: the sharpness example `centred_claim_sharp` (recorded as pending in
`tests/data/kernel_inventory.json`).
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

end WitprobeAnalytic
