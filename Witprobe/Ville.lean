import Witprobe.ListSum
import Witprobe.MulAC
import Witprobe.Sentinel

/-!
# Ville's inequality on a finite sample space (anytime validity, no measure theory)

One step draws an outcome `x` from a finite list `Ω` of `(outcome, weight)` pairs with total
weight `W`, so `P(x) = w_x / W`; the draws are repeated and a *history* is the list of past
outcomes, newest first. A process assigns a value to every history. Everything is natural
numbers and cross-multiplied, with a fixed-point unit `U` for the process: the real process is
`R(h) = A(h) / U^|h|`.

* Supermartingale (scaled): `Σ_x w_x · A(x :: h) ≤ W · U · A(h)` for every history `h`, i.e.
  `E[R(x :: h) | h] ≤ R(h)`.
* Crossing at `h`: `R(h) ≥ 1/δ` with `δ = δn/δd`, i.e. `δd · U^|h| ≤ δn · A(h)`.
* `hitMass T h = W^T · P(the process crosses within T more steps | h)`, by recursion over
  histories: crossing now has mass `W^T`, otherwise the mass is `Σ_x w_x · hitMass (T−1) (x::h)`.

Main results:
* `Witprobe.ville`: `δd · U^|h| · hitMass T h ≤ W^T · δn · A(h)`, i.e.
  `P(∃ t ≤ T, R_t ≥ 1/δ | h) ≤ δ · R(h)`.
* `Witprobe.eprocess_ville`: for a product of factors `g(h, x)` with conditional mean at most 1
  (`Σ_x w_x g(h, x) ≤ W · U`), started at `R([]) = 1`: `P(∃ t ≤ T, R_t ≥ 1/δ) ≤ δ` for every `T`.
* `Witprobe.eprocess_needs_mean_le_one`: a factor with conditional mean above 1 breaks the bound.
-/

namespace Witprobe

section Ville

variable {α : Type}

/-- `Σ_x w_x · f(x)` over a finite weighted sample space. -/
def wsum : List (α × Nat) → (α → Nat) → Nat
  | [], _ => 0
  | (x, w) :: xs, f => w * f x + wsum xs f

/-- `wsum` is monotone in the integrand. -/
theorem wsum_mono (f g : α → Nat) (h : ∀ x, f x ≤ g x) :
    ∀ xs : List (α × Nat), wsum xs f ≤ wsum xs g
  | [] => Nat.le_refl 0
  | (x, w) :: xs => by
    have ih := wsum_mono f g h xs
    have hx : w * f x ≤ w * g x := Nat.mul_le_mul (Nat.le_refl w) (h x)
    show w * f x + wsum xs f ≤ w * g x + wsum xs g
    omega

/-- A constant factor comes out of `wsum`. -/
theorem wsum_mul_left (k : Nat) (f : α → Nat) :
    ∀ xs : List (α × Nat), wsum xs (fun x => k * f x) = k * wsum xs f
  | [] => by
    show 0 = k * 0
    rw [Nat.mul_zero]
  | (x, w) :: xs => by
    have ih := wsum_mul_left k f xs
    have e1 : w * (k * f x) = k * (w * f x) := Nat.mul_left_comm w k (f x)
    have e2 : k * (w * f x + wsum xs f) = k * (w * f x) + k * wsum xs f := Nat.left_distrib _ _ _
    show w * (k * f x) + wsum xs (fun x => k * f x) = k * (w * f x + wsum xs f)
    omega

/-- Whether the process has crossed `1/δ` at history `h`: `δd · U^|h| ≤ δn · A(h)`. -/
def crossed (U dNum dDen : Nat) (A : List α → Nat) (h : List α) : Bool :=
  decide (dDen * npow U h.length ≤ dNum * A h)

/-- `W^T · P(cross within T more steps | h)`. -/
def hitMass (Ω : List (α × Nat)) (W U dNum dDen : Nat) (A : List α → Nat) :
    Nat → List α → Nat
  | 0, h => cond (crossed U dNum dDen A h) 1 0
  | T + 1, h =>
    cond (crossed U dNum dDen A h) (npow W (T + 1))
      (wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h)))

/-- Ville's inequality on a finite sample space: for a nonnegative scaled supermartingale,
`P(∃ t ≤ T, R_t ≥ 1/δ | h) ≤ δ · R(h)`, cross-multiplied as
`δd · U^|h| · hitMass T h ≤ W^T · δn · A(h)`. -/
theorem ville (Ω : List (α × Nat)) (W U dNum dDen : Nat) (A : List α → Nat) (hU : 0 < U)
    (hW : ∀ h : List α, wsum Ω (fun x => A (x :: h)) ≤ W * U * A h) :
    ∀ (T : Nat) (h : List α),
      dDen * npow U h.length * hitMass Ω W U dNum dDen A T h ≤ npow W T * dNum * A h
  | 0, h => by
    cases hc : crossed U dNum dDen A h with
    | false =>
      show dDen * npow U h.length * cond (crossed U dNum dDen A h) 1 0 ≤ npow W 0 * dNum * A h
      rw [hc]
      show dDen * npow U h.length * 0 ≤ npow W 0 * dNum * A h
      rw [Nat.mul_zero]
      exact Nat.zero_le _
    | true =>
      have hx : dDen * npow U h.length ≤ dNum * A h := of_decide_eq_true hc
      show dDen * npow U h.length * cond (crossed U dNum dDen A h) 1 0 ≤ npow W 0 * dNum * A h
      rw [hc]
      show dDen * npow U h.length * 1 ≤ 1 * dNum * A h
      rw [Nat.mul_one, Nat.one_mul]
      exact hx
  | T + 1, h => by
    cases hc : crossed U dNum dDen A h with
    | true =>
      have hx : dDen * npow U h.length ≤ dNum * A h := of_decide_eq_true hc
      show dDen * npow U h.length * cond (crossed U dNum dDen A h) (npow W (T + 1))
          (wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h)))
        ≤ npow W (T + 1) * dNum * A h
      rw [hc]
      show dDen * npow U h.length * npow W (T + 1) ≤ npow W (T + 1) * dNum * A h
      have m : dDen * npow U h.length * npow W (T + 1) ≤ dNum * A h * npow W (T + 1) :=
        Nat.mul_le_mul hx (Nat.le_refl _)
      have e : dNum * A h * npow W (T + 1) = npow W (T + 1) * dNum * A h :=
        mul_rotate3 dNum (A h) (npow W (T + 1))
      omega
    | false =>
      show dDen * npow U h.length * cond (crossed U dNum dDen A h) (npow W (T + 1))
          (wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h)))
        ≤ npow W (T + 1) * dNum * A h
      rw [hc]
      show dDen * npow U h.length * wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h))
        ≤ npow W (T + 1) * dNum * A h
      -- the induction hypothesis one step deeper, where the unit power is U^(|h|+1)
      have ih : ∀ x, dDen * npow U (h.length + 1) * hitMass Ω W U dNum dDen A T (x :: h)
          ≤ npow W T * dNum * A (x :: h) := fun x => ville Ω W U dNum dDen A hU hW T (x :: h)
      -- multiply the goal by U and sum the hypothesis over the next outcome
      have s1 : wsum Ω (fun x => dDen * npow U (h.length + 1) * hitMass Ω W U dNum dDen A T (x :: h))
          ≤ wsum Ω (fun x => npow W T * dNum * A (x :: h)) := wsum_mono _ _ ih Ω
      have s2 : wsum Ω (fun x => dDen * npow U (h.length + 1) * hitMass Ω W U dNum dDen A T (x :: h))
          = dDen * npow U (h.length + 1) * wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h)) :=
        wsum_mul_left _ (fun x => hitMass Ω W U dNum dDen A T (x :: h)) Ω
      have s3 : wsum Ω (fun x => npow W T * dNum * A (x :: h))
          = npow W T * dNum * wsum Ω (fun x => A (x :: h)) :=
        wsum_mul_left _ (fun x => A (x :: h)) Ω
      have s4 : npow W T * dNum * wsum Ω (fun x => A (x :: h)) ≤ npow W T * dNum * (W * U * A h) :=
        Nat.mul_le_mul (Nat.le_refl _) (hW h)
      have r1 : dDen * npow U (h.length + 1) * wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h))
          = U * (dDen * npow U h.length * wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h))) := by
        show dDen * (npow U h.length * U) * wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h))
          = U * (dDen * npow U h.length * wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h)))
        exact mul_assoc_out dDen (npow U h.length) U
          (wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h)))
      have r2 : npow W T * dNum * (W * U * A h) = U * (npow W (T + 1) * dNum * A h) := by
        show npow W T * dNum * (W * U * A h) = U * (npow W T * W * dNum * A h)
        exact mul_swap_in (npow W T) dNum W U (A h)
      have key : U * (dDen * npow U h.length * wsum Ω (fun x => hitMass Ω W U dNum dDen A T (x :: h)))
          ≤ U * (npow W (T + 1) * dNum * A h) := by
        omega
      exact le_of_mul_le_mul_pos hU key

/-- The product process of factors `g(h, x)` in units of `U`: `A([]) = 1`,
`A(x :: h) = A(h) · g(h, x)`, so `R(h) = Π g / U^|h|`. -/
def prodProcess (g : List α → α → Nat) : List α → Nat
  | [] => 1
  | x :: h => prodProcess g h * g h x

/-- Factors with conditional mean at most 1 make the product a scaled supermartingale. -/
theorem prodProcess_supermartingale (Ω : List (α × Nat)) (W U : Nat) (g : List α → α → Nat)
    (hg : ∀ h : List α, wsum Ω (fun x => g h x) ≤ W * U) (h : List α) :
    wsum Ω (fun x => prodProcess g (x :: h)) ≤ W * U * prodProcess g h := by
  have e1 : wsum Ω (fun x => prodProcess g (x :: h)) = wsum Ω (fun x => prodProcess g h * g h x) := rfl
  have e2 := wsum_mul_left (prodProcess g h) (fun x => g h x) Ω
  have m : prodProcess g h * wsum Ω (fun x => g h x) ≤ prodProcess g h * (W * U) :=
    Nat.mul_le_mul (Nat.le_refl _) (hg h)
  have e3 : prodProcess g h * (W * U) = W * U * prodProcess g h := Nat.mul_comm _ _
  omega

/-- The e-process corollary: a product of nonnegative factors with conditional mean at most 1,
started at 1, crosses `1/δ` within `T` steps with probability at most `δ`, for every `T`
(cross-multiplied: `δd · hitMass T [] ≤ W^T · δn`). -/
theorem eprocess_ville (Ω : List (α × Nat)) (W U dNum dDen : Nat) (g : List α → α → Nat)
    (hU : 0 < U) (hg : ∀ h : List α, wsum Ω (fun x => g h x) ≤ W * U) (T : Nat) :
    dDen * hitMass Ω W U dNum dDen (prodProcess g) T [] ≤ npow W T * dNum := by
  have hv := ville Ω W U dNum dDen (prodProcess g) hU
    (prodProcess_supermartingale Ω W U g hg) T []
  have e1 : dDen * npow U ([] : List α).length * hitMass Ω W U dNum dDen (prodProcess g) T []
      = dDen * hitMass Ω W U dNum dDen (prodProcess g) T [] := by
    show dDen * 1 * hitMass Ω W U dNum dDen (prodProcess g) T [] = _
    rw [Nat.mul_one]
  have e2 : npow W T * dNum * prodProcess g [] = npow W T * dNum := by
    show npow W T * dNum * 1 = npow W T * dNum
    rw [Nat.mul_one]
  omega

end Ville

/-- Counterexample beside the rule: two equally likely outcomes and the constant factor 4
(conditional mean 4 > 1, unit `U = 1`): with `δ = 1/2` the process crosses in one step with
probability 1 (`hitMass = W = 2`), which exceeds `δ`. -/
theorem eprocess_needs_mean_le_one :
    hitMass [(true, 1), (false, 1)] 2 1 1 2 (prodProcess (fun _ _ => 4)) 1 [] = 2 ∧
      ¬ (2 * hitMass [(true, 1), (false, 1)] 2 1 1 2 (prodProcess (fun _ _ => 4)) 1 [] ≤ npow 2 1 * 1) := by
  decide

end Witprobe
