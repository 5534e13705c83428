(** * Sparse selection: the selection lemma and rank-prefix stability

    Attention [p] over [n] keys is supported on the selected set [I] ([p t = 0] off [I]); the
    served distribution [phat] on the perturbed selection [Ih] ([phat t = 0] off [Ih]). Sets are
    indicator functions [inI inIh : nat -> bool]. Definitions:
    - [mass_out n p inIh = sum_{t not in Ih} p t] (exact mass the served selection drops; since
      [p = 0] off [I] it is the mass on [I \ Ih]);
    - [mass_in n phat inI = sum_{t not in I} phat t] (served mass on [Ih \ I]);
    - [inter_diff n inI inIh p phat = sum_{t in I and Ih} |p t - phat t|];
    - [supported n p inI]: [p >= 0] and [p = 0] off [I];
    - [selection_bound = 1/2 (m_out + m_in) + 1/2 inter_diff].

    Main results:
    - [tv_selection_split] (equality) and [tv_selection_le] (paper Lemma 2, the selection lemma):
      [tv p phat = 1/2 (m_out + m_in) + 1/2 sum_{I and Ih} |p - phat|];
    - [tv_restrict]: restricting [p] to [S] and renormalizing costs exactly the omitted mass,
      [tv p (p|_S / p(S)) = p(not S)] (designed sparsity is not error);
    - [osc_le_twice_linf]: [|d_t| <= C] for all [t < n] implies [d_i - d_j <= 2 C];
    - [rank_prefix_stable]: [|s_t - s'_t| <= eps] and [s_i - s_j > 2 eps] imply [s'_i > s'_j];
      [top_set_stable]: a set whose every member beats every non-member by more than [2 eps]
      keeps that property under the perturbation (the top-k set is unchanged);
      [rank_stable_radii]: per-key radii [eps_t] (the selector's witness certificate,
      python/witprobe/probe/selector.py): [s'_i - eps_i > s'_j + eps_j] implies [s_i > s_j].
    Counterexamples: [tv_selection_needs_nonneg], [osc_needs_factor_two],
    [rank_prefix_needs_strict_gap], [tv_restrict_needs_nonneg]. *)

From Coq Require Import Reals Lra Lia Bool.
From Witprobe Require Import Sum Softmax.
Open Scope R_scope.

Definition mass_out (n : nat) (p : nat -> R) (inIh : nat -> bool) : R :=
  sum n (fun t => if inIh t then 0 else p t).

Definition mass_in (n : nat) (phat : nat -> R) (inI : nat -> bool) : R :=
  sum n (fun t => if inI t then 0 else phat t).

Definition inter_diff (n : nat) (inI inIh : nat -> bool) (p phat : nat -> R) : R :=
  sum n (fun t => if inI t && inIh t then Rabs (p t - phat t) else 0).

(** ** The selection lemma *)

(** One key: [|p - phat|] splits into the dropped, the added and the common part. *)
Lemma selection_term (a b : R) (i ih : bool) :
  0 <= a -> 0 <= b -> (i = false -> a = 0) -> (ih = false -> b = 0) ->
  Rabs (a - b) = (if ih then 0 else a) + (if i then 0 else b)
                 + (if i && ih then Rabs (a - b) else 0).
Proof.
  intros Ha Hb Hi Hih. destruct i, ih; simpl.
  - ring.
  - rewrite (Hih eq_refl), Rminus_0_r, Rabs_right by lra. ring.
  - rewrite (Hi eq_refl), Rminus_0_l, Rabs_Ropp, Rabs_right by lra. ring.
  - rewrite (Hi eq_refl), (Hih eq_refl), Rminus_0_r, Rabs_R0. ring.
Qed.

(** [p] is a nonnegative vector supported on [I]: [p t >= 0], and [p t = 0] off [I] ([t < n]). *)
Definition supported (n : nat) (p : nat -> R) (inI : nat -> bool) : Prop :=
  forall t, (t < n)%nat -> 0 <= p t /\ (inI t = false -> p t = 0).

(** The right side of the selection lemma: [1/2 (m_out + m_in) + 1/2 sum_{I and Ih} |p - phat|]. *)
Definition selection_bound (n : nat) (inI inIh : nat -> bool) (p phat : nat -> R) : R :=
  / 2 * (mass_out n p inIh + mass_in n phat inI) + / 2 * inter_diff n inI inIh p phat.

(** [tv p phat = 1/2 (m_out + m_in) + 1/2 sum_{I and Ih} |p - phat|] for nonnegative [p], [phat]
    with [p = 0] off [I] and [phat = 0] off [Ih]. *)
Theorem tv_selection_split (n : nat) (inI inIh : nat -> bool) (p phat : nat -> R) :
  supported n p inI -> supported n phat inIh -> tv n p phat = selection_bound n inI inIh p phat.
Proof.
  intros Hp Hph. unfold tv, selection_bound, mass_out, mass_in, inter_diff.
  rewrite <- Rmult_plus_distr_l, <- !sum_plus. f_equal. apply sum_ext. intros t Ht.
  destruct (Hp t Ht), (Hph t Ht). apply selection_term; assumption.
Qed.

(** The selection lemma as an upper bound (paper Lemma 2):
    [tv p phat <= 1/2 (m_out + m_in) + 1/2 sum_{I and Ih} |p - phat|]. *)
Corollary tv_selection_le (n : nat) (inI inIh : nat -> bool) (p phat : nat -> R) :
  supported n p inI -> supported n phat inIh -> tv n p phat <= selection_bound n inI inIh p phat.
Proof. intros Hp Hph. right. apply tv_selection_split; assumption. Qed.

(** Counterexample: a negative [p] breaks it. [n = 1], [I = {0}], [Ih = {}], [p = -1], [phat = 0]:
    [tv = 1/2] but the right side is [-1/2]. *)
Lemma tv_selection_needs_nonneg :
  tv 1 (fun _ => -1) (fun _ => 0)
    > selection_bound 1 (fun _ => true) (fun _ => false) (fun _ => -1) (fun _ => 0).
Proof.
  unfold tv, selection_bound, mass_out, mass_in, inter_diff. simpl.
  replace (0 + Rabs (-1 - 0)) with 1 by (rewrite Rminus_0_r, Rabs_left by lra; ring). lra.
Qed.

(** ** Restriction and renormalization *)

(** The mass of [p] on [S]. *)
Definition mass_on (n : nat) (p : nat -> R) (inS : nat -> bool) : R :=
  sum n (fun t => if inS t then p t else 0).

(** [p] restricted to [S] and renormalized. *)
Definition restrict (n : nat) (p : nat -> R) (inS : nat -> bool) : nat -> R :=
  fun t => if inS t then p t / mass_on n p inS else 0.

Lemma mass_on_out (n : nat) (p : nat -> R) (inS : nat -> bool) :
  mass_on n p inS + mass_out n p inS = sum n p.
Proof.
  unfold mass_on, mass_out. rewrite <- sum_plus. apply sum_ext. intros t _.
  destruct (inS t); ring.
Qed.

Lemma mass_out_nonneg (n : nat) (p : nat -> R) (inS : nat -> bool) :
  (forall t, (t < n)%nat -> 0 <= p t) -> 0 <= mass_out n p inS.
Proof.
  intros Hp. apply sum_nonneg. intros t Ht. destruct (inS t); [lra | apply Hp, Ht].
Qed.

(** One key of [|p - p|_S / M|] with [0 < M <= 1]. *)
Lemma restrict_term (a M : R) (s : bool) :
  0 <= a -> 0 < M -> M <= 1 ->
  Rabs (a - (if s then a / M else 0))
    = (if s then a else 0) * (/ M - 1) + (if s then 0 else a).
Proof.
  intros Ha HM HM1. destruct s.
  - assert (a <= a / M).
    { unfold Rdiv. rewrite <- (Rmult_1_r a) at 1. apply Rmult_le_compat_l; [exact Ha|].
      rewrite <- Rinv_1. apply Rinv_le_contravar; lra. }
    rewrite Rabs_left1 by lra. unfold Rdiv. ring.
  - rewrite Rminus_0_r, Rabs_right by lra. ring.
Qed.

(** The sum of [|p - p|_S / M|] for any [0 < M <= 1]. *)
Lemma restrict_sum (n : nat) (p : nat -> R) (inS : nat -> bool) (M : R) :
  (forall t, (t < n)%nat -> 0 <= p t) -> 0 < M -> M <= 1 ->
  sum n (fun t => Rabs (p t - (if inS t then p t / M else 0)))
    = mass_on n p inS * (/ M - 1) + mass_out n p inS.
Proof.
  intros Hp HM HM1. unfold mass_on, mass_out. rewrite <- sum_scal_r, <- sum_plus.
  apply sum_ext. intros t Ht. apply restrict_term; [apply Hp, Ht | exact HM | exact HM1].
Qed.

(** [tv p (p|_S / p(S)) = p(not S)] for a probability vector [p] with [p(S) > 0]. *)
Theorem tv_restrict (n : nat) (p : nat -> R) (inS : nat -> bool) :
  (forall t, (t < n)%nat -> 0 <= p t) -> sum n p = 1 -> 0 < mass_on n p inS ->
  tv n p (restrict n p inS) = mass_out n p inS.
Proof.
  intros Hp Hs HM. pose proof (mass_on_out n p inS) as Hsplit.
  assert (HM1 : mass_on n p inS <= 1) by (pose proof (mass_out_nonneg n p inS Hp); lra).
  unfold tv, restrict. rewrite (restrict_sum n p inS (mass_on n p inS) Hp HM HM1).
  field_simplify; [|lra]. lra.
Qed.

(** Counterexample: [tv_restrict] needs [p >= 0]. [p = (2, -1)], [S = {0}]: [p(S) = 2],
    the restriction is [(1, 0)], [tv = 1/2 (1 + 1) = 1] but [p(not S) = -1]. *)
Lemma tv_restrict_needs_nonneg :
  let p := fun t : nat => if Nat.eqb t 0 then 2 else -1 in
  let S := fun t : nat => Nat.eqb t 0 in
  sum 2 p = 1 /\ 0 < mass_on 2 p S /\ tv 2 p (restrict 2 p S) <> mass_out 2 p S.
Proof.
  unfold mass_on, mass_out, tv, restrict, mass_on. simpl.
  split; [lra|]. split; [lra|].
  replace (0 + 2 + 0) with 2 by ring. replace (2 / 2) with 1 by field.
  replace (2 - 1) with 1 by ring. replace (-1 - 0) with (-1) by ring.
  rewrite Rabs_R1, Rabs_left by lra. lra.
Qed.

(** ** Rank-prefix stability *)

(** [|d_t| <= C] for all [t < n] implies [d_i - d_j <= 2 C] for [i, j < n]. *)
Theorem osc_le_twice_linf (n : nat) (d : nat -> R) (C : R) (i j : nat) :
  (forall t, (t < n)%nat -> Rabs (d t) <= C) -> (i < n)%nat -> (j < n)%nat -> d i - d j <= 2 * C.
Proof.
  intros H Hi Hj. pose proof (H i Hi). pose proof (H j Hj).
  pose proof (Rle_abs (d i)). pose proof (Rle_abs (- d j)). rewrite Rabs_Ropp in *. lra.
Qed.

(** Counterexample: the factor 2 is needed. [d = (1, -1)], [C = 1]: [d_0 - d_1 = 2 > 1]. *)
Lemma osc_needs_factor_two :
  let d := fun t : nat => if Nat.eqb t 0 then 1 else -1 in
  (forall t, (t < 2)%nat -> Rabs (d t) <= 1) /\ d 0%nat - d 1%nat > 1.
Proof.
  simpl. split; [|lra]. intros t _.
  destruct (Nat.eqb t 0); [rewrite Rabs_R1 | rewrite Rabs_left by lra]; lra.
Qed.

(** If [|s_t - s'_t| <= eps] for all [t < n] and [s_i - s_j > 2 eps] then [s'_i > s'_j]. *)
Theorem rank_prefix_stable (n : nat) (s s' : nat -> R) (eps : R) (i j : nat) :
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= eps) -> (i < n)%nat -> (j < n)%nat ->
  s i - s j > 2 * eps -> s' i > s' j.
Proof.
  intros H Hi Hj Hgap.
  pose proof (osc_le_twice_linf n (fun t => s t - s' t) eps i j H Hi Hj). simpl in *. lra.
Qed.

(** Counterexample: a gap of exactly [2 eps] is not enough. [s = (2, 0)], [s' = (1, 1)],
    [eps = 1]: [s_0 - s_1 = 2] but [s'_0 = s'_1]. *)
Lemma rank_prefix_needs_strict_gap :
  let s := fun t : nat => if Nat.eqb t 0 then 2 else 0 in
  let s' := fun _ : nat => 1 in
  (forall t, (t < 2)%nat -> Rabs (s t - s' t) <= 1) /\ s 0%nat - s 1%nat = 2 * 1
  /\ ~ (s' 0%nat > s' 1%nat).
Proof.
  simpl. split; [|lra]. intros t _.
  destruct (Nat.eqb t 0); [replace (2 - 1) with 1 by ring; rewrite Rabs_R1
                          | replace (0 - 1) with (-1) by ring; rewrite Rabs_left by lra]; lra.
Qed.

(** A set [I] that beats its complement by a margin [> 2 eps] under [s] still beats it under any
    [s'] with [|s - s'| <= eps]: the top-k set is unchanged. *)
Theorem top_set_stable (n : nat) (inI : nat -> bool) (s s' : nat -> R) (eps : R) :
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= eps) ->
  (forall i j, (i < n)%nat -> (j < n)%nat -> inI i = true -> inI j = false -> s i - s j > 2 * eps) ->
  forall i j, (i < n)%nat -> (j < n)%nat -> inI i = true -> inI j = false -> s' i > s' j.
Proof.
  intros H Hgap i j Hi Hj HiI HjI. apply (rank_prefix_stable n s s' eps i j H Hi Hj).
  apply Hgap; assumption.
Qed.

(** Per-key radii (the selector's witness certificate): if [|s_t - s'_t| <= eps_t] for all
    [t < n] and [s'_i - eps_i > s'_j + eps_j] then [s_i > s_j]. *)
Theorem rank_stable_radii (n : nat) (s s' eps : nat -> R) (i j : nat) :
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= eps t) -> (i < n)%nat -> (j < n)%nat ->
  s' i - eps i > s' j + eps j -> s i > s j.
Proof.
  intros H Hi Hj Hgap. pose proof (H i Hi). pose proof (H j Hj).
  pose proof (Rle_abs (- (s i - s' i))). pose proof (Rle_abs (s j - s' j)).
  rewrite Rabs_Ropp in *. lra.
Qed.
