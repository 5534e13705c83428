/-!
# Evidence tiers

The tier of a reading says how it is backed: `certified` (a sound bound, not saturated),
`partialCert` (a bound on a decidable subset only) or `empirical` (an observation, no bound).
`partial` is a Lean keyword, hence `partialCert`.

Main results:
* `Tier.meet_comm`, `Tier.meet_assoc`, `Tier.meet_idem`: the meet is a semilattice operation.
* `Tier.meet_rank_le_left`, `Tier.meet_rank_le_right`: the meet is below both arguments.
* `Tier.meetAll_rank_le`: the tier of a composite is at most the tier of each part
  (weakest link; nothing is upgraded by composition).
* `Tier.meet_eq_certified`: a composite is certified only if both parts are.
-/

namespace Witprobe

/-- Evidence tier, ordered `empirical < partialCert < certified` by `Tier.rank`. -/
inductive Tier where
  | empirical
  | partialCert
  | certified
  deriving DecidableEq, Repr

namespace Tier

/-- The order of tiers as a number: empirical 0, partial 1, certified 2. -/
def rank : Tier → Nat
  | .empirical => 0
  | .partialCert => 1
  | .certified => 2

/-- The weaker of two tiers. -/
def meet (s t : Tier) : Tier := if s.rank ≤ t.rank then s else t

/-- The meet of a list (weakest link); the empty meet is `certified`. -/
def meetAll : List Tier → Tier
  | [] => .certified
  | t :: ts => meet t (meetAll ts)

/-- `s ⊓ t ≤ s`. -/
theorem meet_rank_le_left (s t : Tier) : (meet s t).rank ≤ s.rank := by
  cases s <;> cases t <;> decide

/-- `s ⊓ t ≤ t`. -/
theorem meet_rank_le_right (s t : Tier) : (meet s t).rank ≤ t.rank := by
  cases s <;> cases t <;> decide

/-- `s ⊓ t = t ⊓ s`. -/
theorem meet_comm (s t : Tier) : meet s t = meet t s := by
  cases s <;> cases t <;> decide

/-- `(s ⊓ t) ⊓ u = s ⊓ (t ⊓ u)`. -/
theorem meet_assoc (s t u : Tier) : meet (meet s t) u = meet s (meet t u) := by
  cases s <;> cases t <;> cases u <;> decide

/-- `s ⊓ s = s`. -/
theorem meet_idem (s : Tier) : meet s s = s := by
  cases s <;> decide

/-- A meet is certified exactly when both arguments are. -/
theorem meet_eq_certified (s t : Tier) : meet s t = .certified ↔ s = .certified ∧ t = .certified := by
  cases s <;> cases t <;> decide

/-- Weakest link: the meet of a list is at most every member. -/
theorem meetAll_rank_le (t : Tier) : ∀ ts : List Tier, t ∈ ts → (meetAll ts).rank ≤ t.rank
  | [], h => nomatch h
  | u :: us, h => by
    have e : (meetAll (u :: us)).rank = (meet u (meetAll us)).rank := rfl
    rw [e]
    cases h with
    | head => exact meet_rank_le_left _ _
    | tail _ h' => exact Nat.le_trans (meet_rank_le_right _ _) (meetAll_rank_le t us h')

/-- Counterexample beside the rule: one empirical stage makes the composite empirical,
so a chain of certified stages and one measured bridge is *not* certified. -/
theorem meet_certified_empirical : meet .certified .empirical = .empirical := by decide

/-- Composition never upgrades: no pair meets above its weaker member. -/
theorem meet_no_upgrade (s t : Tier) : ¬ (s.rank < (meet s t).rank) := by
  cases s <;> cases t <;> decide

end Tier
end Witprobe
