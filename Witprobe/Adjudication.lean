/-!
# The adjudication calculus for controlled comparisons (paper section 8.4)

A run is a *total* function from the registered fields (confounders, observed mediators and
intervention switches) to readings, plus its accuracy in per-mille. A comparison names two
runs, the fields it manipulates and the fields it declares as mediators (on the causal path).
A causal finding can only be built with proofs that

* `premisesHold`: every registered field that is neither manipulated nor a declared mediator is
  equal across the two arms, and
* `manipulationActive`: at least one field is manipulated and every manipulated field differs.

Main results:
* `Witprobe.Field.registered_complete`: every field is registered (the list cannot omit one).
* `Witprobe.concurrency_inference_rejected`: "serial is clean, concurrent degrades, hence the
  corruption is concurrency-dependent" (q6o vs q6n) cannot be built: evictions differ and were
  not declared. `Witprobe.concurrencyViaEviction` is the honest finding, with eviction declared
  as the mediator (effect +250 per-mille).
* `Witprobe.crossCode_inference_rejected`: reading q6n vs q6p2 (different code under test) as
  run-to-run variance cannot be built, with or without naming the code tag.
* `Witprobe.Verdict.weakest_rank_le`: the path verdicts compose by the weakest link.

Run readings that the paper does not report are set equal across the arms of a comparison; the
field values for the code tag are small ids (0 = efb8e95, 1 = e22d5d8).
-/

namespace Witprobe

/-- The registered fields of a run. -/
inductive Field where
  | workers
  | ring128
  | ring4
  | codeTag
  | seed
  | probeSet
  | evict128
  | evict4
  | ablateExtra
  | decodeTranslate
  deriving DecidableEq, Repr

/-- Whether a field is in a list. -/
def fieldIn (f : Field) : List Field → Bool
  | [] => false
  | g :: gs => decide (g = f) || fieldIn f gs

/-- The registered fields. -/
def Field.registered : List Field :=
  [.workers, .ring128, .ring4, .codeTag, .seed, .probeSet, .evict128, .evict4, .ablateExtra,
    .decodeTranslate]

/-- Completeness: every field is registered. -/
theorem Field.registered_complete (f : Field) : fieldIn f Field.registered = true := by
  cases f <;> decide

/-- A run: a reading for every registered field, and accuracy in per-mille. -/
structure Run where
  reads : Field → Nat
  accPm : Nat

/-- A controlled comparison of arm `a` against arm `b`. -/
structure Comparison where
  a : Run
  b : Run
  manipulated : List Field
  mediators : List Field

/-- Every field of `fs` is manipulated, a declared mediator, or equal across the arms. -/
def premisesOn (c : Comparison) : List Field → Bool
  | [] => true
  | f :: fs =>
    (fieldIn f c.manipulated || fieldIn f c.mediators || decide (c.a.reads f = c.b.reads f)) &&
      premisesOn c fs

/-- The premises of a comparison hold on every registered field. -/
def premisesHold (c : Comparison) : Bool := premisesOn c Field.registered

/-- Every manipulated field of `fs` differs across the arms. -/
def differsOn (c : Comparison) : List Field → Bool
  | [] => true
  | f :: fs => decide (c.a.reads f ≠ c.b.reads f) && differsOn c fs

/-- The manipulation is active: something is manipulated and every manipulated field differs. -/
def manipulationActive (c : Comparison) : Bool :=
  !c.manipulated.isEmpty && differsOn c c.manipulated

/-- A causal finding: a comparison with proofs of both conditions. -/
structure CausalFinding where
  cmp : Comparison
  sound : premisesHold cmp = true
  active : manipulationActive cmp = true

/-- The effect of a finding in per-mille: accuracy of arm `a` minus arm `b`. -/
def CausalFinding.effectPm (f : CausalFinding) : Int := (f.cmp.a.accPm : Int) - (f.cmp.b.accPm : Int)

/-! ## The paper's runs -/

/-- q6o: serial (1 worker), code efb8e95, no evictions, accuracy 1.000. -/
def q6o : Run :=
  ⟨fun
    | .workers => 1 | .ring128 => 513 | .ring4 => 513 | .codeTag => 0 | .seed => 0
    | .probeSet => 0 | .evict128 => 0 | .evict4 => 0 | .ablateExtra => 0
    | .decodeTranslate => 0, 1000⟩

/-- q6n: 4 workers, code efb8e95, evictions 216/215, accuracy 0.750. -/
def q6n : Run :=
  ⟨fun
    | .workers => 4 | .ring128 => 513 | .ring4 => 513 | .codeTag => 0 | .seed => 0
    | .probeSet => 0 | .evict128 => 216 | .evict4 => 215 | .ablateExtra => 0
    | .decodeTranslate => 0, 750⟩

/-- q6p2: the configuration of q6n under code e22d5d8, accuracy 0.583. -/
def q6p2 : Run :=
  ⟨fun
    | .workers => 4 | .ring128 => 513 | .ring4 => 513 | .codeTag => 1 | .seed => 0
    | .probeSet => 0 | .evict128 => 216 | .evict4 => 215 | .ablateExtra => 0
    | .decodeTranslate => 0, 583⟩

/-- The naive comparison: manipulate the worker count, declare nothing. -/
def naiveConcurrency : Comparison := ⟨q6o, q6n, [.workers], []⟩

/-- The honest comparison: eviction counts declared as mediators. -/
def concurrencyViaEvictionCmp : Comparison := ⟨q6o, q6n, [.workers], [.evict128, .evict4]⟩

/-- Rejected inference 1: the premises fail (evictions 0/0 vs 216/215, undeclared). -/
theorem naiveConcurrency_premises_fail : premisesHold naiveConcurrency = false := by decide

/-- Rejected inference 1 as a theorem: no causal finding has the naive comparison. -/
theorem concurrency_inference_rejected (f : CausalFinding) : f.cmp ≠ naiveConcurrency := by
  intro h
  have hs := f.sound
  rw [h] at hs
  rw [naiveConcurrency_premises_fail] at hs
  exact absurd hs (by decide)

/-- The honest finding: "concurrency degrades via eviction", effect +250 per-mille. -/
def concurrencyViaEviction : CausalFinding := ⟨concurrencyViaEvictionCmp, by decide, by decide⟩

/-- The honest finding's effect. -/
theorem concurrencyViaEviction_effect : concurrencyViaEviction.effectPm = 250 := by decide

/-- Reading q6n vs q6p2 as run-to-run variance: nothing manipulated, nothing declared. -/
def crossCodeVariance : Comparison := ⟨q6n, q6p2, [], []⟩

/-- The same pair read as a code effect without declaring anything else. -/
def crossCodeAsCode : Comparison := ⟨q6n, q6p2, [.codeTag], []⟩

/-- Rejected inference 2: the code under test differs, so "variance" has no premises. -/
theorem crossCode_premises_fail : premisesHold crossCodeVariance = false := by decide

/-- Rejected inference 2 as a theorem: no causal finding has the cross-code comparison. -/
theorem crossCode_inference_rejected (f : CausalFinding) : f.cmp ≠ crossCodeVariance := by
  intro h
  have hs := f.sound
  rw [h] at hs
  rw [crossCode_premises_fail] at hs
  exact absurd hs (by decide)

/-- Even declared as a manipulation of the code tag, the cross-code pair licenses a code-level
finding only: it is a finding about the whole code change, not about variance. -/
theorem crossCode_as_code_premises : premisesHold crossCodeAsCode = true ∧
    manipulationActive crossCodeAsCode = true := by
  decide

/-- Counterexample beside the rule: a comparison that manipulates nothing is never active. -/
theorem empty_manipulation_inactive (a b : Run) (meds : List Field) :
    manipulationActive ⟨a, b, [], meds⟩ = false := rfl

/-! ## Path verdicts -/

/-- The five verdict levels, strongest first: pass, partial, not measured, blocked upstream,
fail (method). -/
inductive Verdict where
  | pass
  | partialV
  | notMeasured
  | blockedUpstream
  | failMethod
  deriving DecidableEq, Repr

/-- Strength of a verdict: fail 0 … pass 4. -/
def Verdict.rank : Verdict → Nat
  | .pass => 4
  | .partialV => 3
  | .notMeasured => 2
  | .blockedUpstream => 1
  | .failMethod => 0

/-- The weaker of two verdicts. -/
def Verdict.weakest (u v : Verdict) : Verdict := if u.rank ≤ v.rank then u else v

/-- The weakest link is below the left argument. -/
theorem Verdict.weakest_rank_le_left (u v : Verdict) : (Verdict.weakest u v).rank ≤ u.rank := by
  cases u <;> cases v <;> decide

/-- The weakest link is below the right argument. -/
theorem Verdict.weakest_rank_le (u v : Verdict) : (Verdict.weakest u v).rank ≤ v.rank := by
  cases u <;> cases v <;> decide

/-- Counterexample: one blocked path blocks the composite. -/
theorem Verdict.blocked_blocks : Verdict.weakest .pass .blockedUpstream = .blockedUpstream := by
  decide

end Witprobe
