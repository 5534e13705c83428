/-!
# Slot state, generations and owners: reads stay fresh under write-site invalidation

One slot of the compressed pool (paper section 5.6). Its state is `unwritten`, `masked`
(certified write accepted), `keptExact` (policy rejected, exact bytes) or `restoredExact`
(the write-time audit found a violation and restored the original bytes). Reusing the slot is a
rewrite with a new owner and generation `+ 1`. Readers do not look at the slot directly: they
go through a translation map that records, per slot, the generation it was written at.

A read is *fresh* when the slot is written and the map's generation is the slot's current
generation. Two systems differ only in how the map is maintained at a write:

* with write-site invalidation (`inv = true`) every write records the current generation;
* without it (`inv = false`) the first translation is kept and never invalidated.

Main results:
* `Witprobe.stale_read_reachable`: without invalidation, a stale-generation read is reachable
  (write, reuse, rewrite).
* `Witprobe.run_fresh`, `Witprobe.read_fresh`: with write-site invalidation, after any event
  sequence every read of a written slot sees the slot's current generation.
* `Witprobe.reuse_bumps_generation`, `Witprobe.write_sets_owner`: reuse advances the
  generation; the writer becomes the owner charged with the write's delta.
-/

namespace Witprobe

/-- The state of one slot. -/
inductive SlotState where
  | unwritten
  | masked
  | keptExact
  | restoredExact
  deriving DecidableEq, Repr

/-- Events on one slot. -/
inductive SlotEv where
  /-- A certified write by `owner` of an unwritten slot; `accept` is the policy's decision. -/
  | write (owner : Nat) (accept : Bool)
  /-- The write-time audit of a masked slot; `violates` = realized witness above its radius. -/
  | audit (violates : Bool)
  /-- Slot reuse by a new owner: back to unwritten, generation `+ 1`. -/
  | reuse (owner : Nat)
  deriving DecidableEq, Repr

/-- A slot with its generation, owner, and the reader-side map entry (`none` = no translation). -/
structure Slot where
  state : SlotState
  gen : Nat
  owner : Nat
  mapGen : Option Nat
  deriving DecidableEq, Repr

/-- The map entry a write leaves behind. With invalidation (`true`) it is the current
generation; without, the first translation ever recorded is kept. -/
def recordGen : Bool → Nat → Option Nat → Option Nat
  | true, g, _ => some g
  | false, g, none => some g
  | false, _, some k => some k

/-- One event. Writes apply only to unwritten slots, audits only to masked ones. -/
def Slot.step (inv : Bool) : Slot → SlotEv → Slot
  | ⟨.unwritten, g, _, m⟩, .write o true => ⟨.masked, g, o, recordGen inv g m⟩
  | ⟨.unwritten, g, _, m⟩, .write o false => ⟨.keptExact, g, o, recordGen inv g m⟩
  | ⟨.masked, g, o, m⟩, .write _ _ => ⟨.masked, g, o, m⟩
  | ⟨.keptExact, g, o, m⟩, .write _ _ => ⟨.keptExact, g, o, m⟩
  | ⟨.restoredExact, g, o, m⟩, .write _ _ => ⟨.restoredExact, g, o, m⟩
  | ⟨.masked, g, o, m⟩, .audit true => ⟨.restoredExact, g, o, m⟩
  | ⟨.masked, g, o, m⟩, .audit false => ⟨.masked, g, o, m⟩
  | ⟨.unwritten, g, o, m⟩, .audit _ => ⟨.unwritten, g, o, m⟩
  | ⟨.keptExact, g, o, m⟩, .audit _ => ⟨.keptExact, g, o, m⟩
  | ⟨.restoredExact, g, o, m⟩, .audit _ => ⟨.restoredExact, g, o, m⟩
  | ⟨_, g, _, m⟩, .reuse o => ⟨.unwritten, g + 1, o, m⟩

/-- Run a sequence of events. -/
def Slot.run (inv : Bool) : Slot → List SlotEv → Slot
  | s, [] => s
  | s, e :: es => Slot.run inv (Slot.step inv s e) es

/-- A fresh, never-written slot. -/
def Slot.init : Slot := ⟨.unwritten, 0, 0, none⟩

/-- A read of this slot is fresh: the slot is written and the map has its current generation. -/
def Slot.readFresh (s : Slot) : Bool :=
  decide (s.state ≠ .unwritten) && decide (s.mapGen = some s.gen)

/-- The invariant: an unwritten slot, or a map entry at the current generation. -/
def Slot.Fresh (s : Slot) : Prop := s.state = .unwritten ∨ s.mapGen = some s.gen

/-- Write-site invalidation preserves the invariant through every event. -/
theorem Slot.step_fresh : ∀ (s : Slot) (e : SlotEv), s.Fresh → (Slot.step true s e).Fresh
  | ⟨.unwritten, _, _, _⟩, .write _ true, _ => Or.inr rfl
  | ⟨.unwritten, _, _, _⟩, .write _ false, _ => Or.inr rfl
  | ⟨.masked, _, _, _⟩, .write _ _, h => h
  | ⟨.keptExact, _, _, _⟩, .write _ _, h => h
  | ⟨.restoredExact, _, _, _⟩, .write _ _, h => h
  | ⟨.masked, _, _, _⟩, .audit true, h => by
    cases h with
    | inl hu =>
      have hu' : SlotState.masked = SlotState.unwritten := hu
      exact absurd hu' (by decide)
    | inr hm => exact Or.inr hm
  | ⟨.masked, _, _, _⟩, .audit false, h => h
  | ⟨.unwritten, _, _, _⟩, .audit _, h => h
  | ⟨.keptExact, _, _, _⟩, .audit _, h => h
  | ⟨.restoredExact, _, _, _⟩, .audit _, h => h
  | ⟨.unwritten, _, _, _⟩, .reuse _, _ => Or.inl rfl
  | ⟨.masked, _, _, _⟩, .reuse _, _ => Or.inl rfl
  | ⟨.keptExact, _, _, _⟩, .reuse _, _ => Or.inl rfl
  | ⟨.restoredExact, _, _, _⟩, .reuse _, _ => Or.inl rfl

/-- With write-site invalidation the invariant holds after any event sequence. -/
theorem run_fresh : ∀ (es : List SlotEv) (s : Slot), s.Fresh → (Slot.run true s es).Fresh
  | [], _, h => h
  | e :: es, s, h => run_fresh es (Slot.step true s e) (Slot.step_fresh s e h)

/-- Every read stays fresh: with write-site invalidation, after any event sequence from a new
slot, a written slot's map entry is its current generation. -/
theorem read_fresh (es : List SlotEv) (hw : (Slot.run true Slot.init es).state ≠ .unwritten) :
    (Slot.run true Slot.init es).mapGen = some (Slot.run true Slot.init es).gen := by
  have h := run_fresh es Slot.init (Or.inl rfl)
  cases h with
  | inl hu => exact absurd hu hw
  | inr hm => exact hm

/-- The stale trace: write, reuse by another owner, rewrite. -/
def staleTrace : List SlotEv := [.write 1 true, .reuse 2, .write 2 true]

/-- Counterexample: without invalidation the rewritten slot (generation 1) is read through the
map entry of generation 0; a stale-generation read is reachable. -/
theorem stale_read_reachable :
    (Slot.run false Slot.init staleTrace).state = .masked ∧
      (Slot.run false Slot.init staleTrace).gen = 1 ∧
      (Slot.run false Slot.init staleTrace).mapGen = some 0 ∧
      (Slot.run false Slot.init staleTrace).readFresh = false := by
  decide

/-- The same trace with write-site invalidation reads fresh. -/
theorem stale_trace_fresh_with_invalidation :
    (Slot.run true Slot.init staleTrace).readFresh = true := by
  decide

/-- Reuse advances the generation, so reads of the previous occupant are distinguishable. -/
theorem reuse_bumps_generation (inv : Bool) (s : Slot) (o : Nat) :
    (Slot.step inv s (.reuse o)).gen = s.gen + 1 := by
  cases s with
  | mk st g ow m => cases st <;> rfl

/-- A certified write of an unwritten slot makes the writer its owner (the account charged). -/
theorem write_sets_owner (inv acc : Bool) (g ow o : Nat) (m : Option Nat) :
    (Slot.step inv ⟨.unwritten, g, ow, m⟩ (.write o acc)).owner = o := by
  cases acc <;> rfl

/-- The audit restores only masked slots: a kept-exact slot is never touched. -/
theorem audit_keeps_exact (inv v : Bool) (g o : Nat) (m : Option Nat) :
    Slot.step inv ⟨.keptExact, g, o, m⟩ (.audit v) = ⟨.keptExact, g, o, m⟩ := by
  cases v <;> rfl

end Witprobe
