(** * Directed-rounding bounds: what a primitive-float computation proves about the reals

    The per-run checkers ([BoxCheck]) compute with Coq's primitive 64-bit floats, rounded outward
    by Interval's [PrimitiveFloat] operations ([add_UP], [mul_UP], [sub_UP], [div_DN], ...), whose
    [*_correct] lemmas state their rounding direction. This file turns those lemmas into three
    compositional judgements on a float [x] and a real [v]:

    - [Ex v x]: [x] is finite and equal to [v] (a literal of the run's data);
    - [Ub v x]: [x] is an upper bound of [v], or not finite (then no comparison accepts it);
    - [Lb v x]: [x] is a lower bound of [v], or not finite.

    Main results: [ub_add], [ub_mul], [ub_sub], [ub_max] ([fmax]), [lb_add], [lb_div],
    [lb_mul]; [fle_sound] (the comparison [fle] accepts only finite floats in order), and the
    final steps [ub_fle] and [fle_lb] that turn a judgement into a real inequality.

    Counterexample [fle_needs_finite]: the raw comparison [cmp] orders [-oo] below every finite
    float, while its real value ([toR], [0] for non-finite floats) need not be; [fle] therefore
    also demands that both sides are finite. *)

From Coq Require Import Reals Lra ZArith PrimFloat.
From Flocq Require Import Raux.
From Interval Require Import Float.Sig Float.Primitive_ops Float.Basic Real.Xreal.
Open Scope R_scope.

Module F := PrimitiveFloat.

(** The precision argument of [PrimitiveFloat]'s operations is ignored (binary64 throughout). *)
Definition P : F.precision := 53%Z.

Definition f0 : F.type := F.zero.
Definition f1 : F.type := F.fromZ 1.

Definition Ex (v : R) (x : F.type) : Prop := F.toX x = Xreal v.
Definition Ub (v : R) (x : F.type) : Prop := F.valid_ub x = true /\ le_upper (Xreal v) (F.toX x).
Definition Lb (v : R) (x : F.type) : Prop := F.valid_lb x = true /\ le_lower (F.toX x) (Xreal v).

(** [x <= y] between two finite floats. *)
Definition fle (x y : F.type) : bool :=
  F.real x && F.real y && match F.cmp x y with Xlt | Xeq => true | _ => false end.

(** [max] of two upper bounds; not finite ([nan]) where they do not compare. *)
Definition fmax (x y : F.type) : F.type := if fle x y then y else if fle y x then x else F.nan.

(** ** Finite floats *)

Lemma real_toX (x : F.type) : F.real x = true -> F.toX x = Xreal (F.toR x).
Proof.
  rewrite F.real_correct. unfold F.toR. destruct (F.toX x); [discriminate | reflexivity].
Qed.

Lemma toX_real (x : F.type) (v : R) : F.toX x = Xreal v -> F.real x = true.
Proof. intros H. rewrite F.real_correct, H. reflexivity. Qed.

Lemma real_classify (x : F.type) : F.real x = true -> F.classify x = Freal.
Proof. rewrite F.classify_correct. destruct (F.classify x); easy. Qed.

Lemma ex_valid_ub (v : R) (x : F.type) : Ex v x -> F.valid_ub x = true.
Proof.
  intros H. rewrite F.valid_ub_correct, (real_classify x (toX_real x v H)). reflexivity.
Qed.

Lemma ex_valid_lb (v : R) (x : F.type) : Ex v x -> F.valid_lb x = true.
Proof.
  intros H. rewrite F.valid_lb_correct, (real_classify x (toX_real x v H)). reflexivity.
Qed.

Lemma ub_of_ex (v : R) (x : F.type) : Ex v x -> Ub v x.
Proof. intros H. split; [exact (ex_valid_ub v x H) | rewrite H; simpl; lra]. Qed.

Lemma lb_of_ex (v : R) (x : F.type) : Ex v x -> Lb v x.
Proof. intros H. split; [exact (ex_valid_lb v x H) | rewrite H; unfold le_lower, le_upper; simpl; lra]. Qed.

Lemma ex_f0 : F.toX f0 = Xreal 0.
Proof. exact F.zero_correct. Qed.

Lemma ex_f1 : F.toX f1 = Xreal 1.
Proof. unfold f1. apply F.fromZ_correct. unfold Z.le. vm_compute. discriminate. Qed.

Lemma toR_f0 : F.toR f0 = 0.
Proof. unfold F.toR. rewrite ex_f0. reflexivity. Qed.

Lemma toR_f1 : F.toR f1 = 1.
Proof. unfold F.toR. rewrite ex_f1. reflexivity. Qed.

(** ** The comparison *)

Lemma fle_sound (x y : F.type) :
  fle x y = true -> Ex (F.toR x) x /\ Ex (F.toR y) y /\ F.toR x <= F.toR y.
Proof.
  unfold fle. destruct (F.real x) eqn:Hx; [| discriminate]. destruct (F.real y) eqn:Hy; [| discriminate].
  simpl. intros Hc. pose proof (real_toX x Hx) as Ex'. pose proof (real_toX y Hy) as Ey'.
  split; [exact Ex' | split; [exact Ey' |]].
  rewrite F.cmp_correct, (real_classify x Hx), (real_classify y Hy), Ex', Ey' in Hc. simpl in Hc.
  destruct (Rcompare_spec (F.toR x) (F.toR y)); [lra | lra | discriminate].
Qed.

Lemma ub_fle (v : R) (x y : F.type) : Ub v x -> fle x y = true -> v <= F.toR y.
Proof.
  intros [_ Hu] Hf. destruct (fle_sound x y Hf) as [Hx [_ Hxy]]. unfold Ex in Hx. rewrite Hx in Hu.
  unfold le_upper in Hu. lra.
Qed.

Lemma fle_lb (v : R) (x y : F.type) : Lb v x -> fle y x = true -> F.toR y <= v.
Proof.
  intros [_ Hl] Hf. destruct (fle_sound y x Hf) as [_ [Hx Hxy]]. unfold Ex in Hx. rewrite Hx in Hl.
  unfold le_lower, le_upper in Hl. simpl in Hl. lra.
Qed.

Lemma lb_ex_le (v w : R) (x : F.type) : Lb v x -> Ex w x -> w <= v.
Proof. intros [_ H] E. unfold Ex in E. rewrite E in H. unfold le_lower, le_upper in H. simpl in H. lra. Qed.

Lemma lb_weaken (a b : R) (x : F.type) : Lb a x -> a <= b -> Lb b x.
Proof.
  intros [V H] Hab. split; [exact V |]. unfold le_lower, le_upper in *.
  destruct (F.toX x) as [| c]; simpl in *; [exact I | lra].
Qed.

(** ** Upper bounds *)

Lemma ub_add (a b : R) (x y : F.type) : Ub a x -> Ub b y -> Ub (a + b) (F.add_UP P x y).
Proof.
  intros [Vx Hx] [Vy Hy]. destruct (F.add_UP_correct P x y Vx Vy) as [V H]. split; [exact V |].
  destruct (F.toX (F.add_UP P x y)) as [| c]; [exact I |]. simpl.
  destruct (F.toX x) as [| xr]; [contradiction |]. destruct (F.toX y) as [| yr]; [simpl in H; contradiction |].
  unfold le_lower, le_upper in *; simpl in *; lra.
Qed.

Lemma ub_nonneg_val (a : R) (x : F.type) :
  0 <= a -> Ub a x -> F.is_non_neg x.
Proof.
  intros Ha [V H]. split; [exact V |]. destruct (F.toX x) as [| r]; [exact I |]. simpl in H. lra.
Qed.

Lemma ub_mul (a b : R) (x y : F.type) :
  0 <= a -> 0 <= b -> Ub a x -> Ub b y -> Ub (a * b) (F.mul_UP P x y).
Proof.
  intros Ha Hb Ux Uy. pose proof (ub_nonneg_val a x Ha Ux) as Nx. pose proof (ub_nonneg_val b y Hb Uy) as Ny.
  destruct (F.mul_UP_correct P x y (or_introl (conj Nx Ny))) as [V H]. split; [exact V |].
  destruct Ux as [_ Hx]. destruct Uy as [_ Hy].
  destruct (F.toX (F.mul_UP P x y)) as [| c]; [exact I |]. simpl.
  destruct (F.toX x) as [| xr]; [contradiction |]. destruct (F.toX y) as [| yr]; [simpl in H; contradiction |].
  simpl in Hx, Hy, H. apply Rle_trans with (xr * yr); [| exact H].
  apply Rmult_le_compat; lra.
Qed.

Lemma ub_sub (a b : R) (x y : F.type) : Ub a x -> Lb b y -> Ub (a - b) (F.sub_UP P x y).
Proof.
  intros [Vx Hx] [Vy Hy]. destruct (F.sub_UP_correct P x y Vx Vy) as [V H]. split; [exact V |].
  destruct (F.toX (F.sub_UP P x y)) as [| c]; [exact I |]. simpl.
  destruct (F.toX x) as [| xr]; [contradiction |].
  destruct (F.toX y) as [| yr]; [simpl in H; contradiction |].
  unfold le_lower, le_upper in *; simpl in *; lra.
Qed.

Lemma ub_nan (v : R) : Ub v F.nan.
Proof.
  assert (Hn : F.toX F.nan = Xnan).
  { pose proof (F.real_correct F.nan) as H. rewrite F.classify_correct, F.nan_correct in H.
    destruct (F.toX F.nan); [reflexivity | discriminate]. }
  split; [rewrite F.valid_ub_correct, F.nan_correct; reflexivity | rewrite Hn; exact I].
Qed.

Lemma ub_max (a b : R) (x y : F.type) : Ub a x -> Ub b y -> Ub (Rmax a b) (fmax x y).
Proof.
  intros Ux Uy. unfold fmax. destruct (fle x y) eqn:Hxy.
  - destruct (fle_sound x y Hxy) as [Hx [Hy Hle]]. pose proof (ub_fle a x y Ux Hxy).
    split; [exact (ex_valid_ub _ y Hy) |]. rewrite Hy. simpl. destruct Uy as [_ Hb]. rewrite Hy in Hb.
    simpl in Hb. apply Rmax_lub; lra.
  - destruct (fle y x) eqn:Hyx; [| apply ub_nan].
    destruct (fle_sound y x Hyx) as [Hy [Hx Hle]]. pose proof (ub_fle b y x Uy Hyx).
    split; [exact (ex_valid_ub _ x Hx) |]. rewrite Hx. simpl. destruct Ux as [_ Ha]. rewrite Hx in Ha.
    simpl in Ha. apply Rmax_lub; lra.
Qed.

(** ** Lower bounds *)

Lemma lb_add (a b : R) (x y : F.type) : Lb a x -> Lb b y -> Lb (a + b) (F.add_DN P x y).
Proof.
  intros [Vx Hx] [Vy Hy]. destruct (F.add_DN_correct P x y Vx Vy) as [V H]. split; [exact V |].
  unfold le_lower in *. simpl in *.
  destruct (F.toX (F.add_DN P x y)) as [| c]; [exact I |]. simpl in *.
  destruct (F.toX x) as [| xr]; [contradiction |]. destruct (F.toX y) as [| yr]; [simpl in H; contradiction |].
  unfold le_lower, le_upper in *; simpl in *; lra.
Qed.


Lemma lb_div (a b : R) (x y : F.type) :
  Ex a x -> Ex b y -> 0 <= a -> 0 < b -> Lb (a / b) (F.div_DN P x y).
Proof.
  intros Hx Hy Ha Hb. unfold Ex in Hx, Hy.
  assert (Nx : F.is_non_neg_real x) by (unfold F.is_non_neg_real; rewrite Hx; exact Ha).
  assert (Py : F.is_pos_real y) by (unfold F.is_pos_real; rewrite Hy; exact Hb).
  destruct (F.div_DN_correct P x y (or_intror (or_intror (or_introl (conj Nx Py))))) as [V H].
  split; [exact V |]. rewrite Hx, Hy in H. simpl in H. unfold Xdiv' in H.
  rewrite is_zero_false in H by lra. exact H.
Qed.

Lemma lb_mul (a b : R) (x y : F.type) :
  Ex a x -> 0 <= a -> fle f0 y = true -> Lb b y -> Lb (a * b) (F.mul_DN P x y).
Proof.
  intros Hx Ha Hf [_ Hy]. destruct (fle_sound f0 y Hf) as [_ [Ey Hle]].
  rewrite toR_f0 in Hle. unfold Ex in Hx, Ey.
  assert (Nx : F.is_non_neg_real x) by (unfold F.is_non_neg_real; rewrite Hx; exact Ha).
  assert (Ny : F.is_non_neg_real y) by (unfold F.is_non_neg_real; rewrite Ey; exact Hle).
  destruct (F.mul_DN_correct P x y (or_introl (conj Nx Ny))) as [V H]. split; [exact V |].
  rewrite Ey in Hy. unfold le_lower in Hy. simpl in Hy.
  rewrite Hx, Ey in H. unfold le_lower in *. simpl in *.
  destruct (F.toX (F.mul_DN P x y)) as [| c]; [exact I |]. simpl in *.
  assert (a * F.toR y <= a * b) by (apply Rmult_le_compat_l; lra). lra.
Qed.

(** ** Counterexample: [cmp] alone is not enough *)

(** [-oo] compares below [0], yet its real value ([toR], [0] for non-finite floats) is not below
    [-1]: a comparison that accepted non-finite floats would prove [0 <= -1]. *)
Lemma fle_needs_finite :
  F.cmp PrimFloat.neg_infinity (F.neg f1) = Xlt /\ fle PrimFloat.neg_infinity (F.neg f1) = false.
Proof. split; vm_compute; reflexivity. Qed.
