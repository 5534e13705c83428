import Witprobe.Contract
import Witprobe.Transfer

/-!
# Typed chains and the per-run check

A `Chain src dst` is a sequence of stages whose metrics line up *by type*: writing a chain with
a wrong wiring does not elaborate, so a per-run file with a mis-typed chain is rejected before
any number is looked at. `Chain.erase` forgets the indices; `ChainCert.check` then decides, stage
by stage, that the claimed trace of upper bounds is valid, that the claimed tier is the meet of
the stages, that the failure probabilities fit the claimed budget, and (for a certified claim)
that the bound is below `1.0`, i.e. not vacuous.

Main results:
* `RawStage.check_affine_sound`: an accepted affine step bounds the real output error
  whenever the stage's contract holds and the input is within its bound.
* `checkTrace_nil_claim`: an empty chain certifies exactly its input bound.
* `ChainCert.check_tier`: an accepted certificate's claimed tier is the meet of its stages.
-/

namespace Witprobe

/-- A stage with typed endpoints: an affine contract or a transfer. -/
inductive Stage : Metric → Metric → Type where
  | affine {a b : Metric} : Contract a b → Stage a b
  | transfer {a b : Metric} : Transfer a b → Stage a b

/-- A chain whose stages compose by type. -/
inductive Chain : Metric → Metric → Type where
  | nil (m : Metric) : Chain m m
  | cons {a b c : Metric} : Stage a b → Chain b c → Chain a c

/-- A stage without its indices. -/
inductive RawStage where
  | affine (num den off delta : Nat) (tier : Tier)
  | transfer (kind : TransferKind)
  deriving Repr

/-- Forget the indices of a stage. -/
def Stage.erase {a b : Metric} : Stage a b → RawStage
  | .affine c => .affine c.num c.den c.off c.delta c.tier
  | .transfer t => .transfer t.kind

/-- Forget the indices of a chain. -/
def Chain.erase {a c : Metric} : Chain a c → List RawStage
  | .nil _ => []
  | .cons s rest => s.erase :: rest.erase

/-- One step: input bound `u`, claimed output bound `v`, auxiliary witness `aux`. -/
def RawStage.check : RawStage → Nat → Nat → Nat → Bool
  | .affine num den off _ _, u, v, _ => decide (0 < den) && decide (num * u + off ≤ den * v)
  | .transfer k, u, v, aux => k.check u v aux

/-- The tier a stage contributes (transfers are proved bridges: certified). -/
def RawStage.tier : RawStage → Tier
  | .affine _ _ _ _ t => t
  | .transfer _ => .certified

/-- The failure probability a stage contributes (units). -/
def RawStage.delta : RawStage → Nat
  | .affine _ _ _ d _ => d
  | .transfer _ => 0

/-- Check a whole trace: stages, input bound, one `(output, witness)` per stage, final claim. -/
def checkTrace : List RawStage → Nat → List (Nat × Nat) → Nat → Bool
  | [], u, [], claim => decide (u ≤ claim)
  | [], _, _ :: _, _ => false
  | _ :: _, _, [], _ => false
  | s :: ss, u, (v, aux) :: tr, claim => s.check u v aux && checkTrace ss v tr claim

/-- Sum of the stage deltas. -/
def deltaSum : List RawStage → Nat
  | [] => 0
  | s :: ss => s.delta + deltaSum ss

/-- The meet of the stage tiers. -/
def tierOf (ss : List RawStage) : Tier := Tier.meetAll (ss.map RawStage.tier)

/-- A per-run certificate for one chain. -/
structure ChainCert where
  stages : List RawStage
  input : Nat
  trace : List (Nat × Nat)
  claim : Nat
  tier : Tier
  deltaBudget : Nat

/-- Decide the certificate: trace valid, tier is the meet, deltas within budget, and a
certified claim is below `1.0` (a vacuous bound is never certified). -/
def ChainCert.check (c : ChainCert) : Bool :=
  checkTrace c.stages c.input c.trace c.claim &&
    decide (tierOf c.stages = c.tier) &&
    decide (deltaSum c.stages ≤ c.deltaBudget) &&
    (decide (c.tier ≠ .certified) || decide (c.claim < fixedOne))

/-- An accepted affine step bounds the actual output whenever the contract holds
(uncancelled form: `den·e' ≤ den·v`). -/
theorem RawStage.check_affine_sound {num den off d : Nat} {t : Tier} {u v aux e e' : Nat}
    (h : RawStage.check (.affine num den off d t) u v aux = true) (he : e ≤ u)
    (hholds : den * e' ≤ num * e + off) : den * e' ≤ den * v := by
  simp only [RawStage.check, Bool.and_eq_true, decide_eq_true_eq] at h
  have hm : num * e ≤ num * u := Nat.mul_le_mul (Nat.le_refl _) he
  omega

/-- An empty chain certifies its input bound and nothing less. -/
theorem checkTrace_nil_claim (u claim : Nat) : checkTrace [] u [] claim = true ↔ u ≤ claim := by
  simp [checkTrace]

/-- An accepted certificate names the meet of its stages as its tier. -/
theorem ChainCert.check_tier (c : ChainCert) (h : c.check = true) : tierOf c.stages = c.tier := by
  simp only [ChainCert.check, Bool.and_eq_true, decide_eq_true_eq] at h
  exact h.1.1.2

/-- An accepted certified certificate claims a bound below one (never vacuous). -/
theorem ChainCert.check_nonvacuous (c : ChainCert) (h : c.check = true) (ht : c.tier = .certified) :
    c.claim < fixedOne := by
  simp only [ChainCert.check, Bool.and_eq_true, Bool.or_eq_true, decide_eq_true_eq] at h
  cases h.2 with
  | inl h2 => exact absurd ht h2
  | inr h2 => exact h2

end Witprobe
