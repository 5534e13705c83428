import Mathlib

/-!
# Softmax bridges into total variation

Distributions on a finite nonempty index set `ι`; `tv p q = ½ Σ_t |p_t − q_t|`.

Main results:
* `WitprobeAnalytic.softmax_tv_bridge`: `|s_t − s'_t| ≤ ε` for all `t` gives
  `TV(softmax s', softmax s) ≤ (e^{2ε} − 1)/2` (paper eq. tvbridge).
* `WitprobeAnalytic.tv_le_eform`: for a distribution `q`, a tilt `p_t ∝ q_t e^{−ε_t}` with
  `|ε_t| ≤ c_t` satisfies `TV(p, q) ≤ (A² − 1)/2` with `A = Σ_t q_t e^{c_t}` (the e-form bound;
  `q` is the served distribution and `A − 1` the e-form excess).
* `WitprobeAnalytic.tv_le_tanh`: a tilt `p_t ∝ q_t e^{d_t}` with `m ≤ d_t ≤ M` satisfies
  `TV(p, q) ≤ tanh((M − m)/4)` (the centred bound; softmax is shift-invariant, and
  `softmax s'` is the tilt of `softmax s` by `d = s' − s`).
-/

namespace WitprobeAnalytic

open Finset

variable {ι : Type*} [Fintype ι]

/-- `softmax s t = e^{s_t} / Σ_u e^{s_u}`. -/
noncomputable def softmax (s : ι → ℝ) (t : ι) : ℝ := Real.exp (s t) / ∑ u, Real.exp (s u)

/-- Total variation `½ Σ_t |p_t − q_t|`. -/
noncomputable def tv (p q : ι → ℝ) : ℝ := (∑ t, |p t - q t|) / 2

/-- Pointwise to total: `|p_t − q_t| ≤ q_t r_t` for all `t` gives `TV(p, q) ≤ ½ Σ_t q_t r_t`. -/
theorem tv_le_of_pointwise {p q r : ι → ℝ} (h : ∀ t, |p t - q t| ≤ q t * r t) :
    tv p q ≤ (∑ t, q t * r t) / 2 := by
  unfold tv
  have hs : ∑ t, |p t - q t| ≤ ∑ t, q t * r t := Finset.sum_le_sum (fun t _ => h t)
  linarith

/-- `Σ_u e^{s'_u} ≤ e^ε Σ_u e^{s_u}` when `s'_u ≤ s_u + ε` for all `u`. -/
theorem sum_exp_le (s s' : ι → ℝ) (ε : ℝ) (h : ∀ u, s' u ≤ s u + ε) :
    ∑ u, Real.exp (s' u) ≤ Real.exp ε * ∑ u, Real.exp (s u) := by
  rw [Finset.mul_sum]
  apply Finset.sum_le_sum
  intro u _
  rw [← Real.exp_add]
  exact Real.exp_le_exp.mpr (by linarith [h u])

/-- Softmax bridge: `max_t |s_t − s'_t| ≤ ε` gives `TV(softmax s', softmax s) ≤ (e^{2ε} − 1)/2`. -/
theorem softmax_tv_bridge [Nonempty ι] (s s' : ι → ℝ) (ε : ℝ) (hε : 0 ≤ ε)
    (h : ∀ t, |s t - s' t| ≤ ε) :
    tv (softmax s') (softmax s) ≤ (Real.exp (2 * ε) - 1) / 2 := by
  have hZpos : 0 < ∑ u, Real.exp (s u) :=
    Finset.sum_pos (fun u _ => Real.exp_pos _) Finset.univ_nonempty
  have hZ'pos : 0 < ∑ u, Real.exp (s' u) :=
    Finset.sum_pos (fun u _ => Real.exp_pos _) Finset.univ_nonempty
  have hup : ∀ u, s' u ≤ s u + ε := fun u => by
    have := abs_le.mp (h u)
    linarith [this.1]
  have hdn : ∀ u, s u ≤ s' u + ε := fun u => by
    have := abs_le.mp (h u)
    linarith [this.2]
  have hZ'le : ∑ u, Real.exp (s' u) ≤ Real.exp ε * ∑ u, Real.exp (s u) := sum_exp_le s s' ε hup
  have hZle : ∑ u, Real.exp (s u) ≤ Real.exp ε * ∑ u, Real.exp (s' u) := sum_exp_le s' s ε hdn
  have hsum : ∑ t, softmax s t = 1 := by
    unfold softmax
    rw [← Finset.sum_div, div_self (ne_of_gt hZpos)]
  have h2 : Real.exp (2 * ε) = Real.exp ε * Real.exp ε := by rw [two_mul, Real.exp_add]
  have hE2 : 1 ≤ Real.exp (2 * ε) := Real.one_le_exp (by linarith)
  have key : ∀ t, |softmax s' t - softmax s t| ≤ softmax s t * (Real.exp (2 * ε) - 1) := by
    intro t
    have hPup : Real.exp (s' t) ≤ Real.exp ε * Real.exp (s t) := by
      rw [← Real.exp_add]
      exact Real.exp_le_exp.mpr (by linarith [hup t])
    have hPdn : Real.exp (s t) ≤ Real.exp ε * Real.exp (s' t) := by
      rw [← Real.exp_add]
      exact Real.exp_le_exp.mpr (by linarith [hdn t])
    -- p' ≤ p e^{2ε}
    have upper : Real.exp (s' t) / ∑ u, Real.exp (s' u)
        ≤ Real.exp (s t) / (∑ u, Real.exp (s u)) * Real.exp (2 * ε) := by
      rw [div_mul_eq_mul_div, div_le_div_iff hZ'pos hZpos, h2]
      calc Real.exp (s' t) * ∑ u, Real.exp (s u)
          ≤ (Real.exp ε * Real.exp (s t)) * (Real.exp ε * ∑ u, Real.exp (s' u)) :=
            mul_le_mul hPup hZle hZpos.le (by positivity)
        _ = Real.exp (s t) * (Real.exp ε * Real.exp ε) * ∑ u, Real.exp (s' u) := by ring
    -- p ≤ p' e^{2ε}
    have lower : Real.exp (s t) / ∑ u, Real.exp (s u)
        ≤ Real.exp (s' t) / (∑ u, Real.exp (s' u)) * Real.exp (2 * ε) := by
      rw [div_mul_eq_mul_div, div_le_div_iff hZpos hZ'pos, h2]
      calc Real.exp (s t) * ∑ u, Real.exp (s' u)
          ≤ (Real.exp ε * Real.exp (s' t)) * (Real.exp ε * ∑ u, Real.exp (s u)) :=
            mul_le_mul hPdn hZ'le hZ'pos.le (by positivity)
        _ = Real.exp (s' t) * (Real.exp ε * Real.exp ε) * ∑ u, Real.exp (s u) := by ring
    have hp : 0 ≤ Real.exp (s t) / ∑ u, Real.exp (s u) := div_nonneg (Real.exp_pos _).le hZpos.le
    have hp' : 0 ≤ Real.exp (s' t) / ∑ u, Real.exp (s' u) := div_nonneg (Real.exp_pos _).le hZ'pos.le
    show |Real.exp (s' t) / ∑ u, Real.exp (s' u) - Real.exp (s t) / ∑ u, Real.exp (s u)|
      ≤ Real.exp (s t) / (∑ u, Real.exp (s u)) * (Real.exp (2 * ε) - 1)
    set p := Real.exp (s t) / ∑ u, Real.exp (s u) with hp_def
    set p' := Real.exp (s' t) / ∑ u, Real.exp (s' u) with hp'_def
    set e := Real.exp (2 * ε) with he_def
    have hpe : 0 ≤ p * (e - 1) := mul_nonneg hp (by linarith)
    rw [abs_le]
    constructor
    · rcases le_total p' p with hle | hle
      · have hm : (p - p') * 1 ≤ (p - p') * e := mul_le_mul_of_nonneg_left hE2 (by linarith)
        nlinarith
      · nlinarith
    · nlinarith
  have hb := tv_le_of_pointwise key
  rw [← Finset.sum_mul, hsum, one_mul] at hb
  exact hb

/-- The e-form bound (P1): let `q` be a distribution, `|ε_t| ≤ c_t`, and
`p_t = q_t e^{−ε_t} / Σ_u q_u e^{−ε_u}`. Then `TV(p, q) ≤ (A² − 1)/2` with
`A = Σ_t q_t e^{c_t}`. -/
theorem tv_le_eform [Nonempty ι] (q : ι → ℝ) (hq0 : ∀ t, 0 ≤ q t) (hq1 : ∑ t, q t = 1)
    (ε c : ι → ℝ) (hc : ∀ t, |ε t| ≤ c t) :
    tv (fun t => q t * Real.exp (-ε t) / ∑ u, q u * Real.exp (-ε u)) q
      ≤ ((∑ t, q t * Real.exp (c t)) ^ 2 - 1) / 2 := by
  -- A = E_q[e^c], B = E_q[e^{-c}], Z = E_q[e^{-ε}]
  have hcle : ∀ t, -c t ≤ -ε t ∧ -ε t ≤ c t := fun t => by
    have := abs_le.mp (hc t)
    constructor <;> linarith [this.1, this.2]
  have hZA : ∑ u, q u * Real.exp (-ε u) ≤ ∑ u, q u * Real.exp (c u) :=
    Finset.sum_le_sum (fun u _ =>
      mul_le_mul_of_nonneg_left (Real.exp_le_exp.mpr (hcle u).2) (hq0 u))
  have hBZ : ∑ u, q u * Real.exp (-c u) ≤ ∑ u, q u * Real.exp (-ε u) :=
    Finset.sum_le_sum (fun u _ =>
      mul_le_mul_of_nonneg_left (Real.exp_le_exp.mpr (hcle u).1) (hq0 u))
  -- Jensen for exp, twice: A ≥ e^{E c}, B ≥ e^{-E c}, so A B ≥ 1
  have hJA : Real.exp (∑ u, q u * c u) ≤ ∑ u, q u * Real.exp (c u) := by
    have hj : Real.exp (∑ i ∈ Finset.univ, q i • c i) ≤ ∑ i ∈ Finset.univ, q i • Real.exp (c i) :=
      convexOn_exp.map_sum_le (fun i _ => hq0 i) hq1 (fun i _ => Set.mem_univ _)
    simpa only [smul_eq_mul] using hj
  have hJB : Real.exp (∑ u, q u * -c u) ≤ ∑ u, q u * Real.exp (-c u) := by
    have hj : Real.exp (∑ i ∈ Finset.univ, q i • (-c i)) ≤ ∑ i ∈ Finset.univ, q i • Real.exp (-c i) :=
      convexOn_exp.map_sum_le (fun i _ => hq0 i) hq1 (fun i _ => Set.mem_univ _)
    simpa only [smul_eq_mul] using hj
  have hcancel : ∑ u, q u * c u + ∑ u, q u * -c u = 0 := by
    rw [← Finset.sum_add_distrib]
    simp
  have hApos : 0 < ∑ u, q u * Real.exp (c u) := lt_of_lt_of_le (Real.exp_pos _) hJA
  have hAB : 1 ≤ (∑ u, q u * Real.exp (c u)) * ∑ u, q u * Real.exp (-c u) := by
    have h1 : Real.exp (∑ u, q u * c u) * Real.exp (∑ u, q u * -c u) = 1 := by
      rw [← Real.exp_add, hcancel, Real.exp_zero]
    rw [← h1]
    exact mul_le_mul hJA hJB (Real.exp_pos _).le hApos.le
  have hBpos : 0 < ∑ u, q u * Real.exp (-c u) := by
    by_contra hneg
    push_neg at hneg
    nlinarith
  have hZpos : 0 < ∑ u, q u * Real.exp (-ε u) := lt_of_lt_of_le hBpos hBZ
  have hAZ : 1 ≤ (∑ u, q u * Real.exp (c u)) * ∑ u, q u * Real.exp (-ε u) :=
    le_trans hAB (mul_le_mul_of_nonneg_left hBZ hApos.le)
  -- pointwise: |p_t − q_t| ≤ q_t (A e^{c_t} − 1)
  have key : ∀ t, |q t * Real.exp (-ε t) / (∑ u, q u * Real.exp (-ε u)) - q t|
      ≤ q t * ((∑ u, q u * Real.exp (c u)) * Real.exp (c t) - 1) := by
    intro t
    have ha : Real.exp (-ε t) ≤ Real.exp (c t) := Real.exp_le_exp.mpr (hcle t).2
    have hab : 1 ≤ Real.exp (-ε t) * Real.exp (c t) := by
      rw [← Real.exp_add]
      exact Real.one_le_exp (by linarith [(hcle t).1])
    have hbpos : 0 < Real.exp (c t) := Real.exp_pos _
    have hapos : 0 < Real.exp (-ε t) := Real.exp_pos _
    have e1 : q t * Real.exp (-ε t) / (∑ u, q u * Real.exp (-ε u)) - q t
        = q t * (Real.exp (-ε t) / (∑ u, q u * Real.exp (-ε u)) - 1) := by
      rw [mul_div_assoc]
      ring
    rw [e1, abs_mul, abs_of_nonneg (hq0 t)]
    refine mul_le_mul_of_nonneg_left ?_ (hq0 t)
    set A := ∑ u, q u * Real.exp (c u) with hA
    set Z := ∑ u, q u * Real.exp (-ε u) with hZ
    set a := Real.exp (-ε t) with ha_def
    set b := Real.exp (c t) with hb_def
    -- y = a/Z lies in [1/(A b), A b]
    have hy_up : a / Z ≤ A * b := by
      rw [div_le_iff hZpos]
      have hb1 : b * 1 ≤ b * (A * Z) := mul_le_mul_of_nonneg_left hAZ hbpos.le
      nlinarith
    have hy_dn : 1 ≤ (A * b) * (a / Z) := by
      rw [mul_div_assoc', le_div_iff hZpos, one_mul]
      have h1 : Z * 1 ≤ Z * (a * b) := mul_le_mul_of_nonneg_left hab hZpos.le
      have h2 : Z * (a * b) ≤ A * (a * b) := mul_le_mul_of_nonneg_right hZA (mul_pos hapos hbpos).le
      nlinarith
    have hypos : 0 < a / Z := div_pos hapos hZpos
    have hxpos : 0 < A * b := mul_pos hApos hbpos
    set y := a / Z with hy
    set x := A * b with hx
    rw [abs_le]
    constructor
    · nlinarith [sq_nonneg (x - 1)]
    · linarith
  have hb := tv_le_of_pointwise key
  have hsum : ∑ t, q t * ((∑ u, q u * Real.exp (c u)) * Real.exp (c t) - 1)
      = (∑ u, q u * Real.exp (c u)) ^ 2 - 1 := by
    have e1 : ∀ t, q t * ((∑ u, q u * Real.exp (c u)) * Real.exp (c t) - 1)
        = (∑ u, q u * Real.exp (c u)) * (q t * Real.exp (c t)) - q t := fun t => by ring
    rw [Finset.sum_congr rfl (fun t _ => e1 t), Finset.sum_sub_distrib, ← Finset.mul_sum, hq1]
    ring
  rw [hsum] at hb
  exact hb

/-- `tanh x = (e^{2x} − 1)/(e^{2x} + 1)`. -/
theorem tanh_eq_exp (x : ℝ) : Real.tanh x = (Real.exp (2 * x) - 1) / (Real.exp (2 * x) + 1) := by
  rw [Real.tanh_eq_sinh_div_cosh, Real.sinh_eq, Real.cosh_eq]
  have h1 : Real.exp (2 * x) = Real.exp x * Real.exp x := by rw [two_mul, Real.exp_add]
  have h2 : Real.exp (-x) = (Real.exp x)⁻¹ := Real.exp_neg x
  rw [h1, h2]
  have hx : 0 < Real.exp x := Real.exp_pos x
  field_simp
  ring

/-- The centred bound: let `q` be a distribution, `m ≤ d_t ≤ M`, and
`p_t = q_t e^{d_t} / Σ_u q_u e^{d_u}`. Then `TV(p, q) ≤ tanh((M − m)/4)`; it depends on the
oscillation `M − m` only, and is sharp by a two-point extremal argument. -/
theorem tv_le_tanh [Nonempty ι] (q : ι → ℝ) (hq0 : ∀ t, 0 ≤ q t) (hq1 : ∑ t, q t = 1)
    (d : ι → ℝ) (m M : ℝ) (hd : ∀ t, m ≤ d t ∧ d t ≤ M) :
    tv (fun t => q t * Real.exp (d t) / ∑ u, q u * Real.exp (d u)) q ≤ Real.tanh ((M - m) / 4) := by
  -- shift by m: w_t = e^{d_t − m} ∈ [1, R] with R = e^{M − m}
  set w : ι → ℝ := fun t => Real.exp (d t - m) with hwdef
  set R : ℝ := Real.exp (M - m) with hR
  set S : ℝ := Real.exp ((M - m) / 2) with hS
  have hSR : S * S = R := by rw [hS, hR, ← Real.exp_add]; congr 1; ring
  have hmM : m ≤ M := le_trans (hd (Classical.arbitrary ι)).1 (hd (Classical.arbitrary ι)).2
  have hS1 : 1 ≤ S := by
    show 1 ≤ Real.exp ((M - m) / 2)
    exact Real.one_le_exp (by linarith)
  have hw1 : ∀ t, 1 ≤ w t := fun t => by
    show 1 ≤ Real.exp (d t - m)
    exact Real.one_le_exp (by linarith [(hd t).1])
  have hwR : ∀ t, w t ≤ R := fun t => by
    show Real.exp (d t - m) ≤ Real.exp (M - m)
    exact Real.exp_le_exp.mpr (by linarith [(hd t).2])
  have hexp : ∀ t, Real.exp (d t) = Real.exp m * w t := fun t => by
    show Real.exp (d t) = Real.exp m * Real.exp (d t - m)
    rw [← Real.exp_add]
    congr 1
    ring
  have hsumexp : ∑ u, q u * Real.exp (d u) = Real.exp m * ∑ u, q u * w u := by
    rw [Finset.mul_sum]
    apply Finset.sum_congr rfl
    intro u _
    rw [hexp u]
    ring
  have hpt : ∀ t, q t * Real.exp (d t) / ∑ u, q u * Real.exp (d u) = q t * w t / ∑ u, q u * w u := by
    intro t
    rw [hsumexp, hexp t, mul_left_comm, mul_div_mul_left _ _ (Real.exp_pos m).ne']
  -- A = E_q[w] ∈ [1, R]
  set A : ℝ := ∑ u, q u * w u with hA
  have hA1 : 1 ≤ A := by
    have : ∑ u, q u * 1 ≤ ∑ u, q u * w u :=
      Finset.sum_le_sum (fun u _ => mul_le_mul_of_nonneg_left (hw1 u) (hq0 u))
    simp only [mul_one, hq1] at this
    exact this
  have hAR : A ≤ R := by
    have : ∑ u, q u * w u ≤ ∑ u, q u * R :=
      Finset.sum_le_sum (fun u _ => mul_le_mul_of_nonneg_left (hwR u) (hq0 u))
    rw [← Finset.sum_mul, hq1, one_mul] at this
    exact this
  have hApos : 0 < A := by linarith
  -- the positive parts: (R − 1)·A·Σ_t (p_t − q_t)^+ ≤ (R − A)(A − 1)
  have chord : ∀ t, (R - 1) * (A * max (q t * w t / A - q t) 0) ≤ q t * ((w t - 1) * (R - A)) := by
    intro t
    have hmax : A * max (q t * w t / A - q t) 0 = q t * max (w t - A) 0 := by
      have hA0 : A ≠ 0 := hApos.ne'
      have e : A * (q t * w t / A - q t) = q t * (w t - A) := by
        field_simp
        ring
      rcases le_total (w t) A with hle | hle
      · have h0 : q t * w t / A - q t ≤ 0 := by
          have : q t * (w t - A) ≤ 0 := mul_nonpos_of_nonneg_of_nonpos (hq0 t) (by linarith)
          rw [← e] at this
          nlinarith [this, hApos]
        rw [max_eq_right h0, max_eq_right (by linarith : w t - A ≤ 0)]
        ring
      · have h0 : 0 ≤ q t * w t / A - q t := by
          have : 0 ≤ q t * (w t - A) := mul_nonneg (hq0 t) (by linarith)
          rw [← e] at this
          nlinarith [this, hApos]
        rw [max_eq_left h0, max_eq_left (by linarith : 0 ≤ w t - A), e]
    rw [hmax]
    have hc : (R - 1) * max (w t - A) 0 ≤ (w t - 1) * (R - A) := by
      rcases le_total (w t) A with hle | hle
      · rw [max_eq_right (by linarith : w t - A ≤ 0)]
        have : 0 ≤ (w t - 1) * (R - A) := mul_nonneg (by linarith [hw1 t]) (by linarith)
        linarith
      · rw [max_eq_left (by linarith : 0 ≤ w t - A)]
        nlinarith [hw1 t, hwR t]
    have := mul_le_mul_of_nonneg_left hc (hq0 t)
    nlinarith
  have hsumpos : (R - 1) * (A * ∑ t, max (q t * w t / A - q t) 0) ≤ (R - A) * (A - 1) := by
    have h1 : ∑ t, (R - 1) * (A * max (q t * w t / A - q t) 0) ≤ ∑ t, q t * ((w t - 1) * (R - A)) :=
      Finset.sum_le_sum (fun t _ => chord t)
    have h2 : ∑ t, (R - 1) * (A * max (q t * w t / A - q t) 0)
        = (R - 1) * (A * ∑ t, max (q t * w t / A - q t) 0) := by
      rw [Finset.mul_sum, Finset.mul_sum]
    have h3 : ∑ t, q t * ((w t - 1) * (R - A)) = (R - A) * (A - 1) := by
      have e1 : ∀ t, q t * ((w t - 1) * (R - A)) = (R - A) * (q t * w t) - (R - A) * q t :=
        fun t => by ring
      rw [Finset.sum_congr rfl (fun t _ => e1 t), Finset.sum_sub_distrib, ← Finset.mul_sum,
        ← Finset.mul_sum, hq1]
      try rw [← hA]
      ring
    rw [h2, h3] at h1
    exact h1
  -- TV = Σ_t (p_t − q_t)^+
  have hsum0 : ∑ t, (q t * w t / A - q t) = 0 := by
    rw [Finset.sum_sub_distrib, ← Finset.sum_div, hq1]
    try rw [← hA]
    rw [div_self hApos.ne', sub_self]
  have htv : tv (fun t => q t * Real.exp (d t) / ∑ u, q u * Real.exp (d u)) q
      = ∑ t, max (q t * w t / A - q t) 0 := by
    show (∑ t, |q t * Real.exp (d t) / (∑ u, q u * Real.exp (d u)) - q t|) / 2 = _
    have e1 : ∀ t, |q t * Real.exp (d t) / (∑ u, q u * Real.exp (d u)) - q t|
        = 2 * max (q t * w t / A - q t) 0 - (q t * w t / A - q t) := by
      intro t
      rw [hpt t]
      try rw [← hA]
      rcases le_total 0 (q t * w t / A - q t) with h0 | h0
      · rw [abs_of_nonneg h0, max_eq_left h0]
        ring
      · rw [abs_of_nonpos h0, max_eq_right h0]
        ring
    rw [Finset.sum_congr rfl (fun t _ => e1 t), Finset.sum_sub_distrib, ← Finset.mul_sum, hsum0]
    ring
  rw [htv, tanh_eq_exp]
  have h2x : Real.exp (2 * ((M - m) / 4)) = S := by rw [hS]; congr 1; ring
  rw [h2x]
  -- T := Σ (p − q)^+ satisfies (S² − 1)·A·T ≤ (S² − A)(A − 1) ≤ (S − 1)²·A
  set T := ∑ t, max (q t * w t / A - q t) 0 with hT
  have hT0 : 0 ≤ T := by
    rw [hT]
    exact Finset.sum_nonneg (fun t _ => le_max_right _ _)
  rw [← hSR] at hsumpos hAR
  have hsq : (S * S - A) * (A - 1) ≤ (S - 1) ^ 2 * A := by nlinarith [sq_nonneg (S - A)]
  rw [le_div_iff (by linarith)]
  rcases eq_or_lt_of_le hS1 with hS1eq | hS1lt
  · -- S = 1: then A = 1 and every w_t = 1, so T = 0
    have hSS : S * S = 1 := by rw [← hS1eq]; ring
    have hA1' : A = 1 := le_antisymm (by linarith) hA1
    have hT' : T ≤ 0 := by
      rw [hT]
      apply Finset.sum_nonpos
      intro t _
      have hw : w t = 1 := le_antisymm (by linarith [hwR t, hSR, hSS]) (hw1 t)
      rw [hw, hA1']
      simp
    have hT0' : T = 0 := le_antisymm hT' hT0
    rw [hT0', ← hS1eq]
    norm_num
  · -- S > 1: divide by (S − 1)·A
    have hpos : 0 < (S - 1) * A := mul_pos (by linarith) hApos
    have h1 : (S * S - 1) * (A * T) ≤ (S - 1) ^ 2 * A := le_trans hsumpos hsq
    have h2 : (S - 1) * A * (T * (S + 1)) ≤ (S - 1) * A * (S - 1) := by nlinarith
    have h3 := le_of_mul_le_mul_left h2 hpos
    linarith

end WitprobeAnalytic
