import WitprobeAnalytic.ScoreBridge

/-!
# Latent (MLA) score bridge through the effective query (mirror of `coq/Witprobe/LatentBridge.v`)

A cached token stores a latent `c` (width `dc`) and a RoPE key `kr` (width `dr`); a head reads the
no-RoPE key `W c` through its up-projection and scores `scale · (⟨qn, W c⟩ + ⟨qr, kr⟩)`. The
effective query is `u = Wᵀ qn`; `⟨qn, W c⟩ = ⟨u, c⟩` (`adjoint`). Every theorem has the name,
hypotheses and conclusion of the Coq lemma of the same name.

Main results: `adjoint`, `latent_score_diff`, `latent_score_bridge`,
`latent_score_bridge_banded`, `latent_score_bridge_production` (the meter's exact formula),
`latent_score_bridge_plain`. Not yet mirrored (pending in the inventory): the counterexamples
`adjoint_needs_transpose`, `latent_bridge_needs_effective_query`, `latent_plain_needs_max`.
-/

namespace WitprobeAnalytic

noncomputable def matvec (dc : ℕ) (W : ℕ → ℕ → ℝ) (c : ℕ → ℝ) : ℕ → ℝ :=
  fun i => sum dc (fun j => W i j * c j)

/-- The effective query `u = Wᵀ qn`. -/
noncomputable def eff_query (dn : ℕ) (W : ℕ → ℕ → ℝ) (qn : ℕ → ℝ) : ℕ → ℝ :=
  fun j => sum dn (fun i => W i j * qn i)

noncomputable def vdiff (x y : ℕ → ℝ) : ℕ → ℝ := fun i => x i - y i

noncomputable def latent_score (dn dc dr : ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) (qn qr c kr : ℕ → ℝ) : ℝ :=
  scale * (dot dn qn (matvec dc W c) + dot dr qr kr)

noncomputable def latent_witness (nbc : ℕ) (wc : ℕ → ℕ) (nbr : ℕ) (wr : ℕ → ℕ) (scale : ℝ)
    (u qr dc dkr : ℕ → ℝ) : ℝ :=
  scale * (banded_witness nbc wc (band_split wc u) (band_split wc dc)
           + banded_witness nbr wr (band_split wr qr) (band_split wr dkr))

/-- Exchanging a double finite sum. -/
theorem sum_swap (n m : ℕ) (f : ℕ → ℕ → ℝ) :
    sum n (fun i => sum m (fun j => f i j)) = sum m (fun j => sum n (fun i => f i j)) := by
  show ∑ i ∈ Finset.range n, ∑ j ∈ Finset.range m, f i j
    = ∑ j ∈ Finset.range m, ∑ i ∈ Finset.range n, f i j
  exact Finset.sum_comm

theorem dot_vdiff (d : ℕ) (x y y' : ℕ → ℝ) : dot d x y - dot d x y' = dot d x (vdiff y y') :=
  dot_minus_r d x y y'

/-- `⟨qn, W c⟩ = ⟨Wᵀ qn, c⟩`. -/
theorem adjoint (dn dc : ℕ) (W : ℕ → ℕ → ℝ) (qn c : ℕ → ℝ) :
    dot dn qn (matvec dc W c) = dot dc (eff_query dn W qn) c := by
  show ∑ i ∈ Finset.range dn, qn i * ∑ j ∈ Finset.range dc, W i j * c j
    = ∑ j ∈ Finset.range dc, (∑ i ∈ Finset.range dn, W i j * qn i) * c j
  simp_rw [Finset.mul_sum, Finset.sum_mul]
  rw [Finset.sum_comm]
  exact Finset.sum_congr rfl (fun j _ => Finset.sum_congr rfl (fun i _ => by ring))

/-- `score (c, kr) − score (c', kr') = scale (⟨u, c − c'⟩ + ⟨qr, kr − kr'⟩)`. -/
theorem latent_score_diff (dn dc dr : ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) (qn qr c c' kr kr' : ℕ → ℝ) :
    latent_score dn dc dr scale W qn qr c kr - latent_score dn dc dr scale W qn qr c' kr'
      = scale * (dot dc (eff_query dn W qn) (vdiff c c') + dot dr qr (vdiff kr kr')) := by
  show scale * (dot dn qn (matvec dc W c) + dot dr qr kr)
      - scale * (dot dn qn (matvec dc W c') + dot dr qr kr')
    = scale * (dot dc (eff_query dn W qn) (vdiff c c') + dot dr qr (vdiff kr kr'))
  rw [adjoint dn dc W qn c, adjoint dn dc W qn c', ← dot_vdiff dc (eff_query dn W qn) c c',
    ← dot_vdiff dr qr kr kr']
  ring

/-- Cauchy-Schwarz per band on a flat vector. -/
theorem dot_le_banded_witness (nb : ℕ) (w : ℕ → ℕ) (x y : ℕ → ℝ) :
    |dot (offset w nb) x y| ≤ banded_witness nb w (band_split w x) (band_split w y) := by
  rw [← bdot_flat]
  exact bdot_le_banded_witness nb w (band_split w x) (band_split w y)

/-- Bounds `A` on `|⟨u, dc⟩|` and `B` on `|⟨qr, dkr⟩|` bound the score error. -/
theorem latent_score_bridge_of (dn dc dr : ℕ) (scale A B : ℝ) (W : ℕ → ℕ → ℝ) (qn qr c c' kr kr' : ℕ → ℝ)
    (hs : 0 ≤ scale) (hA : |dot dc (eff_query dn W qn) (vdiff c c')| ≤ A)
    (hB : |dot dr qr (vdiff kr kr')| ≤ B) :
    |latent_score dn dc dr scale W qn qr c kr - latent_score dn dc dr scale W qn qr c' kr'|
      ≤ scale * (A + B) := by
  rw [latent_score_diff, abs_mul, abs_of_nonneg hs]
  have htri : |dot dc (eff_query dn W qn) (vdiff c c') + dot dr qr (vdiff kr kr')|
      ≤ |dot dc (eff_query dn W qn) (vdiff c c')| + |dot dr qr (vdiff kr kr')| := by
    first
      | exact abs_add _ _
      | exact abs_add_le _ _
  exact mul_le_mul_of_nonneg_left (le_trans htri (add_le_add hA hB)) hs

theorem latent_score_bridge (dn nbc : ℕ) (wc : ℕ → ℕ) (dr : ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ)
    (qn qr c c' kr kr' : ℕ → ℝ) (hs : 0 ≤ scale) :
    |latent_score dn (offset wc nbc) dr scale W qn qr c kr
        - latent_score dn (offset wc nbc) dr scale W qn qr c' kr'|
      ≤ scale * (banded_witness nbc wc (band_split wc (eff_query dn W qn)) (band_split wc (vdiff c c'))
                + norm2 dr qr * norm2 dr (vdiff kr kr')) :=
  latent_score_bridge_of dn (offset wc nbc) dr scale _ _ W qn qr c c' kr kr' hs
    (dot_le_banded_witness nbc wc (eff_query dn W qn) (vdiff c c')) (cauchy_schwarz dr qr (vdiff kr kr'))

theorem latent_score_bridge_banded (dn nbc : ℕ) (wc : ℕ → ℕ) (nbr : ℕ) (wr : ℕ → ℕ) (scale : ℝ)
    (W : ℕ → ℕ → ℝ) (qn qr c c' kr kr' : ℕ → ℝ) (hs : 0 ≤ scale) :
    |latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr c kr
        - latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr c' kr'|
      ≤ latent_witness nbc wc nbr wr scale (eff_query dn W qn) qr (vdiff c c') (vdiff kr kr') :=
  latent_score_bridge_of dn (offset wc nbc) (offset wr nbr) scale _ _ W qn qr c c' kr kr' hs
    (dot_le_banded_witness nbc wc (eff_query dn W qn) (vdiff c c'))
    (dot_le_banded_witness nbr wr qr (vdiff kr kr'))

/-- The meter's layout: equal-width contiguous bands. -/
theorem latent_score_bridge_production (dn nbc wc nbr wr : ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ)
    (qn qr c c' kr kr' : ℕ → ℝ) (hs : 0 ≤ scale) :
    |latent_score dn (nbc * wc) (nbr * wr) scale W qn qr c kr
        - latent_score dn (nbc * wc) (nbr * wr) scale W qn qr c' kr'|
      ≤ latent_witness nbc (fun _ => wc) nbr (fun _ => wr) scale
          (eff_query dn W qn) qr (vdiff c c') (vdiff kr kr') := by
  rw [← offset_const wc nbc, ← offset_const wr nbr]
  exact latent_score_bridge_banded dn nbc (fun _ => wc) nbr (fun _ => wr) scale W qn qr c c' kr kr' hs

theorem banded_witness_le_plain_flat (nb : ℕ) (w : ℕ → ℕ) (x y : ℕ → ℝ) :
    banded_witness nb w (band_split w x) (band_split w y)
      ≤ norm2 (offset w nb) x * sum nb (fun b => norm2 (w b) (band_split w y b)) := by
  rw [← bnorm_flat]
  exact banded_witness_le_plain nb w (band_split w x) (band_split w y)

theorem band_norm_sum_nonneg (nb : ℕ) (w : ℕ → ℕ) (y : ℕ → ℝ) :
    0 ≤ sum nb (fun b => norm2 (w b) (band_split w y b)) :=
  sum_nonneg nb (fun b => norm2 (w b) (band_split w y b)) (fun b _ => norm2_nonneg _ _)

/-- The meter's plain form: `|Δ score| ≤ scale · max (‖u‖, ‖qr‖) · (W_c + W_r)`. -/
theorem latent_score_bridge_plain (dn nbc : ℕ) (wc : ℕ → ℕ) (nbr : ℕ) (wr : ℕ → ℕ) (scale : ℝ)
    (W : ℕ → ℕ → ℝ) (qn qr c c' kr kr' : ℕ → ℝ) (hs : 0 ≤ scale) :
    |latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr c kr
        - latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr c' kr'|
      ≤ scale * max (norm2 (offset wc nbc) (eff_query dn W qn)) (norm2 (offset wr nbr) qr)
        * (sum nbc (fun b => norm2 (wc b) (band_split wc (vdiff c c') b))
           + sum nbr (fun b => norm2 (wr b) (band_split wr (vdiff kr kr') b))) := by
  refine le_trans (latent_score_bridge_banded dn nbc wc nbr wr scale W qn qr c c' kr kr' hs) ?_
  show scale * (banded_witness nbc wc (band_split wc (eff_query dn W qn)) (band_split wc (vdiff c c'))
      + banded_witness nbr wr (band_split wr qr) (band_split wr (vdiff kr kr'))) ≤ _
  rw [mul_assoc]
  refine mul_le_mul_of_nonneg_left ?_ hs
  have Hc := banded_witness_le_plain_flat nbc wc (eff_query dn W qn) (vdiff c c')
  have Hr := banded_witness_le_plain_flat nbr wr qr (vdiff kr kr')
  have h1 := band_norm_sum_nonneg nbc wc (vdiff c c')
  have h2 := band_norm_sum_nonneg nbr wr (vdiff kr kr')
  have m1 := mul_le_mul_of_nonneg_right
    (le_max_left (norm2 (offset wc nbc) (eff_query dn W qn)) (norm2 (offset wr nbr) qr)) h1
  have m2 := mul_le_mul_of_nonneg_right
    (le_max_right (norm2 (offset wc nbc) (eff_query dn W qn)) (norm2 (offset wr nbr) qr)) h2
  nlinarith [Hc, Hr, m1, m2]

end WitprobeAnalytic
