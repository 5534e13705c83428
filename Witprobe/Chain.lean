import Witprobe.Contract
import Witprobe.Transfer
import Witprobe.ListSum

/-!
# Typed chains and the per-run check

A `Chain src dst` is a sequence of stages whose metrics line up *by type*: writing a chain with
a wrong wiring does not elaborate, so a per-run file with a mis-typed chain is rejected before
any number is looked at. `Chain.erase` forgets the indices; `ChainCert.check` then decides, stage
by stage, that the claimed trace of upper bounds is valid, that the claimed tier is the meet of
the stages, that the failure probabilities fit the claimed budget, and (for a certified claim)
that the bound is below `1.0`, i.e. not vacuous.

Main results:
* `ChainCert.check_sound`: chain soundness. If `c.check = true`, then for every actual input
  error `e ≤ c.input` and every trace of actual stage errors `es` satisfying each stage
  (`ErrorsHold c.stages e es`: affine stages their contract, transfers their bridge
  `TransferHolds`), the end error `endError e es` is at most `c.claim`. Proved by induction
  over the stages (`checkTrace_sound`, one step `RawStage.check_step_sound`).
* `RawStage.check_affine_sound`: an accepted affine step bounds the real output error
  whenever the stage's contract holds and the input is within its bound.
* `checkTrace_nil_claim`: an empty chain certifies exactly its input bound.
* `ChainCert.check_tier`: an accepted certificate's claimed tier is the meet of its stages'
  stated tiers; transfers state none (`tierOf_transfer_neutral`).
* `check_sound_needs_stage_holds`: counterexample, an accepted certificate says nothing about
  errors that violate a stage.

Tiers: only affine stages state a tier (the evidence behind their contract). A transfer carries
no tier by definition: the Nat-level check decides its arithmetic only, and whether the real
bridge behind it is kernel-checked is decided outside this certificate (the analytic library),
so a claim's tier is never raised by a transfer here.
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

/-- The tier a stage states: an affine stage the tier of its contract's evidence; a transfer none
(its real-analysis bridge is checked outside this certificate, see the module docstring). -/
def RawStage.tier? : RawStage → Option Tier
  | .affine _ _ _ _ t => some t
  | .transfer _ => none

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

/-- The meet of the tiers the stages state (transfers state none). -/
def tierOf (ss : List RawStage) : Tier := Tier.meetAll (ss.filterMap RawStage.tier?)

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

/-! ## Semantics of a chain and its soundness -/

/-- What an accepted transfer step guarantees about actual errors: whenever the check accepts
the step `(u, v, aux)` and the actual input error is at most `u`, the actual output error is at
most `v`. This is the content of the real-analysis bridge of kind `k` (for `centredTv`,
`WitprobeAnalytic.tv_le_tanh_osc` with the exp bound); `ChainCert.check_sound` takes it as the
stage's hypothesis. -/
def TransferHolds (k : TransferKind) (e e' : Nat) : Prop :=
  ∀ u v aux : Nat, k.check u v aux = true → e ≤ u → e' ≤ v

/-- A stage relates the actual input error `e` and the actual output error `e'`: an affine stage
by its contract `den·e' ≤ num·e + off`, a transfer by its bridge. -/
def StageHolds : RawStage → Nat → Nat → Prop
  | .affine num den off _ _, e, e' => den * e' ≤ num * e + off
  | .transfer k, e, e' => TransferHolds k e e'

/-- Actual errors along a chain: one output error per stage, and every stage holds. -/
def ErrorsHold : List RawStage → Nat → List Nat → Prop
  | [], _, [] => True
  | [], _, _ :: _ => False
  | _ :: _, _, [] => False
  | s :: ss, e, e' :: es => StageHolds s e e' ∧ ErrorsHold ss e' es

/-- The end error of a trace: its last output error (the input error for an empty chain). -/
def endError : Nat → List Nat → Nat
  | e, [] => e
  | _, e' :: es => endError e' es

/-- One accepted step is sound: an input error within the step's input bound and a stage that
holds give an output error within the step's output bound. -/
theorem RawStage.check_step_sound (s : RawStage) {u v aux e e' : Nat}
    (h : s.check u v aux = true) (he : e ≤ u) (hs : StageHolds s e e') : e' ≤ v := by
  cases s with
  | affine num den off d t =>
    have hc : (decide (0 < den) && decide (num * u + off ≤ den * v)) = true := h
    simp only [Bool.and_eq_true, decide_eq_true_eq] at hc
    have hc1 : 0 < den := hc.1
    have hc2 : num * u + off ≤ den * v := hc.2
    have hh : den * e' ≤ num * e + off := hs
    have hm : num * e ≤ num * u := Nat.mul_le_mul (Nat.le_refl _) he
    have hle : den * e' ≤ den * v := by omega
    exact le_of_mul_le_mul_pos hc1 hle
  | transfer k =>
    have hk : k.check u v aux = true := h
    have hh : TransferHolds k e e' := hs
    exact hh u v aux hk he

/-- Trace soundness, by induction over the stages. -/
theorem checkTrace_sound : ∀ (ss : List RawStage) (u : Nat) (tr : List (Nat × Nat)) (claim e : Nat)
    (es : List Nat), checkTrace ss u tr claim = true → e ≤ u → ErrorsHold ss e es →
    endError e es ≤ claim
  | [], u, [], claim, e, [], h, he, _ => by
    have h' : decide (u ≤ claim) = true := h
    have hu : u ≤ claim := of_decide_eq_true h'
    show e ≤ claim
    omega
  | [], _, [], _, e, e' :: es, _, _, hs => by
    have hf : False := hs
    exact hf.elim
  | [], u, p :: tr, claim, _, _, h, _, _ => by
    have hf : false = true := h
    cases hf
  | s :: ss, u, [], claim, _, _, h, _, _ => by
    have hf : false = true := h
    cases hf
  | s :: ss, _, _ :: _, _, e, [], _, _, hs => by
    have hf : False := hs
    exact hf.elim
  | s :: ss, u, (v, aux) :: tr, claim, e, e' :: es, h, he, hs => by
    have h' : (s.check u v aux && checkTrace ss v tr claim) = true := h
    rw [Bool.and_eq_true] at h'
    have hs' : StageHolds s e e' ∧ ErrorsHold ss e' es := hs
    have hv : e' ≤ v := RawStage.check_step_sound s h'.1 he hs'.1
    exact checkTrace_sound ss v tr claim e' es h'.2 hv hs'.2

/-- Chain soundness: if the certificate checks, every actual error trace that starts within the
certified input bound and satisfies every stage ends within the claim. -/
theorem ChainCert.check_sound (c : ChainCert) (h : c.check = true) {e : Nat} (he : e ≤ c.input)
    {es : List Nat} (hs : ErrorsHold c.stages e es) : endError e es ≤ c.claim := by
  have h' : (checkTrace c.stages c.input c.trace c.claim &&
      decide (tierOf c.stages = c.tier) &&
      decide (deltaSum c.stages ≤ c.deltaBudget) &&
      (decide (c.tier ≠ .certified) || decide (c.claim < fixedOne))) = true := h
  simp only [Bool.and_eq_true] at h'
  exact checkTrace_sound c.stages c.input c.trace c.claim e es h'.1.1.1 he hs

/-- Counterexample beside `check_sound`: an accepted certificate (one affine stage `e' ≤ e`,
input `0`, claim `0`) says nothing about an error trace that violates its stage (`e' = 5`). -/
theorem check_sound_needs_stage_holds :
    ({ stages := [RawStage.affine 1 1 0 0 .certified], input := 0, trace := [(0, 0)], claim := 0,
       tier := .certified, deltaBudget := 0 } : ChainCert).check = true ∧
      ¬ (endError 0 [5] ≤ 0) := by
  decide

/-- A transfer states no tier: it leaves the meet of the other stages unchanged. -/
theorem tierOf_transfer_neutral (k : TransferKind) (ss : List RawStage) :
    tierOf (RawStage.transfer k :: ss) = tierOf ss := rfl

end Witprobe
