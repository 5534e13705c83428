(** * The band witness brackets the residual norm

    For a residual [Delta] split into [nb] bands ([ScoreBridge]: banded vectors, [bnorm]) the band
    witness is [W = sum_b ||Delta_b||]. The production meter
    (python/witprobe/probe/meters.py [band_witness], [witness_violations]) flags
    [W < ||Delta|| (1 - tol)] and [W > sqrt(bands) ||Delta|| (1 + tol)] as implementation errors;
    the two inequalities are proved here:
    - [bnorm_le_witness]: [||Delta|| <= sum_b ||Delta_b||] (triangle inequality over bands);
    - [witness_le_sqrt_bands]: [sum_b ||Delta_b|| <= sqrt nb * ||Delta||] (Cauchy-Schwarz against
      the all-ones vector of length [nb]).
    Counterexamples: [witness_le_norm_fails] (the factor [sqrt nb] is needed),
    [witness_ge_sqrt_bands_fails] (the lower bracket cannot be raised to [sqrt nb ||Delta||]). *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum ScoreBridge.
Open Scope R_scope.

(** The witness [W = sum_b ||x_b||]. *)
Definition witness (nb : nat) (w : nat -> nat) (x : nat -> nat -> R) : R :=
  sum nb (fun b => norm2 (w b) (x b)).

(** [sqrt (a + b) <= sqrt a + sqrt b] for [a, b >= 0]. *)
Lemma sqrt_plus_le (a b : R) : 0 <= a -> 0 <= b -> sqrt (a + b) <= sqrt a + sqrt b.
Proof.
  intros Ha Hb. pose proof (sqrt_pos a). pose proof (sqrt_pos b).
  rewrite <- (sqrt_square (sqrt a + sqrt b)) by lra. apply sqrt_le_1_alt.
  pose proof (sqrt_sqrt a Ha). pose proof (sqrt_sqrt b Hb). nra.
Qed.

(** [||x|| <= sum_b ||x_b||]. *)
Theorem bnorm_le_witness (nb : nat) (w : nat -> nat) (x : nat -> nat -> R) :
  bnorm nb w x <= witness nb w x.
Proof.
  unfold bnorm, witness. induction nb as [|nb IH]; simpl.
  - rewrite sqrt_0. lra.
  - eapply Rle_trans; [apply sqrt_plus_le|].
    + apply sum_nonneg. intros b _. apply sumsq_nonneg.
    + apply sumsq_nonneg.
    + unfold norm2 at 2. lra.
Qed.

(** [sum_b ||x_b|| <= sqrt nb * ||x||]. *)
Theorem witness_le_sqrt_bands (nb : nat) (w : nat -> nat) (x : nat -> nat -> R) :
  witness nb w x <= sqrt (INR nb) * bnorm nb w x.
Proof.
  set (n := fun b => norm2 (w b) (x b)).
  pose proof (cauchy_schwarz nb (fun _ => 1) n) as Hcs.
  assert (Hdot : dot nb (fun _ => 1) n = witness nb w x).
  { unfold dot, witness. apply sum_ext. intros b _. unfold n. ring. }
  assert (Hones : norm2 nb (fun _ => 1) = sqrt (INR nb)).
  { unfold norm2. rewrite sum_const, !Rmult_1_r. reflexivity. }
  assert (Hn : norm2 nb n = bnorm nb w x).
  { unfold norm2 at 1, bnorm. f_equal. apply sum_ext. intros b _. unfold n. apply norm2_sq. }
  rewrite Hdot, Hones, Hn in Hcs. eapply Rle_trans; [apply Rle_abs | exact Hcs].
Qed.

(** Counterexample: [W <= ||x||] fails. Two bands of width 1, [x = (1 | 1)]: [W = 2],
    [||x|| = sqrt 2 < 2]. *)
Lemma witness_le_norm_fails :
  let one := fun _ _ : nat => 1 in
  witness 2 (fun _ => 1%nat) one > bnorm 2 (fun _ => 1%nat) one.
Proof.
  unfold witness, bnorm, norm2. simpl.
  replace (0 + 1 * 1) with 1 by ring. replace (0 + 1 + 1) with 2 by ring. rewrite sqrt_1.
  assert (H : sqrt 2 < sqrt 4) by (apply sqrt_lt_1_alt; lra).
  replace (sqrt 4) with 2 in H by (rewrite <- (sqrt_square 2) by lra; f_equal; ring).
  lra.
Qed.

(** Counterexample: [W >= sqrt nb * ||x||] fails. Two bands of width 1, [x = (1 | 0)]:
    [W = 1 < sqrt 2 = sqrt 2 * ||x||]. *)
Lemma witness_ge_sqrt_bands_fails :
  let x := fun b _ : nat => if Nat.eqb b 0 then 1 else 0 in
  witness 2 (fun _ => 1%nat) x < sqrt (INR 2) * bnorm 2 (fun _ => 1%nat) x.
Proof.
  unfold witness, bnorm, norm2. simpl.
  replace (0 + 1 * 1) with 1 by ring. replace (0 + 0 * 0) with 0 by ring.
  replace (0 + 1 + 0) with 1 by ring. replace (1 + 1) with 2 by ring.
  rewrite sqrt_1, sqrt_0.
  assert (H : sqrt 1 < sqrt 2) by (apply sqrt_lt_1_alt; lra). rewrite sqrt_1 in H. lra.
Qed.
