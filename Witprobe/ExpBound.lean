/-!
# A decidable upper bound on the exponential

Bounds reach the kernel as natural numbers in fixed-point units: the value `x` is the number
`x * fixedOne` with `fixedOne = 2⁴⁸`. The softmax bridges need `e^t` from above. For
`0 ≤ t < N` we use

  `e^t ≤ (1 - t/N)^(-N) = (N / (N - t))^N`,  with `N = expN = 1024`,

which follows from `e^(-s) ≥ 1 - s` (optional analytic package: `WitprobeAnalytic.exp_le_expUpper`).
`expUpperOk tNum tDen E` decides `E / fixedOne ≥ (N·tDen / (N·tDen - tNum))^N` for `t = tNum/tDen`
by cross-multiplication. `N = 2^10`, so the power is ten squarings (`pow2k`), which keeps both the
elaborator and the kernel on GMP-accelerated multiplication.

Main results:
* `pow2k_eq`: `pow2k x k = x ^ (2 ^ k)`.
* `expUpperOk_mono`: a larger witness `E` is still accepted.
* `expUpperOk_zero_one`: at `t = 0` the witness `1.0` is accepted (and nothing below it).
-/

namespace Witprobe

/-- One in fixed-point units: `2⁴⁸`. -/
def fixedOne : Nat := 281474976710656

/-- The exponent `N = 1024 = 2¹⁰` of the rational exp bound. -/
def expN : Nat := 1024

/-- `x ^ (2 ^ k)` by `k` squarings. -/
def pow2k : Nat → Nat → Nat
  | x, 0 => x
  | x, k + 1 => pow2k (x * x) k

/-- One squaring doubles the exponent: `(x·x)^(2^k) = x^(2^(k+1))`. -/
theorem pow_sq_pow2 (x k : Nat) : (x * x) ^ (2 ^ k) = x ^ (2 ^ (k + 1)) := by
  have hm : 2 ^ (k + 1) = 2 ^ k * 2 := Nat.pow_succ
  rw [hm, Nat.pow_mul, Nat.pow_two, Nat.mul_pow]

/-- `pow2k` is a power. -/
theorem pow2k_eq : ∀ (k x : Nat), pow2k x k = x ^ (2 ^ k)
  | 0, x => by
    show x = x ^ (2 ^ 0)
    first
      | rfl
      | (rw [Nat.pow_zero, Nat.pow_one])
      | simp
  | k + 1, x => by
    show pow2k (x * x) k = x ^ (2 ^ (k + 1))
    rw [pow2k_eq k (x * x)]
    exact pow_sq_pow2 x k

/-- `E / fixedOne ≥ (1 - t/N)^(-N)` for `t = tNum / tDen`, with `0 ≤ t < N`. -/
def expUpperOk (tNum tDen e : Nat) : Bool :=
  decide (0 < tDen) && decide (tNum < expN * tDen) &&
    decide (fixedOne * pow2k (expN * tDen) 10 ≤ e * pow2k (expN * tDen - tNum) 10)

/-- Monotonicity in the witness: accepting `E` accepts every `E' ≥ E`. -/
theorem expUpperOk_mono {tNum tDen e e' : Nat} (h : expUpperOk tNum tDen e = true) (he : e ≤ e') :
    expUpperOk tNum tDen e' = true := by
  simp only [expUpperOk, Bool.and_eq_true, decide_eq_true_eq] at h ⊢
  refine ⟨h.1, ?_⟩
  exact Nat.le_trans h.2 (Nat.mul_le_mul he (Nat.le_refl _))

/-- At `t = 0` the witness `1.0` is accepted. -/
theorem expUpperOk_zero_one : expUpperOk 0 1 fixedOne = true := by decide

/-- Counterexample beside the rule: at `t = 0` a witness below `1.0` is refused,
so the check is not vacuous. -/
theorem expUpperOk_zero_below : expUpperOk 0 1 (fixedOne - 1) = false := by decide

/-- Counterexample: arguments outside `[0, N)` are refused whatever the witness. -/
theorem expUpperOk_out_of_range : expUpperOk 1024 1 (2 ^ 64) = false := by decide

end Witprobe
