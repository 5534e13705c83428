import WitprobeAnalytic.Claims
import WitprobeAnalytic.ScoreBridge
import WitprobeAnalytic.ClaimsBanded

/-!
# Per-claim lemmas for reads with an attention sink (DeepSeek-V4): from stored key residuals
(mirror of `coq/Witprobe/ClaimsSink.v`)

A DeepSeek-V4 read attends over `n` keys plus one sink column whose logit `sigma` is the same
number in the exact and the served distribution. The V4 meter witnesses every key as dense KV
does (band norms of the query and of the key residual), so the claims of `Claims` with a sink
column are composed with the banded score bridge of `ScoreBridge`: the hypotheses are on what the
meter measures, not on the scores. Every theorem has the name, hypotheses and conclusion of the
Coq lemma of the same name.

Main results: `centred_sink_banded_claim`, `plain_sink_banded_claim`, `eform_sink_banded_claim`
(+ the per-key plain bound `banded_plain_radius`). The counterexample `sink_logit_must_match` is
not mirrored yet.
-/

namespace WitprobeAnalytic

/-- The plain per-key bound: `scale ‖q‖ ≤ Q` and `∑_b ‖k_{t,b} − k'_{t,b}‖ ≤ W` give
`|s_t − s'_t| ≤ Q W`. -/
theorem banded_plain_radius (Q W : ℝ) (nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ)
    (k k' : ℕ → ℕ → ℕ → ℝ) (t : ℕ) (hQ : 0 ≤ Q) (hs : 0 ≤ scale) (hq : scale * bnorm nb w q ≤ Q)
    (hw : sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) ≤ W) :
    |scale * bdot nb w q (k t) - scale * bdot nb w q (k' t)| ≤ Q * W := by
  have h1 := score_bridge_plain nb w q (k t) (k' t) scale hs
  have H0 : 0 ≤ sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) :=
    sum_nonneg nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) (fun b _ => norm2_nonneg _ _)
  have h2 : scale * (bnorm nb w q * sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)))
      = (scale * bnorm nb w q) * sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) := by ring
  rw [h2] at h1
  exact le_trans h1 (mul_le_mul hq hw H0 hQ)

theorem centred_sink_banded_claim (C B : ℝ) (hC : 0 ≤ C) (hB : tanh (C / 2) ≤ B) :
    ∀ (n nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) (k k' : ℕ → ℕ → ℕ → ℝ) (sigma : ℝ),
      0 ≤ scale →
      (∀ t, t < n → scale * banded_witness nb w q (bdiff (k t) (k' t)) ≤ C) →
      tv (n + 1) (softmax (n + 1) (extend (fun t => scale * bdot nb w q (k t)) n sigma))
        (softmax (n + 1) (extend (fun t => scale * bdot nb w q (k' t)) n sigma)) ≤ B :=
  fun n nb w scale q k k' sigma hs hw =>
    centred_sink_claim C B hC hB n (fun t => scale * bdot nb w q (k t)) (fun t => scale * bdot nb w q (k' t))
      sigma (fun t ht => le_trans (banded_radius nb w scale q k k' t hs) (hw t ht))

theorem plain_sink_banded_claim (Q W B : ℝ) (hQ : 0 ≤ Q) (hW : 0 ≤ W)
    (hB : 2⁻¹ * (Real.exp (2 * (Q * W)) - 1) ≤ B) :
    ∀ (n nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) (k k' : ℕ → ℕ → ℕ → ℝ) (sigma : ℝ),
      0 ≤ scale →
      scale * bnorm nb w q ≤ Q →
      (∀ t, t < n → sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) ≤ W) →
      tv (n + 1) (softmax (n + 1) (extend (fun t => scale * bdot nb w q (k t)) n sigma))
        (softmax (n + 1) (extend (fun t => scale * bdot nb w q (k' t)) n sigma)) ≤ B :=
  fun n nb w scale q k k' sigma hs hq hw =>
    plain_sink_claim (Q * W) B (mul_nonneg hQ hW) hB n (fun t => scale * bdot nb w q (k t))
      (fun t => scale * bdot nb w q (k' t)) sigma
      (fun t ht => banded_plain_radius Q W nb w scale q k k' t hQ hs hq (hw t ht))

theorem eform_sink_banded_claim (X B : ℝ) (hX : 0 ≤ X) (hB : X + X * X / 2 ≤ B) :
    ∀ (n nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) (k k' : ℕ → ℕ → ℕ → ℝ) (sigma : ℝ),
      0 ≤ scale →
      emoment (n + 1) (extend (fun t => scale * bdot nb w q (k' t)) n sigma)
          (extend (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) n 0) ≤ 1 + X →
      tv (n + 1) (softmax (n + 1) (extend (fun t => scale * bdot nb w q (k t)) n sigma))
        (softmax (n + 1) (extend (fun t => scale * bdot nb w q (k' t)) n sigma)) ≤ B := by
  intro n nb w scale q k k' sigma hs hM
  refine eform_sink_claim X B hX hB n (fun t => scale * bdot nb w q (k t))
    (fun t => scale * bdot nb w q (k' t))
    (extend (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) n 0) sigma ?_ ?_ hM
  · intro t ht
    have hne : t ≠ n := Nat.ne_of_lt ht
    have e1 : extend (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) n 0 t
        = scale * banded_witness nb w q (bdiff (k t) (k' t)) := by
      show (if t = n then (0 : ℝ) else scale * banded_witness nb w q (bdiff (k t) (k' t)))
        = scale * banded_witness nb w q (bdiff (k t) (k' t))
      exact if_neg hne
    exact le_of_le_of_eq (banded_radius nb w scale q k k' t hs) e1.symm
  · have e0 : extend (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) n 0 n = 0 := by
      show (if n = n then (0 : ℝ) else scale * banded_witness nb w q (bdiff (k n) (k' n))) = 0
      exact if_pos rfl
    exact le_of_eq e0.symm

end WitprobeAnalytic
