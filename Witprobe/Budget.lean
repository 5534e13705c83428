import Witprobe.ListSum
import Witprobe.MulAC

/-!
# Request budgets: telescoping weights, the two-layer budget, union bounds, shared reads

Probabilistic certificates of one request draw failure probability from the telescoping
sequence `δ_i = δ_req · w_i` with `w_i = 1/((i+1)(i+2))`, `i = 0, 1, 2, ...` (paper section 5.1).
Rationals are pairs `(num, den)` of naturals and equalities between them are cross-multiplied,
so everything here is decided or proved by `omega` over atoms.

Main results:
* `Witprobe.telescope_sum`: `Σ_{i<n} 1/((i+1)(i+2)) = n/(n+1)`, cross-multiplied:
  `(tsum n).num · (n+1) = n · (tsum n).den`.
* `Witprobe.telescope_sum_lt_one`: the spend never reaches the budget, at every length.
* `Witprobe.two_layer_budget_eq`: deterministic events cost 0 and do not advance the counter;
  the spend after any event sequence is the telescoping sum over its probabilistic events.
* `Witprobe.massOf_or_le`, `Witprobe.union_bound`: the union bound on a finite weighted sample
  space (`P(E ∪ F) ≤ P(E) + P(F)`, and over a list of events).
* `Witprobe.shared_read_sound`: the failure probability of any read is at most the sum over
  *write* events of their deltas, whatever the number of readers.
* Counterexamples: `Witprobe.flat_budget_exceeds` (a fixed per-event share overspends at an
  unknown length), `Witprobe.per_reader_charge_double_counts`.
-/

namespace Witprobe

/-! ## Telescoping weights -/

/-- Sum of two nonnegative rationals `(num, den)`. -/
def qadd (x y : Nat × Nat) : Nat × Nat := (x.1 * y.2 + y.1 * x.2, x.2 * y.2)

/-- The weight `w_i = 1/((i+1)(i+2))` of the `i`-th probabilistic event. -/
def weight (i : Nat) : Nat × Nat := (1, (i + 1) * (i + 2))

/-- `Σ_{i<n} w_i` as a pair `(num, den)`. -/
def tsum : Nat → Nat × Nat
  | 0 => (0, 1)
  | n + 1 => qadd (tsum n) (weight n)

/-- One telescoping step on the coefficient: `n(n+2) + 1 = (n+1)²`. -/
theorem telescope_step_coeff (n : Nat) : n * (n + 2) + 1 = (n + 1) * (n + 1) := by
  have e1 : n * (n + 2) = n * (n + 1) + n := Nat.mul_succ n (n + 1)
  have e2 : n * (n + 1) = n * n + n := Nat.mul_succ n n
  have e3 : (n + 1) * (n + 1) = (n + 1) * n + (n + 1) := Nat.mul_succ (n + 1) n
  have e4 : (n + 1) * n = n * n + n := Nat.succ_mul n n
  omega

/-- Telescoping sum: `Σ_{i<n} 1/((i+1)(i+2)) = n/(n+1)`, i.e.
`(tsum n).1 · (n + 1) = n · (tsum n).2`. -/
theorem telescope_sum : ∀ n : Nat, (tsum n).1 * (n + 1) = n * (tsum n).2
  | 0 => by decide
  | n + 1 => by
    have ih := telescope_sum n
    show ((tsum n).1 * ((n + 1) * (n + 2)) + 1 * (tsum n).2) * (n + 1 + 1)
      = (n + 1) * ((tsum n).2 * ((n + 1) * (n + 2)))
    -- write a = (tsum n).1, b = (tsum n).2, Y = b·(n+2)
    have c0 : ((tsum n).1 * ((n + 1) * (n + 2)) + 1 * (tsum n).2) * (n + 1 + 1)
        = (tsum n).1 * ((n + 1) * (n + 2)) * (n + 2) + 1 * (tsum n).2 * (n + 2) :=
      Nat.right_distrib _ _ _
    have c1 : (tsum n).1 * ((n + 1) * (n + 2)) * (n + 2)
        = ((tsum n).1 * (n + 1)) * ((n + 2) * (n + 2)) :=
      mul_assoc_mid (tsum n).1 (n + 1) (n + 2) (n + 2)
    have c2 : ((tsum n).1 * (n + 1)) * ((n + 2) * (n + 2))
        = (n * (tsum n).2) * ((n + 2) * (n + 2)) := by
      rw [ih]
    have c3 : (n * (tsum n).2) * ((n + 2) * (n + 2))
        = (n * (n + 2)) * ((tsum n).2 * (n + 2)) :=
      mul_mul_mul_swap n (tsum n).2 (n + 2) (n + 2)
    have c4 : 1 * (tsum n).2 * (n + 2) = (tsum n).2 * (n + 2) := by
      rw [Nat.one_mul]
    have c5 : (n * (n + 2) + 1) * ((tsum n).2 * (n + 2))
        = (n * (n + 2)) * ((tsum n).2 * (n + 2)) + 1 * ((tsum n).2 * (n + 2)) :=
      Nat.right_distrib _ _ _
    have c6 : 1 * ((tsum n).2 * (n + 2)) = (tsum n).2 * (n + 2) := Nat.one_mul _
    have c7 : (n * (n + 2) + 1) * ((tsum n).2 * (n + 2))
        = ((n + 1) * (n + 1)) * ((tsum n).2 * (n + 2)) := by
      rw [telescope_step_coeff n]
    have c8 : (n + 1) * ((tsum n).2 * ((n + 1) * (n + 2)))
        = ((n + 1) * (n + 1)) * ((tsum n).2 * (n + 2)) :=
      mul_left_comm_assoc (n + 1) (tsum n).2 (n + 1) (n + 2)
    omega

/-- The denominator of the partial sum is positive. -/
theorem tsum_den_pos : ∀ n : Nat, 0 < (tsum n).2
  | 0 => by decide
  | n + 1 => by
    have ih := tsum_den_pos n
    show 0 < (tsum n).2 * ((n + 1) * (n + 2))
    have ih' : 1 ≤ (tsum n).2 := by omega
    have h0 : 1 ≤ n + 1 := by omega
    have h0' : 1 ≤ n + 2 := by omega
    have h1 : 1 * 1 ≤ (n + 1) * (n + 2) := Nat.mul_le_mul h0 h0'
    have h2 : 1 * (1 * 1) ≤ (tsum n).2 * ((n + 1) * (n + 2)) := Nat.mul_le_mul ih' h1
    omega

/-- The telescoping spend stays strictly below the budget at every length: `Σ_{i<n} w_i < 1`. -/
theorem telescope_sum_lt_one (n : Nat) : (tsum n).1 < (tsum n).2 := by
  have h := telescope_sum n
  have hb := tsum_den_pos n
  -- a·(n+1) = n·b < (n+1)·b, so a < b
  have e1 : (n + 1) * (tsum n).2 = n * (tsum n).2 + (tsum n).2 := Nat.succ_mul n (tsum n).2
  have e2 : (tsum n).1 * (n + 1) = (n + 1) * (tsum n).1 := Nat.mul_comm _ _
  have h3 : (n + 1) * (tsum n).1 < (n + 1) * (tsum n).2 := by omega
  exact lt_of_mul_lt_mul_pos h3

/-- Worked numbers: after 1, 2 and 3 probabilistic events the spend is `1/2`, `2/3` and `3/4`
of `δ_req` (the Python mirror `telescoping_spend` agrees). -/
theorem telescope_examples :
    (tsum 1).1 * 2 = 1 * (tsum 1).2 ∧ (tsum 2).1 * 3 = 2 * (tsum 2).2 ∧
      (tsum 3).1 * 4 = 3 * (tsum 3).2 := by
  decide

/-- Counterexample beside the rule: a fixed per-event share `d > 0` of the budget `D` is
exceeded once the (unknown) request length passes `D`; no fixed share is sound at every
length, while the telescoping weights are (`telescope_sum_lt_one`). -/
theorem flat_budget_exceeds (D d : Nat) (hd : 0 < d) : D < (D + 1) * d := by
  have hd' : 1 ≤ d := hd
  have h1 : (D + 1) * 1 ≤ (D + 1) * d := Nat.mul_le_mul (Nat.le_refl _) hd'
  have h2 : (D + 1) * 1 = D + 1 := Nat.mul_one _
  omega

/-! ## Two-layer budget -/

/-- Number of probabilistic events (`true`) in an event sequence. -/
def probCount : List Bool → Nat
  | [] => 0
  | true :: es => probCount es + 1
  | false :: es => probCount es

/-- Spend of an event sequence, starting with `k` earlier probabilistic events and spend
`acc`: a deterministic event (`false`) costs 0 and leaves the counter; a probabilistic one
costs `w_k` and advances it. -/
def twoLayerSpend : Nat → Nat × Nat → List Bool → Nat × Nat
  | _, acc, [] => acc
  | k, acc, false :: es => twoLayerSpend k acc es
  | k, acc, true :: es => twoLayerSpend (k + 1) (qadd acc (weight k)) es

/-- The two-layer budget: the spend of any event sequence, deterministic events included, is
the telescoping sum over its probabilistic events only (exactly, as a pair). -/
theorem two_layer_budget_eq :
    ∀ (es : List Bool) (k : Nat), twoLayerSpend k (tsum k) es = tsum (k + probCount es)
  | [], k => rfl
  | false :: es, k => by
    show twoLayerSpend k (tsum k) es = tsum (k + probCount es)
    exact two_layer_budget_eq es k
  | true :: es, k => by
    show twoLayerSpend (k + 1) (tsum (k + 1)) es = tsum (k + (probCount es + 1))
    rw [two_layer_budget_eq es (k + 1)]
    have e : k + 1 + probCount es = k + (probCount es + 1) := by omega
    rw [e]

/-- Corollary: the spend of a whole request, `Σ δ_i / δ_req = m/(m+1) < 1` with `m` the
number of probabilistic events, however many deterministic events it also had. -/
theorem two_layer_budget_le (es : List Bool) :
    (twoLayerSpend 0 (0, 1) es).1 < (twoLayerSpend 0 (0, 1) es).2 := by
  have h := two_layer_budget_eq es 0
  have h0 : tsum 0 = (0, 1) := rfl
  rw [h0] at h
  rw [h]
  exact telescope_sum_lt_one _

/-- A deterministic event changes nothing. -/
theorem twoLayerSpend_deterministic (k : Nat) (acc : Nat × Nat) (es : List Bool) :
    twoLayerSpend k acc (false :: es) = twoLayerSpend k acc es := rfl

/-- Counterexample: a counter that also advanced on deterministic events would give the
second probabilistic event of `[true, false, true]` the weight `w_2 = 1/12` instead of
`w_1 = 1/6`; the two-layer rule charges `1/2 + 1/6 = 2/3`. -/
theorem two_layer_example : (twoLayerSpend 0 (0, 1) [true, false, true]).1 * 3
    = 2 * (twoLayerSpend 0 (0, 1) [true, false, true]).2 := by
  decide

/-! ## Union bound on a finite weighted sample space -/

/-- Mass of the event `E` on a finite sample space given as `(outcome, weight)` pairs; the
probability is the mass divided by the total weight. -/
def massOf {α : Type} (E : α → Bool) : List (α × Nat) → Nat
  | [] => 0
  | (x, w) :: xs => cond (E x) w 0 + massOf E xs

/-- One outcome: `[E ∨ F] w ≤ [E] w + [F] w`. -/
theorem cond_or_le (a b : Bool) (w : Nat) : cond (a || b) w 0 ≤ cond a w 0 + cond b w 0 := by
  cases a with
  | true =>
    cases b with
    | true =>
      show w ≤ w + w
      omega
    | false =>
      show w ≤ w + 0
      omega
  | false =>
    cases b with
    | true =>
      show w ≤ 0 + w
      omega
    | false =>
      show 0 ≤ 0 + 0
      omega

/-- Union bound for two events: `P(E ∪ F) ≤ P(E) + P(F)`. -/
theorem massOf_or_le {α : Type} (E F : α → Bool) :
    ∀ xs : List (α × Nat), massOf (fun x => E x || F x) xs ≤ massOf E xs + massOf F xs
  | [] => Nat.zero_le _
  | (x, w) :: xs => by
    have h1 := cond_or_le (E x) (F x) w
    have ih := massOf_or_le E F xs
    show cond (E x || F x) w 0 + massOf (fun x => E x || F x) xs
      ≤ (cond (E x) w 0 + massOf E xs) + (cond (F x) w 0 + massOf F xs)
    omega

/-- Monotonicity: if `E` implies `F` pointwise, `P(E) ≤ P(F)`. -/
theorem massOf_mono {α : Type} (E F : α → Bool) (h : ∀ x, E x = true → F x = true) :
    ∀ xs : List (α × Nat), massOf E xs ≤ massOf F xs
  | [] => Nat.le_refl 0
  | (x, w) :: xs => by
    have ih := massOf_mono E F h xs
    have hx : cond (E x) w 0 ≤ cond (F x) w 0 := by
      cases hE : E x with
      | false => exact Nat.zero_le _
      | true =>
        have hF : F x = true := h x hE
        exact Nat.le_of_eq (congrArg (fun b => cond b w 0) hF.symm)
    show cond (E x) w 0 + massOf E xs ≤ cond (F x) w 0 + massOf F xs
    omega

/-- The union of a list of events (`false` for the empty list). -/
def anyOf {α : Type} : List (α → Bool) → α → Bool
  | [], _ => false
  | E :: Es, x => E x || anyOf Es x

/-- The empty union has mass 0. -/
theorem massOf_anyOf_nil {α : Type} :
    ∀ xs : List (α × Nat), massOf (anyOf ([] : List (α → Bool))) xs = 0
  | [] => rfl
  | (_, _) :: xs => by
    have ih := massOf_anyOf_nil (α := α) xs
    show 0 + massOf (anyOf ([] : List (α → Bool))) xs = 0
    omega

/-- `Σ_i P(E_i)` over a list of events. -/
def massSum {α : Type} (xs : List (α × Nat)) : List (α → Bool) → Nat
  | [] => 0
  | E :: Es => massOf E xs + massSum xs Es

/-- Union bound: `P(⋃_i E_i) ≤ Σ_i P(E_i)` on a finite weighted sample space. -/
theorem union_bound {α : Type} (xs : List (α × Nat)) :
    ∀ Es : List (α → Bool), massOf (anyOf Es) xs ≤ massSum xs Es
  | [] => by
    have h := massOf_anyOf_nil (α := α) xs
    show massOf (anyOf ([] : List (α → Bool))) xs ≤ 0
    omega
  | E :: Es => by
    have h1 : massOf (anyOf (E :: Es)) xs ≤ massOf (fun x => E x || anyOf Es x) xs :=
      massOf_mono _ _ (fun _ hx => hx) xs
    have h2 := massOf_or_le E (anyOf Es) xs
    have ih := union_bound xs Es
    show massOf (anyOf (E :: Es)) xs ≤ massOf E xs + massSum xs Es
    omega

/-! ## Shared reads -/

/-- The `k`-th write event's failure event (`false` past the end of the list). -/
def eventAt {α : Type} : List (α → Bool) → Nat → α → Bool
  | [], _, _ => false
  | E :: _, 0, x => E x
  | _ :: Es, k + 1, x => eventAt Es k x

/-- A read fails exactly when its source write's entry violates its bound; `reads` lists the
source write of every read (any number of reads, readers and repeats). -/
def readFail {α : Type} (writes : List (α → Bool)) : List Nat → α → Bool
  | [], _ => false
  | r :: rs, x => eventAt writes r x || readFail writes rs x

/-- A failing source write is one of the write events. -/
theorem eventAt_imp_anyOf {α : Type} (x : α) :
    ∀ (Es : List (α → Bool)) (k : Nat), eventAt Es k x = true → anyOf Es x = true
  | [], _, h => by
    have h' : false = true := h
    exact absurd h' (by decide)
  | E :: Es, 0, h => by
    have h' : E x = true := h
    show (E x || anyOf Es x) = true
    rw [Bool.or_eq_true]
    exact Or.inl h'
  | E :: Es, k + 1, h => by
    have h' : eventAt Es k x = true := h
    show (E x || anyOf Es x) = true
    rw [Bool.or_eq_true]
    exact Or.inr (eventAt_imp_anyOf x Es k h')

/-- Every read failure is a write failure. -/
theorem readFail_imp_anyOf {α : Type} (writes : List (α → Bool)) (x : α) :
    ∀ reads : List Nat, readFail writes reads x = true → anyOf writes x = true
  | [], h => by
    have h' : false = true := h
    exact absurd h' (by decide)
  | r :: rs, h => by
    have h' : (eventAt writes r x || readFail writes rs x) = true := h
    rw [Bool.or_eq_true] at h'
    cases h' with
    | inl hr => exact eventAt_imp_anyOf x writes r hr
    | inr hrs => exact readFail_imp_anyOf writes x rs hrs

/-- Shared-read soundness: whatever the reads (any number, any readers, repeated reads of one
entry), `P(some read fails) ≤ Σ_{write events} P(write fails)`. An immutable write event spends
its delta once; the union ranges over writes, never over readers. -/
theorem shared_read_sound {α : Type} (xs : List (α × Nat)) (writes : List (α → Bool))
    (reads : List Nat) : massOf (readFail writes reads) xs ≤ massSum xs writes := by
  have h1 : massOf (readFail writes reads) xs ≤ massOf (anyOf writes) xs :=
    massOf_mono _ _ (fun x hx => readFail_imp_anyOf writes x reads hx) xs
  have h2 := union_bound xs writes
  omega

/-- Counterexample: charging the delta per reader double-counts. One write failing with mass 1
(out of 2), read twice: the per-reader sum is 2, while the failure mass is 1. -/
theorem per_reader_charge_double_counts :
    massOf (readFail [fun (b : Bool) => b] [0, 0]) [(true, 1), (false, 1)] = 1 ∧
      massSum [(true, 1), (false, 1)] [fun (b : Bool) => b, fun (b : Bool) => b] = 2 := by
  decide

end Witprobe
