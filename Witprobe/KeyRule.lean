/-!
# The aggregation-key rule

Counters of the ledger (reads, owner changes, restorations, spends) are aggregated under a key.
A key that omits one of the dimensions owner, layer, page, slot, generation, step merges events
that differ in that dimension, so a count can no longer be attributed (a stale-generation read
looks like a fresh one; two owners' spends add up in one account). The rule: a key must cover
all six.

Main results:
* `Witprobe.covers` decides the rule; `Witprobe.fullKey_covers` and `Witprobe.KeyedCount`
  (a count can only be built under a covering key).
* `Witprobe.missing_dim_collides`: a key without dimension `d` maps two events that differ in
  `d` to the same key value (the counterexample, for every missing dimension).
* `Witprobe.no_generation_rejected`, `Witprobe.no_owner_rejected`: decided instances.
-/

namespace Witprobe

/-- The dimensions an event is identified by. -/
inductive Dim where
  | owner
  | layer
  | page
  | slot
  | generation
  | step
  deriving DecidableEq, Repr

/-- The dimensions every aggregation key must cover. -/
def requiredDims : List Dim := [.owner, .layer, .page, .slot, .generation, .step]

/-- Whether a key lists dimension `d`. -/
def hasDim (d : Dim) : List Dim → Bool
  | [] => false
  | x :: xs => decide (x = d) || hasDim d xs

/-- Whether a key lists every dimension of `ds`. -/
def coversAll (key : List Dim) : List Dim → Bool
  | [] => true
  | d :: ds => hasDim d key && coversAll key ds

/-- The key rule: the key covers owner, layer, page, slot, generation and step. -/
def covers (key : List Dim) : Bool := coversAll key requiredDims

/-- An event's readings, one per dimension. -/
abbrev KeyEvent := Dim → Nat

/-- The value an event aggregates under: its readings on the key's dimensions. -/
def keyOf (key : List Dim) (e : KeyEvent) : List Nat := key.map e

/-- The event that reads 1 on dimension `d` and 0 elsewhere. -/
def indicator (d : Dim) : KeyEvent := fun x => if x = d then 1 else 0

/-- A key without `d` cannot see `d`: the indicator event aggregates like the zero event. -/
theorem keyOf_indicator_of_not_has (d : Dim) :
    ∀ key : List Dim, hasDim d key = false → keyOf key (indicator d) = keyOf key (fun _ => 0)
  | [], _ => rfl
  | x :: xs, h => by
    cases hxd : decide (x = d) with
    | true =>
      have h' : (decide (x = d) || hasDim d xs) = false := h
      rw [hxd] at h'
      have h'' : true = false := h'
      exact absurd h'' (by decide)
    | false =>
      have h' : (decide (x = d) || hasDim d xs) = false := h
      rw [hxd] at h'
      have hxs : hasDim d xs = false := h'
      have ih := keyOf_indicator_of_not_has d xs hxs
      have hx : x ≠ d := of_decide_eq_false hxd
      have hi : indicator d x = 0 := by
        show (if x = d then 1 else 0) = 0
        rw [if_neg hx]
      show indicator d x :: keyOf xs (indicator d) = 0 :: keyOf xs (fun _ => 0)
      rw [hi, ih]

/-- Counterexample for every missing dimension: two events that differ in `d` (1 versus 0)
aggregate to the same key value, so a count under that key conflates them. -/
theorem missing_dim_collides (d : Dim) (key : List Dim) (h : hasDim d key = false) :
    indicator d d ≠ (fun (_ : Dim) => 0) d ∧
      keyOf key (indicator d) = keyOf key (fun _ => 0) := by
  refine ⟨?_, keyOf_indicator_of_not_has d key h⟩
  show (if d = d then 1 else 0) ≠ 0
  rw [if_pos (rfl : d = d)]
  decide

/-- The full key satisfies the rule. -/
theorem fullKey_covers : covers [.owner, .layer, .page, .slot, .generation, .step] = true := by
  decide

/-- Order does not matter. -/
theorem permutedKey_covers : covers [.step, .generation, .slot, .page, .layer, .owner] = true := by
  decide

/-- Counterexample: a key without the generation is rejected (stale reads would merge with
fresh ones). -/
theorem no_generation_rejected : covers [.owner, .layer, .page, .slot, .step] = false := by
  decide

/-- Counterexample: a key without the owner is rejected (two requests' spends would merge). -/
theorem no_owner_rejected : covers [.layer, .page, .slot, .generation, .step] = false := by
  decide

/-- A count can only be built under a key that satisfies the rule. -/
structure KeyedCount where
  key : List Dim
  count : Nat
  sound : covers key = true

/-- Example: a read counter keyed by all six dimensions. -/
def fullReadCount : KeyedCount := ⟨[.owner, .layer, .page, .slot, .generation, .step], 0, by decide⟩

/-- A keyed count's key covers each required dimension, e.g. the generation. -/
theorem KeyedCount.has_generation (c : KeyedCount) : hasDim .generation c.key = true := by
  have h := c.sound
  have h' : (hasDim .owner c.key && (hasDim .layer c.key && (hasDim .page c.key &&
      (hasDim .slot c.key && (hasDim .generation c.key && (hasDim .step c.key && true))))))
      = true := h
  simp only [Bool.and_eq_true] at h'
  exact h'.2.2.2.2.1

end Witprobe
