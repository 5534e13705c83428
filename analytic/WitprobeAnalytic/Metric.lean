import Mathlib

/-!
# Error metrics as types: `object:metric@site` (mirror of `coq/Witprobe/Metric.v`)

One constructor per metric of the Python tier registry (`python/witprobe/calculus/registry.py`,
36 entries, in registry order), named as in Coq. (The core library's `Witprobe.Metric` is the
Nat-level enum of the 8 metrics the arithmetic obligations use; this is the full registry, the
index type of the real-valued chains.) Every theorem has the name, hypotheses and conclusion of
the Coq lemma of the same name; Coq's `In`, `NoDup`, `length`, `Some`/`None` are `∈`,
`List.Nodup`, `List.length`, `some`/`none`.

Main results: `metric_of_name_name` (the Python string decodes back), `metric_name_inj`,
`all_metrics_complete`, `all_metrics_NoDup`, `all_metrics_length`, `lean_metrics_are_bounds`;
counterexamples `site_is_part_of_type`, `entryL2Read_ne_attnDistTvRead`,
`unregistered_metric_rejected`. Coq's `metric_eqb_spec` (a `Bool.reflect`) is pending; its Lean
counterpart is the helper `metric_eqb_iff`. Coq's `Fail` check (a dense entry is not a latent)
has no Lean statement; `decide` proves the disequality instead.
-/

namespace WitprobeAnalytic

/-- The registry metrics. -/
inductive metric : Type
  | entryL2Write
  | entryL2Read
  | entryBandWitnessWrite
  | entryRelResidualWrite
  | entryConservativenessWrite
  | latentL2Write
  | latentL2Read
  | latentBandWitnessWrite
  | latentRelResidualWrite
  | queryL2Read
  | scoreLinfRead
  | scoreOscRead
  | scoreEformExcessRead
  | attnDistTvRead
  | attnDistTvRealizedRead
  | selectorDistTvSelect
  | selectorDistTvRealizedSelect
  | selectorRhoRead
  | attnDistTvTotalRealizedRead
  | stateBandWitnessWrite
  | stateRelResidualWrite
  | stateContractionRead
  | stateGroenwallWrite
  | poolL2GainWrite
  | attnDistTightnessRead
  | entrySrRadiusWrite
  | entrySrWitnessWrite
  | requestDeltaSpentLedger
  | requestEprocessLogMLedger
  | entryRetentionRead
  | entryRetentionWrite
  | entryNormWrite
  | shadowEntryBandWitnessWrite
  | shadowEntryL2Write
  | shadowEntryRelResidualWrite
  | shadowEntryConservativenessWrite
  deriving DecidableEq, Repr

/-- Equality of metrics is decidable. -/
def metric_eq_dec (m1 m2 : metric) : Decidable (m1 = m2) := inferInstance

def metric_eqb (m1 m2 : metric) : Bool := decide (m1 = m2)

/-- `metric_eqb m1 m2 = true` iff `m1 = m2` (Lean helper; Coq states it as `Bool.reflect`). -/
theorem metric_eqb_iff (m1 m2 : metric) : metric_eqb m1 m2 = true ↔ m1 = m2 := by
  simp [metric_eqb]

/-- The Python spelling `object:metric@site` of each metric. -/
def metric_name : metric → String
  | .entryL2Write                     => "entry:l2@write"
  | .entryL2Read                      => "entry:l2@read"
  | .entryBandWitnessWrite            => "entry:band_witness@write"
  | .entryRelResidualWrite            => "entry:rel_residual@write"
  | .entryConservativenessWrite       => "entry:conservativeness@write"
  | .latentL2Write                    => "latent:l2@write"
  | .latentL2Read                     => "latent:l2@read"
  | .latentBandWitnessWrite           => "latent:band_witness@write"
  | .latentRelResidualWrite           => "latent:rel_residual@write"
  | .queryL2Read                      => "query:l2@read"
  | .scoreLinfRead                    => "score:linf@read"
  | .scoreOscRead                     => "score:osc@read"
  | .scoreEformExcessRead             => "score:eform_excess@read"
  | .attnDistTvRead                   => "attn_dist:tv@read"
  | .attnDistTvRealizedRead           => "attn_dist:tv_realized@read"
  | .selectorDistTvSelect             => "selector_dist:tv@select"
  | .selectorDistTvRealizedSelect     => "selector_dist:tv_realized@select"
  | .selectorRhoRead                  => "selector:rho@read"
  | .attnDistTvTotalRealizedRead      => "attn_dist:tv_total_realized@read"
  | .stateBandWitnessWrite            => "state:band_witness@write"
  | .stateRelResidualWrite            => "state:rel_residual@write"
  | .stateContractionRead             => "state:contraction@read"
  | .stateGroenwallWrite              => "state:groenwall@write"
  | .poolL2GainWrite                  => "pool:l2_gain@write"
  | .attnDistTightnessRead            => "attn_dist:tightness@read"
  | .entrySrRadiusWrite               => "entry:sr_radius@write"
  | .entrySrWitnessWrite              => "entry:sr_witness@write"
  | .requestDeltaSpentLedger          => "request:delta_spent@ledger"
  | .requestEprocessLogMLedger        => "request:eprocess_log_m@ledger"
  | .entryRetentionRead               => "entry:retention@read"
  | .entryRetentionWrite              => "entry:retention@write"
  | .entryNormWrite                   => "entry:norm@write"
  | .shadowEntryBandWitnessWrite      => "shadow_entry:band_witness@write"
  | .shadowEntryL2Write               => "shadow_entry:l2@write"
  | .shadowEntryRelResidualWrite      => "shadow_entry:rel_residual@write"
  | .shadowEntryConservativenessWrite => "shadow_entry:conservativeness@write"

/-- The registry's kind: a `Bound` may enter a contract as its offset, a `Coefficient` is an
exact runtime measurement used as a gain, a `Reading` is a diagnostic that never enters a
contract. -/
inductive kind : Type
  | Bound
  | Coefficient
  | Reading
  deriving DecidableEq, Repr

def metric_kind : metric → kind
  | .entryL2Write                     => .Bound
  | .entryL2Read                      => .Bound
  | .entryBandWitnessWrite            => .Bound
  | .entryRelResidualWrite            => .Reading
  | .entryConservativenessWrite       => .Reading
  | .latentL2Write                    => .Bound
  | .latentL2Read                     => .Bound
  | .latentBandWitnessWrite           => .Bound
  | .latentRelResidualWrite           => .Reading
  | .queryL2Read                      => .Coefficient
  | .scoreLinfRead                    => .Bound
  | .scoreOscRead                     => .Bound
  | .scoreEformExcessRead             => .Bound
  | .attnDistTvRead                   => .Bound
  | .attnDistTvRealizedRead           => .Reading
  | .selectorDistTvSelect             => .Bound
  | .selectorDistTvRealizedSelect     => .Reading
  | .selectorRhoRead                  => .Coefficient
  | .attnDistTvTotalRealizedRead      => .Reading
  | .stateBandWitnessWrite            => .Bound
  | .stateRelResidualWrite            => .Reading
  | .stateContractionRead             => .Reading
  | .stateGroenwallWrite              => .Reading
  | .poolL2GainWrite                  => .Reading
  | .attnDistTightnessRead            => .Reading
  | .entrySrRadiusWrite               => .Bound
  | .entrySrWitnessWrite              => .Bound
  | .requestDeltaSpentLedger          => .Bound
  | .requestEprocessLogMLedger        => .Reading
  | .entryRetentionRead               => .Reading
  | .entryRetentionWrite              => .Reading
  | .entryNormWrite                   => .Reading
  | .shadowEntryBandWitnessWrite      => .Reading
  | .shadowEntryL2Write               => .Reading
  | .shadowEntryRelResidualWrite      => .Reading
  | .shadowEntryConservativenessWrite => .Reading

/-- Every metric, in registry order. -/
def all_metrics : List metric :=
  [ .entryL2Write,
    .entryL2Read,
    .entryBandWitnessWrite,
    .entryRelResidualWrite,
    .entryConservativenessWrite,
    .latentL2Write,
    .latentL2Read,
    .latentBandWitnessWrite,
    .latentRelResidualWrite,
    .queryL2Read,
    .scoreLinfRead,
    .scoreOscRead,
    .scoreEformExcessRead,
    .attnDistTvRead,
    .attnDistTvRealizedRead,
    .selectorDistTvSelect,
    .selectorDistTvRealizedSelect,
    .selectorRhoRead,
    .attnDistTvTotalRealizedRead,
    .stateBandWitnessWrite,
    .stateRelResidualWrite,
    .stateContractionRead,
    .stateGroenwallWrite,
    .poolL2GainWrite,
    .attnDistTightnessRead,
    .entrySrRadiusWrite,
    .entrySrWitnessWrite,
    .requestDeltaSpentLedger,
    .requestEprocessLogMLedger,
    .entryRetentionRead,
    .entryRetentionWrite,
    .entryNormWrite,
    .shadowEntryBandWitnessWrite,
    .shadowEntryL2Write,
    .shadowEntryRelResidualWrite,
    .shadowEntryConservativenessWrite ]

open metric kind

/-- Every metric is in `all_metrics`. -/
theorem all_metrics_complete (m : metric) : m ∈ all_metrics := by
  cases m <;> first | decide | simp [all_metrics]

theorem all_metrics_length : List.length all_metrics = 36 := rfl

/-- Decode a Python metric string; `none` for a string the registry does not know. -/
def metric_of_name (s : String) : Option metric :=
  List.find? (fun m => metric_name m == s) all_metrics

/-- Round trip: `metric_of_name (metric_name m) = some m`. -/
theorem metric_of_name_name (m : metric) : metric_of_name (metric_name m) = some m := by
  cases m <;> first | rfl | decide | simp [metric_of_name, all_metrics, metric_name]

/-- `metric_name` is injective: no two metrics share a string. -/
theorem metric_name_inj (m1 m2 : metric) (h : metric_name m1 = metric_name m2) : m1 = m2 := by
  have h1 := metric_of_name_name m1
  rw [h, metric_of_name_name m2] at h1
  exact (Option.some.inj h1).symm

/-- Boolean duplicate check. -/
def nodupb : List metric → Bool
  | [] => true
  | m :: l => !(List.any l (metric_eqb m)) && nodupb l

theorem nodupb_NoDup (l : List metric) : nodupb l = true → List.Nodup l := by
  induction l with
  | nil =>
    intro _
    exact List.nodup_nil
  | cons m l ih =>
    intro h
    have h' : (!(List.any l (metric_eqb m)) && nodupb l) = true := h
    rw [Bool.and_eq_true] at h'
    obtain ⟨hm, hl⟩ := h'
    refine List.nodup_cons.mpr ⟨?_, ih hl⟩
    intro hin
    have hany : List.any l (metric_eqb m) = true :=
      List.any_eq_true.mpr ⟨m, hin, (metric_eqb_iff m m).mpr rfl⟩
    rw [hany] at hm
    exact absurd hm (by decide)

/-- No metric is listed twice. -/
theorem all_metrics_NoDup : List.Nodup all_metrics := nodupb_NoDup all_metrics (by first | rfl | decide)

/-- Counterexample beside the typing rule: an unregistered string decodes to nothing. -/
theorem unregistered_metric_rejected : metric_of_name "entry:l2@readback" = none := by
  first | rfl | decide

/-- The metrics that have a constructor in `Witprobe/Metric.lean` (registry `lean=True`). -/
def lean_metric : metric → Bool
  | .entryL2Write => true
  | .entryL2Read => true
  | .latentL2Write => true
  | .latentL2Read => true
  | .scoreLinfRead => true
  | .scoreOscRead => true
  | .scoreEformExcessRead => true
  | .attnDistTvRead => true
  | _ => false

/-- Every kernel-checked (Lean) metric is a bound, never a reading. -/
theorem lean_metrics_are_bounds (m : metric) : lean_metric m = true → metric_kind m = Bound := by
  cases m <;> intro h <;> first | rfl | exact absurd h (by decide)

/-- The site is part of the type: `entry:l2@write` and `entry:l2@read` differ. -/
theorem site_is_part_of_type : entryL2Write ≠ entryL2Read := by decide

/-- A residual norm is not a TV mass. -/
theorem entryL2Read_ne_attnDistTvRead : entryL2Read ≠ attnDistTvRead := by decide

end WitprobeAnalytic
