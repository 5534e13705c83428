/-!
# The sampling corruption sentinel: detection latency, decided

Each round draws `r` of `M` slots uniformly with replacement; `B` are corrupted. A round misses
every corrupted slot with probability `q = (1 − B/M)^r`, and `n` independent rounds miss with
probability `q^n` (paper section 2.4, Lemma 3). Detection with confidence `1 − δ` within `n`
rounds is `q^n ≤ δ`; with `δ = δn/δd` this is, cross-multiplied,

  `((M − B)^r)^n · δd ≤ (M^r)^n · δn`.

Powers are computed by `npow` (structural recursion, so both the elaborator and the kernel
evaluate it with GMP multiplication, at recursion depth `r` and `n`, never `r·n`).

Main results:
* `Witprobe.missWithin_succ`, `Witprobe.sentinel_rounds`: more rounds never hurt (monotone in
  `n`), so the detection latency is the least `n` with `q^n ≤ δ`.
* `Witprobe.sentinel_rounds_r32` … `_r256`: the paper's worked numbers at `M = 1024`, `B = 1`,
  `δ = 0.01`: 148, 74, 37 and 19 rounds for `r = 32, 64, 128, 256`, each minimal (one round
  fewer does not reach 99%).
-/

namespace Witprobe

/-- `x ^ k` by structural recursion. -/
def npow (x : Nat) : Nat → Nat
  | 0 => 1
  | k + 1 => npow x k * x

/-- Decide `((M − B)/M)^(r·n) ≤ δn/δd`: `n` rounds of `r` draws miss with probability at most
`δ`. -/
def missWithin (M B r n dNum dDen : Nat) : Bool :=
  decide (npow (npow (M - B) r) n * dDen ≤ npow (npow M r) n * dNum)

/-- Powers are monotone in the base. -/
theorem npow_le_npow {a b : Nat} (h : a ≤ b) : ∀ k : Nat, npow a k ≤ npow b k
  | 0 => Nat.le_refl 1
  | k + 1 => Nat.mul_le_mul (npow_le_npow h k) h

/-- More rounds never hurt: if `n` rounds reach confidence `1 − δ`, so do `n + 1`. -/
theorem missWithin_succ {M B r n dNum dDen : Nat} (hB : B ≤ M)
    (h : missWithin M B r n dNum dDen = true) : missWithin M B r (n + 1) dNum dDen = true := by
  have h' : npow (npow (M - B) r) n * dDen ≤ npow (npow M r) n * dNum := of_decide_eq_true h
  apply decide_eq_true
  have hab : npow (M - B) r ≤ npow M r := npow_le_npow (Nat.sub_le M B) r
  -- a^(n+1) δd = (a^n δd) a ≤ (b^n δn) a ≤ (b^n δn) b = b^(n+1) δn
  show npow (npow (M - B) r) n * npow (M - B) r * dDen ≤ npow (npow M r) n * npow M r * dNum
  have e1 : npow (npow (M - B) r) n * npow (M - B) r * dDen
      = npow (npow (M - B) r) n * dDen * npow (M - B) r := Nat.mul_right_comm _ _ _
  have e2 : npow (npow M r) n * npow M r * dNum = npow (npow M r) n * dNum * npow M r :=
    Nat.mul_right_comm _ _ _
  have s1 : npow (npow (M - B) r) n * dDen * npow (M - B) r
      ≤ npow (npow M r) n * dNum * npow (M - B) r := Nat.mul_le_mul h' (Nat.le_refl _)
  have s2 : npow (npow M r) n * dNum * npow (M - B) r ≤ npow (npow M r) n * dNum * npow M r :=
    Nat.mul_le_mul (Nat.le_refl _) hab
  omega

/-- Detection latency (Lemma 3): once `n` rounds reach confidence `1 − δ`, every later round
count does too, so the latency is the least such `n`. -/
theorem sentinel_rounds {M B r n dNum dDen : Nat} (hB : B ≤ M)
    (h : missWithin M B r n dNum dDen = true) : ∀ k : Nat, missWithin M B r (n + k) dNum dDen = true
  | 0 => h
  | k + 1 => missWithin_succ hB (sentinel_rounds hB h k)

-- The worked numbers below are decided by evaluating powers at recursion depth up to 256.
set_option maxRecDepth 20000

/-- Worked number: `r = 32` needs 148 rounds for 99% detection (`q ≈ 0.9692`). -/
theorem sentinel_rounds_r32 :
    missWithin 1024 1 32 148 1 100 = true ∧ missWithin 1024 1 32 147 1 100 = false := by
  decide

/-- Worked number: `r = 64` needs 74 rounds (`q ≈ 0.9394`). -/
theorem sentinel_rounds_r64 :
    missWithin 1024 1 64 74 1 100 = true ∧ missWithin 1024 1 64 73 1 100 = false := by
  decide

/-- Worked number: `r = 128` needs 37 rounds (`q ≈ 0.8824`). -/
theorem sentinel_rounds_r128 :
    missWithin 1024 1 128 37 1 100 = true ∧ missWithin 1024 1 128 36 1 100 = false := by
  decide

/-- Worked number: `r = 256` needs 19 rounds (`q ≈ 0.7787`). -/
theorem sentinel_rounds_r256 :
    missWithin 1024 1 256 19 1 100 = true ∧ missWithin 1024 1 256 18 1 100 = false := by
  decide

/-- Counterexample: with no corrupted slot (`B = 0`, `q = 1`) no number of rounds detects
anything; the latency bound needs `B ≥ 1`. -/
theorem sentinel_needs_corruption : missWithin 1024 0 32 148 1 100 = false := by
  decide

end Witprobe
