import Mathlib

/-!
# Storage witness and score bridges over the reals

Main results:
* `WitprobeAnalytic.band_witness_ge_residual`: the band witness `W = Σ_b ‖Δ_b‖` bounds the
  residual `‖Σ_b Δ_b‖` (triangle inequality).
* `WitprobeAnalytic.score_bridge`: `|s·⟨q,k⟩ − s·⟨q,k'⟩| ≤ s·‖q‖·‖k − k'‖` (Cauchy-Schwarz).
* `WitprobeAnalytic.score_bridge_banded`: per band, `|s·Σ_b ⟨q_b, Δk_b⟩| ≤ s·Σ_b ‖q_b‖·‖Δk_b‖`.
-/

namespace WitprobeAnalytic

/-- The band witness bounds the residual: `‖Σ_b Δ_b‖ ≤ Σ_b ‖Δ_b‖`. -/
theorem band_witness_ge_residual {ι E : Type*} [SeminormedAddCommGroup E] (s : Finset ι)
    (Δ : ι → E) : ‖∑ b ∈ s, Δ b‖ ≤ ∑ b ∈ s, ‖Δ b‖ :=
  norm_sum_le s Δ

/-- Score bridge (Cauchy-Schwarz): for `scale ≥ 0`,
`|scale·⟨q,k⟩ − scale·⟨q,k'⟩| ≤ scale·‖q‖·‖k − k'‖`. -/
theorem score_bridge {E : Type*} [NormedAddCommGroup E] [InnerProductSpace ℝ E] (scale : ℝ)
    (hs : 0 ≤ scale) (q k k' : E) :
    |scale * (inner q k : ℝ) - scale * (inner q k' : ℝ)| ≤ scale * ‖q‖ * ‖k - k'‖ := by
  rw [← mul_sub, ← inner_sub_right, abs_mul, abs_of_nonneg hs, mul_assoc]
  exact mul_le_mul_of_nonneg_left (abs_real_inner_le_norm q (k - k')) hs

/-- Banded score bridge: Cauchy-Schwarz on each band, then the triangle inequality:
`|scale·Σ_b ⟨q_b, d_b⟩| ≤ scale·Σ_b ‖q_b‖·‖d_b‖`. -/
theorem score_bridge_banded {ι E : Type*} [NormedAddCommGroup E] [InnerProductSpace ℝ E]
    (s : Finset ι) (scale : ℝ) (hs : 0 ≤ scale) (q d : ι → E) :
    |scale * ∑ b ∈ s, (inner (q b) (d b) : ℝ)| ≤ scale * ∑ b ∈ s, ‖q b‖ * ‖d b‖ := by
  rw [abs_mul, abs_of_nonneg hs]
  refine mul_le_mul_of_nonneg_left ?_ hs
  calc |∑ b ∈ s, (inner (q b) (d b) : ℝ)| ≤ ∑ b ∈ s, |(inner (q b) (d b) : ℝ)| :=
        Finset.abs_sum_le_sum_abs _ _
    _ ≤ ∑ b ∈ s, ‖q b‖ * ‖d b‖ := Finset.sum_le_sum (fun b _ => abs_real_inner_le_norm _ _)

end WitprobeAnalytic
