import WitprobeAnalytic.Claims
import WitprobeAnalytic.LatentBridge
import WitprobeAnalytic.BoxSup

/-!
# Per-claim lemmas for latent (MLA) caches (mirror of `coq/Witprobe/ClaimsLatent.v`)

The claims of `Claims` composed with the latent score bridge of `LatentBridge`; the hypothesis
is stated on the latent meter's radius `latent_witness`. Coq declares `lscores`, `lradius` and
`latent_radius` inside a `Section` over `dn nbc nbr wc wr scale W qn qr`; here those are explicit
leading parameters, in the same order (Coq's section discharge gives the same signature).

Main results: `centred_latent_claim`, `plain_latent_claim` (on the meter's plain-form query gain
`lqnorm` and per-key band sums `lwidth`), `eform_latent_claim`, `box_latent_claim` (the box form,
`BoxSup.tv_le_box`, on latent radii).
-/

namespace WitprobeAnalytic

/-- Scores of the keys `(c t, kr t)`. -/
noncomputable def lscores (dn nbc nbr : ℕ) (wc wr : ℕ → ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) (qn qr : ℕ → ℝ)
    (c kr : ℕ → ℕ → ℝ) : ℕ → ℝ :=
  fun t => latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr (c t) (kr t)

/-- The meter's per-key radius. -/
noncomputable def lradius (dn nbc nbr : ℕ) (wc wr : ℕ → ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) (qn qr : ℕ → ℝ)
    (c c' kr kr' : ℕ → ℕ → ℝ) : ℕ → ℝ :=
  fun t => latent_witness nbc wc nbr wr scale (eff_query dn W qn) qr (vdiff (c t) (c' t)) (vdiff (kr t) (kr' t))

theorem latent_radius (dn nbc nbr : ℕ) (wc wr : ℕ → ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) (qn qr : ℕ → ℝ)
    (c c' kr kr' : ℕ → ℕ → ℝ) (t : ℕ) (hs : 0 ≤ scale) :
    |lscores dn nbc nbr wc wr scale W qn qr c kr t - lscores dn nbc nbr wc wr scale W qn qr c' kr' t|
      ≤ lradius dn nbc nbr wc wr scale W qn qr c c' kr kr' t :=
  latent_score_bridge_banded dn nbc wc nbr wr scale W qn qr (c t) (c' t) (kr t) (kr' t) hs

theorem centred_latent_claim (C B : ℝ) (hC : 0 ≤ C) (hB : tanh (C / 2) ≤ B) :
    ∀ (n dn nbc nbr : ℕ) (wc wr : ℕ → ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) (qn qr : ℕ → ℝ)
      (c c' kr kr' : ℕ → ℕ → ℝ),
      0 ≤ scale →
      (∀ t, t < n → lradius dn nbc nbr wc wr scale W qn qr c c' kr kr' t ≤ C) →
      tv n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c kr))
        (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) ≤ B :=
  fun n dn nbc nbr wc wr scale W qn qr c c' kr kr' hs hw =>
    centred_claim C B hC hB n (lscores dn nbc nbr wc wr scale W qn qr c kr)
      (lscores dn nbc nbr wc wr scale W qn qr c' kr')
      (fun t ht => le_trans (latent_radius dn nbc nbr wc wr scale W qn qr c c' kr kr' t hs) (hw t ht))

/-- The plain form's query gain `max (‖u‖, ‖qr‖)`, `u = Wᵀ qn` (the meter's `q_coef / scale`). -/
noncomputable def lqnorm (dn nbc nbr : ℕ) (wc wr : ℕ → ℕ) (W : ℕ → ℕ → ℝ) (qn qr : ℕ → ℝ) : ℝ :=
  max (norm2 (offset wc nbc) (eff_query dn W qn)) (norm2 (offset wr nbr) qr)

/-- The plain form's per-key witness: band norms of the latent and of the RoPE-key residual. -/
noncomputable def lwidth (nbc nbr : ℕ) (wc wr : ℕ → ℕ) (c c' kr kr' : ℕ → ℕ → ℝ) (t : ℕ) : ℝ :=
  sum nbc (fun b => norm2 (wc b) (band_split wc (vdiff (c t) (c' t)) b))
    + sum nbr (fun b => norm2 (wr b) (band_split wr (vdiff (kr t) (kr' t)) b))

theorem plain_latent_claim (Q Wt B : ℝ) (hQ : 0 ≤ Q) (hW : 0 ≤ Wt)
    (hB : 2⁻¹ * (Real.exp (2 * (Q * Wt)) - 1) ≤ B) :
    ∀ (n dn nbc nbr : ℕ) (wc wr : ℕ → ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) (qn qr : ℕ → ℝ)
      (c c' kr kr' : ℕ → ℕ → ℝ),
      0 ≤ scale →
      scale * lqnorm dn nbc nbr wc wr W qn qr ≤ Q →
      (∀ t, t < n → lwidth nbc nbr wc wr c c' kr kr' t ≤ Wt) →
      tv n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c kr))
        (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) ≤ B := by
  intro n dn nbc nbr wc wr scale W qn qr c c' kr kr' hs hq hw
  refine plain_claim (Q * Wt) B (mul_nonneg hQ hW) hB n (lscores dn nbc nbr wc wr scale W qn qr c kr)
    (lscores dn nbc nbr wc wr scale W qn qr c' kr') ?_
  intro t ht
  have h1 : |lscores dn nbc nbr wc wr scale W qn qr c kr t - lscores dn nbc nbr wc wr scale W qn qr c' kr' t|
      ≤ (scale * lqnorm dn nbc nbr wc wr W qn qr) * lwidth nbc nbr wc wr c c' kr kr' t :=
    latent_score_bridge_plain dn nbc wc nbr wr scale W qn qr (c t) (c' t) (kr t) (kr' t) hs
  have h0c := band_norm_sum_nonneg nbc wc (vdiff (c t) (c' t))
  have h0r := band_norm_sum_nonneg nbr wr (vdiff (kr t) (kr' t))
  have H0 : 0 ≤ lwidth nbc nbr wc wr c c' kr kr' t := by
    show 0 ≤ sum nbc (fun b => norm2 (wc b) (band_split wc (vdiff (c t) (c' t)) b))
      + sum nbr (fun b => norm2 (wr b) (band_split wr (vdiff (kr t) (kr' t)) b))
    linarith
  exact le_trans h1 (mul_le_mul hq (hw t ht) H0 hQ)

theorem eform_latent_claim (X B : ℝ) (hX : 0 ≤ X) (hB : X + X * X / 2 ≤ B) :
    ∀ (n dn nbc nbr : ℕ) (wc wr : ℕ → ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) (qn qr : ℕ → ℝ)
      (c c' kr kr' : ℕ → ℕ → ℝ),
      0 < n → 0 ≤ scale →
      emoment n (lscores dn nbc nbr wc wr scale W qn qr c' kr')
          (lradius dn nbc nbr wc wr scale W qn qr c c' kr kr') ≤ 1 + X →
      tv n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c kr))
        (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) ≤ B :=
  fun n dn nbc nbr wc wr scale W qn qr c c' kr kr' hn hs hM =>
    eform_claim X B hX hB n (lscores dn nbc nbr wc wr scale W qn qr c kr)
      (lscores dn nbc nbr wc wr scale W qn qr c' kr') (lradius dn nbc nbr wc wr scale W qn qr c c' kr kr') hn
      (fun t _ => latent_radius dn nbc nbr wc wr scale W qn qr c c' kr kr' t hs) hM

theorem box_latent_claim (B : ℝ) :
    ∀ (n dn nbc nbr : ℕ) (wc wr : ℕ → ℕ) (scale : ℝ) (W : ℕ → ℕ → ℝ) (qn qr : ℕ → ℝ)
      (c c' kr kr' : ℕ → ℕ → ℝ) (r : ℕ → ℝ),
      0 < n →
      0 ≤ scale →
      (∀ t, t < n → lradius dn nbc nbr wc wr scale W qn qr c c' kr kr' t ≤ r t) →
      box_certificate n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) r B →
      tv n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c kr))
        (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) ≤ B :=
  fun n dn nbc nbr wc wr scale W qn qr c c' kr kr' r hn hs hr hc =>
    tv_le_box n (lscores dn nbc nbr wc wr scale W qn qr c kr) (lscores dn nbc nbr wc wr scale W qn qr c' kr') r B hn
      (fun t ht => le_trans (latent_radius dn nbc nbr wc wr scale W qn qr c c' kr kr' t hs) (hr t ht)) hc

end WitprobeAnalytic
