(** * Error metrics as types: [object:metric@site]

    One constructor per metric of the Python tier registry
    ([python/witprobe/calculus/registry.py], 36 entries, in registry order); the constructor name
    is the registry's [Metric.lean_name] ([entry:l2@write] is [entryL2Write]). A metric names the
    object measured, its unit and its observation site; two metrics that differ in any of the
    three are different constructors, so stages compose only when the output metric of one is
    the input metric of the next ([Chain.v]).

    Main results:
    - [metric_eq_dec]: decidable equality; [metric_eqb_spec] for the boolean test.
    - [metric_of_name_name]: [metric_name] (the Python string) is decoded back by
      [metric_of_name], hence [metric_name_inj]: distinct constructors have distinct strings.
    - [all_metrics_complete], [all_metrics_NoDup], [all_metrics_length]: the list of all 36.
    - [metric_kind]: the registry's kind ([Bound], [Coefficient], [Reading]);
      [lean_metric]: the 8 metrics marked [lean=True] (constructors of [Witprobe/Metric.lean]),
      [lean_metrics_are_bounds].
    - Counterexamples beside the typing rule: [site_is_part_of_type] (the same object and unit
      at two sites are different metrics), [entryL2Read_ne_attnDistTvRead], and a [Fail]
      check that [entry:l2@write] is not convertible to [latent:l2@write]. *)

From Coq Require Import String List.
Import ListNotations.
Open Scope string_scope.

(** The registry metrics. *)
Inductive metric : Set :=
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
  | shadowEntryConservativenessWrite.

(** Equality of metrics is decidable. *)
Definition metric_eq_dec (m1 m2 : metric) : {m1 = m2} + {m1 <> m2}.
Proof. decide equality. Defined.

Definition metric_eqb (m1 m2 : metric) : bool := if metric_eq_dec m1 m2 then true else false.

(** [metric_eqb m1 m2 = true] iff [m1 = m2]. *)
Lemma metric_eqb_spec (m1 m2 : metric) : Bool.reflect (m1 = m2) (metric_eqb m1 m2).
Proof. unfold metric_eqb. destruct (metric_eq_dec m1 m2); constructor; assumption. Qed.

(** The Python spelling [object:metric@site] of each metric. *)
Definition metric_name (m : metric) : string :=
  match m with
  | entryL2Write                     => "entry:l2@write"
  | entryL2Read                      => "entry:l2@read"
  | entryBandWitnessWrite            => "entry:band_witness@write"
  | entryRelResidualWrite            => "entry:rel_residual@write"
  | entryConservativenessWrite       => "entry:conservativeness@write"
  | latentL2Write                    => "latent:l2@write"
  | latentL2Read                     => "latent:l2@read"
  | latentBandWitnessWrite           => "latent:band_witness@write"
  | latentRelResidualWrite           => "latent:rel_residual@write"
  | queryL2Read                      => "query:l2@read"
  | scoreLinfRead                    => "score:linf@read"
  | scoreOscRead                     => "score:osc@read"
  | scoreEformExcessRead             => "score:eform_excess@read"
  | attnDistTvRead                   => "attn_dist:tv@read"
  | attnDistTvRealizedRead           => "attn_dist:tv_realized@read"
  | selectorDistTvSelect             => "selector_dist:tv@select"
  | selectorDistTvRealizedSelect     => "selector_dist:tv_realized@select"
  | selectorRhoRead                  => "selector:rho@read"
  | attnDistTvTotalRealizedRead      => "attn_dist:tv_total_realized@read"
  | stateBandWitnessWrite            => "state:band_witness@write"
  | stateRelResidualWrite            => "state:rel_residual@write"
  | stateContractionRead             => "state:contraction@read"
  | stateGroenwallWrite              => "state:groenwall@write"
  | poolL2GainWrite                  => "pool:l2_gain@write"
  | attnDistTightnessRead            => "attn_dist:tightness@read"
  | entrySrRadiusWrite               => "entry:sr_radius@write"
  | entrySrWitnessWrite              => "entry:sr_witness@write"
  | requestDeltaSpentLedger          => "request:delta_spent@ledger"
  | requestEprocessLogMLedger        => "request:eprocess_log_m@ledger"
  | entryRetentionRead               => "entry:retention@read"
  | entryRetentionWrite              => "entry:retention@write"
  | entryNormWrite                   => "entry:norm@write"
  | shadowEntryBandWitnessWrite      => "shadow_entry:band_witness@write"
  | shadowEntryL2Write               => "shadow_entry:l2@write"
  | shadowEntryRelResidualWrite      => "shadow_entry:rel_residual@write"
  | shadowEntryConservativenessWrite => "shadow_entry:conservativeness@write"
  end.

(** The registry's kind: a [Bound] may enter a contract as its offset, a [Coefficient] is an
    exact runtime measurement used as a gain, a [Reading] is a diagnostic that never enters a
    contract. *)
Inductive kind : Set := Bound | Coefficient | Reading.

Definition metric_kind (m : metric) : kind :=
  match m with
  | entryL2Write                     => Bound
  | entryL2Read                      => Bound
  | entryBandWitnessWrite            => Bound
  | entryRelResidualWrite            => Reading
  | entryConservativenessWrite       => Reading
  | latentL2Write                    => Bound
  | latentL2Read                     => Bound
  | latentBandWitnessWrite           => Bound
  | latentRelResidualWrite           => Reading
  | queryL2Read                      => Coefficient
  | scoreLinfRead                    => Bound
  | scoreOscRead                     => Bound
  | scoreEformExcessRead             => Bound
  | attnDistTvRead                   => Bound
  | attnDistTvRealizedRead           => Reading
  | selectorDistTvSelect             => Bound
  | selectorDistTvRealizedSelect     => Reading
  | selectorRhoRead                  => Coefficient
  | attnDistTvTotalRealizedRead      => Reading
  | stateBandWitnessWrite            => Bound
  | stateRelResidualWrite            => Reading
  | stateContractionRead             => Reading
  | stateGroenwallWrite              => Reading
  | poolL2GainWrite                  => Reading
  | attnDistTightnessRead            => Reading
  | entrySrRadiusWrite               => Bound
  | entrySrWitnessWrite              => Bound
  | requestDeltaSpentLedger          => Bound
  | requestEprocessLogMLedger        => Reading
  | entryRetentionRead               => Reading
  | entryRetentionWrite              => Reading
  | entryNormWrite                   => Reading
  | shadowEntryBandWitnessWrite      => Reading
  | shadowEntryL2Write               => Reading
  | shadowEntryRelResidualWrite      => Reading
  | shadowEntryConservativenessWrite => Reading
  end.

(** Every metric, in registry order. *)
Definition all_metrics : list metric :=
  [ entryL2Write;
    entryL2Read;
    entryBandWitnessWrite;
    entryRelResidualWrite;
    entryConservativenessWrite;
    latentL2Write;
    latentL2Read;
    latentBandWitnessWrite;
    latentRelResidualWrite;
    queryL2Read;
    scoreLinfRead;
    scoreOscRead;
    scoreEformExcessRead;
    attnDistTvRead;
    attnDistTvRealizedRead;
    selectorDistTvSelect;
    selectorDistTvRealizedSelect;
    selectorRhoRead;
    attnDistTvTotalRealizedRead;
    stateBandWitnessWrite;
    stateRelResidualWrite;
    stateContractionRead;
    stateGroenwallWrite;
    poolL2GainWrite;
    attnDistTightnessRead;
    entrySrRadiusWrite;
    entrySrWitnessWrite;
    requestDeltaSpentLedger;
    requestEprocessLogMLedger;
    entryRetentionRead;
    entryRetentionWrite;
    entryNormWrite;
    shadowEntryBandWitnessWrite;
    shadowEntryL2Write;
    shadowEntryRelResidualWrite;
    shadowEntryConservativenessWrite ].

(** Every metric is in [all_metrics]. *)
Lemma all_metrics_complete (m : metric) : In m all_metrics.
Proof. destruct m; simpl; tauto. Qed.

Lemma all_metrics_length : length all_metrics = 36%nat.
Proof. reflexivity. Qed.

(** Decode a Python metric string; [None] for a string the registry does not know. *)
Definition metric_of_name (s : string) : option metric :=
  find (fun m => String.eqb (metric_name m) s) all_metrics.

(** Round trip: [metric_of_name (metric_name m) = Some m]. *)
Lemma metric_of_name_name (m : metric) : metric_of_name (metric_name m) = Some m.
Proof. destruct m; vm_compute; reflexivity. Qed.

(** [metric_name] is injective: no two metrics share a string. *)
Lemma metric_name_inj (m1 m2 : metric) : metric_name m1 = metric_name m2 -> m1 = m2.
Proof.
  intros H. apply (f_equal metric_of_name) in H. rewrite !metric_of_name_name in H.
  injection H. auto.
Qed.

(** Boolean duplicate check. *)
Fixpoint nodupb (l : list metric) : bool :=
  match l with
  | [] => true
  | m :: l => negb (existsb (metric_eqb m) l) && nodupb l
  end.

Lemma nodupb_NoDup (l : list metric) : nodupb l = true -> NoDup l.
Proof.
  induction l as [|m l IH]; simpl; intros H; [constructor|].
  apply andb_prop in H as [Hm Hl]. constructor; [|apply IH, Hl].
  intros Hin. apply Bool.negb_true_iff in Hm. rewrite <- Bool.not_true_iff_false in Hm. apply Hm.
  apply existsb_exists. exists m. split; [exact Hin|]. destruct (metric_eqb_spec m m); congruence.
Qed.

(** No metric is listed twice. *)
Lemma all_metrics_NoDup : NoDup all_metrics.
Proof. apply nodupb_NoDup. vm_compute. reflexivity. Qed.

(** Counterexample beside the typing rule: an unregistered string decodes to nothing. *)
Lemma unregistered_metric_rejected : metric_of_name "entry:l2@readback" = None.
Proof. vm_compute. reflexivity. Qed.

(** The metrics that have a constructor in [Witprobe/Metric.lean] (registry [lean=True]). *)
Definition lean_metric (m : metric) : bool :=
  match m with
  | entryL2Write | entryL2Read | latentL2Write | latentL2Read
  | scoreLinfRead | scoreOscRead | scoreEformExcessRead | attnDistTvRead => true
  | _ => false
  end.

(** Every kernel-checked (Lean) metric is a bound, never a reading. *)
Lemma lean_metrics_are_bounds (m : metric) : lean_metric m = true -> metric_kind m = Bound.
Proof. destruct m; simpl; congruence. Qed.

(** The site is part of the type: [entry:l2@write] and [entry:l2@read] differ. *)
Lemma site_is_part_of_type : entryL2Write <> entryL2Read.
Proof. discriminate. Qed.

(** A residual norm is not a TV mass. *)
Lemma entryL2Read_ne_attnDistTvRead : entryL2Read <> attnDistTvRead.
Proof. discriminate. Qed.

(** The dense entry and the MLA latent are different objects: not convertible. *)
Fail Check (eq_refl : entryL2Write = latentL2Write).
