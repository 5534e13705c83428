(** * Pooling lemma: the error of a gate-pooled entry

    A pooled entry (DeepSeek-V4 compressed entries, python/witprobe/probe/v4.py) is, per channel,
    [sum_j w_j x_j] over the [m] slots of a window, with gate weights [w = softmax(gate + bias)]:
    [w_j >= 0], [sum_j w_j = 1]. If every slot carries an error [Delta_j] (a scalar per channel),
    the pooled error is [sum_j w_j Delta_j]. Two contracts bound it (paper Lemma 1):
    - l2 form: [|sum_j w_j Delta_j| <= ||w||_2 * ||Delta||_2] ([pool_l2]; Cauchy-Schwarz, no
      hypothesis on [w]); the gain satisfies [1/sqrt m <= ||w||_2 <= 1] for probability weights
      ([pool_l2_gain_ge], [pool_l2_gain_le_1]); the meter reads it as [w_l2]
      ([Observer.record_pooling]);
    - l-infinity form: if [|Delta_j| <= D] for all [j] then [|sum_j w_j Delta_j| <= D]
      ([pool_linf]; gain 1, by convexity).

    Main results: [pool_l2], [pool_linf], [pool_l2_gain_le_1], [pool_l2_gain_ge].
    Counterexamples: [pool_l2_needs_actual_weights], [pool_linf_needs_nonneg],
    [pool_linf_needs_sum_one], [pool_l2_gain_le_1_needs_nonneg]. *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum ScoreBridge.
Open Scope R_scope.

(** The pooled error [sum_j w_j Delta_j]. *)
Definition pooled (m : nat) (w delta : nat -> R) : R := sum m (fun j => w j * delta j).

(** ** l2 form *)

(** [|sum_j w_j Delta_j| <= ||w||_2 ||Delta||_2] (any real weights). *)
Theorem pool_l2 (m : nat) (w delta : nat -> R) :
  Rabs (pooled m w delta) <= norm2 m w * norm2 m delta.
Proof. apply cauchy_schwarz. Qed.

(** Counterexample: the uniform gain [1/sqrt m] in place of [||w||_2] is not a bound. [m = 2],
    [w = (1, 0)], [Delta = (1, 0)]: pooled error [1 > 1/sqrt 2 = (1/sqrt 2) ||Delta||]. *)
Lemma pool_l2_needs_actual_weights :
  let w := fun j : nat => if Nat.eqb j 0 then 1 else 0 in
  Rabs (pooled 2 w w) > / sqrt 2 * norm2 2 w.
Proof.
  unfold pooled, norm2. simpl. replace (0 + 1 * 1 + 0 * 0) with 1 by ring.
  rewrite sqrt_1, Rabs_right by lra.
  assert (H : 1 < sqrt 2) by (rewrite <- sqrt_1 at 1; apply sqrt_lt_1_alt; lra).
  assert (/ sqrt 2 < 1) by (rewrite <- Rinv_1; apply Rinv_lt_contravar; lra).
  lra.
Qed.

(** Probability weights: every weight is at most 1. *)
Lemma weight_le_1 (m : nat) (w : nat -> R) (j : nat) :
  (forall i, (i < m)%nat -> 0 <= w i) -> sum m w = 1 -> (j < m)%nat -> w j <= 1.
Proof. intros Hw Hs Hj. rewrite <- Hs. apply sum_term_le; assumption. Qed.

(** For probability weights the l2 gain is at most 1: [||w||_2 <= 1]. *)
Theorem pool_l2_gain_le_1 (m : nat) (w : nat -> R) :
  (forall j, (j < m)%nat -> 0 <= w j) -> sum m w = 1 -> norm2 m w <= 1.
Proof.
  intros Hw Hs. unfold norm2. rewrite <- sqrt_1. apply sqrt_le_1_alt. rewrite <- Hs.
  apply sum_le. intros j Hj.
  pose proof (Hw j Hj). pose proof (weight_le_1 m w j Hw Hs Hj). nra.
Qed.

(** Counterexample: without [w >= 0] the gain can exceed 1. [w = (2, -1)]: [||w||_2 = sqrt 5]. *)
Lemma pool_l2_gain_le_1_needs_nonneg :
  let w := fun j : nat => if Nat.eqb j 0 then 2 else -1 in
  sum 2 w = 1 /\ norm2 2 w > 1.
Proof.
  unfold norm2. simpl. split; [lra|].
  rewrite <- sqrt_1 at 1. apply sqrt_lt_1_alt. lra.
Qed.

(** For weights summing to 1 over [m > 0] entries, [||w||_2 >= 1/sqrt m]. *)
Theorem pool_l2_gain_ge (m : nat) (w : nat -> R) :
  (0 < m)%nat -> sum m w = 1 -> / sqrt (INR m) <= norm2 m w.
Proof.
  intros Hm Hs.
  assert (Hsm : 0 < sqrt (INR m)) by (apply sqrt_lt_R0, lt_0_INR, Hm).
  assert (Hones : norm2 m (fun _ => 1) = sqrt (INR m)).
  { unfold norm2. rewrite sum_const, !Rmult_1_r. reflexivity. }
  pose proof (cauchy_schwarz m w (fun _ => 1)) as Hcs.
  assert (Hdot : dot m w (fun _ => 1) = 1).
  { unfold dot. transitivity (sum m w); [apply sum_ext; intros j _; ring | exact Hs]. }
  rewrite Hdot, Rabs_R1, Hones in Hcs.
  apply (Rmult_le_reg_r (sqrt (INR m))); [exact Hsm|].
  rewrite Rinv_l by lra. exact Hcs.
Qed.

(** ** l-infinity form *)

(** If [w_j >= 0], [sum_j w_j = 1] and [|Delta_j| <= D] for all [j < m], then
    [|sum_j w_j Delta_j| <= D]. *)
Theorem pool_linf (m : nat) (w delta : nat -> R) (D : R) :
  (forall j, (j < m)%nat -> 0 <= w j) -> sum m w = 1 ->
  (forall j, (j < m)%nat -> Rabs (delta j) <= D) ->
  Rabs (pooled m w delta) <= D.
Proof.
  intros Hw Hs Hd. unfold pooled. eapply Rle_trans; [apply sum_abs_le|].
  replace D with (sum m (fun j => w j * D)) by (rewrite sum_scal_r, Hs; ring).
  apply sum_le. intros j Hj. rewrite Rabs_mult, (Rabs_right (w j)) by (apply Rle_ge, Hw, Hj).
  apply Rmult_le_compat_l; [apply Hw, Hj | apply Hd, Hj].
Qed.

(** Counterexample: without [w >= 0]. [w = (2, -1)] (sum 1), [Delta = (1, -1)], [D = 1]:
    pooled error [3 > 1]. *)
Lemma pool_linf_needs_nonneg :
  let w := fun j : nat => if Nat.eqb j 0 then 2 else -1 in
  let delta := fun j : nat => if Nat.eqb j 0 then 1 else -1 in
  sum 2 w = 1 /\ (forall j, Rabs (delta j) <= 1) /\ Rabs (pooled 2 w delta) > 1.
Proof.
  unfold pooled. simpl. split; [lra|]. split.
  - intros j. destruct (Nat.eqb j 0); [rewrite Rabs_R1 | rewrite Rabs_left by lra]; lra.
  - rewrite Rabs_right; lra.
Qed.

(** Counterexample: without [sum w = 1]. [m = 1], [w = 2], [Delta = 1], [D = 1]: error [2 > 1]. *)
Lemma pool_linf_needs_sum_one :
  Rabs (pooled 1 (fun _ => 2) (fun _ => 1)) > 1.
Proof. unfold pooled. simpl. rewrite Rabs_right; lra. Qed.
