(** * Finite sums over real vectors

    A vector of length [n] is a function [nat -> R] read on the indices [0 .. n-1].
    [sum n f] is [f 0 + ... + f (n-1)], defined by structural recursion on [n].

    Main results: [sum_ext], [sum_plus], [sum_minus], [sum_scal_l], [sum_le], [sum_nonneg],
    [sum_abs_le] (triangle inequality), [sum_pos], [sum_const], [sum_shift_last]. *)

From Coq Require Import Reals Lra Lia.
Open Scope R_scope.

Fixpoint sum (n : nat) (f : nat -> R) : R :=
  match n with
  | O => 0
  | S m => sum m f + f m
  end.

Lemma sum_O (f : nat -> R) : sum 0 f = 0.
Proof. reflexivity. Qed.

Lemma sum_S (n : nat) (f : nat -> R) : sum (S n) f = sum n f + f n.
Proof. reflexivity. Qed.

(** Only the values on [0 .. n-1] matter. *)
Lemma sum_ext (n : nat) (f g : nat -> R) :
  (forall t, (t < n)%nat -> f t = g t) -> sum n f = sum n g.
Proof.
  induction n as [|n IH]; intros H; simpl; [reflexivity|].
  rewrite IH by (intros t Ht; apply H; lia). rewrite (H n) by lia. reflexivity.
Qed.

Lemma sum_plus (n : nat) (f g : nat -> R) :
  sum n (fun t => f t + g t) = sum n f + sum n g.
Proof. induction n as [|n IH]; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_minus (n : nat) (f g : nat -> R) :
  sum n (fun t => f t - g t) = sum n f - sum n g.
Proof. induction n as [|n IH]; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_scal_l (n : nat) (a : R) (f : nat -> R) :
  sum n (fun t => a * f t) = a * sum n f.
Proof. induction n as [|n IH]; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_scal_r (n : nat) (a : R) (f : nat -> R) :
  sum n (fun t => f t * a) = sum n f * a.
Proof. induction n as [|n IH]; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_div_r (n : nat) (a : R) (f : nat -> R) :
  sum n (fun t => f t / a) = sum n f / a.
Proof. unfold Rdiv. apply sum_scal_r. Qed.

Lemma sum_const (n : nat) (a : R) : sum n (fun _ => a) = INR n * a.
Proof.
  induction n as [|n IH]; simpl sum; [simpl; lra|]. rewrite IH, S_INR. lra.
Qed.

Lemma sum_le (n : nat) (f g : nat -> R) :
  (forall t, (t < n)%nat -> f t <= g t) -> sum n f <= sum n g.
Proof.
  induction n as [|n IH]; intros H; simpl; [lra|].
  assert (sum n f <= sum n g) by (apply IH; intros t Ht; apply H; lia).
  assert (f n <= g n) by (apply H; lia). lra.
Qed.

Lemma sum_nonneg (n : nat) (f : nat -> R) :
  (forall t, (t < n)%nat -> 0 <= f t) -> 0 <= sum n f.
Proof.
  intros H. rewrite <- (Rmult_0_r (INR n)), <- sum_const. apply sum_le. exact H.
Qed.

(** A sum of positive terms over a nonempty range is positive. *)
Lemma sum_pos (n : nat) (f : nat -> R) :
  (0 < n)%nat -> (forall t, (t < n)%nat -> 0 < f t) -> 0 < sum n f.
Proof.
  destruct n as [|n]; intros Hn H; [lia|]. simpl.
  assert (0 <= sum n f) by (apply sum_nonneg; intros t Ht; left; apply H; lia).
  assert (0 < f n) by (apply H; lia). lra.
Qed.

(** Triangle inequality for finite sums. *)
Lemma sum_abs_le (n : nat) (f : nat -> R) : Rabs (sum n f) <= sum n (fun t => Rabs (f t)).
Proof.
  induction n as [|n IH]; simpl.
  - rewrite Rabs_R0. lra.
  - eapply Rle_trans; [apply Rabs_triang|]. lra.
Qed.

(** A term of a nonnegative sum is at most the sum. *)
Lemma sum_term_le (n : nat) (f : nat -> R) (t : nat) :
  (forall i, (i < n)%nat -> 0 <= f i) -> (t < n)%nat -> f t <= sum n f.
Proof.
  induction n as [|n IH]; intros H Ht; [lia|]. simpl.
  destruct (Nat.eq_dec t n) as [->|Hne].
  - assert (0 <= sum n f) by (apply sum_nonneg; intros i Hi; apply H; lia). lra.
  - assert (f t <= sum n f) by (apply IH; [intros i Hi; apply H; lia | lia]).
    assert (0 <= f n) by (apply H; lia). lra.
Qed.

(** Extending a vector by one coordinate: the sum over [S n] of [extend f a] is [sum n f + a]. *)
Definition extend (f : nat -> R) (n : nat) (a : R) : nat -> R :=
  fun t => if Nat.eqb t n then a else f t.

Lemma sum_extend (n : nat) (f : nat -> R) (a : R) : sum (S n) (extend f n a) = sum n f + a.
Proof.
  simpl. unfold extend at 2. rewrite Nat.eqb_refl. f_equal.
  apply sum_ext. intros t Ht. unfold extend.
  destruct (Nat.eqb_spec t n); [lia|reflexivity].
Qed.
