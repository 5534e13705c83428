import Witprobe.Tier
import Witprobe.Metric

/-!
# Affine contracts and their composition

A contract from metric `src` to metric `dst` says `e' ≤ (num/den)·e + off/den` for the input
error `e` and output error `e'`, both natural numbers in fixed-point units (`2⁻⁴⁸` on the Python
side). It also carries the failure probability `delta` (units) and the evidence `tier`.
Cross-multiplied, the statement is `den * e' ≤ num * e + off` (`Contract.Holds`).

Main results:
* `Contract.comp` composes `g` after `f` only when `f`'s target is `g`'s source (by type).
* `Contract.comp_holds`: gains multiply, offsets propagate and add (paper eq. 4).
* `Contract.comp_tier`, `Contract.comp_delta`: the tier is the meet, deltas add.
* `Contract.id_comp_holds`: the identity contract `(1, 0)` is neutral.
* `Contract.comp_num_assoc`, `Contract.comp_den_assoc`, `Contract.comp_off_assoc`:
  composition is associative on coefficients.
-/

namespace Witprobe

/-- An affine contract `src → dst`: `den * e' ≤ num * e + off`, failing with probability `delta`. -/
structure Contract (src dst : Metric) where
  num : Nat
  den : Nat
  off : Nat
  delta : Nat
  tier : Tier
  deriving Repr

namespace Contract

/-- The contract holds on the error pair `(e, e')`. -/
def Holds {a b : Metric} (c : Contract a b) (e e' : Nat) : Prop :=
  c.den * e' ≤ c.num * e + c.off

/-- Serial composition: `g` after `f`. The middle metric must agree, by type. -/
def comp {m₁ m₂ m₃ : Metric} (g : Contract m₂ m₃) (f : Contract m₁ m₂) : Contract m₁ m₃ where
  num := g.num * f.num
  den := g.den * f.den
  off := g.num * f.off + f.den * g.off
  delta := f.delta + g.delta
  tier := Tier.meet g.tier f.tier

/-- The identity contract `(1, 0)` on one metric. -/
def ident (m : Metric) : Contract m m where
  num := 1
  den := 1
  off := 0
  delta := 0
  tier := .certified

/-- Composition soundness: if `f` holds on `(e₀, e₁)` and `g` on `(e₁, e₂)`, the composite
holds on `(e₀, e₂)`; gains multiply and offsets propagate (`a₂·b₁ + b₂`). -/
theorem comp_holds {m₁ m₂ m₃ : Metric} (g : Contract m₂ m₃) (f : Contract m₁ m₂)
    {e₀ e₁ e₂ : Nat} (hf : f.Holds e₀ e₁) (hg : g.Holds e₁ e₂) : (comp g f).Holds e₀ e₂ := by
  show g.den * f.den * e₂ ≤ g.num * f.num * e₀ + (g.num * f.off + f.den * g.off)
  have hf' : f.den * e₁ ≤ f.num * e₀ + f.off := hf
  have hg' : g.den * e₂ ≤ g.num * e₁ + g.off := hg
  have h1 : g.num * (f.den * e₁) ≤ g.num * (f.num * e₀ + f.off) :=
    Nat.mul_le_mul (Nat.le_refl _) hf'
  have h2 : f.den * (g.den * e₂) ≤ f.den * (g.num * e₁ + g.off) :=
    Nat.mul_le_mul (Nat.le_refl _) hg'
  have q1 : g.den * f.den * e₂ = f.den * (g.den * e₂) := by
    rw [Nat.mul_comm g.den f.den, Nat.mul_assoc]
  have q2 : f.den * (g.num * e₁ + g.off) = g.num * (f.den * e₁) + f.den * g.off := by
    rw [Nat.left_distrib, Nat.mul_left_comm]
  have q3 : g.num * (f.num * e₀ + f.off) = g.num * f.num * e₀ + g.num * f.off := by
    rw [Nat.left_distrib, Nat.mul_assoc]
  omega

/-- The tier of a composite is the meet of the parts. -/
theorem comp_tier {m₁ m₂ m₃ : Metric} (g : Contract m₂ m₃) (f : Contract m₁ m₂) :
    (comp g f).tier = Tier.meet g.tier f.tier := rfl

/-- Failure probabilities add under composition. -/
theorem comp_delta {m₁ m₂ m₃ : Metric} (g : Contract m₂ m₃) (f : Contract m₁ m₂) :
    (comp g f).delta = f.delta + g.delta := rfl

/-- A composite is never more trusted than its last stage. -/
theorem comp_tier_rank_le_left {m₁ m₂ m₃ : Metric} (g : Contract m₂ m₃) (f : Contract m₁ m₂) :
    (comp g f).tier.rank ≤ g.tier.rank := Tier.meet_rank_le_left _ _

/-- A composite is never more trusted than its first stage. -/
theorem comp_tier_rank_le_right {m₁ m₂ m₃ : Metric} (g : Contract m₂ m₃) (f : Contract m₁ m₂) :
    (comp g f).tier.rank ≤ f.tier.rank := Tier.meet_rank_le_right _ _

/-- Gains compose associatively. -/
theorem comp_num_assoc {m₁ m₂ m₃ m₄ : Metric} (h : Contract m₃ m₄) (g : Contract m₂ m₃)
    (f : Contract m₁ m₂) : (comp (comp h g) f).num = (comp h (comp g f)).num := by
  show h.num * g.num * f.num = h.num * (g.num * f.num)
  rw [Nat.mul_assoc]

/-- Denominators compose associatively. -/
theorem comp_den_assoc {m₁ m₂ m₃ m₄ : Metric} (h : Contract m₃ m₄) (g : Contract m₂ m₃)
    (f : Contract m₁ m₂) : (comp (comp h g) f).den = (comp h (comp g f)).den := by
  show h.den * g.den * f.den = h.den * (g.den * f.den)
  rw [Nat.mul_assoc]

/-- Offsets compose associatively: both sides equal `h·g·f.off + h·f.den·g.off + g.den·f.den·h.off`. -/
theorem comp_off_assoc {m₁ m₂ m₃ m₄ : Metric} (h : Contract m₃ m₄) (g : Contract m₂ m₃)
    (f : Contract m₁ m₂) : (comp (comp h g) f).off = (comp h (comp g f)).off := by
  show h.num * g.num * f.off + f.den * (h.num * g.off + g.den * h.off)
      = h.num * (g.num * f.off + f.den * g.off) + g.den * f.den * h.off
  have a1 : f.den * (h.num * g.off + g.den * h.off)
      = h.num * (f.den * g.off) + f.den * (g.den * h.off) := by
    rw [Nat.left_distrib, Nat.mul_left_comm]
  have a2 : h.num * (g.num * f.off + f.den * g.off)
      = h.num * g.num * f.off + h.num * (f.den * g.off) := by
    rw [Nat.left_distrib, Nat.mul_assoc]
  have a3 : g.den * f.den * h.off = f.den * (g.den * h.off) := by
    rw [Nat.mul_comm g.den f.den, Nat.mul_assoc]
  omega

/-- The identity contract is neutral on the left: composing with it keeps `Holds`. -/
theorem id_comp_holds {a b : Metric} (f : Contract a b) {e e' : Nat} (hf : f.Holds e e') :
    (comp (ident b) f).Holds e e' := by
  show 1 * f.den * e' ≤ 1 * f.num * e + (1 * f.off + f.den * 0)
  have hf' : f.den * e' ≤ f.num * e + f.off := hf
  simp only [Nat.one_mul, Nat.mul_zero, Nat.add_zero]
  exact hf'

/-- Bound to threshold, without cancelling: if `f` holds and `num·e + off ≤ den·v`, then
`den·e' ≤ den·v` (the per-run check of an affine stage). -/
theorem holds_le_claim {a b : Metric} (f : Contract a b) {e u e' v : Nat}
    (hf : f.Holds e e') (he : e ≤ u) (hc : f.num * u + f.off ≤ f.den * v) :
    f.den * e' ≤ f.den * v := by
  have hf' : f.den * e' ≤ f.num * e + f.off := hf
  have hm : f.num * e ≤ f.num * u := Nat.mul_le_mul (Nat.le_refl _) he
  omega

end Contract
end Witprobe
