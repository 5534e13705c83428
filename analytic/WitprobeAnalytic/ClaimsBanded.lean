import WitprobeAnalytic.Claims
import WitprobeAnalytic.ScoreBridge

/-!
# Per-claim lemmas for dense KV: from stored key residuals to the attention TV
(mirror of `coq/Witprobe/ClaimsBanded.v`)

The claims of `Claims` composed with the banded score bridge of `ScoreBridge`: the hypothesis
is stated on what the meter measures (band norms of the query and of the key residual), not on
the scores. Every theorem has the name, hypotheses and conclusion of the Coq lemma of the same
name; Coq's `ClaimsBanded.norm2_nonneg` (a second copy of `ScoreBridge.norm2_nonneg`, legal in
Coq's module system) is `WitprobeAnalytic.ClaimsBanded.norm2_nonneg` here.

Main results: `centred_banded_claim`, `plain_banded_claim`, `eform_banded_claim`.
-/

namespace WitprobeAnalytic

theorem banded_radius (nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) (k k' : ℕ → ℕ → ℕ → ℝ)
    (t : ℕ) (hs : 0 ≤ scale) :
    |scale * bdot nb w q (k t) - scale * bdot nb w q (k' t)|
      ≤ scale * banded_witness nb w q (bdiff (k t) (k' t)) :=
  score_bridge_banded nb w q (k t) (k' t) scale hs

theorem centred_banded_claim (C B : ℝ) (hC : 0 ≤ C) (hB : tanh (C / 2) ≤ B) :
    ∀ (n nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) (k k' : ℕ → ℕ → ℕ → ℝ),
      0 ≤ scale →
      (∀ t, t < n → scale * banded_witness nb w q (bdiff (k t) (k' t)) ≤ C) →
      tv n (softmax n (fun t => scale * bdot nb w q (k t)))
        (softmax n (fun t => scale * bdot nb w q (k' t))) ≤ B :=
  fun n nb w scale q k k' hs hw =>
    centred_claim C B hC hB n (fun t => scale * bdot nb w q (k t)) (fun t => scale * bdot nb w q (k' t))
      (fun t ht => le_trans (banded_radius nb w scale q k k' t hs) (hw t ht))

theorem ClaimsBanded.norm2_nonneg (d : ℕ) (x : ℕ → ℝ) : 0 ≤ norm2 d x := Real.sqrt_nonneg _

theorem plain_banded_claim (Q W B : ℝ) (hQ : 0 ≤ Q) (hW : 0 ≤ W)
    (hB : 2⁻¹ * (Real.exp (2 * (Q * W)) - 1) ≤ B) :
    ∀ (n nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) (k k' : ℕ → ℕ → ℕ → ℝ),
      0 ≤ scale →
      scale * bnorm nb w q ≤ Q →
      (∀ t, t < n → sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) ≤ W) →
      tv n (softmax n (fun t => scale * bdot nb w q (k t)))
        (softmax n (fun t => scale * bdot nb w q (k' t))) ≤ B := by
  intro n nb w scale q k k' hs hq hw
  refine plain_claim (Q * W) B (mul_nonneg hQ hW) hB n (fun t => scale * bdot nb w q (k t))
    (fun t => scale * bdot nb w q (k' t)) ?_
  intro t ht
  show |scale * bdot nb w q (k t) - scale * bdot nb w q (k' t)| ≤ Q * W
  have h1 := score_bridge_plain nb w q (k t) (k' t) scale hs
  have H0 : 0 ≤ sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) :=
    sum_nonneg nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) (fun b _ => norm2_nonneg _ _)
  have h2 : scale * (bnorm nb w q * sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)))
      = (scale * bnorm nb w q) * sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) := by ring
  rw [h2] at h1
  exact le_trans h1 (mul_le_mul hq (hw t ht) H0 hQ)

theorem eform_banded_claim (X B : ℝ) (hX : 0 ≤ X) (hB : X + X * X / 2 ≤ B) :
    ∀ (n nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) (k k' : ℕ → ℕ → ℕ → ℝ),
      0 < n → 0 ≤ scale →
      emoment n (fun t => scale * bdot nb w q (k' t))
          (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) ≤ 1 + X →
      tv n (softmax n (fun t => scale * bdot nb w q (k t)))
        (softmax n (fun t => scale * bdot nb w q (k' t))) ≤ B :=
  fun n nb w scale q k k' hn hs hM =>
    eform_claim X B hX hB n (fun t => scale * bdot nb w q (k t)) (fun t => scale * bdot nb w q (k' t))
      (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) hn
      (fun t _ => banded_radius nb w scale q k k' t hs) hM

end WitprobeAnalytic
