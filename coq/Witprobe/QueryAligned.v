(** * Query-aligned score bridge

    A query-aligned witness stores, per key residual [dk = k - k'] (width [d]), the coordinates
    [a] (width [r]) of [dk] in a calibrated basis [U] ([d x r], [(U a)_i = sum_j U i j * a j],
    [matvec] of [LatentBridge]) and the remainder [rr = dk - U a], summarised by [||rr||] and
    [||U^T rr||]. At read time, with [b = U^T q] ([eff_query]), the meter
    (python/witprobe/probe/query_aligned.py [qa_radius]) forms

    [c^qa = scale * (|<U^T q, a>| + ||q - U b|| ||rr|| + ||b|| ||U^T rr||)].

    The decomposition [dk = U a + rr] is all that is assumed: [U] need not be orthonormal and [b]
    may be any vector. [qa_bridge] proves [|<q, dk>|] is at most the bracket, so
    [|s - s'| = scale |<q, dk>| <= c^qa] for [scale >= 0] ([qa_score_bridge]).

    When [U^T rr = 0] exactly (an exactly orthogonal remainder) the last term vanishes
    ([qa_bridge_orth]); [qa_bridge_needs_orth] shows that the bracket without the last term is not a
    bound once that hypothesis is dropped, and [qa_bridge_needs_remainder] that the remainder term
    cannot be dropped either (a query outside [span U]). *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum ScoreBridge LatentBridge.
Open Scope R_scope.

(** The meter's per-key radius (before the scale). *)
Definition qa_radius (d r : nat) (U : nat -> nat -> R) (q a rr b : nat -> R) : R :=
  Rabs (dot r (eff_query d U q) a)
  + norm2 d (vdiff q (matvec r U b)) * norm2 d rr
  + norm2 r b * norm2 r (eff_query d U rr).

Lemma dot_comm (d : nat) (x y : nat -> R) : dot d x y = dot d y x.
Proof. unfold dot. apply sum_ext. intros i _. ring. Qed.

Lemma dot_plus_r (d : nat) (x y z : nat -> R) :
  dot d x (fun i => y i + z i) = dot d x y + dot d x z.
Proof. unfold dot. rewrite <- sum_plus. apply sum_ext. intros i _. ring. Qed.

Lemma dot_split_l (d : nat) (x y z : nat -> R) :
  dot d x z = dot d (vdiff x y) z + dot d y z.
Proof. unfold dot, vdiff. rewrite <- sum_plus. apply sum_ext. intros i _. ring. Qed.

Lemma dot_ext_r (d : nat) (x y z : nat -> R) :
  (forall i, (i < d)%nat -> y i = z i) -> dot d x y = dot d x z.
Proof. intros H. unfold dot. apply sum_ext. intros i Hi. rewrite H by exact Hi. reflexivity. Qed.

Lemma qa_radius_nonneg (d r : nat) (U : nat -> nat -> R) (q a rr b : nat -> R) :
  0 <= qa_radius d r U q a rr b.
Proof.
  unfold qa_radius.
  pose proof (Rabs_pos (dot r (eff_query d U q) a)).
  pose proof (Rmult_le_pos _ _ (norm2_nonneg d (vdiff q (matvec r U b))) (norm2_nonneg d rr)).
  pose proof (Rmult_le_pos _ _ (norm2_nonneg r b) (norm2_nonneg r (eff_query d U rr))).
  lra.
Qed.

(** The bridge, hypothesis-free apart from the decomposition. *)
Theorem qa_bridge (d r : nat) (U : nat -> nat -> R) (q dk a rr b : nat -> R) :
  (forall i, (i < d)%nat -> dk i = matvec r U a i + rr i) ->
  Rabs (dot d q dk) <= qa_radius d r U q a rr b.
Proof.
  intros Hdec.
  assert (E1 : dot d q dk = dot r (eff_query d U q) a + dot d q rr).
  { rewrite (dot_ext_r d q dk (fun i => matvec r U a i + rr i) Hdec), dot_plus_r, adjoint. reflexivity. }
  assert (E2 : dot d q rr = dot d (vdiff q (matvec r U b)) rr + dot r b (eff_query d U rr)).
  { rewrite (dot_split_l d q (matvec r U b) rr). f_equal.
    rewrite (dot_comm d (matvec r U b) rr), adjoint. apply dot_comm. }
  rewrite E1, E2. unfold qa_radius.
  pose proof (cauchy_schwarz d (vdiff q (matvec r U b)) rr) as H1.
  pose proof (cauchy_schwarz r b (eff_query d U rr)) as H2.
  pose proof (Rabs_triang (dot r (eff_query d U q) a)
                (dot d (vdiff q (matvec r U b)) rr + dot r b (eff_query d U rr))) as T1.
  pose proof (Rabs_triang (dot d (vdiff q (matvec r U b)) rr) (dot r b (eff_query d U rr))) as T2.
  lra.
Qed.

(** The score form: [|scale <q, k> - scale <q, k'>| <= scale * qa_radius] for [scale >= 0]. *)
Theorem qa_score_bridge (d r : nat) (U : nat -> nat -> R) (scale : R) (q k k' a rr b : nat -> R) :
  0 <= scale ->
  (forall i, (i < d)%nat -> k i - k' i = matvec r U a i + rr i) ->
  Rabs (scale * dot d q k - scale * dot d q k') <= scale * qa_radius d r U q a rr b.
Proof.
  intros Hs Hdec.
  replace (scale * dot d q k - scale * dot d q k') with (scale * (dot d q k - dot d q k')) by ring.
  rewrite dot_minus_r, Rabs_mult, (Rabs_right scale) by lra.
  apply Rmult_le_compat_l; [exact Hs|].
  apply qa_bridge. exact Hdec.
Qed.

Lemma norm2_zero (n : nat) (x : nat -> R) : (forall j, (j < n)%nat -> x j = 0) -> norm2 n x = 0.
Proof.
  intros H. unfold norm2.
  rewrite (sum_ext n (fun i => x i * x i) (fun _ => 0)) by (intros j Hj; rewrite H by exact Hj; ring).
  rewrite sum_const, Rmult_0_r. apply sqrt_0.
Qed.

(** With an exactly orthogonal remainder ([U^T rr = 0]) the correction term vanishes. *)
Corollary qa_bridge_orth (d r : nat) (U : nat -> nat -> R) (q dk a rr b : nat -> R) :
  (forall i, (i < d)%nat -> dk i = matvec r U a i + rr i) ->
  (forall j, (j < r)%nat -> eff_query d U rr j = 0) ->
  Rabs (dot d q dk) <= Rabs (dot r (eff_query d U q) a) + norm2 d (vdiff q (matvec r U b)) * norm2 d rr.
Proof.
  intros Hdec Horth.
  pose proof (qa_bridge d r U q dk a rr b Hdec) as H. unfold qa_radius in H.
  rewrite (norm2_zero r (eff_query d U rr) Horth), Rmult_0_r, Rplus_0_r in H. exact H.
Qed.

(** Counterexample: without [U^T rr = 0] the two-term form fails. [d = r = 1], [U = 1], [a = 0],
    [rr = dk = 1], [q = b = 1]: [|<q, dk>| = 1] but the two terms are [0 + ||1 - 1|| * 1 = 0]. *)
Lemma qa_bridge_needs_orth :
  ~ (forall (d r : nat) (U : nat -> nat -> R) (q dk a rr b : nat -> R),
        (forall i, (i < d)%nat -> dk i = matvec r U a i + rr i) ->
        Rabs (dot d q dk) <= Rabs (dot r (eff_query d U q) a) + norm2 d (vdiff q (matvec r U b)) * norm2 d rr).
Proof.
  intros H.
  specialize (H 1%nat 1%nat (fun _ _ => 1) (fun _ => 1) (fun _ => 1) (fun _ => 0) (fun _ => 1) (fun _ => 1)).
  assert (Hdec : forall i, (i < 1)%nat -> (fun _ : nat => 1) i = matvec 1 (fun _ _ => 1) (fun _ => 0) i + (fun _ : nat => 1) i).
  { intros i _. unfold matvec. simpl. ring. }
  specialize (H Hdec).
  rewrite (norm2_zero 1 (vdiff (fun _ => 1) (matvec 1 (fun _ _ => 1) (fun _ => 1))))
    in H by (intros j _; unfold vdiff, matvec; simpl; ring).
  assert (A : dot 1 (fun _ => 1) (fun _ => 1) = 1) by (unfold dot; simpl; ring).
  assert (B : dot 1 (eff_query 1 (fun _ _ => 1) (fun _ => 1)) (fun _ => 0) = 0)
    by (unfold dot, eff_query; simpl; ring).
  rewrite A, B, Rabs_R1, Rabs_R0 in H. lra.
Qed.

(** Counterexample: the remainder term cannot be dropped (a query outside [span U]). [d = 1],
    [r = 0] (an empty basis), [dk = rr = q = 1]: [|<q, dk>| = 1 > 0 = |<U^T q, a>|]. *)
Lemma qa_bridge_needs_remainder :
  ~ (forall (d r : nat) (U : nat -> nat -> R) (q dk a rr : nat -> R),
        (forall i, (i < d)%nat -> dk i = matvec r U a i + rr i) ->
        Rabs (dot d q dk) <= Rabs (dot r (eff_query d U q) a)).
Proof.
  intros H.
  specialize (H 1%nat 0%nat (fun _ _ => 0) (fun _ => 1) (fun _ => 1) (fun _ => 0) (fun _ => 1)).
  assert (Hdec : forall i, (i < 1)%nat -> (fun _ : nat => 1) i = matvec 0 (fun _ _ => 0) (fun _ => 0) i + (fun _ : nat => 1) i).
  { intros i _. unfold matvec. simpl. ring. }
  specialize (H Hdec). unfold dot in H. simpl in H.
  replace (0 + 1 * 1) with 1 in H by ring.
  rewrite Rabs_R1, Rabs_R0 in H. lra.
Qed.
