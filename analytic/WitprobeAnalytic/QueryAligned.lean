import WitprobeAnalytic.LatentBridge

/-!
# Query-aligned score bridge (mirror of `coq/Witprobe/QueryAligned.v`)

A query-aligned witness stores, per key residual `dk = k − k'` (width `d`), coordinates `a`
(width `r`) in a calibrated basis `U` (`(U a)_i = Σ_j U i j · a j`, `matvec`) and the remainder
`rr = dk − U a`, summarised by `‖rr‖` and `‖Uᵀ rr‖`. At read time, with `b = Uᵀ q`, the meter forms
`c^qa = scale · (|⟨Uᵀ q, a⟩| + ‖q − U b‖ ‖rr‖ + ‖b‖ ‖Uᵀ rr‖)`. Only the decomposition
`dk = U a + rr` is assumed: `U` need not be orthonormal and `b` may be any vector.

Every theorem has the name, hypotheses and conclusion of the Coq lemma of the same name; the
proofs follow the Coq proofs step by step. Not yet mirrored (pending in the inventory): the
counterexamples `qa_bridge_needs_orth` and `qa_bridge_needs_remainder`.
-/

namespace WitprobeAnalytic

/-- The meter's per-key radius (before the scale). -/
noncomputable def qa_radius (d r : ℕ) (U : ℕ → ℕ → ℝ) (q a rr b : ℕ → ℝ) : ℝ :=
  |dot r (eff_query d U q) a| + norm2 d (vdiff q (matvec r U b)) * norm2 d rr
    + norm2 r b * norm2 r (eff_query d U rr)

theorem dot_comm (d : ℕ) (x y : ℕ → ℝ) : dot d x y = dot d y x := by
  show sum d (fun i => x i * y i) = sum d (fun i => y i * x i)
  exact sum_ext d (fun i => x i * y i) (fun i => y i * x i) (fun i _ => mul_comm (x i) (y i))

theorem dot_plus_r (d : ℕ) (x y z : ℕ → ℝ) :
    dot d x (fun i => y i + z i) = dot d x y + dot d x z := by
  show sum d (fun i => x i * (y i + z i)) = sum d (fun i => x i * y i) + sum d (fun i => x i * z i)
  rw [← sum_plus]
  exact sum_ext d (fun i => x i * (y i + z i)) (fun i => x i * y i + x i * z i)
    (fun i _ => mul_add (x i) (y i) (z i))

theorem dot_split_l (d : ℕ) (x y z : ℕ → ℝ) :
    dot d x z = dot d (vdiff x y) z + dot d y z := by
  show sum d (fun i => x i * z i) = sum d (fun i => (x i - y i) * z i) + sum d (fun i => y i * z i)
  rw [← sum_plus]
  exact sum_ext d (fun i => x i * z i) (fun i => (x i - y i) * z i + y i * z i)
    (fun i _ => by show x i * z i = (x i - y i) * z i + y i * z i; ring)

theorem dot_ext_r (d : ℕ) (x y z : ℕ → ℝ) :
    (∀ i, i < d → y i = z i) → dot d x y = dot d x z := by
  intro h
  show sum d (fun i => x i * y i) = sum d (fun i => x i * z i)
  exact sum_ext d (fun i => x i * y i) (fun i => x i * z i) (fun i hi => by show x i * y i = x i * z i; rw [h i hi])

theorem qa_radius_nonneg (d r : ℕ) (U : ℕ → ℕ → ℝ) (q a rr b : ℕ → ℝ) :
    0 ≤ qa_radius d r U q a rr b := by
  have h1 : 0 ≤ |dot r (eff_query d U q) a| := abs_nonneg _
  have h2 : 0 ≤ norm2 d (vdiff q (matvec r U b)) * norm2 d rr :=
    mul_nonneg (norm2_nonneg d (vdiff q (matvec r U b))) (norm2_nonneg d rr)
  have h3 : 0 ≤ norm2 r b * norm2 r (eff_query d U rr) :=
    mul_nonneg (norm2_nonneg r b) (norm2_nonneg r (eff_query d U rr))
  show 0 ≤ |dot r (eff_query d U q) a| + norm2 d (vdiff q (matvec r U b)) * norm2 d rr
    + norm2 r b * norm2 r (eff_query d U rr)
  linarith

/-- `|x + y| ≤ |x| + |y|` (named here so the proofs below do not depend on Mathlib's spelling). -/
theorem abs_add_two (x y : ℝ) : |x + y| ≤ |x| + |y| := by
  first
    | exact abs_add _ _
    | exact abs_add_le _ _

/-- The bridge, hypothesis-free apart from the decomposition. -/
theorem qa_bridge (d r : ℕ) (U : ℕ → ℕ → ℝ) (q dk a rr b : ℕ → ℝ) :
    (∀ i, i < d → dk i = matvec r U a i + rr i) →
    |dot d q dk| ≤ qa_radius d r U q a rr b := by
  intro hdec
  have e1 : dot d q dk = dot r (eff_query d U q) a + dot d q rr := by
    rw [dot_ext_r d q dk (fun i => matvec r U a i + rr i) hdec, dot_plus_r d q (matvec r U a) rr,
      adjoint d r U q a]
  have e2 : dot d q rr = dot d (vdiff q (matvec r U b)) rr + dot r b (eff_query d U rr) := by
    rw [dot_split_l d q (matvec r U b) rr, dot_comm d (matvec r U b) rr, adjoint d r U rr b,
      dot_comm r (eff_query d U rr) b]
  have h1 := cauchy_schwarz d (vdiff q (matvec r U b)) rr
  have h2 := cauchy_schwarz r b (eff_query d U rr)
  have t1 := abs_add_two (dot r (eff_query d U q) a)
    (dot d (vdiff q (matvec r U b)) rr + dot r b (eff_query d U rr))
  have t2 := abs_add_two (dot d (vdiff q (matvec r U b)) rr) (dot r b (eff_query d U rr))
  rw [e1, e2]
  show |dot r (eff_query d U q) a + (dot d (vdiff q (matvec r U b)) rr + dot r b (eff_query d U rr))|
    ≤ |dot r (eff_query d U q) a| + norm2 d (vdiff q (matvec r U b)) * norm2 d rr
      + norm2 r b * norm2 r (eff_query d U rr)
  linarith

/-- The score form: `|scale ⟨q, k⟩ − scale ⟨q, k'⟩| ≤ scale · qa_radius` for `scale ≥ 0`. -/
theorem qa_score_bridge (d r : ℕ) (U : ℕ → ℕ → ℝ) (scale : ℝ) (q k k' a rr b : ℕ → ℝ) :
    0 ≤ scale →
    (∀ i, i < d → k i - k' i = matvec r U a i + rr i) →
    |scale * dot d q k - scale * dot d q k'| ≤ scale * qa_radius d r U q a rr b := by
  intro hs hdec
  rw [abs_scal_diff scale (dot d q k) (dot d q k') hs, dot_minus_r d q k k']
  exact mul_le_mul_of_nonneg_left (qa_bridge d r U q (fun i => k i - k' i) a rr b hdec) hs

theorem norm2_zero (n : ℕ) (x : ℕ → ℝ) : (∀ j, j < n → x j = 0) → norm2 n x = 0 := by
  intro h
  show Real.sqrt (sum n (fun i => x i * x i)) = 0
  rw [sum_ext n (fun i => x i * x i) (fun _ => 0) (fun j hj => by show x j * x j = 0; rw [h j hj, mul_zero])]
  first
    | rw [sum_const, mul_zero, Real.sqrt_zero]
    | simp [sum]

/-- With an exactly orthogonal remainder (`Uᵀ rr = 0`) the correction term vanishes. -/
theorem qa_bridge_orth (d r : ℕ) (U : ℕ → ℕ → ℝ) (q dk a rr b : ℕ → ℝ) :
    (∀ i, i < d → dk i = matvec r U a i + rr i) →
    (∀ j, j < r → eff_query d U rr j = 0) →
    |dot d q dk| ≤ |dot r (eff_query d U q) a| + norm2 d (vdiff q (matvec r U b)) * norm2 d rr := by
  intro hdec horth
  have h := qa_bridge d r U q dk a rr b hdec
  have h0 : norm2 r (eff_query d U rr) = 0 := norm2_zero r (eff_query d U rr) horth
  have h' : |dot d q dk| ≤ |dot r (eff_query d U q) a| + norm2 d (vdiff q (matvec r U b)) * norm2 d rr
      + norm2 r b * norm2 r (eff_query d U rr) := h
  rw [h0, mul_zero, add_zero] at h'
  exact h'

end WitprobeAnalytic
