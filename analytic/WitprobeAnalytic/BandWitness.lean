import WitprobeAnalytic.ScoreBridge

/-!
# The band witness brackets the residual norm (mirror of `coq/Witprobe/BandWitness.v`)

For a residual split into `nb` bands the band witness is `W = Σ_b ‖Δ_b‖`. The production meter
flags `W < ‖Δ‖ (1 − tol)` and `W > √bands ‖Δ‖ (1 + tol)` as implementation errors; the two
inequalities are proved here. Every theorem has the name, hypotheses and conclusion of the Coq
lemma of the same name.

Main results: `bnorm_le_witness` (`‖Δ‖ ≤ Σ_b ‖Δ_b‖`), `witness_le_sqrt_bands`
(`Σ_b ‖Δ_b‖ ≤ √nb · ‖Δ‖`). Not yet mirrored (pending in the inventory): the counterexamples
`witness_le_norm_fails`, `witness_ge_sqrt_bands_fails`.
-/

namespace WitprobeAnalytic

/-- The witness `W = Σ_b ‖x_b‖`. -/
noncomputable def witness (nb : ℕ) (w : ℕ → ℕ) (x : ℕ → ℕ → ℝ) : ℝ :=
  sum nb (fun b => norm2 (w b) (x b))

/-- `√(a + b) ≤ √a + √b` for `a, b ≥ 0`. -/
theorem sqrt_plus_le (a b : ℝ) (ha : 0 ≤ a) (hb : 0 ≤ b) :
    Real.sqrt (a + b) ≤ Real.sqrt a + Real.sqrt b := by
  have h1 : Real.sqrt a * Real.sqrt a = a := Real.mul_self_sqrt ha
  have h2 : Real.sqrt b * Real.sqrt b = b := Real.mul_self_sqrt hb
  have h3 : 0 ≤ Real.sqrt a * Real.sqrt b := mul_nonneg (Real.sqrt_nonneg a) (Real.sqrt_nonneg b)
  have h : a + b ≤ (Real.sqrt a + Real.sqrt b) * (Real.sqrt a + Real.sqrt b) := by
    nlinarith [h1, h2, h3]
  calc Real.sqrt (a + b)
      ≤ Real.sqrt ((Real.sqrt a + Real.sqrt b) * (Real.sqrt a + Real.sqrt b)) := Real.sqrt_le_sqrt h
    _ = Real.sqrt a + Real.sqrt b :=
        Real.sqrt_mul_self (add_nonneg (Real.sqrt_nonneg a) (Real.sqrt_nonneg b))

/-- `‖x‖ ≤ Σ_b ‖x_b‖`. -/
theorem bnorm_le_witness (nb : ℕ) (w : ℕ → ℕ) (x : ℕ → ℕ → ℝ) : bnorm nb w x ≤ witness nb w x := by
  induction nb with
  | zero =>
    show Real.sqrt (sum 0 (fun b => sum (w b) (fun i => x b i * x b i)))
      ≤ sum 0 (fun b => norm2 (w b) (x b))
    rw [sum_O, sum_O, Real.sqrt_zero]
    first
      | done
      | exact le_refl _
  | succ nb ih =>
    show Real.sqrt (sum (nb + 1) (fun b => sum (w b) (fun i => x b i * x b i)))
      ≤ sum (nb + 1) (fun b => norm2 (w b) (x b))
    rw [sum_S, sum_S]
    have hS : 0 ≤ sum nb (fun b => sum (w b) (fun i => x b i * x b i)) :=
      sum_nonneg nb (fun b => sum (w b) (fun i => x b i * x b i)) (fun b _ => sumsq_nonneg (w b) (x b))
    exact le_trans (sqrt_plus_le _ _ hS (sumsq_nonneg (w nb) (x nb))) (add_le_add ih (le_refl _))

/-- `Σ_b ‖x_b‖ ≤ √nb · ‖x‖`. -/
theorem witness_le_sqrt_bands (nb : ℕ) (w : ℕ → ℕ) (x : ℕ → ℕ → ℝ) :
    witness nb w x ≤ Real.sqrt (nb : ℝ) * bnorm nb w x := by
  have Hcs := cauchy_schwarz nb (fun _ => (1 : ℝ)) (fun b => norm2 (w b) (x b))
  have Hdot : dot nb (fun _ => (1 : ℝ)) (fun b => norm2 (w b) (x b)) = witness nb w x := by
    show sum nb (fun i => 1 * norm2 (w i) (x i)) = sum nb (fun b => norm2 (w b) (x b))
    exact sum_ext nb (fun i => 1 * norm2 (w i) (x i)) (fun b => norm2 (w b) (x b))
      (fun b _ => one_mul _)
  have Hones : norm2 nb (fun _ => (1 : ℝ)) = Real.sqrt (nb : ℝ) := by
    show Real.sqrt (sum nb (fun _ => (1 : ℝ) * 1)) = Real.sqrt (nb : ℝ)
    first
      | (rw [sum_const, mul_one, mul_one]; done)
      | (rw [sum_const]; simp)
  have Hn : norm2 nb (fun b => norm2 (w b) (x b)) = bnorm nb w x := by
    show Real.sqrt (sum nb (fun b => norm2 (w b) (x b) * norm2 (w b) (x b)))
      = Real.sqrt (sum nb (fun b => sum (w b) (fun i => x b i * x b i)))
    rw [sum_ext nb (fun b => norm2 (w b) (x b) * norm2 (w b) (x b))
      (fun b => sum (w b) (fun i => x b i * x b i)) (fun b _ => norm2_sq (w b) (x b))]
  rw [Hdot, Hones, Hn] at Hcs
  exact le_trans (le_abs_self _) Hcs

end WitprobeAnalytic
