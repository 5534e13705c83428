import Mathlib

/-!
# Storage witness and score bridges in inner-product spaces (Lean only)

The Coq library states these over band vectors (`coq/Witprobe/ScoreBridge.v`, mirrored in
`WitprobeAnalytic.ScoreBridge`); the names here are cited by the Python side.

Main results:
* `WitprobeAnalytic.band_witness_ge_residual`: the band witness `W = Σ_b ‖Δ_b‖` bounds the
  residual `‖Σ_b Δ_b‖` (triangle inequality).
* `WitprobeAnalytic.score_bridge`: `|s·⟨q,k⟩ − s·⟨q,k'⟩| ≤ s·‖q‖·‖k − k'‖` (Cauchy-Schwarz).
* `WitprobeAnalytic.score_bridge_banded_inner`: per band, `|s·Σ_b ⟨q_b, Δk_b⟩| ≤ s·Σ_b ‖q_b‖·‖Δk_b‖`.
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
theorem score_bridge_banded_inner {ι E : Type*} [NormedAddCommGroup E] [InnerProductSpace ℝ E]
    (s : Finset ι) (scale : ℝ) (hs : 0 ≤ scale) (q d : ι → E) :
    |scale * ∑ b ∈ s, (inner (q b) (d b) : ℝ)| ≤ scale * ∑ b ∈ s, ‖q b‖ * ‖d b‖ := by
  rw [abs_mul, abs_of_nonneg hs]
  refine mul_le_mul_of_nonneg_left ?_ hs
  calc |∑ b ∈ s, (inner (q b) (d b) : ℝ)| ≤ ∑ b ∈ s, |(inner (q b) (d b) : ℝ)| :=
        Finset.abs_sum_le_sum_abs _ _
    _ ≤ ∑ b ∈ s, ‖q b‖ * ‖d b‖ := Finset.sum_le_sum (fun b _ => abs_real_inner_le_norm _ _)

/-- Latent (MLA) score bridge. The key of head `h` is expanded from the latent, `k = W c`, so with
the effective query `u` (`⟪u, c⟫ = ⟪q_nope, W c⟫` for every `c`, i.e. `u = Wᵀ q_nope`):
`|scale·(⟪q_nope, W Δc⟫ + ⟪q_pe, Δk_pe⟫)| ≤ scale·(‖u‖·‖Δc‖ + ‖q_pe‖·‖Δk_pe‖)`. -/
theorem latent_score_bridge_inner {E F G : Type*} [NormedAddCommGroup E] [InnerProductSpace ℝ E]
    [NormedAddCommGroup F] [InnerProductSpace ℝ F] [NormedAddCommGroup G] [InnerProductSpace ℝ G]
    (W : F → E) (qn : E) (u : F) (hu : ∀ c : F, (inner u c : ℝ) = (inner qn (W c) : ℝ))
    (scale : ℝ) (hs : 0 ≤ scale) (qpe dpe : G) (dc : F) :
    |scale * ((inner qn (W dc) : ℝ) + (inner qpe dpe : ℝ))|
      ≤ scale * (‖u‖ * ‖dc‖ + ‖qpe‖ * ‖dpe‖) := by
  rw [← hu dc, abs_mul, abs_of_nonneg hs]
  refine mul_le_mul_of_nonneg_left ?_ hs
  calc |(inner u dc : ℝ) + (inner qpe dpe : ℝ)| ≤ |(inner u dc : ℝ)| + |(inner qpe dpe : ℝ)| := abs_add _ _
    _ ≤ ‖u‖ * ‖dc‖ + ‖qpe‖ * ‖dpe‖ :=
        add_le_add (abs_real_inner_le_norm _ _) (abs_real_inner_le_norm _ _)

/-- Banded latent score bridge: Cauchy-Schwarz on each band of the effective query against the
latent residual, and on each band of the rope query against the rope-key residual:
`|scale·(Σ_b ⟪u_b, Δc_b⟫ + Σ_b ⟪q_pe,b, Δk_pe,b⟫)| ≤ scale·(Σ_b ‖u_b‖‖Δc_b‖ + Σ_b ‖q_pe,b‖‖Δk_pe,b‖)`. -/
theorem latent_score_bridge_banded_inner {ι κ F G : Type*} [NormedAddCommGroup F] [InnerProductSpace ℝ F]
    [NormedAddCommGroup G] [InnerProductSpace ℝ G] (s : Finset ι) (t : Finset κ) (scale : ℝ)
    (hs : 0 ≤ scale) (u dc : ι → F) (qpe dpe : κ → G) :
    |scale * ((∑ b ∈ s, (inner (u b) (dc b) : ℝ)) + ∑ b ∈ t, (inner (qpe b) (dpe b) : ℝ))|
      ≤ scale * ((∑ b ∈ s, ‖u b‖ * ‖dc b‖) + ∑ b ∈ t, ‖qpe b‖ * ‖dpe b‖) := by
  rw [abs_mul, abs_of_nonneg hs]
  refine mul_le_mul_of_nonneg_left ?_ hs
  calc |(∑ b ∈ s, (inner (u b) (dc b) : ℝ)) + ∑ b ∈ t, (inner (qpe b) (dpe b) : ℝ)|
        ≤ |∑ b ∈ s, (inner (u b) (dc b) : ℝ)| + |∑ b ∈ t, (inner (qpe b) (dpe b) : ℝ)| := abs_add _ _
    _ ≤ (∑ b ∈ s, |(inner (u b) (dc b) : ℝ)|) + ∑ b ∈ t, |(inner (qpe b) (dpe b) : ℝ)| :=
        add_le_add (Finset.abs_sum_le_sum_abs _ _) (Finset.abs_sum_le_sum_abs _ _)
    _ ≤ (∑ b ∈ s, ‖u b‖ * ‖dc b‖) + ∑ b ∈ t, ‖qpe b‖ * ‖dpe b‖ :=
        add_le_add (Finset.sum_le_sum (fun b _ => abs_real_inner_le_norm _ _))
          (Finset.sum_le_sum (fun b _ => abs_real_inner_le_norm _ _))

end WitprobeAnalytic
