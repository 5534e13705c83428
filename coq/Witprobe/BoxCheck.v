(** * The box checker: a per-run box certificate decided by the kernel, by reflection

    [BoxSup.tv_le_box] bounds the TV of one query row by [B] when a [box_certificate] exists.
    This file gives a checker [check_layer] that decides, from the run's data, that every row
    it is handed has one, and proves it sound once. A per-run theorem ships the data as a
    literal and closes [check_layer data B = true] by [vm_compute]: lowering [B] makes the
    kernel compute [false].

    The data of one row ([row]): the served distribution's keys are pooled into buckets
    ([bucket]): each bucket [j] lists [U_j] (an upper bound of [e^{r_t}] for each of its keys) and
    an interval [[lo_j, hi_j]] for its served mass; one key [h] (the heaviest) has a bucket of its
    own. These are the row's measured hypothesis ([row_fits]). The grid of [w = 1/Z] values and
    one [lambda] per interval and side are untrusted hints: the checker verifies them.

    What [check_row] computes (binary64, directed rounding, [FloatBounds]):
    - [Zhi <= hi_h U_h + sum_j hi_j U_j] and [Zlo >= lo_h / U_h + sum_j lo_j / U_j], and that
      the grid's ends bracket [[1/Zhi, 1/Zlo]];
    - at both ends [w] of every interval and for both sides of [h], the bucketed upper bound
      [hi_h hterm + sum_j hi_j max(lam (U_j w - 1)_+, (1 - lam)(1 - w/U_j)_+)] of [box_psi],
      and that it is at most [B].

    Main results:
    - [sum_regroup]: a sum over keys of [p_t f(a_t)] is the sum over buckets of [f_j] times the
      bucket's mass;
    - [bucketed_le], [bucketed_ge]: the bucketed bounds of [sum_t p_t v_t] from above and below;
    - [row_box_certificate]: [check_row] and [row_fits] give [box_certificate] ([BoxSup]);
    - [layer_box_certificate]: [check_layer rows B], [tanh (C/2) <= B] and a row that fits one
      of [rows] or whose radii are all at most [C] ([layer_admits]) give [box_certificate] at [B];
      the per-run theorems pass it to the box claims of [BoxSup], [BoxQueryAligned] and
      [ClaimsLatent];
    - [tv_le_checked]: the same, with [TV <= B] ([BoxSup.tv_le_box]).

    Counterexample [check_row_rejects_low_bound]: the same row data is accepted at [B = 1] and
    rejected at [B = 1/2]; the theorem that the checker serves holds only at a [B] the data
    supports. *)

From Coq Require Import Reals Lra Lia List ZArith PrimFloat Bool.
From Interval Require Import Float.Sig Float.Primitive_ops Float.Basic Real.Xreal.
From Witprobe Require Import Sum Softmax SoftmaxTV Claims BoxSup FloatBounds.
Import ListNotations.
Open Scope R_scope.

(** ** Data *)

Record bucket := Bucket { b_u : F.type; b_lo : F.type; b_hi : F.type }.

Record row := Row {
  heavy : bucket;
  buckets : list bucket;
  grid : list F.type;
  lam_up : list F.type;
  lam_down : list F.type
}.

Definition bucket0 : bucket := Bucket f1 f0 f0.

Notation fR := F.toR.

Definition bucket_mass (n : nat) (p : nat -> R) (a : nat -> nat) (h j : nat) : R :=
  sum n (fun t => if Nat.eqb t h then 0 else if Nat.eqb (a t) j then p t else 0).

(** The row's measured hypothesis: key [h] and the assignment [a] of the other keys to buckets. *)
Definition row_fits (rw : row) (n : nat) (p r : nat -> R) : Prop :=
  exists (h : nat) (a : nat -> nat),
    (h < n)%nat /\ exp (r h) <= fR (b_u (heavy rw)) /\
    fR (b_lo (heavy rw)) <= p h <= fR (b_hi (heavy rw)) /\
    (forall t, (t < n)%nat -> t <> h ->
       (a t < length (buckets rw))%nat /\ exp (r t) <= fR (b_u (nth (a t) (buckets rw) bucket0))) /\
    (forall j, (j < length (buckets rw))%nat ->
       fR (b_lo (nth j (buckets rw) bucket0)) <= bucket_mass n p a h j
       <= fR (b_hi (nth j (buckets rw) bucket0))).

(** ** Real-valued bucket terms *)

Definition up_R (u w : R) : R := Rmax 0 (u * w - 1).
Definition down_R (u w : R) : R := Rmax 0 (1 - w / u).
Definition term_R (lam u w : R) : R := Rmax (lam * up_R u w) ((1 - lam) * down_R u w).
Definition hterm_R (side : bool) (lam u w : R) : R :=
  if side then lam * up_R u w else (1 - lam) * down_R u w.

(** ** Float evaluation (upward for upper bounds, downward for lower bounds) *)

Definition up_F (u w : F.type) : F.type := fmax f0 (F.sub_UP P (F.mul_UP P u w) f1).
Definition down_F (u w : F.type) : F.type := fmax f0 (F.sub_UP P f1 (F.div_DN P w u)).
Definition term_F (lam lam1 u w : F.type) : F.type :=
  fmax (F.mul_UP P lam (up_F u w)) (F.mul_UP P lam1 (down_F u w)).
Definition hterm_F (side : bool) (lam lam1 u w : F.type) : F.type :=
  if side then F.mul_UP P lam (up_F u w) else F.mul_UP P lam1 (down_F u w).

Fixpoint fold_up (f : bucket -> F.type) (bs : list bucket) : F.type :=
  match bs with [] => f0 | b :: bs' => F.add_UP P (f b) (fold_up f bs') end.

Fixpoint fold_dn (f : bucket -> F.type) (bs : list bucket) : F.type :=
  match bs with [] => f0 | b :: bs' => F.add_DN P (f b) (fold_dn f bs') end.

Definition psi_F (rw : row) (side : bool) (lam w : F.type) : F.type :=
  let lam1 := F.sub_UP P f1 lam in
  F.add_UP P (F.mul_UP P (b_hi (heavy rw)) (hterm_F side lam lam1 (b_u (heavy rw)) w))
    (fold_up (fun b => F.mul_UP P (b_hi b) (term_F lam lam1 (b_u b) w)) (buckets rw)).

Definition zhi_F (rw : row) : F.type :=
  F.add_UP P (F.mul_UP P (b_hi (heavy rw)) (b_u (heavy rw))) (fold_up (fun b => F.mul_UP P (b_hi b) (b_u b)) (buckets rw)).

Definition zlo_F (rw : row) : F.type :=
  F.add_DN P (F.div_DN P (b_lo (heavy rw)) (b_u (heavy rw))) (fold_dn (fun b => F.div_DN P (b_lo b) (b_u b)) (buckets rw)).

(** ** The checker *)

Definition valid_bucket (b : bucket) : bool := fle f1 (b_u b) && fle f0 (b_lo b) && fle (b_lo b) (b_hi b).
Definition valid_lam (l : F.type) : bool := fle f0 l && fle l f1.

Fixpoint check_intervals (bf : F.type) (rw : row) (g lu ld : list F.type) : bool :=
  match g, lu, ld with
  | ga :: ((gb :: _) as g'), a :: lu', c :: ld' =>
      valid_lam a && valid_lam c &&
      fle (psi_F rw true a ga) bf && fle (psi_F rw true a gb) bf &&
      fle (psi_F rw false c ga) bf && fle (psi_F rw false c gb) bf &&
      check_intervals bf rw g' lu' ld'
  | [_], [], [] => true
  | _, _, _ => false
  end.

Definition check_row (bf : F.type) (rw : row) : bool :=
  valid_bucket (heavy rw) && forallb valid_bucket (buckets rw) && forallb (fle f0) (grid rw) &&
  Nat.ltb 1 (length (grid rw)) &&
  fle (F.mul_UP P (nth 0 (grid rw) f0) (zhi_F rw)) f1 && fle f0 (zlo_F rw) &&
  fle f1 (F.mul_DN P (nth (length (grid rw) - 1) (grid rw) f0) (zlo_F rw)) &&
  check_intervals bf rw (grid rw) (lam_up rw) (lam_down rw).

(** The bound [bn / bd], rounded down to a float. *)
Definition bound_F (bn bd : Z) : F.type := F.div_DN P (F.fromZ_DN P bn) (F.fromZ_UP P bd).

Definition check_layer (rows : list row) (bn bd : Z) : bool :=
  Z.ltb 0 bd && fle f0 (F.fromZ_DN P bn) && fle f1 (F.fromZ_UP P bd) &&
  forallb (check_row (bound_F bn bd)) rows.

(** ** Sums over buckets *)

Lemma sum_shift (n : nat) (f : nat -> R) : sum (S n) f = f 0%nat + sum n (fun j => f (S j)).
Proof.
  induction n as [| n IH].
  - rewrite sum_S, !sum_O. ring.
  - rewrite sum_S, IH, sum_S. ring.
Qed.

Lemma sum_zero (n : nat) : sum n (fun _ => 0) = 0.
Proof. rewrite sum_const. ring. Qed.

Lemma sum_indicator (J i : nat) (x : R) :
  (i < J)%nat -> sum J (fun j => if Nat.eqb i j then x else 0) = x.
Proof.
  induction J as [| J IH]; intros Hi; [lia |]. rewrite sum_S.
  destruct (Nat.eq_dec i J) as [-> | Hne].
  - rewrite Nat.eqb_refl. rewrite (sum_ext J _ (fun _ => 0)); [rewrite sum_zero; ring |].
    intros j Hj. destruct (Nat.eqb_spec J j); [lia | reflexivity].
  - rewrite IH by lia. destruct (Nat.eqb_spec i J); [lia | ring].
Qed.

Lemma sum_regroup (n J h : nat) (a : nat -> nat) (p f : nat -> R) :
  (forall t, (t < n)%nat -> t <> h -> (a t < J)%nat) ->
  sum n (fun t => if Nat.eqb t h then 0 else p t * f (a t))
  = sum J (fun j => f j * bucket_mass n p a h j).
Proof.
  induction n as [| n IH]; intros Ha.
  - unfold bucket_mass. rewrite sum_O. rewrite (sum_ext J _ (fun _ => 0)); [rewrite sum_zero; ring |].
    intros j _. rewrite sum_O. ring.
  - rewrite sum_S, IH by (intros t Ht; apply Ha; lia). unfold bucket_mass.
    rewrite (sum_ext J (fun j => f j * sum (S n) _)
               (fun j => f j * sum n (fun t => if Nat.eqb t h then 0 else if Nat.eqb (a t) j then p t else 0)
                         + (if Nat.eqb n h then 0 else if Nat.eqb (a n) j then f j * p n else 0))).
    + rewrite sum_plus. destruct (Nat.eqb_spec n h) as [-> | Hne]; cbv iota.
      * rewrite sum_zero. ring.
      * rewrite (sum_ext J (fun j => if Nat.eqb (a n) j then f j * p n else 0)
                           (fun j => if Nat.eqb (a n) j then f (a n) * p n else 0)).
        -- rewrite sum_indicator by (apply Ha; lia). ring.
        -- intros j _. destruct (Nat.eqb_spec (a n) j) as [-> | _]; reflexivity.
    + intros j _. rewrite sum_S. destruct (Nat.eqb n h); [ring |]. destruct (Nat.eqb (a n) j); ring.
Qed.

Lemma sum_single (n h : nat) (x : R) (y : nat -> R) :
  (h < n)%nat ->
  sum n (fun t => if Nat.eqb t h then x else y t) = x + sum n (fun t => if Nat.eqb t h then 0 else y t).
Proof.
  intros Hh. rewrite (sum_ext n _ (fun t => (if Nat.eqb h t then x else 0) + (if Nat.eqb t h then 0 else y t))).
  - rewrite sum_plus, sum_indicator by exact Hh. reflexivity.
  - intros t _. destruct (Nat.eqb_spec t h) as [-> | Hne].
    + rewrite Nat.eqb_refl. ring.
    + destruct (Nat.eqb_spec h t); [lia | ring].
Qed.

Lemma bucket_mass_nonneg (n : nat) (p : nat -> R) (a : nat -> nat) (h j : nat) :
  (forall t, 0 <= p t) -> 0 <= bucket_mass n p a h j.
Proof.
  intros Hp. unfold bucket_mass. apply sum_nonneg. intros t _.
  destruct (Nat.eqb t h); [lra |]. destruct (Nat.eqb (a t) j); [apply Hp | lra].
Qed.

Lemma bucketed_le (n J h : nat) (a : nat -> nat) (p v f hi : nat -> R) (vh hih : R) :
  (h < n)%nat -> (forall t, 0 <= p t) -> (forall j, 0 <= f j) -> 0 <= vh -> p h <= hih ->
  v h <= vh ->
  (forall t, (t < n)%nat -> t <> h -> (a t < J)%nat /\ v t <= f (a t)) ->
  (forall j, (j < J)%nat -> bucket_mass n p a h j <= hi j) ->
  sum n (fun t => p t * v t) <= hih * vh + sum J (fun j => hi j * f j).
Proof.
  intros Hh Hp Hf Hvh Hph Hv Ha Hm.
  apply Rle_trans with (sum n (fun t => if Nat.eqb t h then p h * vh else p t * f (a t))).
  - apply sum_le. intros t Ht. destruct (Nat.eqb_spec t h) as [-> | Hne].
    + apply Rmult_le_compat_l; [apply Hp | exact Hv].
    + apply Rmult_le_compat_l; [apply Hp | apply Ha; assumption].
  - rewrite sum_single by exact Hh. rewrite (sum_regroup n J h a p f) by (intros t Ht Hne; apply Ha; assumption).
    apply Rplus_le_compat; [apply Rmult_le_compat_r; [exact Hvh | exact Hph] |].
    apply sum_le. intros j Hj. rewrite (Rmult_comm (f j)). apply Rmult_le_compat_r; [apply Hf | apply Hm, Hj].
Qed.

Lemma bucketed_ge (n J h : nat) (a : nat -> nat) (p v f lo : nat -> R) (vh loh : R) :
  (h < n)%nat -> (forall t, 0 <= p t) -> (forall j, 0 <= f j) -> 0 <= vh -> loh <= p h ->
  vh <= v h ->
  (forall t, (t < n)%nat -> t <> h -> (a t < J)%nat /\ f (a t) <= v t) ->
  (forall j, (j < J)%nat -> lo j <= bucket_mass n p a h j) ->
  loh * vh + sum J (fun j => lo j * f j) <= sum n (fun t => p t * v t).
Proof.
  intros Hh Hp Hf Hvh Hph Hv Ha Hm.
  apply Rle_trans with (sum n (fun t => if Nat.eqb t h then p h * vh else p t * f (a t))).
  - rewrite sum_single by exact Hh. rewrite (sum_regroup n J h a p f) by (intros t Ht Hne; apply Ha; assumption).
    apply Rplus_le_compat; [apply Rmult_le_compat_r; [exact Hvh | exact Hph] |].
    apply sum_le. intros j Hj. rewrite (Rmult_comm (f j)). apply Rmult_le_compat_r; [apply Hf | apply Hm, Hj].
  - apply sum_le. intros t Ht. destruct (Nat.eqb_spec t h) as [-> | Hne].
    + apply Rmult_le_compat_l; [apply Hp | exact Hv].
    + apply Rmult_le_compat_l; [apply Hp | apply Ha; assumption].
Qed.

(** ** One key's terms against its bucket's *)

Lemma up_R_nonneg (u w : R) : 0 <= up_R u w.
Proof. apply Rmax_l. Qed.

Lemma down_R_nonneg (u w : R) : 0 <= down_R u w.
Proof. apply Rmax_l. Qed.

Lemma term_R_nonneg (lam u w : R) : 0 <= lam <= 1 -> 0 <= term_R lam u w.
Proof.
  intros Hl. unfold term_R. eapply Rle_trans; [| apply Rmax_l].
  apply Rmult_le_pos; [lra | apply up_R_nonneg].
Qed.

Lemma hterm_R_nonneg (side : bool) (lam u w : R) : 0 <= lam <= 1 -> 0 <= hterm_R side lam u w.
Proof.
  intros Hl. destruct side; simpl; apply Rmult_le_pos; try lra; [apply up_R_nonneg | apply down_R_nonneg].
Qed.

Lemma box_up_le_up_R (r u w : R) : exp r <= u -> 0 <= w -> box_up r w <= up_R u w.
Proof. intros Hu Hw. unfold box_up, up_R. apply pos_mono. nra. Qed.

Lemma box_down_le_down_R (r u w : R) : exp r <= u -> 0 <= w -> box_down r w <= down_R u w.
Proof.
  intros Hu Hw. unfold box_down, down_R. apply pos_mono. pose proof (exp_pos r) as He.
  assert (/ u <= exp (- r)) by (rewrite exp_Ropp; apply Rinv_le_contravar; lra).
  unfold Rdiv. nra.
Qed.

Lemma box_term_le_term_R (lam r u w : R) :
  0 <= lam <= 1 -> exp r <= u -> 0 <= w -> box_term lam r w <= term_R lam u w.
Proof.
  intros Hl Hu Hw. unfold box_term, term_R.
  pose proof (box_up_le_up_R r u w Hu Hw). pose proof (box_down_le_down_R r u w Hu Hw).
  apply Rmax_lub.
  - eapply Rle_trans; [| apply Rmax_l]. apply Rmult_le_compat_l; lra.
  - eapply Rle_trans; [| apply Rmax_r]. apply Rmult_le_compat_l; lra.
Qed.

Lemma box_key_heavy_le (h : nat) (side : bool) (lam r u w : R) :
  0 <= lam <= 1 -> exp r <= u -> 0 <= w -> box_key h side lam r w h <= hterm_R side lam u w.
Proof.
  intros Hl Hu Hw. unfold box_key. rewrite Nat.eqb_refl.
  pose proof (box_up_le_up_R r u w Hu Hw). pose proof (box_down_le_down_R r u w Hu Hw).
  destruct side; simpl; apply Rmult_le_compat_l; lra.
Qed.

(** ** Float evaluation is an upper bound *)

Lemma fold_up_sound (f : bucket -> F.type) (g : bucket -> R) (bs : list bucket) :
  (forall b, In b bs -> Ub (g b) (f b)) ->
  Ub (sum (length bs) (fun j => g (nth j bs bucket0))) (fold_up f bs).
Proof.
  induction bs as [| b bs IH]; intros Hb.
  - simpl. apply ub_of_ex. exact ex_f0.
  - simpl length. rewrite sum_shift. simpl. apply ub_add; [apply Hb; left; reflexivity |].
    apply IH. intros b' Hin. apply Hb. right. exact Hin.
Qed.

Lemma fold_dn_sound (f : bucket -> F.type) (g : bucket -> R) (bs : list bucket) :
  (forall b, In b bs -> Lb (g b) (f b)) ->
  Lb (sum (length bs) (fun j => g (nth j bs bucket0))) (fold_dn f bs).
Proof.
  induction bs as [| b bs IH]; intros Hb.
  - simpl. apply lb_of_ex. exact ex_f0.
  - simpl length. rewrite sum_shift. simpl. apply lb_add; [apply Hb; left; reflexivity |].
    apply IH. intros b' Hin. apply Hb. right. exact Hin.
Qed.

Lemma valid_bucket_sound (b : bucket) :
  valid_bucket b = true ->
  Ex (fR (b_u b)) (b_u b) /\ Ex (fR (b_lo b)) (b_lo b) /\ Ex (fR (b_hi b)) (b_hi b) /\
  1 <= fR (b_u b) /\ 0 <= fR (b_lo b) <= fR (b_hi b).
Proof.
  unfold valid_bucket. intros H. apply andb_prop in H as [H H3]. apply andb_prop in H as [H1 H2].
  destruct (fle_sound _ _ H1) as [_ [Eu Hu]]. destruct (fle_sound _ _ H2) as [_ [El Hl]].
  destruct (fle_sound _ _ H3) as [_ [Eh Hh]]. rewrite toR_f1 in Hu. rewrite toR_f0 in Hl.
  split; [exact Eu | split; [exact El | split; [exact Eh | lra]]].
Qed.

Lemma valid_lam_sound (l : F.type) : valid_lam l = true -> Ex (fR l) l /\ 0 <= fR l <= 1.
Proof.
  unfold valid_lam. intros H. apply andb_prop in H as [H1 H2].
  destruct (fle_sound _ _ H1) as [_ [El Hl]]. destruct (fle_sound _ _ H2) as [_ [_ Hu]].
  rewrite toR_f0 in Hl. rewrite toR_f1 in Hu. split; [exact El | lra].
Qed.

Lemma ub_up_F (u w : F.type) (ur wr : R) :
  Ex ur u -> Ex wr w -> 0 <= ur -> 0 <= wr -> Ub (up_R ur wr) (up_F u w).
Proof.
  intros Hu Hw Hur Hwr. unfold up_R, up_F. apply ub_max; [apply ub_of_ex; exact ex_f0 |].
  apply ub_sub; [apply ub_mul; [lra | lra | apply ub_of_ex, Hu | apply ub_of_ex, Hw] |].
  apply lb_of_ex. exact ex_f1.
Qed.

Lemma ub_down_F (u w : F.type) (ur wr : R) :
  Ex ur u -> Ex wr w -> 0 < ur -> 0 <= wr -> Ub (down_R ur wr) (down_F u w).
Proof.
  intros Hu Hw Hur Hwr. unfold down_R, down_F. apply ub_max; [apply ub_of_ex; exact ex_f0 |].
  apply ub_sub; [apply ub_of_ex; exact ex_f1 | apply lb_div; assumption].
Qed.

Lemma ub_lam1 (lam : F.type) (lr : R) : Ex lr lam -> Ub (1 - lr) (F.sub_UP P f1 lam).
Proof. intros Hl. apply ub_sub; [apply ub_of_ex; exact ex_f1 | apply lb_of_ex, Hl]. Qed.

Lemma ub_term_F (lam u w : F.type) (lr ur wr : R) :
  Ex lr lam -> 0 <= lr <= 1 -> Ex ur u -> 1 <= ur -> Ex wr w -> 0 <= wr ->
  Ub (term_R lr ur wr) (term_F lam (F.sub_UP P f1 lam) u w).
Proof.
  intros Hl Hlr Hu Hur Hw Hwr. unfold term_R, term_F. apply ub_max.
  - apply ub_mul; [lra | apply up_R_nonneg | apply ub_of_ex, Hl | apply ub_up_F; auto; lra].
  - apply ub_mul; [lra | apply down_R_nonneg | apply ub_lam1, Hl | apply ub_down_F; auto; lra].
Qed.

Lemma ub_hterm_F (side : bool) (lam u w : F.type) (lr ur wr : R) :
  Ex lr lam -> 0 <= lr <= 1 -> Ex ur u -> 1 <= ur -> Ex wr w -> 0 <= wr ->
  Ub (hterm_R side lr ur wr) (hterm_F side lam (F.sub_UP P f1 lam) u w).
Proof.
  intros Hl Hlr Hu Hur Hw Hwr. destruct side; simpl.
  - apply ub_mul; [lra | apply up_R_nonneg | apply ub_of_ex, Hl | apply ub_up_F; auto; lra].
  - apply ub_mul; [lra | apply down_R_nonneg | apply ub_lam1, Hl | apply ub_down_F; auto; lra].
Qed.

Definition psi_R (rw : row) (side : bool) (lam w : R) : R :=
  fR (b_hi (heavy rw)) * hterm_R side lam (fR (b_u (heavy rw))) w
  + sum (length (buckets rw))
      (fun j => fR (b_hi (nth j (buckets rw) bucket0)) * term_R lam (fR (b_u (nth j (buckets rw) bucket0))) w).

Lemma ub_psi_F (rw : row) (side : bool) (lam w : F.type) :
  valid_bucket (heavy rw) = true -> forallb valid_bucket (buckets rw) = true ->
  valid_lam lam = true -> fle f0 w = true ->
  Ub (psi_R rw side (fR lam) (fR w)) (psi_F rw side lam w).
Proof.
  intros Hh Hbs Hl Hw. destruct (valid_lam_sound lam Hl) as [El Hlr].
  destruct (fle_sound _ _ Hw) as [_ [Ew Hwr]]. rewrite toR_f0 in Hwr.
  destruct (valid_bucket_sound _ Hh) as [Eu [_ [Ehi [Hu [Hlo Hhi]]]]].
  unfold psi_R, psi_F. apply ub_add.
  - apply ub_mul; [lra | apply hterm_R_nonneg, Hlr | apply ub_of_ex, Ehi |].
    apply ub_hterm_F; assumption.
  - apply (fold_up_sound _ (fun b => fR (b_hi b) * term_R (fR lam) (fR (b_u b)) (fR w))).
    intros b Hin. rewrite forallb_forall in Hbs.
    destruct (valid_bucket_sound b (Hbs b Hin)) as [Eub [_ [Ehib [Hub [Hlob Hhib]]]]].
    apply ub_mul; [lra | apply term_R_nonneg, Hlr | apply ub_of_ex, Ehib |].
    apply ub_term_F; assumption.
Qed.

(** ** The intervals of the grid *)

Lemma check_intervals_sound (bf : F.type) (rw : row) (g lu ld : list F.type) :
  check_intervals bf rw g lu ld = true ->
  forall k, (k < length g - 1)%nat ->
    valid_lam (nth k lu f0) = true /\ valid_lam (nth k ld f0) = true /\
    fle (psi_F rw true (nth k lu f0) (nth k g f0)) bf = true /\
    fle (psi_F rw true (nth k lu f0) (nth (S k) g f0)) bf = true /\
    fle (psi_F rw false (nth k ld f0) (nth k g f0)) bf = true /\
    fle (psi_F rw false (nth k ld f0) (nth (S k) g f0)) bf = true.
Proof.
  revert lu ld. induction g as [| ga g IH]; intros lu ld Hc k Hk; [simpl in Hk; lia |].
  destruct g as [| gb g'].
  - simpl in Hk. lia.
  - destruct lu as [| a lu']; [discriminate |]. destruct ld as [| c ld']; [discriminate |].
    simpl in Hc. repeat rewrite andb_true_iff in Hc.
    destruct Hc as [[[[[[Ha Hc'] H1] H2] H3] H4] Hrest].
    destruct k as [| k].
    + simpl. repeat split; assumption.
    + simpl in Hk. apply (IH lu' ld' Hrest k). simpl. lia.
Qed.

(** ** Bucketed bounds of the row's sums *)

Section Row.
Variables (rw : row) (n : nat) (p r : nat -> R) (h : nat) (a : nat -> nat).
Hypothesis Hp : forall t, 0 <= p t.
Hypothesis Hh : (h < n)%nat.
Hypothesis Huh : exp (r h) <= fR (b_u (heavy rw)).
Hypothesis Hph : fR (b_lo (heavy rw)) <= p h <= fR (b_hi (heavy rw)).
Hypothesis Ha : forall t, (t < n)%nat -> t <> h ->
  (a t < length (buckets rw))%nat /\ exp (r t) <= fR (b_u (nth (a t) (buckets rw) bucket0)).
Hypothesis Hm : forall j, (j < length (buckets rw))%nat ->
  fR (b_lo (nth j (buckets rw) bucket0)) <= bucket_mass n p a h j <= fR (b_hi (nth j (buckets rw) bucket0)).

Lemma psi_le_psi_R (side : bool) (lam w : R) :
  0 <= lam <= 1 -> 0 <= w -> box_psi n p r h side lam w <= psi_R rw side lam w.
Proof.
  intros Hl Hw. unfold box_psi, psi_R.
  apply (bucketed_le n (length (buckets rw)) h a p (fun t => box_key h side lam (r t) w t)
           (fun j => term_R lam (fR (b_u (nth j (buckets rw) bucket0))) w)
           (fun j => fR (b_hi (nth j (buckets rw) bucket0)))).
  - exact Hh.
  - exact Hp.
  - intros j. apply term_R_nonneg, Hl.
  - apply hterm_R_nonneg, Hl.
  - apply Hph.
  - apply box_key_heavy_le; assumption.
  - intros t Ht Hne. destruct (Ha t Ht Hne) as [Hat Hut]. split; [exact Hat |].
    unfold box_key. destruct (Nat.eqb_spec t h); [contradiction |].
    apply box_term_le_term_R; assumption.
  - intros j Hj. apply Hm, Hj.
Qed.

Definition zhi_R : R :=
  fR (b_hi (heavy rw)) * fR (b_u (heavy rw))
  + sum (length (buckets rw)) (fun j => fR (b_hi (nth j (buckets rw) bucket0)) * fR (b_u (nth j (buckets rw) bucket0))).

Definition zlo_R : R :=
  fR (b_lo (heavy rw)) * / fR (b_u (heavy rw))
  + sum (length (buckets rw)) (fun j => fR (b_lo (nth j (buckets rw) bucket0)) * / fR (b_u (nth j (buckets rw) bucket0))).

Lemma zhi_le (Hv : forall j, (j < length (buckets rw))%nat -> 1 <= fR (b_u (nth j (buckets rw) bucket0)))
  : box_zhi n p r <= zhi_R.
Proof.
  unfold box_zhi, zhi_R.
  apply (bucketed_le n (length (buckets rw)) h a p (fun t => exp (r t))
           (fun j => fR (b_u (nth j (buckets rw) bucket0)))
           (fun j => fR (b_hi (nth j (buckets rw) bucket0)))).
  - exact Hh.
  - exact Hp.
  - intros j. destruct (Nat.lt_ge_cases j (length (buckets rw))) as [Hj | Hj].
    + pose proof (Hv j Hj). lra.
    + rewrite nth_overflow by exact Hj. simpl. rewrite toR_f1. lra.
  - pose proof (exp_pos (r h)). lra.
  - apply Hph.
  - exact Huh.
  - intros t Ht Hne. exact (Ha t Ht Hne).
  - intros j Hj. apply Hm, Hj.
Qed.

Lemma zlo_ge (Hv : forall j, (j < length (buckets rw))%nat -> 1 <= fR (b_u (nth j (buckets rw) bucket0)))
  (Hvh : 1 <= fR (b_u (heavy rw))) : zlo_R <= box_zlo n p r.
Proof.
  unfold box_zlo, zlo_R.
  assert (Hinv : forall x u, 0 < u -> exp x <= u -> / u <= exp (- x)).
  { intros x u Hu Hx. rewrite exp_Ropp. apply Rinv_le_contravar; [apply exp_pos | exact Hx]. }
  apply (bucketed_ge n (length (buckets rw)) h a p (fun t => exp (- r t))
           (fun j => / fR (b_u (nth j (buckets rw) bucket0)))
           (fun j => fR (b_lo (nth j (buckets rw) bucket0)))).
  - exact Hh.
  - exact Hp.
  - intros j. destruct (Nat.lt_ge_cases j (length (buckets rw))) as [Hj | Hj].
    + pose proof (Hv j Hj). left. apply Rinv_0_lt_compat. lra.
    + rewrite nth_overflow by exact Hj. simpl. rewrite toR_f1. lra.
  - left. apply Rinv_0_lt_compat. lra.
  - apply Hph.
  - apply Hinv; [lra | exact Huh].
  - intros t Ht Hne. destruct (Ha t Ht Hne) as [Hat Hut]. split; [exact Hat |].
    apply Hinv; [pose proof (Hv (a t) Hat); lra | exact Hut].
  - intros j Hj. apply Hm, Hj.
Qed.

End Row.

Lemma ub_zhi_F (rw : row) :
  valid_bucket (heavy rw) = true -> forallb valid_bucket (buckets rw) = true -> Ub (zhi_R rw) (zhi_F rw).
Proof.
  intros Hh Hbs. destruct (valid_bucket_sound _ Hh) as [Eu [_ [Ehi [Hu [Hlo Hhi]]]]].
  unfold zhi_R, zhi_F. apply ub_add.
  - apply ub_mul; [lra | lra | apply ub_of_ex, Ehi | apply ub_of_ex, Eu].
  - apply (fold_up_sound _ (fun b => fR (b_hi b) * fR (b_u b))).
    intros b Hin. rewrite forallb_forall in Hbs.
    destruct (valid_bucket_sound b (Hbs b Hin)) as [Eub [_ [Ehib [Hub [Hlob Hhib]]]]].
    apply ub_mul; [lra | lra | apply ub_of_ex, Ehib | apply ub_of_ex, Eub].
Qed.

Lemma lb_zlo_F (rw : row) :
  valid_bucket (heavy rw) = true -> forallb valid_bucket (buckets rw) = true -> Lb (zlo_R rw) (zlo_F rw).
Proof.
  intros Hh Hbs. destruct (valid_bucket_sound _ Hh) as [Eu [Elo [_ [Hu [Hlo Hhi]]]]].
  unfold zlo_R, zlo_F. apply lb_add.
  - apply lb_div; [exact Elo | exact Eu | lra | lra].
  - apply (fold_dn_sound _ (fun b => fR (b_lo b) * / fR (b_u b))).
    intros b Hin. rewrite forallb_forall in Hbs.
    destruct (valid_bucket_sound b (Hbs b Hin)) as [Eub [Elob [_ [Hub [Hlob Hhib]]]]].
    apply lb_div; [exact Elob | exact Eub | lra | lra].
Qed.

(** ** Soundness *)

Lemma nth_valid_bucket (bs : list bucket) (j : nat) :
  forallb valid_bucket bs = true -> (j < length bs)%nat -> valid_bucket (nth j bs bucket0) = true.
Proof. intros H Hj. rewrite forallb_forall in H. apply H, nth_In, Hj. Qed.

Lemma nth_grid_nonneg (g : list F.type) (k : nat) :
  forallb (fle f0) g = true -> fle f0 (nth k g f0) = true.
Proof.
  intros H. destruct (Nat.lt_ge_cases k (length g)) as [Hk | Hk].
  - rewrite forallb_forall in H. apply H, nth_In, Hk.
  - rewrite nth_overflow by exact Hk. reflexivity.
Qed.

Theorem row_box_certificate (bf : F.type) (B : R) (rw : row) (n : nat) (p r : nat -> R) :
  check_row bf rw = true -> Lb B bf -> (forall t, 0 <= p t) -> row_fits rw n p r ->
  box_certificate n p r B.
Proof.
  intros Hc HB Hp [h [a [Hh [Huh [Hph [Ha Hm]]]]]]. left.
  unfold check_row in Hc. repeat rewrite andb_true_iff in Hc.
  destruct Hc as [[[[[[[Hvh Hvb] Hg] HK] Hzhi] Hzl0] Hzlo] Hiv].
  apply Nat.ltb_lt in HK.
  destruct (valid_bucket_sound _ Hvh) as [_ [_ [_ [Hu1 _]]]].
  assert (Hv : forall j, (j < length (buckets rw))%nat -> 1 <= fR (b_u (nth j (buckets rw) bucket0))).
  { intros j Hj. destruct (valid_bucket_sound _ (nth_valid_bucket _ j Hvb Hj)) as [_ [_ [_ [H _]]]]. exact H. }
  set (K := (length (grid rw) - 1)%nat).
  set (g := fun k => fR (nth k (grid rw) f0)).
  set (lam := fun (b : bool) k => fR (nth k (if b then lam_up rw else lam_down rw) f0)).
  exists h, K, g, lam. split; [unfold K; lia | split; [| split]].
  - (* the grid's low end *)
    destruct (fle_sound _ _ (nth_grid_nonneg _ 0 Hg)) as [_ [E0 H0]]. rewrite toR_f0 in H0.
    pose proof (ub_fle _ _ _ (ub_mul _ _ _ _ H0 (Rle_trans _ _ _ (sum_nonneg _ _ (fun t _ =>
      Rmult_le_pos _ _ (Hp t) (Rlt_le _ _ (exp_pos _)))) (zhi_le rw n p r h a Hp Hh Huh Hph Ha Hm Hv))
      (ub_of_ex _ _ E0) (ub_zhi_F rw Hvh Hvb)) Hzhi) as H.
    rewrite toR_f1 in H. unfold g. eapply Rle_trans; [| exact H].
    apply Rmult_le_compat_l; [exact H0 | apply (zhi_le rw n p r h a Hp Hh Huh Hph Ha Hm Hv)].
  - (* the grid's high end *)
    pose proof (nth_grid_nonneg _ (length (grid rw) - 1) Hg) as HgK.
    destruct (fle_sound _ _ HgK) as [_ [EK HK0]]. rewrite toR_f0 in HK0.
    pose proof (fle_lb _ _ _ (lb_mul _ _ _ _ EK HK0 Hzl0 (lb_zlo_F rw Hvh Hvb)) Hzlo) as H.
    rewrite toR_f1 in H. unfold g, K. eapply Rle_trans; [exact H |].
    apply Rmult_le_compat_l; [exact HK0 | apply (zlo_ge rw n p r h a Hp Hh Huh Hph Ha Hm Hv Hu1)].
  - (* every interval, both sides *)
    intros b k Hk.
    destruct (check_intervals_sound _ _ _ _ _ Hiv k Hk) as [Hlu [Hld [H1 [H2 [H3 H4]]]]].
    assert (Hw : forall k', fle f0 (nth k' (grid rw) f0) = true) by (intros; apply nth_grid_nonneg, Hg).
    assert (Hwr : forall k', 0 <= fR (nth k' (grid rw) f0)).
    { intros k'. destruct (fle_sound _ _ (Hw k')) as [_ [_ H]]. rewrite toR_f0 in H. exact H. }
    assert (Hbound : forall (s : bool) (l w : F.type), valid_lam l = true -> fle f0 w = true ->
              fle (psi_F rw s l w) bf = true -> box_psi n p r h s (fR l) (fR w) <= B).
    { intros s l w Hl Hw0 Hf. destruct (valid_lam_sound l Hl) as [_ Hlr].
      destruct (fle_sound _ _ Hw0) as [_ [_ Hw0r]]. rewrite toR_f0 in Hw0r.
      eapply Rle_trans; [apply (psi_le_psi_R rw n p r h a Hp Hh Huh Hph Ha Hm); assumption |].
      eapply Rle_trans; [apply (ub_fle _ _ _ (ub_psi_F rw s l w Hvh Hvb Hl Hw0) Hf) |].
      destruct (fle_sound _ _ Hf) as [_ [Ebf _]]. exact (lb_ex_le _ _ _ HB Ebf). }
    unfold lam, g. destruct b.
    + split; [destruct (valid_lam_sound _ Hlu) as [_ H]; exact H |].
      split; apply Hbound; auto.
    + split; [destruct (valid_lam_sound _ Hld) as [_ H]; exact H |].
      split; apply Hbound; auto.
Qed.

Lemma bound_F_lb (bn bd : Z) :
  Z.ltb 0 bd = true -> fle f0 (F.fromZ_DN P bn) = true -> fle f1 (F.fromZ_UP P bd) = true ->
  Lb (IZR bn / IZR bd) (bound_F bn bd).
Proof.
  intros Hd Hn Hu. apply Z.ltb_lt, IZR_lt in Hd.
  destruct (fle_sound _ _ Hn) as [_ [En Hn0]]. rewrite toR_f0 in Hn0.
  destruct (fle_sound _ _ Hu) as [_ [Eu Hu1]]. rewrite toR_f1 in Hu1.
  destruct (F.fromZ_DN_correct P bn) as [_ Ln]. destruct (F.fromZ_UP_correct P bd) as [_ Uu].
  unfold Ex in En, Eu. rewrite En in Ln. rewrite Eu in Uu.
  unfold le_lower, le_upper in Ln, Uu. simpl in Ln, Uu. unfold bound_F.
  apply (lb_weaken (F.toR (F.fromZ_DN P bn) / F.toR (F.fromZ_UP P bd))); [apply lb_div; auto; lra |].
  unfold Rdiv. apply Rmult_le_compat; [lra | left; apply Rinv_0_lt_compat; lra | lra |].
  apply Rinv_le_contravar; lra.
Qed.

(** The layer's measured hypothesis: the row's radii are all within the centred cap [C], or
    the row fits one of the shipped rows. *)
Definition layer_admits (rows : list row) (C : R) (n : nat) (p r : nat -> R) : Prop :=
  (forall t, (t < n)%nat -> r t <= C) \/ Exists (fun rw => row_fits rw n p r) rows.

Theorem layer_box_certificate (rows : list row) (C : R) (bn bd : Z) (n : nat) (p r : nat -> R) :
  check_layer rows bn bd = true -> tanh (C / 2) <= IZR bn / IZR bd -> (forall t, 0 <= p t) ->
  layer_admits rows C n p r -> box_certificate n p r (IZR bn / IZR bd).
Proof.
  intros Hc HB Hp Hadm. destruct Hadm as [Hcap | Hrow].
  - right. exists C. split; [exact Hcap | exact HB].
  - unfold check_layer in Hc. repeat rewrite andb_true_iff in Hc. destruct Hc as [[[Hd0 Hn0] Hu0] Hrows].
    apply Exists_exists in Hrow as [rw [Hin Hfit]]. rewrite forallb_forall in Hrows.
    exact (row_box_certificate _ _ rw n p r (Hrows rw Hin) (bound_F_lb bn bd Hd0 Hn0 Hu0) Hp Hfit).
Qed.

Theorem tv_le_checked (rows : list row) (C : R) (bn bd : Z) :
  check_layer rows bn bd = true -> tanh (C / 2) <= IZR bn / IZR bd ->
  forall (n : nat) (s s' r : nat -> R),
  (0 < n)%nat -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= r t) ->
  layer_admits rows C n (softmax n s') r ->
  tv n (softmax n s) (softmax n s') <= IZR bn / IZR bd.
Proof.
  intros Hc HB n s s' r Hn Hd Hadm. apply (tv_le_box n s s' r _ Hn Hd).
  apply (layer_box_certificate rows C); [exact Hc | exact HB | | exact Hadm].
  intros t. left. apply softmax_pos, Hn.
Qed.

(** ** Counterexample: the checker decides the number *)

(** Two keys of served mass [1/2] each, both with [U = 2.75 >= e] (radius [1]), the grid
    [[0.359, 1, 2.875]] and [lam = 1/2, 0]: the bucketed bound is about [0.87], so the layer is
    accepted at [B = 1] and rejected at [B = 1/2]. *)
Definition example_row : row :=
  Row (Bucket 0x1.6p+1%float 0x1p-1%float 0x1p-1%float) [Bucket 0x1.6p+1%float 0x1p-1%float 0x1p-1%float]
      [0x1.7p-2%float; 0x1p+0%float; 0x1.7p+1%float] [0x1p-1%float; 0x0p+0%float] [0x1p-1%float; 0x0p+0%float].

Lemma check_row_rejects_low_bound :
  check_layer [example_row] 1 1 = true /\ check_layer [example_row] 1 2 = false.
Proof. split; vm_compute; reflexivity. Qed.
