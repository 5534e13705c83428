import WitprobeAnalytic.Sum

/-!
# Score bridge: from band residual norms to a per-key score-error bound
(mirror of `coq/Witprobe/ScoreBridge.v`)

Vectors are `ℕ → ℝ` read on `0 … d-1`. Definitions: `dot d x y = Σ_i x_i y_i`,
`norm2 d x = √(Σ_i x_i²)`; a banded vector is `ℕ → ℕ → ℝ` (band `b`, index `i` inside the band),
band `b` has width `w b`; `bdot`, `bnorm`, `bdiff`, `banded_witness nb w q dk = Σ_b ‖q_b‖ ‖dk_b‖`;
`offset w b = w 0 + … + w (b-1)` and `band_split w x b i = x (offset w b + i)`.
Every theorem has the name, hypotheses and conclusion of the Coq lemma of the same name.

Main results: `cauchy_schwarz`; `bdot_flat`, `bnorm_flat`, `offset_const` (banded = flat
regrouped by bands); `score_bridge_banded`; `banded_witness_le_plain`; `score_bridge_plain`.
Counterexample: `norm2_needs_sqrt`. Not yet mirrored (pending in the inventory):
`score_bridge_needs_scale_nonneg`, `banded_witness_le_plain_strict`.

Note: `WitprobeAnalytic.sq_nonneg` is Coq's `r * r` form; it shadows Mathlib's `sq_nonneg`
(`r ^ 2`) inside this namespace for files that import this one.
-/

namespace WitprobeAnalytic

noncomputable def dot (d : ℕ) (x y : ℕ → ℝ) : ℝ := sum d (fun i => x i * y i)

noncomputable def norm2 (d : ℕ) (x : ℕ → ℝ) : ℝ := Real.sqrt (sum d (fun i => x i * x i))

theorem sq_nonneg (r : ℝ) : 0 ≤ r * r := mul_self_nonneg r

theorem sumsq_nonneg (d : ℕ) (x : ℕ → ℝ) : 0 ≤ sum d (fun i => x i * x i) :=
  sum_nonneg d (fun i => x i * x i) (fun i _ => sq_nonneg (x i))

theorem norm2_nonneg (d : ℕ) (x : ℕ → ℝ) : 0 ≤ norm2 d x := Real.sqrt_nonneg _

theorem norm2_sq (d : ℕ) (x : ℕ → ℝ) : norm2 d x * norm2 d x = sum d (fun i => x i * x i) :=
  Real.mul_self_sqrt (sumsq_nonneg d x)

/-- `⟨x, y⟩ − ⟨x, y'⟩ = ⟨x, y − y'⟩`. -/
theorem dot_minus_r (d : ℕ) (x y y' : ℕ → ℝ) :
    dot d x y - dot d x y' = dot d x (fun i => y i - y' i) := by
  show sum d (fun i => x i * y i) - sum d (fun i => x i * y' i) = sum d (fun i => x i * (y i - y' i))
  rw [← sum_minus]
  exact sum_ext d (fun i => x i * y i - x i * y' i) (fun i => x i * (y i - y' i))
    (fun i _ => (mul_sub (x i) (y i) (y' i)).symm)

/-- The induction step of Cauchy-Schwarz. -/
theorem cs_step (A X Y a b : ℝ) (hX : 0 ≤ X) (hY : 0 ≤ Y) (h : A * A ≤ X * Y) :
    (A + a * b) * (A + a * b) ≤ (X + a * a) * (Y + b * b) := by
  have hP : 0 ≤ X * (b * b) + Y * (a * a) :=
    add_nonneg (mul_nonneg hX (sq_nonneg b)) (mul_nonneg hY (sq_nonneg a))
  have h1 : A * A * ((a * b) * (a * b)) ≤ X * Y * ((a * b) * (a * b)) :=
    mul_le_mul_of_nonneg_right h (sq_nonneg (a * b))
  have hQ : (2 * A * (a * b)) * (2 * A * (a * b))
      ≤ (X * (b * b) + Y * (a * a)) * (X * (b * b) + Y * (a * a)) := by
    nlinarith [sq_nonneg (X * (b * b) - Y * (a * a)), h1]
  have h2 : 2 * A * (a * b) ≤ X * (b * b) + Y * (a * a) := by
    nlinarith [hQ, hP]
  nlinarith [h, h2]

/-- Squared Cauchy-Schwarz. -/
theorem cauchy_schwarz_sq (d : ℕ) (x y : ℕ → ℝ) :
    dot d x y * dot d x y ≤ sum d (fun i => x i * x i) * sum d (fun i => y i * y i) := by
  induction d with
  | zero =>
    show sum 0 (fun i => x i * y i) * sum 0 (fun i => x i * y i)
      ≤ sum 0 (fun i => x i * x i) * sum 0 (fun i => y i * y i)
    rw [sum_O, sum_O, sum_O]
    first
      | done
      | exact le_refl _
  | succ d ih =>
    show sum (d + 1) (fun i => x i * y i) * sum (d + 1) (fun i => x i * y i)
      ≤ sum (d + 1) (fun i => x i * x i) * sum (d + 1) (fun i => y i * y i)
    rw [sum_S, sum_S, sum_S]
    exact cs_step (dot d x y) _ _ (x d) (y d) (sumsq_nonneg d x) (sumsq_nonneg d y) ih

/-- `|A| ≤ √X · √Y` from `A² ≤ X Y` and `X, Y ≥ 0`. -/
theorem abs_le_sqrt_mult (A X Y : ℝ) (hX : 0 ≤ X) (hY : 0 ≤ Y) (h : A * A ≤ X * Y) :
    |A| ≤ Real.sqrt X * Real.sqrt Y := by
  rw [← Real.sqrt_mul hX Y, ← Real.sqrt_mul_self_eq_abs]
  exact Real.sqrt_le_sqrt h

/-- `|Σ_i x_i y_i| ≤ ‖x‖₂ ‖y‖₂`. -/
theorem cauchy_schwarz : ∀ (d : ℕ) (x y : ℕ → ℝ), |dot d x y| ≤ norm2 d x * norm2 d y :=
  fun d x y => abs_le_sqrt_mult _ _ _ (sumsq_nonneg d x) (sumsq_nonneg d y) (cauchy_schwarz_sq d x y)

/-- `sum 1 f = f 0`. -/
theorem sum_one_eq (f : ℕ → ℝ) : sum 1 f = f 0 := by
  rw [show (1 : ℕ) = 0 + 1 from rfl, sum_S, sum_O, zero_add]

/-- Counterexample: the squared norms (no square root) are not a bound (`d = 1`, `x = y = 1/2`). -/
theorem norm2_needs_sqrt :
    let x := fun (_ : ℕ) => (2⁻¹ : ℝ)
    |dot 1 x x| > sum 1 (fun i => x i * x i) * sum 1 (fun i => x i * x i) := by
  intro x
  have hx : ∀ i, x i = 2⁻¹ := fun i => rfl
  have e1 : dot 1 x x = 2⁻¹ * 2⁻¹ := by
    show sum 1 (fun i => x i * x i) = 2⁻¹ * 2⁻¹
    rw [sum_one_eq, hx 0]
  have e2 : sum 1 (fun i => x i * x i) = 2⁻¹ * 2⁻¹ := by
    rw [sum_one_eq, hx 0]
  rw [e1, e2, abs_of_pos (show (0 : ℝ) < 2⁻¹ * 2⁻¹ by norm_num)]
  norm_num

/-! ## Banded vectors -/

noncomputable def bdot (nb : ℕ) (w : ℕ → ℕ) (x y : ℕ → ℕ → ℝ) : ℝ :=
  sum nb (fun b => dot (w b) (x b) (y b))

noncomputable def bnorm (nb : ℕ) (w : ℕ → ℕ) (x : ℕ → ℕ → ℝ) : ℝ :=
  Real.sqrt (sum nb (fun b => sum (w b) (fun i => x b i * x b i)))

noncomputable def bdiff (x y : ℕ → ℕ → ℝ) : ℕ → ℕ → ℝ := fun b i => x b i - y b i

noncomputable def banded_witness (nb : ℕ) (w : ℕ → ℕ) (q dk : ℕ → ℕ → ℝ) : ℝ :=
  sum nb (fun b => norm2 (w b) (q b) * norm2 (w b) (dk b))

/-- Start of band `b` in the flat vector: `w 0 + … + w (b-1)`. -/
def offset (w : ℕ → ℕ) : ℕ → ℕ
  | 0 => 0
  | b + 1 => offset w b + w b

/-- The banded view of a flat vector. -/
noncomputable def band_split (w : ℕ → ℕ) (x : ℕ → ℝ) : ℕ → ℕ → ℝ := fun b i => x (offset w b + i)

/-- Equal widths: band `b` starts at `b · wd`. -/
theorem offset_const (wd b : ℕ) : offset (fun _ => wd) b = b * wd := by
  induction b with
  | zero =>
    show 0 = 0 * wd
    rw [Nat.zero_mul]
  | succ b ih =>
    show offset (fun _ => wd) b + wd = (b + 1) * wd
    rw [ih, Nat.add_mul, Nat.one_mul]

/-- A sum over `a + c` indices is the sum over the first `a` plus the shifted sum over `c`. -/
theorem sum_app (a c : ℕ) (f : ℕ → ℝ) : sum (a + c) f = sum a f + sum c (fun i => f (a + i)) := by
  induction c with
  | zero =>
    rw [Nat.add_zero, sum_O, add_zero]
  | succ c ih =>
    rw [show a + (c + 1) = (a + c) + 1 from rfl, sum_S, ih, sum_S]
    ring

/-- Regrouping a flat sum by bands. -/
theorem sum_bands (nb : ℕ) (w : ℕ → ℕ) (f : ℕ → ℝ) :
    sum (offset w nb) f = sum nb (fun b => sum (w b) (fun i => f (offset w b + i))) := by
  induction nb with
  | zero =>
    show sum 0 f = sum 0 (fun b => sum (w b) (fun i => f (offset w b + i)))
    rw [sum_O, sum_O]
  | succ nb ih =>
    show sum (offset w nb + w nb) f = sum (nb + 1) (fun b => sum (w b) (fun i => f (offset w b + i)))
    rw [sum_app, ih, sum_S]

theorem bdot_flat (nb : ℕ) (w : ℕ → ℕ) (x y : ℕ → ℝ) :
    bdot nb w (band_split w x) (band_split w y) = dot (offset w nb) x y := by
  show sum nb (fun b => sum (w b) (fun i => x (offset w b + i) * y (offset w b + i)))
    = sum (offset w nb) (fun i => x i * y i)
  rw [sum_bands]

theorem bnorm_flat (nb : ℕ) (w : ℕ → ℕ) (x : ℕ → ℝ) :
    bnorm nb w (band_split w x) = norm2 (offset w nb) x := by
  show Real.sqrt (sum nb (fun b => sum (w b) (fun i => x (offset w b + i) * x (offset w b + i))))
    = Real.sqrt (sum (offset w nb) (fun i => x i * x i))
  rw [sum_bands]

/-- Splitting commutes with the residual. -/
theorem band_split_diff (w : ℕ → ℕ) (x y : ℕ → ℝ) :
    band_split w (fun t => x t - y t) = bdiff (band_split w x) (band_split w y) := rfl

theorem bdot_minus_r (nb : ℕ) (w : ℕ → ℕ) (q k k' : ℕ → ℕ → ℝ) :
    bdot nb w q k - bdot nb w q k' = bdot nb w q (bdiff k k') := by
  show sum nb (fun b => dot (w b) (q b) (k b)) - sum nb (fun b => dot (w b) (q b) (k' b))
    = sum nb (fun b => dot (w b) (q b) (bdiff k k' b))
  rw [← sum_minus]
  exact sum_ext nb (fun b => dot (w b) (q b) (k b) - dot (w b) (q b) (k' b))
    (fun b => dot (w b) (q b) (bdiff k k' b)) (fun b _ => dot_minus_r (w b) (q b) (k b) (k' b))

/-- Per band Cauchy-Schwarz, summed: `|bdot q dk| ≤ Σ_b ‖q_b‖ ‖dk_b‖`. -/
theorem bdot_le_banded_witness (nb : ℕ) (w : ℕ → ℕ) (q dk : ℕ → ℕ → ℝ) :
    |bdot nb w q dk| ≤ banded_witness nb w q dk := by
  show |sum nb (fun b => dot (w b) (q b) (dk b))|
    ≤ sum nb (fun b => norm2 (w b) (q b) * norm2 (w b) (dk b))
  exact le_trans (sum_abs_le nb (fun b => dot (w b) (q b) (dk b)))
    (sum_le nb (fun b => |dot (w b) (q b) (dk b)|) (fun b => norm2 (w b) (q b) * norm2 (w b) (dk b))
      (fun b _ => cauchy_schwarz (w b) (q b) (dk b)))

theorem banded_witness_nonneg (nb : ℕ) (w : ℕ → ℕ) (q dk : ℕ → ℕ → ℝ) :
    0 ≤ banded_witness nb w q dk :=
  sum_nonneg nb (fun b => norm2 (w b) (q b) * norm2 (w b) (dk b))
    (fun b _ => mul_nonneg (norm2_nonneg _ _) (norm2_nonneg _ _))

theorem abs_scal_diff (scale a a' : ℝ) (hs : 0 ≤ scale) :
    |scale * a - scale * a'| = scale * |a - a'| := by
  rw [← mul_sub, abs_mul, abs_of_nonneg hs]

/-! ## The score bridges -/

/-- Banded score bridge: for `scale ≥ 0`,
`|scale ⟨q, k⟩ − scale ⟨q, k'⟩| ≤ scale · Σ_b ‖q_b‖ ‖k_b − k'_b‖`. -/
theorem score_bridge_banded : ∀ (nb : ℕ) (w : ℕ → ℕ) (q k k' : ℕ → ℕ → ℝ) (scale : ℝ),
    0 ≤ scale →
    |scale * bdot nb w q k - scale * bdot nb w q k'| ≤ scale * banded_witness nb w q (bdiff k k') := by
  intro nb w q k k' scale hs
  rw [abs_scal_diff scale _ _ hs, bdot_minus_r]
  exact mul_le_mul_of_nonneg_left (bdot_le_banded_witness nb w q (bdiff k k')) hs

/-- A band norm is at most the whole norm. -/
theorem band_norm_le_bnorm (nb : ℕ) (w : ℕ → ℕ) (q : ℕ → ℕ → ℝ) (b : ℕ) (hb : b < nb) :
    norm2 (w b) (q b) ≤ bnorm nb w q := by
  show Real.sqrt (sum (w b) (fun i => q b i * q b i))
    ≤ Real.sqrt (sum nb (fun b => sum (w b) (fun i => q b i * q b i)))
  exact Real.sqrt_le_sqrt (sum_term_le nb (fun b => sum (w b) (fun i => q b i * q b i)) b
    (fun i _ => sumsq_nonneg (w i) (q i)) hb)

/-- `Σ_b ‖q_b‖ ‖dk_b‖ ≤ ‖q‖ · Σ_b ‖dk_b‖`. -/
theorem banded_witness_le_plain : ∀ (nb : ℕ) (w : ℕ → ℕ) (q dk : ℕ → ℕ → ℝ),
    banded_witness nb w q dk ≤ bnorm nb w q * sum nb (fun b => norm2 (w b) (dk b)) := by
  intro nb w q dk
  show sum nb (fun b => norm2 (w b) (q b) * norm2 (w b) (dk b))
    ≤ bnorm nb w q * sum nb (fun b => norm2 (w b) (dk b))
  rw [← sum_scal_l]
  exact sum_le nb (fun b => norm2 (w b) (q b) * norm2 (w b) (dk b))
    (fun b => bnorm nb w q * norm2 (w b) (dk b))
    (fun b hb => mul_le_mul_of_nonneg_right (band_norm_le_bnorm nb w q b hb) (norm2_nonneg _ _))

/-- Plain score bridge: for `scale ≥ 0`,
`|scale ⟨q, k⟩ − scale ⟨q, k'⟩| ≤ scale · ‖q‖ · Σ_b ‖k_b − k'_b‖`. -/
theorem score_bridge_plain : ∀ (nb : ℕ) (w : ℕ → ℕ) (q k k' : ℕ → ℕ → ℝ) (scale : ℝ),
    0 ≤ scale →
    |scale * bdot nb w q k - scale * bdot nb w q k'|
      ≤ scale * (bnorm nb w q * sum nb (fun b => norm2 (w b) (bdiff k k' b))) := by
  intro nb w q k k' scale hs
  exact le_trans (score_bridge_banded nb w q k k' scale hs)
    (mul_le_mul_of_nonneg_left (banded_witness_le_plain nb w q (bdiff k k')) hs)

end WitprobeAnalytic
