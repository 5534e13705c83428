/-!
# Finite sums of natural numbers

The budgets, bridges and the union bound all add up finitely many natural numbers. This file
fixes one structurally recursive sum and the few facts the other files use, so that no proof
depends on the names of list lemmas in the core library.

Main results:
* `Witprobe.sum_le_rep`: if every term is at most `d`, the sum is at most `length · d`
  (the additive law of a chain of deterministic per-stage bounds).
* `Witprobe.sumList_append`: sums add over concatenation.
* `Witprobe.le_of_mul_le_mul_pos`: cancelling a positive factor (`a·b ≤ a·c`, `0 < a` gives `b ≤ c`).
* `Witprobe.lt_of_mul_lt_mul_pos`: the strict version.
-/

namespace Witprobe

/-- `Σ xs`, by structural recursion. -/
def sumList : List Nat → Nat
  | [] => 0
  | x :: xs => x + sumList xs

/-- Every term of the list is at most `d`. -/
def AllAtMost (d : Nat) : List Nat → Prop
  | [] => True
  | x :: xs => x ≤ d ∧ AllAtMost d xs

/-- Sums add over concatenation: `Σ (xs ++ ys) = Σ xs + Σ ys`. -/
theorem sumList_append : ∀ (xs ys : List Nat), sumList (xs ++ ys) = sumList xs + sumList ys
  | [], ys => by
    show sumList ys = 0 + sumList ys
    omega
  | x :: xs, ys => by
    have ih := sumList_append xs ys
    show x + sumList (xs ++ ys) = (x + sumList xs) + sumList ys
    omega

/-- If every term is at most `d`, then `Σ xs ≤ |xs| · d`. -/
theorem sum_le_rep (d : Nat) : ∀ (xs : List Nat), AllAtMost d xs → sumList xs ≤ xs.length * d
  | [], _ => Nat.zero_le _
  | x :: xs, h => by
    have hh : x ≤ d ∧ AllAtMost d xs := h
    have ih := sum_le_rep d xs hh.2
    have e : (xs.length + 1) * d = xs.length * d + d := Nat.succ_mul xs.length d
    show x + sumList xs ≤ (xs.length + 1) * d
    have hx := hh.1
    omega

/-- Counterexample beside `sum_le_rep`: one term above `d` breaks the bound. -/
theorem sum_le_rep_needs_bound : ¬ (sumList [3, 0] ≤ [3, 0].length * 1) := by decide

/-- Cancel a positive factor: `0 < a` and `a·b ≤ a·c` give `b ≤ c`. -/
theorem le_of_mul_le_mul_pos {a b c : Nat} (ha : 0 < a) (h : a * b ≤ a * c) : b ≤ c := by
  by_cases hbc : b ≤ c
  · exact hbc
  · have hlt : c + 1 ≤ b := by omega
    have h1 : a * (c + 1) ≤ a * b := Nat.mul_le_mul (Nat.le_refl a) hlt
    have h2 : a * (c + 1) = a * c + a := Nat.mul_succ a c
    omega

/-- Strict cancellation: `a·b < a·c` gives `b < c`. -/
theorem lt_of_mul_lt_mul_pos {a b c : Nat} (h : a * b < a * c) : b < c := by
  by_cases hbc : b < c
  · exact hbc
  · have hle : c ≤ b := by omega
    have h1 : a * c ≤ a * b := Nat.mul_le_mul (Nat.le_refl a) hle
    omega

end Witprobe
