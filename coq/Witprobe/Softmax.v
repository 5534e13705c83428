(** * Softmax, total variation, and the served-vs-exact ratio form

    Definitions (vectors of length [n], see [Sum]):
    - [partition n s = sum_t exp (s t)];
    - [softmax n s t = exp (s t) / partition n s];
    - [tv n p p' = 1/2 * sum_t |p t - p' t|], the total-variation distance;
    - [tanh x = (exp (2x) - 1) / (exp (2x) + 1)].

    Main results: [softmax_pos], [softmax_sum] (a probability vector), [softmax_shift]
    (shift invariance), [softmax_ratio] (the exact distribution is the served one reweighted by
    [exp (s - s')] and renormalized), [tv_sym], [tv_nonneg]. *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum.
Open Scope R_scope.

Definition partition (n : nat) (s : nat -> R) : R := sum n (fun t => exp (s t)).

Definition softmax (n : nat) (s : nat -> R) : nat -> R := fun t => exp (s t) / partition n s.

Definition tv (n : nat) (p p' : nat -> R) : R := / 2 * sum n (fun t => Rabs (p t - p' t)).

Definition tanh (x : R) : R := (exp (2 * x) - 1) / (exp (2 * x) + 1).

Lemma partition_pos (n : nat) (s : nat -> R) : (0 < n)%nat -> 0 < partition n s.
Proof. intros Hn. apply sum_pos; [exact Hn|]. intros t _. apply exp_pos. Qed.

Lemma softmax_pos (n : nat) (s : nat -> R) (t : nat) : (0 < n)%nat -> 0 < softmax n s t.
Proof.
  intros Hn. unfold softmax. apply Rdiv_lt_0_compat; [apply exp_pos | apply partition_pos; exact Hn].
Qed.

Lemma softmax_sum (n : nat) (s : nat -> R) : (0 < n)%nat -> sum n (softmax n s) = 1.
Proof.
  intros Hn. unfold softmax. rewrite sum_div_r. fold (partition n s).
  field. apply Rgt_not_eq, partition_pos, Hn.
Qed.

Lemma partition_shift (n : nat) (s : nat -> R) (c : R) :
  partition n (fun i => s i + c) = partition n s * exp c.
Proof.
  unfold partition. rewrite <- sum_scal_r. apply sum_ext. intros i _. apply exp_plus.
Qed.

(** Shift invariance: adding the same constant to every score leaves softmax unchanged. *)
Lemma softmax_shift (n : nat) (s : nat -> R) (c : R) (t : nat) :
  (0 < n)%nat -> softmax n (fun i => s i + c) t = softmax n s t.
Proof.
  intros Hn. unfold softmax. rewrite partition_shift, exp_plus.
  assert (0 < partition n s) by (apply partition_pos, Hn).
  assert (0 < exp c) by apply exp_pos.
  field. split; apply Rgt_not_eq; assumption.
Qed.

(** The reweighting normalizer [Z = sum_t p'_t exp (s_t - s'_t)]. *)
Definition reweight (n : nat) (s s' : nat -> R) : R :=
  sum n (fun t => softmax n s' t * exp (s t - s' t)).

Lemma partition_ratio (n : nat) (s s' : nat -> R) :
  (0 < n)%nat -> partition n s = partition n s' * reweight n s s'.
Proof.
  intros Hn. unfold reweight, softmax.
  rewrite <- sum_scal_l. unfold partition at 1. apply sum_ext. intros t _.
  replace (s t) with (s' t + (s t - s' t)) at 1 by ring. rewrite exp_plus.
  field. apply Rgt_not_eq, partition_pos, Hn.
Qed.

Lemma reweight_pos (n : nat) (s s' : nat -> R) : (0 < n)%nat -> 0 < reweight n s s'.
Proof.
  intros Hn. apply sum_pos; [exact Hn|]. intros t _.
  apply Rmult_lt_0_compat; [apply softmax_pos, Hn | apply exp_pos].
Qed.

(** [softmax s = softmax s' * exp (s - s') / Z]. *)
Lemma softmax_ratio (n : nat) (s s' : nat -> R) (t : nat) :
  (0 < n)%nat -> softmax n s t = softmax n s' t * exp (s t - s' t) / reweight n s s'.
Proof.
  intros Hn. unfold softmax at 1. rewrite (partition_ratio n s s' Hn). unfold softmax.
  replace (s t) with (s' t + (s t - s' t)) at 1 by ring. rewrite exp_plus.
  assert (0 < partition n s') by (apply partition_pos, Hn).
  assert (0 < reweight n s s') by (apply reweight_pos, Hn).
  field. split; apply Rgt_not_eq; assumption.
Qed.

Lemma tv_sym (n : nat) (p p' : nat -> R) : tv n p p' = tv n p' p.
Proof.
  unfold tv. f_equal. apply sum_ext. intros t _. apply Rabs_minus_sym.
Qed.

Lemma tv_nonneg (n : nat) (p p' : nat -> R) : 0 <= tv n p p'.
Proof.
  unfold tv. apply Rmult_le_pos; [lra|]. apply sum_nonneg. intros t _. apply Rabs_pos.
Qed.

Lemma tv_empty (p p' : nat -> R) : tv 0 p p' = 0.
Proof. unfold tv. simpl. ring. Qed.
