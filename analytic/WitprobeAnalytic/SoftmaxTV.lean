import WitprobeAnalytic.Softmax
import WitprobeAnalytic.ExpLn

/-!
# Softmax bridges: from a bound on score errors to a bound on total variation
(mirror of `coq/Witprobe/SoftmaxTV.v`)

Throughout, `s` are the exact scores, `s'` the served ones, `p = softmax s`, `p' = softmax s'`,
and `d_t = s_t − s'_t`. Every theorem has the name, hypotheses and conclusion of the Coq lemma of
the same name; the proofs follow the Coq proofs step by step.

Main results:
* `tv_ratio`: `TV(p, p') = (1 / 2Z) · Σ_t p'_t |e^{d_t} − Z|` with `Z = Σ_t p'_t e^{d_t}`;
* `tv_le_tanh_osc` (centred form): if `lo ≤ d_t ≤ hi` for every `t`, then
  `TV(p, p') ≤ tanh ((hi − lo) / 4)`;
* `tv_le_tanh_radius`: if `|d_t| ≤ C` then `TV ≤ tanh (C / 2)`;
* `tv_le_eform` (e-form): for `n > 0` keys, if `|d_t| ≤ c_t` then
  `TV ≤ ((Σ_t p'_t e^{c_t})² − 1) / 2`;
* `tv_le_plain`: if `|d_t| ≤ ε` then `TV ≤ (e^{2ε} − 1) / 2`;
* `tv_le_affine`: if moreover `ε ≤ ε₀` then `TV ≤ e^{2ε₀} · ε`;
* `tv_sink_le_tanh_radius`, `tv_sink_le_eform`: the same with an always-visible sink column
  whose logit is identical in both distributions.

The counterexample `radius_needed` shows that without a bound on the score errors no TV bound
below `1/2` holds (two keys, one score moved by `2`).

Lean-only helpers (no Coq counterpart, recorded in `tests/data/kernel_inventory.json`):
`div_le_of_le_mul_pos`, `le_div_of_mul_le_pos`, `abs_sub_one_le`, `sum_two_eq`.
-/

namespace WitprobeAnalytic

/-! ## Elementary facts -/

theorem abs_le_between (x c : ℝ) (h : |x| ≤ c) : -c ≤ x ∧ x ≤ c := abs_le.mp h

theorem tanh_nonneg (x : ℝ) (hx : 0 ≤ x) : 0 ≤ tanh x := by
  show 0 ≤ (Real.exp (2 * x) - 1) / (Real.exp (2 * x) + 1)
  have h1 : 1 ≤ Real.exp (2 * x) := Real.one_le_exp (by linarith)
  exact div_nonneg (by linarith) (by linarith [Real.exp_pos (2 * x)])

/-- `tanh (x / 2)` in terms of `e^x`. -/
theorem tanh_half (x : ℝ) : tanh (x / 2) = (Real.exp x - 1) / (Real.exp x + 1) := by
  show (Real.exp (2 * (x / 2)) - 1) / (Real.exp (2 * (x / 2)) + 1)
    = (Real.exp x - 1) / (Real.exp x + 1)
  have h : 2 * (x / 2) = x := by ring
  rw [h]

/-- The chord of the convex function `|x − Z|` on `[L, H]`. -/
theorem abs_chord (L H x Z : ℝ) (hx : L ≤ x ∧ x ≤ H) (hz : L ≤ Z ∧ Z ≤ H) :
    (H - L) * |x - Z| ≤ (x - L) * (H - Z) + (H - x) * (Z - L) := by
  obtain ⟨hx1, hx2⟩ := hx
  obtain ⟨hz1, hz2⟩ := hz
  rcases le_total Z x with hzx | hxz
  · rw [abs_of_nonneg (sub_nonneg.mpr hzx)]
    have hp : 0 ≤ (H - x) * (Z - L) := mul_nonneg (sub_nonneg.mpr hx2) (sub_nonneg.mpr hz1)
    nlinarith [hp]
  · rw [abs_of_nonpos (sub_nonpos.mpr hxz)]
    have hp : 0 ≤ (x - L) * (H - Z) := mul_nonneg (sub_nonneg.mpr hx1) (sub_nonneg.mpr hz2)
    nlinarith [hp]

/-- `(Z − v²)(u² − Z) ≤ Z (u − v)²`: the maximum over `Z` is at `Z = u v`. -/
theorem chord_peak (u v Z : ℝ) : (Z - v * v) * (u * u - Z) ≤ Z * ((u - v) * (u - v)) := by
  nlinarith [mul_self_nonneg (Z - u * v)]

/-- Lean-only helper: `a ≤ b·c` and `0 < c` give `a / c ≤ b`. -/
theorem div_le_of_le_mul_pos {a b c : ℝ} (hc : 0 < c) (h : a ≤ b * c) : a / c ≤ b := by
  have h1 : a * c⁻¹ ≤ b * c * c⁻¹ := mul_le_mul_of_nonneg_right h (inv_nonneg.mpr hc.le)
  have h2 : b * c * c⁻¹ = b := by rw [mul_assoc, mul_inv_cancel₀ hc.ne', mul_one]
  rw [div_eq_mul_inv]
  linarith

/-- Lean-only helper: `a·c ≤ b` and `0 < c` give `a ≤ b / c`. -/
theorem le_div_of_mul_le_pos {a b c : ℝ} (hc : 0 < c) (h : a * c ≤ b) : a ≤ b / c := by
  have h1 : a * c * c⁻¹ ≤ b * c⁻¹ := mul_le_mul_of_nonneg_right h (inv_nonneg.mpr hc.le)
  have h2 : a * c * c⁻¹ = a := by rw [mul_assoc, mul_inv_cancel₀ hc.ne', mul_one]
  rw [div_eq_mul_inv]
  linarith

/-! ## The ratio form of TV -/

theorem tv_ratio (n : ℕ) (s s' : ℕ → ℝ) (hn : 0 < n) :
    tv n (softmax n s) (softmax n s') =
      2⁻¹ * (sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)
        / reweight n s s') := by
  have hZ : 0 < reweight n s s' := reweight_pos n s s' hn
  have key : ∀ t, t < n → |softmax n s t - softmax n s' t|
      = softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'| / reweight n s s' := by
    intro t _
    have hp : 0 < softmax n s' t := softmax_pos n s' t hn
    have e1 : softmax n s t - softmax n s' t
        = softmax n s' t / reweight n s s' * (Real.exp (s t - s' t) - reweight n s s') := by
      rw [softmax_ratio n s s' t hn]
      calc softmax n s' t * Real.exp (s t - s' t) / reweight n s s' - softmax n s' t
          = softmax n s' t * Real.exp (s t - s' t) / reweight n s s'
            - softmax n s' t * (reweight n s s' / reweight n s s') := by
              rw [div_self hZ.ne', mul_one]
        _ = softmax n s' t / reweight n s s' * (Real.exp (s t - s' t) - reweight n s s') := by
              ring
    rw [e1, abs_mul, abs_of_pos (div_pos hp hZ)]
    ring
  show 2⁻¹ * sum n (fun t => |softmax n s t - softmax n s' t|) = _
  rw [sum_ext n (fun t => |softmax n s t - softmax n s' t|)
    (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'| / reweight n s s') key,
    sum_div_r]

/-- The mean of a function under `p'` lies between its bounds. -/
theorem mean_between (n : ℕ) (s' f : ℕ → ℝ) (L H : ℝ) (hn : 0 < n)
    (hf : ∀ t, t < n → L ≤ f t ∧ f t ≤ H) :
    L ≤ sum n (fun t => softmax n s' t * f t) ∧ sum n (fun t => softmax n s' t * f t) ≤ H := by
  have hsum : sum n (softmax n s') = 1 := softmax_sum n s' hn
  have hL : sum n (fun t => softmax n s' t * L) = L := by
    rw [sum_scal_r n L (softmax n s'), hsum, one_mul]
  have hH : sum n (fun t => softmax n s' t * H) = H := by
    rw [sum_scal_r n H (softmax n s'), hsum, one_mul]
  constructor
  · calc L = sum n (fun t => softmax n s' t * L) := hL.symm
      _ ≤ sum n (fun t => softmax n s' t * f t) :=
        sum_le n (fun t => softmax n s' t * L) (fun t => softmax n s' t * f t)
          (fun t ht => mul_le_mul_of_nonneg_left (hf t ht).1 (softmax_pos n s' t hn).le)
  · calc sum n (fun t => softmax n s' t * f t) ≤ sum n (fun t => softmax n s' t * H) :=
        sum_le n (fun t => softmax n s' t * f t) (fun t => softmax n s' t * H)
          (fun t ht => mul_le_mul_of_nonneg_left (hf t ht).2 (softmax_pos n s' t hn).le)
      _ = H := hH

/-! ## Centred form -/

/-- `(H − L) · Σ_t p'_t |x_t − Z| ≤ 2 (Z − L)(H − Z)` for `x_t = e^{d_t}` in `[L, H]`. -/
theorem abs_dev_chord (n : ℕ) (s s' : ℕ → ℝ) (L H : ℝ) (hn : 0 < n)
    (hx : ∀ t, t < n → L ≤ Real.exp (s t - s' t) ∧ Real.exp (s t - s' t) ≤ H) :
    (H - L) * sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)
      ≤ 2 * ((reweight n s s' - L) * (H - reweight n s s')) := by
  have HZ : L ≤ reweight n s s' ∧ reweight n s s' ≤ H :=
    mean_between n s' (fun t => Real.exp (s t - s' t)) L H hn hx
  have hsum : sum n (softmax n s') = 1 := softmax_sum n s' hn
  have e2 : sum n (fun t => softmax n s' t * ((Real.exp (s t - s' t) - L) * (H - reweight n s s')
        + (H - Real.exp (s t - s' t)) * (reweight n s s' - L)))
      = (H - reweight n s s' - (reweight n s s' - L)) * reweight n s s'
        + (H * (reweight n s s' - L) - L * (H - reweight n s s')) * 1 := by
    rw [sum_ext n
      (fun t => softmax n s' t * ((Real.exp (s t - s' t) - L) * (H - reweight n s s')
        + (H - Real.exp (s t - s' t)) * (reweight n s s' - L)))
      (fun t => (H - reweight n s s' - (reweight n s s' - L)) * (softmax n s' t * Real.exp (s t - s' t))
        + (H * (reweight n s s' - L) - L * (H - reweight n s s')) * softmax n s' t)
      (fun t _ => by (try dsimp only); ring),
      sum_plus, sum_scal_l, sum_scal_l, hsum]
    rfl
  calc (H - L) * sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)
      = sum n (fun t => (H - L) * (softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)) :=
        (sum_scal_l n (H - L)
          (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)).symm
    _ ≤ sum n (fun t => softmax n s' t * ((Real.exp (s t - s' t) - L) * (H - reweight n s s')
        + (H - Real.exp (s t - s' t)) * (reweight n s s' - L))) := by
        apply sum_le
        intro t ht
        show (H - L) * (softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)
          ≤ softmax n s' t * ((Real.exp (s t - s' t) - L) * (H - reweight n s s')
            + (H - Real.exp (s t - s' t)) * (reweight n s s' - L))
        have hp : 0 < softmax n s' t := softmax_pos n s' t hn
        have h1 := mul_le_mul_of_nonneg_left
          (abs_chord L H (Real.exp (s t - s' t)) (reweight n s s') (hx t ht) HZ) hp.le
        calc (H - L) * (softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)
            = softmax n s' t * ((H - L) * |Real.exp (s t - s' t) - reweight n s s'|) := by ring
          _ ≤ _ := h1
    _ = (H - reweight n s s' - (reweight n s s' - L)) * reweight n s s'
        + (H * (reweight n s s' - L) - L * (H - reweight n s s')) * 1 := e2
    _ = 2 * ((reweight n s s' - L) * (H - reweight n s s')) := by ring

/-- Centred form: `lo ≤ d_t ≤ hi` for all `t` implies `TV(p, p') ≤ tanh ((hi − lo) / 4)`. -/
theorem tv_le_tanh_osc (n : ℕ) (s s' : ℕ → ℝ) (lo hi : ℝ) (hlh : lo ≤ hi)
    (hd : ∀ t, t < n → lo ≤ s t - s' t ∧ s t - s' t ≤ hi) :
    tv n (softmax n s) (softmax n s') ≤ tanh ((hi - lo) / 4) := by
  rcases Nat.eq_zero_or_pos n with hn0 | hn
  · subst hn0
    rw [tv_empty]
    exact tanh_nonneg _ (by linarith)
  obtain ⟨u, hu⟩ : ∃ u, u = Real.exp (hi / 2) := ⟨_, rfl⟩
  obtain ⟨v, hv⟩ : ∃ v, v = Real.exp (lo / 2) := ⟨_, rfl⟩
  have hu0 : 0 < u := by rw [hu]; exact Real.exp_pos _
  have hv0 : 0 < v := by rw [hv]; exact Real.exp_pos _
  have HH : Real.exp hi = u * u := by
    rw [hu, ← Real.exp_add]
    congr 1
    ring
  have HL : Real.exp lo = v * v := by
    rw [hv, ← Real.exp_add]
    congr 1
    ring
  have Hvu : v ≤ u := by
    rw [hu, hv]
    exact exp_le_mono _ _ (by linarith)
  have Hx : ∀ t, t < n → Real.exp lo ≤ Real.exp (s t - s' t) ∧ Real.exp (s t - s' t) ≤ Real.exp hi :=
    fun t ht => ⟨exp_le_mono _ _ (hd t ht).1, exp_le_mono _ _ (hd t ht).2⟩
  have Hc := abs_dev_chord n s s' (Real.exp lo) (Real.exp hi) hn Hx
  rw [HH, HL] at Hc
  have HZ : 0 < reweight n s s' := reweight_pos n s s' hn
  have HS : 0 ≤ sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|) :=
    sum_nonneg n _ (fun t _ => mul_nonneg (softmax_pos n s' t hn).le (abs_nonneg _))
  -- tanh ((hi − lo) / 4) = (u − v) / (u + v)
  have Htanh : tanh ((hi - lo) / 4) = (u - v) / (u + v) := by
    have he : Real.exp (2 * ((hi - lo) / 4)) = u * v⁻¹ := by
      rw [hu, hv, ← Real.exp_neg, ← Real.exp_add]
      congr 1
      ring
    have hvi : v * v⁻¹ = 1 := mul_inv_cancel₀ hv0.ne'
    have e1 : u * v⁻¹ - 1 = (u - v) * v⁻¹ := by rw [sub_mul, hvi]
    have e2 : u * v⁻¹ + 1 = (u + v) * v⁻¹ := by rw [add_mul, hvi]
    show (Real.exp (2 * ((hi - lo) / 4)) - 1) / (Real.exp (2 * ((hi - lo) / 4)) + 1) = _
    rw [he, e1, e2]
    exact mul_div_mul_right (u - v) (u + v) (inv_ne_zero hv0.ne')
  rw [tv_ratio n s s' hn, Htanh]
  have Hp := chord_peak u v (reweight n s s')
  rcases lt_or_eq_of_le Hvu with Hlt | Heq
  · -- (u + v) S ≤ 2 Z (u − v)
    have Hk : (u - v) * ((u + v)
        * sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|))
        ≤ (u - v) * (2 * reweight n s s' * (u - v)) := by
      nlinarith [Hc, Hp]
    have Hk' : (u + v) * sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)
        ≤ 2 * reweight n s s' * (u - v) := le_of_mul_le_mul_left Hk (by linarith)
    apply le_div_of_mul_le_pos (show (0 : ℝ) < u + v by linarith)
    have e3 : 2⁻¹ * (sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)
        / reweight n s s') * (u + v)
        = ((u + v) * sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|))
          / (2 * reweight n s s') := by ring
    rw [e3]
    apply div_le_of_le_mul_pos (show (0 : ℝ) < 2 * reweight n s s' by linarith)
    linarith
  · -- u = v: every e^{d_t} equals Z, so S = 0
    have Heq2 : Real.exp lo = Real.exp hi := by rw [HL, HH, Heq]
    have HZ' : Real.exp lo ≤ reweight n s s' ∧ reweight n s s' ≤ Real.exp hi :=
      mean_between n s' (fun t => Real.exp (s t - s' t)) (Real.exp lo) (Real.exp hi) hn Hx
    have HS0 : sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|) = 0 := by
      rw [sum_ext n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)
        (fun _ => (0 : ℝ)) (fun t ht => by
          show softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'| = 0
          have hxt := Hx t ht
          have hz : Real.exp (s t - s' t) - reweight n s s' = 0 := by
            linarith [hxt.1, hxt.2, HZ'.1, HZ'.2]
          rw [hz, abs_zero, mul_zero]),
        sum_const, mul_zero]
    have h0 : 2⁻¹ * (sum n (fun t => softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'|)
        / reweight n s s') = 0 := by
      rw [HS0, zero_div, mul_zero]
    have h1 : (u - v) / (u + v) = 0 := by rw [Heq, sub_self, zero_div]
    exact le_of_eq (h0.trans h1.symm)

/-- Centred form with a radius: `|d_t| ≤ C` implies `TV ≤ tanh (C / 2)`. -/
theorem tv_le_tanh_radius (n : ℕ) (s s' : ℕ → ℝ) (C : ℝ) (hC : 0 ≤ C)
    (hd : ∀ t, t < n → |s t - s' t| ≤ C) :
    tv n (softmax n s) (softmax n s') ≤ tanh (C / 2) := by
  have h := tv_le_tanh_osc n s s' (-C) C (by linarith) (fun t ht => abs_le.mp (hd t ht))
  have e : (C - -C) / 4 = C / 2 := by ring
  rw [e] at h
  exact h

/-! ## e-form, plain form, affine form -/

noncomputable def emoment (n : ℕ) (s' c : ℕ → ℝ) : ℝ :=
  sum n (fun t => softmax n s' t * Real.exp (c t))

theorem emoment_ge_reweight (n : ℕ) (s s' c : ℕ → ℝ) (hn : 0 < n)
    (hd : ∀ t, t < n → |s t - s' t| ≤ c t) : reweight n s s' ≤ emoment n s' c :=
  sum_le n (fun t => softmax n s' t * Real.exp (s t - s' t)) (fun t => softmax n s' t * Real.exp (c t))
    (fun t ht => mul_le_mul_of_nonneg_left (exp_le_mono _ _ (abs_le.mp (hd t ht)).2)
      (softmax_pos n s' t hn).le)

/-- `1 / Z ≤ E_{p'}[e^{c}]` (tangent line of `1/x` at `Z`, then `e^{−d} ≤ e^{c}`). -/
theorem inv_reweight_le_emoment (n : ℕ) (s s' c : ℕ → ℝ) (hn : 0 < n)
    (hd : ∀ t, t < n → |s t - s' t| ≤ c t) : (reweight n s s')⁻¹ ≤ emoment n s' c := by
  have hZ : 0 < reweight n s s' := reweight_pos n s s' hn
  obtain ⟨a, ha⟩ : ∃ a, a = (reweight n s s')⁻¹ := ⟨_, rfl⟩
  have ha0 : 0 < a := by rw [ha]; exact inv_pos.mpr hZ
  have haZ : a * reweight n s s' = 1 := by rw [ha]; exact inv_mul_cancel₀ hZ.ne'
  have hsum : sum n (softmax n s') = 1 := softmax_sum n s' hn
  have e1 : sum n (fun t => softmax n s' t * (2 * a - Real.exp (s t - s' t) * (a * a)))
      = 2 * a * 1 - a * a * reweight n s s' := by
    rw [sum_ext n (fun t => softmax n s' t * (2 * a - Real.exp (s t - s' t) * (a * a)))
      (fun t => 2 * a * softmax n s' t - a * a * (softmax n s' t * Real.exp (s t - s' t)))
      (fun t _ => by (try dsimp only); ring), sum_minus, sum_scal_l, sum_scal_l, hsum]
    rfl
  have e2 : a * a * reweight n s s' = a := by rw [mul_assoc, haZ, mul_one]
  have e3 : sum n (fun t => softmax n s' t * (2 * a - Real.exp (s t - s' t) * (a * a))) = a := by
    rw [e1, e2]
    ring
  calc (reweight n s s')⁻¹ = a := ha.symm
    _ = sum n (fun t => softmax n s' t * (2 * a - Real.exp (s t - s' t) * (a * a))) := e3.symm
    _ ≤ emoment n s' c := by
      show sum n (fun t => softmax n s' t * (2 * a - Real.exp (s t - s' t) * (a * a)))
        ≤ sum n (fun t => softmax n s' t * Real.exp (c t))
      apply sum_le
      intro t ht
      show softmax n s' t * (2 * a - Real.exp (s t - s' t) * (a * a))
        ≤ softmax n s' t * Real.exp (c t)
      have hp : 0 < softmax n s' t := softmax_pos n s' t hn
      obtain ⟨x, hx⟩ : ∃ x, x = Real.exp (s t - s' t) := ⟨_, rfl⟩
      rw [← hx]
      have hx0 : 0 < x := by rw [hx]; exact Real.exp_pos _
      have hb0 : 0 < x⁻¹ := inv_pos.mpr hx0
      have hxb : x * x⁻¹ = 1 := mul_inv_cancel₀ hx0.ne'
      have f1 : a * (x * x⁻¹) = a := by rw [hxb, mul_one]
      have f2 : a * a * x * (x * x⁻¹) = a * a * x := by rw [hxb, mul_one]
      -- tangent line: 2a − x a² ≤ 1/x, since x⁻¹ (1 − a x)² ≥ 0
      have htan : 2 * a - x * (a * a) ≤ x⁻¹ := by
        nlinarith [mul_nonneg hb0.le (sq_nonneg (1 - a * x)), f1, f2]
      have hneg : x⁻¹ ≤ Real.exp (c t) := by
        rw [hx, ← Real.exp_neg]
        exact exp_le_mono _ _ (by linarith [(abs_le.mp (hd t ht)).1])
      exact mul_le_mul_of_nonneg_left (le_trans htan hneg) hp.le

/-- Lean-only helper: for `w, y > 0` with `w ≤ y` and `w·y ≥ 1`, `|w − 1| ≤ y − 1`. -/
theorem abs_sub_one_le (w y : ℝ) (hw : 0 < w) (hy : 0 < y) (hwy : w ≤ y) (h1 : 1 ≤ w * y) :
    |w - 1| ≤ y - 1 := by
  have hb : 0 < y⁻¹ := inv_pos.mpr hy
  have hyb : y * y⁻¹ = 1 := mul_inv_cancel₀ hy.ne'
  have hby1 : y⁻¹ * y = 1 := inv_mul_cancel₀ hy.ne'
  have hwb : y⁻¹ ≤ w := by
    have h2 : y⁻¹ * y ≤ w * y := by rw [hby1]; exact h1
    exact le_of_mul_le_mul_right h2 hy
  have e1 : y⁻¹ * y * y = y := by rw [hby1, one_mul]
  have hby : 2 - y ≤ y⁻¹ := by
    nlinarith [mul_nonneg hb.le (sq_nonneg (1 - y)), hyb, e1]
  rw [abs_le]
  constructor
  · linarith
  · linarith

/-- e-form: for `n > 0` keys, `|d_t| ≤ c_t` implies `TV ≤ (E_{p'}[e^{c}]² − 1) / 2`.
(`n > 0` is needed: with no keys the moment is `0` and the right side is `−1/2`.) -/
theorem tv_le_eform (n : ℕ) (s s' c : ℕ → ℝ) (hn : 0 < n)
    (hd : ∀ t, t < n → |s t - s' t| ≤ c t) :
    tv n (softmax n s) (softmax n s') ≤ 2⁻¹ * (emoment n s' c * emoment n s' c - 1) := by
  have hZ : 0 < reweight n s s' := reweight_pos n s s' hn
  have hZM : reweight n s s' ≤ emoment n s' c := emoment_ge_reweight n s s' c hn hd
  have hiZ : (reweight n s s')⁻¹ ≤ emoment n s' c := inv_reweight_le_emoment n s s' c hn hd
  have hM : 0 < emoment n s' c := lt_of_lt_of_le hZ hZM
  have hZi : 0 < (reweight n s s')⁻¹ := inv_pos.mpr hZ
  have hsum : sum n (softmax n s') = 1 := softmax_sum n s' hn
  have hMM : emoment n s' c * emoment n s' c - 1
      = sum n (fun t => softmax n s' t * (Real.exp (c t) * emoment n s' c - 1)) := by
    rw [sum_ext n (fun t => softmax n s' t * (Real.exp (c t) * emoment n s' c - 1))
      (fun t => emoment n s' c * (softmax n s' t * Real.exp (c t)) - softmax n s' t)
      (fun t _ => by (try dsimp only); ring), sum_minus, sum_scal_l, hsum]
    rfl
  have hZiM : 1 ≤ (reweight n s s')⁻¹ * emoment n s' c := by
    have h1 : (reweight n s s')⁻¹ * reweight n s s' = 1 := inv_mul_cancel₀ hZ.ne'
    have h2 : (reweight n s s')⁻¹ * reweight n s s' ≤ (reweight n s s')⁻¹ * emoment n s' c :=
      mul_le_mul_of_nonneg_left hZM hZi.le
    linarith
  rw [tv_ratio n s s' hn, hMM]
  refine mul_le_mul_of_nonneg_left ?_ (by norm_num)
  rw [← sum_div_r]
  apply sum_le
  intro t ht
  show softmax n s' t * |Real.exp (s t - s' t) - reweight n s s'| / reweight n s s'
    ≤ softmax n s' t * (Real.exp (c t) * emoment n s' c - 1)
  have hp : 0 < softmax n s' t := softmax_pos n s' t hn
  have hdt := abs_le.mp (hd t ht)
  obtain ⟨x, hx⟩ : ∃ x, x = Real.exp (s t - s' t) := ⟨_, rfl⟩
  obtain ⟨e, he⟩ : ∃ e, e = Real.exp (c t) := ⟨_, rfl⟩
  rw [← hx, ← he]
  have hx0 : 0 < x := by rw [hx]; exact Real.exp_pos _
  have he0 : 0 < e := by rw [he]; exact Real.exp_pos _
  have hxe : x ≤ e := by rw [hx, he]; exact exp_le_mono _ _ hdt.2
  have hex : 1 ≤ x * e := by
    rw [hx, he, ← Real.exp_add]
    exact Real.one_le_exp (by linarith [hdt.1])
  have hw_le : x * (reweight n s s')⁻¹ ≤ e * emoment n s' c := mul_le_mul hxe hiZ hZi.le he0.le
  have hwy : 1 ≤ (x * (reweight n s s')⁻¹) * (e * emoment n s' c) := by
    have h3 : (x * (reweight n s s')⁻¹) * (e * emoment n s' c)
        = (x * e) * ((reweight n s s')⁻¹ * emoment n s' c) := by ring
    rw [h3]
    have h4 : 1 * 1 ≤ (x * e) * ((reweight n s s')⁻¹ * emoment n s' c) :=
      mul_le_mul hex hZiM (by norm_num) (by linarith)
    linarith
  have hfin : |x * (reweight n s s')⁻¹ - 1| ≤ e * emoment n s' c - 1 :=
    abs_sub_one_le _ _ (mul_pos hx0 hZi) (mul_pos he0 hM) hw_le hwy
  have e3 : (x - reweight n s s') * (reweight n s s')⁻¹ = x * (reweight n s s')⁻¹ - 1 := by
    rw [sub_mul, mul_inv_cancel₀ hZ.ne']
  have habs : |x - reweight n s s'| / reweight n s s' = |x * (reweight n s s')⁻¹ - 1| := by
    rw [← e3, abs_mul, abs_of_pos hZi, div_eq_mul_inv]
  calc softmax n s' t * |x - reweight n s s'| / reweight n s s'
      = softmax n s' t * (|x - reweight n s s'| / reweight n s s') := by rw [mul_div_assoc]
    _ = softmax n s' t * |x * (reweight n s s')⁻¹ - 1| := by rw [habs]
    _ ≤ softmax n s' t * (e * emoment n s' c - 1) := mul_le_mul_of_nonneg_left hfin hp.le

/-- Plain form: `0 ≤ ε` and `|d_t| ≤ ε` imply `TV ≤ (e^{2ε} − 1) / 2`. -/
theorem tv_le_plain (n : ℕ) (s s' : ℕ → ℝ) (eps : ℝ) (he : 0 ≤ eps)
    (hd : ∀ t, t < n → |s t - s' t| ≤ eps) :
    tv n (softmax n s) (softmax n s') ≤ 2⁻¹ * (Real.exp (2 * eps) - 1) := by
  rcases Nat.eq_zero_or_pos n with hn0 | hn
  · subst hn0
    rw [tv_empty]
    have h1 : 1 ≤ Real.exp (2 * eps) := Real.one_le_exp (by linarith)
    exact mul_nonneg (by norm_num) (by linarith)
  have h := tv_le_eform n s s' (fun _ => eps) hn hd
  have hM : emoment n s' (fun _ => eps) = Real.exp eps := by
    show sum n (fun t => softmax n s' t * Real.exp eps) = Real.exp eps
    rw [sum_scal_r n (Real.exp eps) (softmax n s'), softmax_sum n s' hn, one_mul]
  have h2 : Real.exp (2 * eps) = Real.exp eps * Real.exp eps := by rw [two_mul, Real.exp_add]
  rw [hM] at h
  rw [h2]
  exact h

/-- `e^x − 1 ≤ x e^x` for every real `x`. -/
theorem exp_sub_one_le (x : ℝ) : Real.exp x - 1 ≤ x * Real.exp x := by
  have h := Real.add_one_le_exp (-x)
  have hp : 0 < Real.exp x := Real.exp_pos x
  have h1 : Real.exp (-x) * Real.exp x = 1 := by
    rw [← Real.exp_add]
    simp
  have h2 : (-x + 1) * Real.exp x ≤ Real.exp (-x) * Real.exp x :=
    mul_le_mul_of_nonneg_right h hp.le
  nlinarith [h1, h2]

/-- Affine form: for `0 ≤ ε ≤ ε₀`, `TV ≤ e^{2ε₀} · ε`. -/
theorem tv_le_affine (n : ℕ) (s s' : ℕ → ℝ) (eps eps0 : ℝ) (he : 0 ≤ eps ∧ eps ≤ eps0)
    (hd : ∀ t, t < n → |s t - s' t| ≤ eps) :
    tv n (softmax n s) (softmax n s') ≤ Real.exp (2 * eps0) * eps := by
  obtain ⟨he1, he2⟩ := he
  have h1 := tv_le_plain n s s' eps he1 hd
  have h2 := exp_sub_one_le (2 * eps)
  have h3 : Real.exp (2 * eps) ≤ Real.exp (2 * eps0) := exp_le_mono _ _ (by linarith)
  have h4 : eps * Real.exp (2 * eps) ≤ eps * Real.exp (2 * eps0) :=
    mul_le_mul_of_nonneg_left h3 he1
  nlinarith [h1, h2, h4]

/-! ## The always-visible sink column -/

/-- A sink logit `sigma` appended to both score vectors at index `n`. -/
theorem sink_radius (n : ℕ) (s s' c : ℕ → ℝ) (sigma : ℝ)
    (hd : ∀ t, t < n → |s t - s' t| ≤ c t) (hc : 0 ≤ c n) :
    ∀ t, t < n + 1 → |extend s n sigma t - extend s' n sigma t| ≤ c t := by
  intro t ht
  by_cases htn : t = n
  · have e1 : extend s n sigma t = sigma := by
      show (if t = n then sigma else s t) = sigma
      rw [if_pos htn]
    have e2 : extend s' n sigma t = sigma := by
      show (if t = n then sigma else s' t) = sigma
      rw [if_pos htn]
    rw [e1, e2, sub_self, abs_zero, htn]
    exact hc
  · have e1 : extend s n sigma t = s t := by
      show (if t = n then sigma else s t) = s t
      rw [if_neg htn]
    have e2 : extend s' n sigma t = s' t := by
      show (if t = n then sigma else s' t) = s' t
      rw [if_neg htn]
    rw [e1, e2]
    exact hd t (by omega)

theorem tv_sink_le_tanh_radius (n : ℕ) (s s' : ℕ → ℝ) (sigma C : ℝ) (hC : 0 ≤ C)
    (hd : ∀ t, t < n → |s t - s' t| ≤ C) :
    tv (n + 1) (softmax (n + 1) (extend s n sigma)) (softmax (n + 1) (extend s' n sigma))
      ≤ tanh (C / 2) :=
  tv_le_tanh_radius (n + 1) (extend s n sigma) (extend s' n sigma) C hC
    (sink_radius n s s' (fun _ => C) sigma hd hC)

theorem tv_sink_le_eform (n : ℕ) (s s' c : ℕ → ℝ) (sigma : ℝ)
    (hd : ∀ t, t < n → |s t - s' t| ≤ c t) (hc : 0 ≤ c n) :
    tv (n + 1) (softmax (n + 1) (extend s n sigma)) (softmax (n + 1) (extend s' n sigma))
      ≤ 2⁻¹ * (emoment (n + 1) (extend s' n sigma) c * emoment (n + 1) (extend s' n sigma) c - 1) :=
  tv_le_eform (n + 1) (extend s n sigma) (extend s' n sigma) c (Nat.succ_pos n)
    (sink_radius n s s' c sigma hd hc)

/-! ## Counterexample: a score error bound is needed -/

/-- Lean-only helper: `sum 2 f = f 0 + f 1`. -/
theorem sum_two_eq (f : ℕ → ℝ) : sum 2 f = f 0 + f 1 := by
  first
    | (rw [sum_S, sum_S, sum_O, zero_add]; done)
    | (show ∑ t ∈ Finset.range 2, f t = f 0 + f 1; simp [Finset.sum_range_succ])

/-- Two keys with equal served scores; moving one exact score by `2` already gives
`TV = (e² − 1) / (2 (e² + 1)) > 1/4`: no TV bound holds without a radius. -/
theorem radius_needed :
    tv 2 (softmax 2 (fun t => if t = 0 then 2 else 0)) (softmax 2 (fun _ => 0)) > 4⁻¹ := by
  have hE1 : 2 ≤ Real.exp 1 := by
    have := Real.add_one_le_exp 1
    linarith
  have hE : 4 ≤ Real.exp 2 := by
    have h2 : Real.exp 2 = Real.exp 1 * Real.exp 1 := by
      rw [← Real.exp_add]
      norm_num
    rw [h2]
    nlinarith [hE1]
  have hE1pos : 0 < Real.exp 2 + 1 := by linarith
  have hP : partition 2 (fun t : ℕ => if t = 0 then (2 : ℝ) else 0) = Real.exp 2 + 1 := by
    show sum 2 (fun t => Real.exp (if t = 0 then (2 : ℝ) else 0)) = Real.exp 2 + 1
    rw [sum_two_eq]
    show Real.exp (if (0 : ℕ) = 0 then (2 : ℝ) else 0) + Real.exp (if (1 : ℕ) = 0 then (2 : ℝ) else 0)
      = Real.exp 2 + 1
    rw [if_pos (rfl : (0 : ℕ) = 0), if_neg Nat.one_ne_zero, Real.exp_zero]
  have hP' : partition 2 (fun _ : ℕ => (0 : ℝ)) = 2 := by
    show sum 2 (fun _ => Real.exp 0) = 2
    rw [sum_const, Real.exp_zero]
    norm_num
  have hp0 : softmax 2 (fun t : ℕ => if t = 0 then (2 : ℝ) else 0) 0
      = Real.exp 2 / (Real.exp 2 + 1) := by
    show Real.exp (if (0 : ℕ) = 0 then (2 : ℝ) else 0)
      / partition 2 (fun t : ℕ => if t = 0 then (2 : ℝ) else 0) = _
    rw [hP, if_pos (rfl : (0 : ℕ) = 0)]
  have hp1 : softmax 2 (fun t : ℕ => if t = 0 then (2 : ℝ) else 0) 1 = 1 / (Real.exp 2 + 1) := by
    show Real.exp (if (1 : ℕ) = 0 then (2 : ℝ) else 0)
      / partition 2 (fun t : ℕ => if t = 0 then (2 : ℝ) else 0) = _
    rw [hP, if_neg Nat.one_ne_zero, Real.exp_zero]
  have hq : ∀ t, softmax 2 (fun _ : ℕ => (0 : ℝ)) t = 1 / 2 := fun t => by
    show Real.exp 0 / partition 2 (fun _ : ℕ => (0 : ℝ)) = 1 / 2
    rw [hP', Real.exp_zero]
  have htv : tv 2 (softmax 2 (fun t : ℕ => if t = 0 then (2 : ℝ) else 0))
      (softmax 2 (fun _ : ℕ => (0 : ℝ)))
      = 2⁻¹ * (|Real.exp 2 / (Real.exp 2 + 1) - 1 / 2| + |1 / (Real.exp 2 + 1) - 1 / 2|) := by
    show 2⁻¹ * sum 2 (fun t => |softmax 2 (fun t : ℕ => if t = 0 then (2 : ℝ) else 0) t
      - softmax 2 (fun _ : ℕ => (0 : ℝ)) t|) = _
    rw [sum_two_eq]
    show 2⁻¹ * (|softmax 2 (fun t : ℕ => if t = 0 then (2 : ℝ) else 0) 0
        - softmax 2 (fun _ : ℕ => (0 : ℝ)) 0|
      + |softmax 2 (fun t : ℕ => if t = 0 then (2 : ℝ) else 0) 1
        - softmax 2 (fun _ : ℕ => (0 : ℝ)) 1|) = _
    rw [hp0, hp1, hq 0, hq 1]
  have hab : Real.exp 2 / (Real.exp 2 + 1) + 1 / (Real.exp 2 + 1) = 1 := by
    rw [div_add_div_same, div_self hE1pos.ne']
  have hb : 1 / (Real.exp 2 + 1) ≤ 1 / 5 :=
    one_div_le_one_div_of_le (by norm_num) (by linarith)
  have hb0 : 0 < 1 / (Real.exp 2 + 1) := div_pos one_pos hE1pos
  rw [htv]
  rw [abs_of_pos (by linarith : (0 : ℝ) < Real.exp 2 / (Real.exp 2 + 1) - 1 / 2),
    abs_of_neg (by linarith : 1 / (Real.exp 2 + 1) - 1 / 2 < (0 : ℝ))]
  linarith

end WitprobeAnalytic
