import WitprobeAnalytic.ClaimsBanded

/-!
# The box bound: TV over the per-key score box, from the served distribution
(mirror of `coq/Witprobe/BoxSup.v`)

One query row, `n` keys: served scores `s'`, exact scores `s`, per-key radii `r_t` with
`|s_t − s'_t| ≤ r_t`; `p' = softmax s'` is known, `s` is not. With `d = s − s'`,
`Z = Σ_t p'_t e^{d_t}` (`reweight`) and `w = 1/Z`, the exact distribution is `p_t = p'_t e^{d_t} w`
(`softmax_ratio`).

Definitions (`u_t = e^{r_t}`, `v_t = e^{−r_t}`):
* `box_up r w = (e^{r} w − 1)_+`, `box_down r w = (1 − e^{−r} w)_+`;
* `box_term lam r w = max (lam · box_up, (1 − lam) · box_down)`;
* `box_key h side lam r w t`: `box_term` for `t ≠ h`; for the key `h` the one side fixed by
  `side` (`true`: `lam · box_up`, `false`: `(1 − lam) · box_down`);
* `box_psi n p r h side lam w = Σ_t p_t · box_key …`;
* `box_zhi n p r = Σ_t p_t u_t`, `box_zlo n p r = Σ_t p_t v_t` (they bracket `Z`);
* `box_grid`: a grid `g_0 … g_K` of `w` values whose ends bracket `[1/zhi, 1/zlo]`, one `lam` in
  `[0, 1]` per side and interval, and every `box_psi` at both ends of every interval at most `B`;
* `box_certificate n p r B`: a `box_grid` at level `B`, or a radius `C ≥ r_t` with `tanh (C/2) ≤ B`;
* `exact_side n s s' h`: the side key `h` takes (`true` iff `e^{d_h}/Z ≥ 1`).

Main results (every theorem has the name, hypotheses and conclusion of the Coq lemma of the same
name; the proofs follow the Coq proofs step by step):
* `tv_lambda_split`: `TV = Σ_t p'_t (lam (x_t)_+ + (1 − lam)(−x_t)_+)`, `x_t = e^{d_t}/Z − 1`;
* `tv_le_box_psi`: `TV ≤ box_psi … lam (1/Z)` on the side the exact distribution takes;
* `box_psi_convex_max`: on `[a, b]`, `box_psi` is at most its larger end value;
* `tv_le_box`: `|s_t − s'_t| ≤ r_t` and `box_certificate n (softmax s') r B` give `TV ≤ B`;
* `box_banded_claim`: the per-run claim shape (dense KV, banded score bridge).

Counterexample `box_needs_lower_cover`: without `g_0 zhi ≤ 1` the grid can miss `1/Z`.

Never compiled (`LEAN_STATUS.md`); no `positivity`, no `field_simp`, no `nlinarith`.
-/

namespace WitprobeAnalytic

noncomputable def box_up (r w : ℝ) : ℝ := max 0 (Real.exp r * w - 1)

noncomputable def box_down (r w : ℝ) : ℝ := max 0 (1 - Real.exp (-r) * w)

noncomputable def box_term (lam r w : ℝ) : ℝ := max (lam * box_up r w) ((1 - lam) * box_down r w)

noncomputable def box_key (h : ℕ) (side : Bool) (lam r w : ℝ) (t : ℕ) : ℝ :=
  if t = h then (if side then lam * box_up r w else (1 - lam) * box_down r w)
  else box_term lam r w

noncomputable def box_psi (n : ℕ) (p r : ℕ → ℝ) (h : ℕ) (side : Bool) (lam w : ℝ) : ℝ :=
  sum n (fun t => p t * box_key h side lam (r t) w t)

noncomputable def box_zhi (n : ℕ) (p r : ℕ → ℝ) : ℝ := sum n (fun t => p t * Real.exp (r t))

noncomputable def box_zlo (n : ℕ) (p r : ℕ → ℝ) : ℝ := sum n (fun t => p t * Real.exp (-r t))

def box_grid (n : ℕ) (p r : ℕ → ℝ) (h K : ℕ) (g : ℕ → ℝ) (lam : Bool → ℕ → ℝ) (B : ℝ) : Prop :=
  0 < K ∧ g 0 * box_zhi n p r ≤ 1 ∧ 1 ≤ g K * box_zlo n p r ∧
  (∀ (b : Bool) (k : ℕ), k < K →
     (0 ≤ lam b k ∧ lam b k ≤ 1) ∧ box_psi n p r h b (lam b k) (g k) ≤ B ∧
     box_psi n p r h b (lam b k) (g (k + 1)) ≤ B)

def box_certificate (n : ℕ) (p r : ℕ → ℝ) (B : ℝ) : Prop :=
  (∃ (h K : ℕ) (g : ℕ → ℝ) (lam : Bool → ℕ → ℝ), box_grid n p r h K g lam B)
  ∨ (∃ C : ℝ, (∀ t, t < n → r t ≤ C) ∧ tanh (C / 2) ≤ B)

/-! ## The lambda split of TV -/

/-- `|x| / 2 = lam x_+ + (1 − lam) (−x)_+ − (lam − 1/2) x`. -/
theorem half_abs_split (lam x : ℝ) :
    2⁻¹ * |x| = lam * max 0 x + (1 - lam) * max 0 (-x) - (lam - 2⁻¹) * x := by
  rcases le_total 0 x with hx | hx
  · rw [abs_of_nonneg hx, max_eq_right hx, max_eq_left (show -x ≤ 0 by linarith)]
    ring
  · rw [abs_of_nonpos hx, max_eq_left hx, max_eq_right (show (0 : ℝ) ≤ -x by linarith)]
    ring

theorem tv_lambda_split (n : ℕ) (s s' : ℕ → ℝ) (lam : ℝ) (hn : 0 < n) :
    tv n (softmax n s) (softmax n s') =
      sum n (fun t => softmax n s' t *
        (lam * max 0 (Real.exp (s t - s' t) / reweight n s s' - 1)
          + (1 - lam) * max 0 (-(Real.exp (s t - s' t) / reweight n s s' - 1)))) := by
  have HZ : 0 < reweight n s s' := reweight_pos n s s' hn
  have Hx : ∀ t, softmax n s t - softmax n s' t
      = softmax n s' t * (Real.exp (s t - s' t) / reweight n s s' - 1) := by
    intro t
    rw [softmax_ratio n s s' t hn]
    ring
  have H0 : sum n (fun t => softmax n s' t * (Real.exp (s t - s' t) / reweight n s s' - 1)) = 0 := by
    rw [sum_ext n (fun t => softmax n s' t * (Real.exp (s t - s' t) / reweight n s s' - 1))
      (fun t => (reweight n s s')⁻¹ * (softmax n s' t * Real.exp (s t - s' t)) - softmax n s' t)
      (fun t _ => by (try dsimp only); ring), sum_minus, sum_scal_l, softmax_sum n s' hn]
    show (reweight n s s')⁻¹ * reweight n s s' - 1 = 0
    rw [inv_mul_cancel₀ HZ.ne', sub_self]
  have Hterm : ∀ t, t < n → |softmax n s t - softmax n s' t|
      = 2 * (softmax n s' t *
          (lam * max 0 (Real.exp (s t - s' t) / reweight n s s' - 1)
            + (1 - lam) * max 0 (-(Real.exp (s t - s' t) / reweight n s s' - 1))))
        - 2 * (lam - 2⁻¹) * (softmax n s' t * (Real.exp (s t - s' t) / reweight n s s' - 1)) := by
    intro t _
    have Hp : 0 < softmax n s' t := softmax_pos n s' t hn
    have Hs := half_abs_split lam (Real.exp (s t - s' t) / reweight n s s' - 1)
    rw [Hx t, abs_mul, abs_of_pos Hp]
    linear_combination (2 * softmax n s' t) * Hs
  show 2⁻¹ * sum n (fun t => |softmax n s t - softmax n s' t|) = _
  rw [sum_ext n (fun t => |softmax n s t - softmax n s' t|)
    (fun t => 2 * (softmax n s' t *
        (lam * max 0 (Real.exp (s t - s' t) / reweight n s s' - 1)
          + (1 - lam) * max 0 (-(Real.exp (s t - s' t) / reweight n s s' - 1))))
      - 2 * (lam - 2⁻¹) * (softmax n s' t * (Real.exp (s t - s' t) / reweight n s s' - 1))) Hterm,
    sum_minus, sum_scal_l, sum_scal_l, H0]
  ring

/-! ## One key's term -/

theorem box_up_nonneg (r w : ℝ) : 0 ≤ box_up r w := le_max_left 0 (Real.exp r * w - 1)

theorem box_down_nonneg (r w : ℝ) : 0 ≤ box_down r w := le_max_left 0 (1 - Real.exp (-r) * w)

theorem pos_mono (a b : ℝ) (h : a ≤ b) : max 0 a ≤ max 0 b :=
  max_le (le_max_left 0 b) (le_trans h (le_max_right 0 b))

/-- With `|d| ≤ r` and `w > 0`: the positive part of `e^d w − 1` is below `box_up r w`. -/
theorem pos_le_box_up (d r w : ℝ) (hd : |d| ≤ r) (hw : 0 < w) :
    max 0 (Real.exp d * w - 1) ≤ box_up r w := by
  have h1 : Real.exp d ≤ Real.exp r := exp_le_mono d r (abs_le_between d r hd).2
  have h2 : Real.exp d * w ≤ Real.exp r * w := mul_le_mul_of_nonneg_right h1 hw.le
  show max 0 (Real.exp d * w - 1) ≤ max 0 (Real.exp r * w - 1)
  exact pos_mono _ _ (by linarith)

/-- With `|d| ≤ r` and `w > 0`: the positive part of `1 − e^d w` is below `box_down r w`. -/
theorem pos_le_box_down (d r w : ℝ) (hd : |d| ≤ r) (hw : 0 < w) :
    max 0 (-(Real.exp d * w - 1)) ≤ box_down r w := by
  have h1 : Real.exp (-r) ≤ Real.exp d := exp_le_mono (-r) d (abs_le_between d r hd).1
  have h2 : Real.exp (-r) * w ≤ Real.exp d * w := mul_le_mul_of_nonneg_right h1 hw.le
  show max 0 (-(Real.exp d * w - 1)) ≤ max 0 (1 - Real.exp (-r) * w)
  exact pos_mono _ _ (by linarith)

theorem key_le_box_term (d r w lam : ℝ) (hd : |d| ≤ r) (hw : 0 < w) (hl : 0 ≤ lam ∧ lam ≤ 1) :
    lam * max 0 (Real.exp d * w - 1) + (1 - lam) * max 0 (-(Real.exp d * w - 1))
      ≤ box_term lam r w := by
  have hu := pos_le_box_up d r w hd hw
  have hv := pos_le_box_down d r w hd hw
  show _ ≤ max (lam * box_up r w) ((1 - lam) * box_down r w)
  rcases le_total 0 (Real.exp d * w - 1) with hs | hs
  · rw [max_eq_left (show -(Real.exp d * w - 1) ≤ 0 by linarith), mul_zero, add_zero]
    exact le_trans (mul_le_mul_of_nonneg_left hu hl.1) (le_max_left _ _)
  · rw [max_eq_left hs, mul_zero, zero_add]
    exact le_trans (mul_le_mul_of_nonneg_left hv (sub_nonneg.mpr hl.2)) (le_max_right _ _)

/-! ## TV below `box_psi` at `w = 1/Z` -/

/-- The side of key `h`: `true` when its exact probability is at least the served one. -/
noncomputable def exact_side (n : ℕ) (s s' : ℕ → ℝ) (h : ℕ) : Bool :=
  if 0 ≤ Real.exp (s h - s' h) * (reweight n s s')⁻¹ - 1 then true else false

theorem tv_le_box_psi (n : ℕ) (s s' r : ℕ → ℝ) (h : ℕ) (lam : ℝ) (hn : 0 < n)
    (hl : 0 ≤ lam ∧ lam ≤ 1) (hd : ∀ t, t < n → |s t - s' t| ≤ r t) :
    tv n (softmax n s) (softmax n s')
      ≤ box_psi n (softmax n s') r h (exact_side n s s' h) lam (reweight n s s')⁻¹ := by
  have HZ : 0 < reweight n s s' := reweight_pos n s s' hn
  have Hw : 0 < (reweight n s s')⁻¹ := inv_pos.mpr HZ
  rw [tv_lambda_split n s s' lam hn]
  apply sum_le
  intro t ht
  have Hp : 0 < softmax n s' t := softmax_pos n s' t hn
  refine mul_le_mul_of_nonneg_left ?_ Hp.le
  have e1 : Real.exp (s t - s' t) / reweight n s s'
      = Real.exp (s t - s' t) * (reweight n s s')⁻¹ := div_eq_mul_inv _ _
  rw [e1]
  have hu := pos_le_box_up (s t - s' t) (r t) (reweight n s s')⁻¹ (hd t ht) Hw
  have hv := pos_le_box_down (s t - s' t) (r t) (reweight n s s')⁻¹ (hd t ht) Hw
  by_cases hth : t = h
  · have ek : box_key h (exact_side n s s' h) lam (r t) (reweight n s s')⁻¹ t
        = if exact_side n s s' h then lam * box_up (r t) (reweight n s s')⁻¹
          else (1 - lam) * box_down (r t) (reweight n s s')⁻¹ := if_pos hth
    rw [ek]
    by_cases hs : 0 ≤ Real.exp (s h - s' h) * (reweight n s s')⁻¹ - 1
    · have es : exact_side n s s' h = true := if_pos hs
      have hs' : 0 ≤ Real.exp (s t - s' t) * (reweight n s s')⁻¹ - 1 := by
        rw [hth]
        exact hs
      rw [if_pos es, max_eq_left (show -(Real.exp (s t - s' t) * (reweight n s s')⁻¹ - 1) ≤ 0 by linarith),
        mul_zero, add_zero]
      exact mul_le_mul_of_nonneg_left hu hl.1
    · have es : exact_side n s s' h = false := if_neg hs
      have es' : ¬(exact_side n s s' h = true) := by
        rw [es]
        decide
      have hs' : Real.exp (s t - s' t) * (reweight n s s')⁻¹ - 1 ≤ 0 := by
        rw [hth]
        exact le_of_lt (not_le.mp hs)
      rw [if_neg es', max_eq_left hs', mul_zero, zero_add]
      exact mul_le_mul_of_nonneg_left hv (sub_nonneg.mpr hl.2)
  · have ek : box_key h (exact_side n s s' h) lam (r t) (reweight n s s')⁻¹ t
        = box_term lam (r t) (reweight n s s')⁻¹ := if_neg hth
    rw [ek]
    exact key_le_box_term (s t - s' t) (r t) (reweight n s s')⁻¹ lam (hd t ht) Hw hl

/-! ## Convexity of `box_psi` in `w` -/

theorem pos_affine_convex (a b th x y : ℝ) (ht : 0 ≤ th ∧ th ≤ 1) :
    max 0 (a * (th * x + (1 - th) * y) + b)
      ≤ th * max 0 (a * x + b) + (1 - th) * max 0 (a * y + b) := by
  have h1 : 0 ≤ 1 - th := sub_nonneg.mpr ht.2
  have hx2 : th * (a * x + b) ≤ th * max 0 (a * x + b) :=
    mul_le_mul_of_nonneg_left (le_max_right 0 (a * x + b)) ht.1
  have hy2 : (1 - th) * (a * y + b) ≤ (1 - th) * max 0 (a * y + b) :=
    mul_le_mul_of_nonneg_left (le_max_right 0 (a * y + b)) h1
  have e : a * (th * x + (1 - th) * y) + b = th * (a * x + b) + (1 - th) * (a * y + b) := by ring
  apply max_le
  · exact add_nonneg (mul_nonneg ht.1 (le_max_left 0 (a * x + b)))
      (mul_nonneg h1 (le_max_left 0 (a * y + b)))
  · rw [e]
    exact add_le_add hx2 hy2

theorem box_up_convex (r th x y : ℝ) (ht : 0 ≤ th ∧ th ≤ 1) :
    box_up r (th * x + (1 - th) * y) ≤ th * box_up r x + (1 - th) * box_up r y := by
  have H := pos_affine_convex (Real.exp r) (-1) th x y ht
  have e1 : Real.exp r * (th * x + (1 - th) * y) - 1 = Real.exp r * (th * x + (1 - th) * y) + -1 := by
    ring
  have e2 : Real.exp r * x - 1 = Real.exp r * x + -1 := by ring
  have e3 : Real.exp r * y - 1 = Real.exp r * y + -1 := by ring
  show max 0 (Real.exp r * (th * x + (1 - th) * y) - 1)
    ≤ th * max 0 (Real.exp r * x - 1) + (1 - th) * max 0 (Real.exp r * y - 1)
  rw [e1, e2, e3]
  exact H

theorem box_down_convex (r th x y : ℝ) (ht : 0 ≤ th ∧ th ≤ 1) :
    box_down r (th * x + (1 - th) * y) ≤ th * box_down r x + (1 - th) * box_down r y := by
  have H := pos_affine_convex (-Real.exp (-r)) 1 th x y ht
  have e1 : 1 - Real.exp (-r) * (th * x + (1 - th) * y)
      = -Real.exp (-r) * (th * x + (1 - th) * y) + 1 := by ring
  have e2 : 1 - Real.exp (-r) * x = -Real.exp (-r) * x + 1 := by ring
  have e3 : 1 - Real.exp (-r) * y = -Real.exp (-r) * y + 1 := by ring
  show max 0 (1 - Real.exp (-r) * (th * x + (1 - th) * y))
    ≤ th * max 0 (1 - Real.exp (-r) * x) + (1 - th) * max 0 (1 - Real.exp (-r) * y)
  rw [e1, e2, e3]
  exact H

theorem max_convex (f g fx fy gx gy th : ℝ) (ht : 0 ≤ th ∧ th ≤ 1)
    (hf : f ≤ th * fx + (1 - th) * fy) (hg : g ≤ th * gx + (1 - th) * gy) :
    max f g ≤ th * max fx gx + (1 - th) * max fy gy := by
  have h1 : 0 ≤ 1 - th := sub_nonneg.mpr ht.2
  have a1 : th * fx ≤ th * max fx gx := mul_le_mul_of_nonneg_left (le_max_left fx gx) ht.1
  have a2 : th * gx ≤ th * max fx gx := mul_le_mul_of_nonneg_left (le_max_right fx gx) ht.1
  have a3 : (1 - th) * fy ≤ (1 - th) * max fy gy := mul_le_mul_of_nonneg_left (le_max_left fy gy) h1
  have a4 : (1 - th) * gy ≤ (1 - th) * max fy gy := mul_le_mul_of_nonneg_left (le_max_right fy gy) h1
  apply max_le
  · exact le_trans hf (add_le_add a1 a3)
  · exact le_trans hg (add_le_add a2 a4)

theorem box_key_convex (h : ℕ) (side : Bool) (lam r th x y : ℝ) (t : ℕ)
    (hl : 0 ≤ lam ∧ lam ≤ 1) (ht : 0 ≤ th ∧ th ≤ 1) :
    box_key h side lam r (th * x + (1 - th) * y) t
      ≤ th * box_key h side lam r x t + (1 - th) * box_key h side lam r y t := by
  have Hu := box_up_convex r th x y ht
  have Hd := box_down_convex r th x y ht
  have h1 : 0 ≤ 1 - lam := sub_nonneg.mpr hl.2
  have Hu' : lam * box_up r (th * x + (1 - th) * y)
      ≤ th * (lam * box_up r x) + (1 - th) * (lam * box_up r y) := by
    have H1 := mul_le_mul_of_nonneg_left Hu hl.1
    have e : lam * (th * box_up r x + (1 - th) * box_up r y)
        = th * (lam * box_up r x) + (1 - th) * (lam * box_up r y) := by ring
    exact le_trans H1 (le_of_eq e)
  have Hd' : (1 - lam) * box_down r (th * x + (1 - th) * y)
      ≤ th * ((1 - lam) * box_down r x) + (1 - th) * ((1 - lam) * box_down r y) := by
    have H1 := mul_le_mul_of_nonneg_left Hd h1
    have e : (1 - lam) * (th * box_down r x + (1 - th) * box_down r y)
        = th * ((1 - lam) * box_down r x) + (1 - th) * ((1 - lam) * box_down r y) := by ring
    exact le_trans H1 (le_of_eq e)
  by_cases hth : t = h
  · have ek : ∀ w, box_key h side lam r w t
        = if side then lam * box_up r w else (1 - lam) * box_down r w := fun w => if_pos hth
    rw [ek (th * x + (1 - th) * y), ek x, ek y]
    cases side
    · have hf : ¬(false = true) := by decide
      rw [if_neg hf, if_neg hf, if_neg hf]
      exact Hd'
    · have htt : true = true := rfl
      rw [if_pos htt, if_pos htt, if_pos htt]
      exact Hu'
  · have ek : ∀ w, box_key h side lam r w t = box_term lam r w := fun w => if_neg hth
    rw [ek (th * x + (1 - th) * y), ek x, ek y]
    show max (lam * box_up r (th * x + (1 - th) * y)) ((1 - lam) * box_down r (th * x + (1 - th) * y))
      ≤ th * max (lam * box_up r x) ((1 - lam) * box_down r x)
        + (1 - th) * max (lam * box_up r y) ((1 - lam) * box_down r y)
    exact max_convex _ _ _ _ _ _ th ht Hu' Hd'

theorem box_psi_convex_max (n : ℕ) (p r : ℕ → ℝ) (h : ℕ) (side : Bool) (lam a b x : ℝ)
    (hp : ∀ t, t < n → 0 ≤ p t) (hl : 0 ≤ lam ∧ lam ≤ 1) (hx : a ≤ x ∧ x ≤ b) :
    box_psi n p r h side lam x ≤ max (box_psi n p r h side lam a) (box_psi n p r h side lam b) := by
  rcases lt_or_eq_of_le (le_trans hx.1 hx.2) with hab | hab
  · have hba : 0 < b - a := sub_pos.mpr hab
    obtain ⟨th, hth⟩ : ∃ th, th = (b - x) / (b - a) := ⟨_, rfl⟩
    have Hth : 0 ≤ th ∧ th ≤ 1 := by
      constructor
      · rw [hth]
        exact div_nonneg (by linarith [hx.2]) hba.le
      · rw [hth]
        exact div_le_of_le_mul_pos hba (by linarith [hx.1])
    have Hmul : th * (b - a) = b - x := by
      rw [hth, div_eq_mul_inv, mul_assoc, inv_mul_cancel₀ hba.ne', mul_one]
    have Ex : x = th * a + (1 - th) * b := by linear_combination Hmul
    have Hsum : box_psi n p r h side lam x
        ≤ sum n (fun t => th * (p t * box_key h side lam (r t) a t)
            + (1 - th) * (p t * box_key h side lam (r t) b t)) := by
      rw [Ex]
      apply sum_le
      intro t ht
      have Hk := box_key_convex h side lam (r t) th a b t hl Hth
      have H1 := mul_le_mul_of_nonneg_left Hk (hp t ht)
      have e : p t * (th * box_key h side lam (r t) a t + (1 - th) * box_key h side lam (r t) b t)
          = th * (p t * box_key h side lam (r t) a t)
            + (1 - th) * (p t * box_key h side lam (r t) b t) := by ring
      exact le_trans H1 (le_of_eq e)
    have Hsplit : sum n (fun t => th * (p t * box_key h side lam (r t) a t)
            + (1 - th) * (p t * box_key h side lam (r t) b t))
        = th * box_psi n p r h side lam a + (1 - th) * box_psi n p r h side lam b := by
      show sum n _ = th * sum n (fun t => p t * box_key h side lam (r t) a t)
        + (1 - th) * sum n (fun t => p t * box_key h side lam (r t) b t)
      rw [sum_plus, sum_scal_l, sum_scal_l]
    have h1 : 0 ≤ 1 - th := sub_nonneg.mpr Hth.2
    have k1 := mul_le_mul_of_nonneg_left
      (le_max_left (box_psi n p r h side lam a) (box_psi n p r h side lam b)) Hth.1
    have k2 := mul_le_mul_of_nonneg_left
      (le_max_right (box_psi n p r h side lam a) (box_psi n p r h side lam b)) h1
    have e : th * max (box_psi n p r h side lam a) (box_psi n p r h side lam b)
        + (1 - th) * max (box_psi n p r h side lam a) (box_psi n p r h side lam b)
        = max (box_psi n p r h side lam a) (box_psi n p r h side lam b) := by ring
    calc box_psi n p r h side lam x
        ≤ sum n (fun t => th * (p t * box_key h side lam (r t) a t)
            + (1 - th) * (p t * box_key h side lam (r t) b t)) := Hsum
      _ = th * box_psi n p r h side lam a + (1 - th) * box_psi n p r h side lam b := Hsplit
      _ ≤ th * max (box_psi n p r h side lam a) (box_psi n p r h side lam b)
          + (1 - th) * max (box_psi n p r h side lam a) (box_psi n p r h side lam b) :=
        add_le_add k1 k2
      _ = max (box_psi n p r h side lam a) (box_psi n p r h side lam b) := e
  · have hxa : x = a := le_antisymm (by linarith [hx.2]) hx.1
    rw [hxa]
    exact le_max_left _ _

/-! ## The grid -/

theorem grid_cover (g : ℕ → ℝ) (x : ℝ) (K : ℕ) (hK : 0 < K) (h0 : g 0 ≤ x) (hKx : x ≤ g K) :
    ∃ k, k < K ∧ g k ≤ x ∧ x ≤ g (k + 1) := by
  induction K with
  | zero => exact absurd hK (Nat.lt_irrefl 0)
  | succ K IH =>
    by_cases H : g K ≤ x
    · exact ⟨K, Nat.lt_succ_self K, H, hKx⟩
    · rcases Nat.eq_zero_or_pos K with hK0 | hKpos
      · subst hK0
        exact absurd h0 H
      · obtain ⟨k, hk, hb⟩ := IH hKpos (le_of_lt (not_le.mp H))
        exact ⟨k, by omega, hb⟩

theorem reweight_between (n : ℕ) (s s' r : ℕ → ℝ) (hn : 0 < n)
    (hd : ∀ t, t < n → |s t - s' t| ≤ r t) :
    box_zlo n (softmax n s') r ≤ reweight n s s' ∧ reweight n s s' ≤ box_zhi n (softmax n s') r := by
  constructor
  · apply sum_le
    intro t ht
    exact mul_le_mul_of_nonneg_left (exp_le_mono _ _ (abs_le_between _ _ (hd t ht)).1)
      (softmax_pos n s' t hn).le
  · apply sum_le
    intro t ht
    exact mul_le_mul_of_nonneg_left (exp_le_mono _ _ (abs_le_between _ _ (hd t ht)).2)
      (softmax_pos n s' t hn).le

/-! ## The box theorem -/

theorem tv_le_box (n : ℕ) (s s' r : ℕ → ℝ) (B : ℝ) (hn : 0 < n)
    (hd : ∀ t, t < n → |s t - s' t| ≤ r t) (hc : box_certificate n (softmax n s') r B) :
    tv n (softmax n s) (softmax n s') ≤ B := by
  have hc' : (∃ (h K : ℕ) (g : ℕ → ℝ) (lam : Bool → ℕ → ℝ), box_grid n (softmax n s') r h K g lam B)
      ∨ (∃ C : ℝ, (∀ t, t < n → r t ≤ C) ∧ tanh (C / 2) ≤ B) := hc
  rcases hc' with ⟨h, K, g, lam, hgrid⟩ | ⟨C, HC, HB⟩
  · have hgrid' : 0 < K ∧ g 0 * box_zhi n (softmax n s') r ≤ 1 ∧ 1 ≤ g K * box_zlo n (softmax n s') r ∧
        (∀ (b : Bool) (k : ℕ), k < K →
          (0 ≤ lam b k ∧ lam b k ≤ 1) ∧ box_psi n (softmax n s') r h b (lam b k) (g k) ≤ B ∧
          box_psi n (softmax n s') r h b (lam b k) (g (k + 1)) ≤ B) := hgrid
    obtain ⟨HK, Hlo, Hhi, Hg⟩ := hgrid'
    have HZ : 0 < reweight n s s' := reweight_pos n s s' hn
    have Hzb := reweight_between n s s' r hn hd
    have Hzlo : 0 < box_zlo n (softmax n s') r :=
      sum_pos n (fun t => softmax n s' t * Real.exp (-r t)) hn
        (fun t _ => mul_pos (softmax_pos n s' t hn) (Real.exp_pos (-r t)))
    have Hw0 : g 0 ≤ (reweight n s s')⁻¹ := by
      rcases le_or_lt (g 0) 0 with hg0 | hg0
      · exact le_trans hg0 (inv_pos.mpr HZ).le
      · have h1 : g 0 * reweight n s s' ≤ g 0 * box_zhi n (softmax n s') r :=
          mul_le_mul_of_nonneg_left Hzb.2 hg0.le
        have h2 : g 0 * reweight n s s' ≤ 1 := le_trans h1 Hlo
        have h3 : g 0 ≤ 1 / reweight n s s' := le_div_of_mul_le_pos HZ h2
        rw [one_div] at h3
        exact h3
    have HwK : (reweight n s s')⁻¹ ≤ g K := by
      have hgK : 0 ≤ g K := by
        rcases le_or_lt 0 (g K) with hk | hk
        · exact hk
        · have hneg : g K * box_zlo n (softmax n s') r < 0 := by
            first
              | exact mul_neg_of_neg_of_pos hk Hzlo
              | nlinarith [mul_pos (neg_pos.mpr hk) Hzlo]
          linarith
      have h1 : g K * box_zlo n (softmax n s') r ≤ g K * reweight n s s' :=
        mul_le_mul_of_nonneg_left Hzb.1 hgK
      have h2 : 1 ≤ g K * reweight n s s' := le_trans Hhi h1
      have h3 : 1 / reweight n s s' ≤ g K := div_le_of_le_mul_pos HZ h2
      rw [one_div] at h3
      exact h3
    obtain ⟨k, hk, hb⟩ := grid_cover g (reweight n s s')⁻¹ K HK Hw0 HwK
    obtain ⟨Hl, Ha, Hb'⟩ := Hg (exact_side n s s' h) k hk
    have H1 := tv_le_box_psi n s s' r h (lam (exact_side n s s' h) k) hn Hl hd
    have H2 := box_psi_convex_max n (softmax n s') r h (exact_side n s s' h)
      (lam (exact_side n s s' h) k) (g k) (g (k + 1)) (reweight n s s')⁻¹
      (fun t _ => (softmax_pos n s' t hn).le) Hl hb
    exact le_trans H1 (le_trans H2 (max_le Ha Hb'))
  · have H0 : 0 ≤ C := le_trans (abs_nonneg (s 0 - s' 0)) (le_trans (hd 0 hn) (HC 0 hn))
    exact centred_claim C B H0 HB n s s' (fun t ht => le_trans (hd t ht) (HC t ht))

/-! ## The per-run claim shape (dense KV, banded witness) -/

theorem box_banded_claim (B : ℝ) :
    ∀ (n nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q : ℕ → ℕ → ℝ) (k k' : ℕ → ℕ → ℕ → ℝ)
        (r : ℕ → ℝ),
      0 < n →
      0 ≤ scale →
      (∀ t, t < n → scale * banded_witness nb w q (bdiff (k t) (k' t)) ≤ r t) →
      box_certificate n (softmax n (fun t => scale * bdot nb w q (k' t))) r B →
      tv n (softmax n (fun t => scale * bdot nb w q (k t)))
        (softmax n (fun t => scale * bdot nb w q (k' t))) ≤ B :=
  fun n nb w scale q k k' r hn hs hr hc =>
    tv_le_box n (fun t => scale * bdot nb w q (k t)) (fun t => scale * bdot nb w q (k' t)) r B hn
      (fun t ht => le_trans (banded_radius nb w scale q k k' t hs) (hr t ht)) hc

/-! ## Counterexample: the grid must reach down to `1/zhi` -/

/-- Two keys, served scores `0, 0`, exact scores `1, 0`, radius `1`. The one-interval grid
`g = e, e` with `lam = 0` reaches up to `1/zlo = e` but not down to `1/Z`; every `box_psi` is `0`
there, yet `TV = (e − 1) / (2 (e + 1)) > 0`. So `g_0 zhi ≤ 1` cannot be dropped. -/
theorem box_needs_lower_cover :
    let s := fun (t : ℕ) => if t = 0 then (1 : ℝ) else 0
    let s' := fun (_ : ℕ) => (0 : ℝ)
    let r := fun (_ : ℕ) => (1 : ℝ)
    let g := fun (_ : ℕ) => Real.exp 1
    let lam := fun (_ : Bool) (_ : ℕ) => (0 : ℝ)
    (∀ t, t < 2 → |s t - s' t| ≤ r t)
    ∧ 1 ≤ g 1 * box_zlo 2 (softmax 2 s') r
    ∧ (∀ (b : Bool) (k : ℕ), k < 1 →
        (0 ≤ lam b k ∧ lam b k ≤ 1) ∧ box_psi 2 (softmax 2 s') r 0 b (lam b k) (g k) ≤ 0
        ∧ box_psi 2 (softmax 2 s') r 0 b (lam b k) (g (k + 1)) ≤ 0)
    ∧ 0 < tv 2 (softmax 2 s) (softmax 2 s') := by
  show (∀ t, t < 2 → |(if t = 0 then (1 : ℝ) else 0) - 0| ≤ 1)
    ∧ 1 ≤ Real.exp 1 * box_zlo 2 (softmax 2 (fun _ : ℕ => (0 : ℝ))) (fun _ : ℕ => (1 : ℝ))
    ∧ (∀ (b : Bool) (k : ℕ), k < 1 →
        ((0 : ℝ) ≤ 0 ∧ (0 : ℝ) ≤ 1)
        ∧ box_psi 2 (softmax 2 (fun _ : ℕ => (0 : ℝ))) (fun _ : ℕ => (1 : ℝ)) 0 b 0 (Real.exp 1) ≤ 0
        ∧ box_psi 2 (softmax 2 (fun _ : ℕ => (0 : ℝ))) (fun _ : ℕ => (1 : ℝ)) 0 b 0 (Real.exp 1) ≤ 0)
    ∧ 0 < tv 2 (softmax 2 (fun t : ℕ => if t = 0 then (1 : ℝ) else 0)) (softmax 2 (fun _ : ℕ => (0 : ℝ)))
  have Hee : Real.exp (-1) * Real.exp 1 = 1 := by
    rw [← Real.exp_add]
    norm_num
  have He1 : 2 ≤ Real.exp 1 := by
    have := Real.add_one_le_exp 1
    linarith
  have Hdown : box_down 1 (Real.exp 1) = 0 := by
    show max 0 (1 - Real.exp (-1) * Real.exp 1) = 0
    rw [Hee, sub_self, max_self]
  have Hterm : box_term 0 1 (Real.exp 1) = 0 := by
    show max (0 * box_up 1 (Real.exp 1)) ((1 - 0) * box_down 1 (Real.exp 1)) = 0
    rw [Hdown, zero_mul, mul_zero, max_self]
  have Hkey : ∀ (b : Bool) (t : ℕ), box_key 0 b 0 1 (Real.exp 1) t = 0 := by
    intro b t
    by_cases ht : t = 0
    · have ek : box_key 0 b 0 1 (Real.exp 1) t
          = if b then 0 * box_up 1 (Real.exp 1) else (1 - 0) * box_down 1 (Real.exp 1) := if_pos ht
      rw [ek, Hdown, zero_mul, mul_zero]
      first
        | done
        | exact ite_self 0
        | (cases b <;> rfl)
    · have ek : box_key 0 b 0 1 (Real.exp 1) t = box_term 0 1 (Real.exp 1) := if_neg ht
      rw [ek, Hterm]
  have Hpsi : ∀ b : Bool,
      box_psi 2 (softmax 2 (fun _ : ℕ => (0 : ℝ))) (fun _ : ℕ => (1 : ℝ)) 0 b 0 (Real.exp 1) = 0 := by
    intro b
    show sum 2 (fun t => softmax 2 (fun _ : ℕ => (0 : ℝ)) t * box_key 0 b 0 1 (Real.exp 1) t) = 0
    rw [sum_two_eq]
    show softmax 2 (fun _ : ℕ => (0 : ℝ)) 0 * box_key 0 b 0 1 (Real.exp 1) 0
      + softmax 2 (fun _ : ℕ => (0 : ℝ)) 1 * box_key 0 b 0 1 (Real.exp 1) 1 = 0
    rw [Hkey b 0, Hkey b 1, mul_zero, mul_zero, add_zero]
  have hP' : partition 2 (fun _ : ℕ => (0 : ℝ)) = 2 := by
    show sum 2 (fun _ => Real.exp 0) = 2
    rw [sum_const, Real.exp_zero]
    norm_num
  have hq : ∀ t, softmax 2 (fun _ : ℕ => (0 : ℝ)) t = 1 / 2 := fun t => by
    show Real.exp 0 / partition 2 (fun _ : ℕ => (0 : ℝ)) = 1 / 2
    rw [hP', Real.exp_zero]
  have hP : partition 2 (fun t : ℕ => if t = 0 then (1 : ℝ) else 0) = Real.exp 1 + 1 := by
    show sum 2 (fun t => Real.exp (if t = 0 then (1 : ℝ) else 0)) = Real.exp 1 + 1
    rw [sum_two_eq]
    show Real.exp (if (0 : ℕ) = 0 then (1 : ℝ) else 0) + Real.exp (if (1 : ℕ) = 0 then (1 : ℝ) else 0)
      = Real.exp 1 + 1
    rw [if_pos (rfl : (0 : ℕ) = 0), if_neg Nat.one_ne_zero, Real.exp_zero]
  have hp0 : softmax 2 (fun t : ℕ => if t = 0 then (1 : ℝ) else 0) 0 = Real.exp 1 / (Real.exp 1 + 1) := by
    show Real.exp (if (0 : ℕ) = 0 then (1 : ℝ) else 0)
      / partition 2 (fun t : ℕ => if t = 0 then (1 : ℝ) else 0) = _
    rw [hP, if_pos (rfl : (0 : ℕ) = 0)]
  refine ⟨?_, ?_, ?_, ?_⟩
  · intro t _
    by_cases ht : t = 0
    · rw [if_pos ht]
      norm_num
    · rw [if_neg ht]
      norm_num
  · have Hz : box_zlo 2 (softmax 2 (fun _ : ℕ => (0 : ℝ))) (fun _ : ℕ => (1 : ℝ)) = Real.exp (-1) := by
      show sum 2 (fun t => softmax 2 (fun _ : ℕ => (0 : ℝ)) t * Real.exp (-1)) = Real.exp (-1)
      rw [sum_scal_r 2 (Real.exp (-1)) (softmax 2 (fun _ : ℕ => (0 : ℝ))),
        softmax_sum 2 (fun _ : ℕ => (0 : ℝ)) (by norm_num), one_mul]
    have He : Real.exp 1 * box_zlo 2 (softmax 2 (fun _ : ℕ => (0 : ℝ))) (fun _ : ℕ => (1 : ℝ)) = 1 := by
      rw [Hz, mul_comm, Hee]
    exact le_of_eq He.symm
  · intro b k _
    exact ⟨⟨le_refl 0, zero_le_one⟩, le_of_eq (Hpsi b), le_of_eq (Hpsi b)⟩
  · have hE1pos : 0 < Real.exp 1 + 1 := by linarith
    have hab : Real.exp 1 / (Real.exp 1 + 1) + 1 / (Real.exp 1 + 1) = 1 := by
      rw [div_add_div_same, div_self hE1pos.ne']
    have hb : 1 / (Real.exp 1 + 1) ≤ 1 / 3 :=
      one_div_le_one_div_of_le (by norm_num) (by linarith)
    have hpos : 0 < Real.exp 1 / (Real.exp 1 + 1) - 1 / 2 := by linarith
    have h0 : 0 < |softmax 2 (fun t : ℕ => if t = 0 then (1 : ℝ) else 0) 0
        - softmax 2 (fun _ : ℕ => (0 : ℝ)) 0| := by
      rw [hp0, hq 0, abs_of_pos hpos]
      exact hpos
    have h1 : 0 ≤ |softmax 2 (fun t : ℕ => if t = 0 then (1 : ℝ) else 0) 1
        - softmax 2 (fun _ : ℕ => (0 : ℝ)) 1| := abs_nonneg _
    show 0 < 2⁻¹ * sum 2 (fun t => |softmax 2 (fun i : ℕ => if i = 0 then (1 : ℝ) else 0) t
      - softmax 2 (fun _ : ℕ => (0 : ℝ)) t|)
    rw [sum_two_eq]
    show 0 < 2⁻¹ * (|softmax 2 (fun i : ℕ => if i = 0 then (1 : ℝ) else 0) 0
        - softmax 2 (fun _ : ℕ => (0 : ℝ)) 0|
      + |softmax 2 (fun i : ℕ => if i = 0 then (1 : ℝ) else 0) 1 - softmax 2 (fun _ : ℕ => (0 : ℝ)) 1|)
    linarith

end WitprobeAnalytic
